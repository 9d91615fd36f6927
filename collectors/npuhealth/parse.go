package npuhealth

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npufault"
)

// ErrNoData is returned by a parser when the output holds none of the
// lines its type prints: a message, a cut output or another type's output.
var ErrNoData = errors.New("no line of the expected query type")

// kv is one `label : value` line, label and value trimmed. A continuation
// line (health's further Error Information strings) has an empty label.
type kv struct{ label, value string }

// lines splits an npu-smi detail output into its key/value lines. The
// separator is the first " : " (values may hold colons, labels never hold
// " : "); lines without one are skipped (empty lines, messages, and the
// "Failed to get error information" text glued to no label).
func lines(b []byte) []kv {
	var out []kv
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimRight(l, "\r")
		i := strings.Index(l, " : ")
		if i < 0 {
			// "label :" with nothing after it (Error Code of a build that
			// printed no token) still names the label.
			if t := strings.TrimSpace(l); strings.HasSuffix(t, " :") {
				out = append(out, kv{strings.TrimSpace(strings.TrimSuffix(t, ":")), ""})
			}
			continue
		}
		out = append(out, kv{strings.TrimSpace(l[:i]), strings.TrimSpace(l[i+3:])})
	}
	return out
}

// uintValue reads a decimal counter; NA and other placeholders are not a value.
func uintValue(s string) (float64, bool, error) {
	if s == "" || strings.EqualFold(s, "NA") || s == "-" {
		return 0, false, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%q is not an unsigned number", s)
	}
	return float64(v), true, nil
}

// Health is `-t health -i N -c C`.
type Health struct {
	Status string // as printed: OK, Warning, Alarm, Critical, UNKNOWN, NA
	// Codes are the active error codes, upper-case hex as printed.
	Codes []string
}

// ParseHealth reads the chip-level health block. The code list, not the
// status word, is the signal: older builds print Warning with no code.
func ParseHealth(b []byte) (Health, error) {
	var h Health
	seen := false
	for _, l := range lines(b) {
		switch l.label {
		case "Health Status", "Health":
			h.Status, seen = l.value, true
		case "Error Code":
			seen = true
			if l.value == "" || strings.EqualFold(l.value, "NA") {
				continue
			}
			for _, tok := range strings.Fields(l.value) {
				code := strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(tok, "0x"), "0X"))
				if !isHexCode(code) {
					return Health{}, fmt.Errorf("health: error code %q is not 4 to 9 hex digits", tok)
				}
				h.Codes = append(h.Codes, code)
			}
		}
	}
	if !seen {
		return Health{}, fmt.Errorf("health: %w (Health Status, Error Code)", ErrNoData)
	}
	if len(h.Codes) > maxCodes {
		return Health{}, fmt.Errorf("health: %d error codes, more than npu-smi prints (%d)", len(h.Codes), maxCodes)
	}
	return h, nil
}

// maxCodes is npu-smi's NPU_ERROR_CODE_MAX_NUM.
const maxCodes = 128

// isHexCode is the one rule of what an error code looks like.
func isHexCode(s string) bool { return npufault.ValidCode(s) }

// ECC is the HBM part of `-t ecc` (DDR lines of 910/310P are ignored: the
// series are about HBM). A field is set when its line was printed.
type ECC struct {
	// Errors: since driver load; Lifetime: the aggregate totals;
	// Isolated / Pending: pages isolated, and pages to be isolated at the
	// next reset ("Next-Isolated"). Index 0 single bit, 1 double bit.
	Errors, Lifetime, Isolated, Pending [2]ascend.Value
}

// pendingMax: the double-bit next-isolated count is 0..64 (DOC950); npu-smi
// computes it in unsigned arithmetic, so a transient underflow prints
// about 4294967xxx. Such a value is not exported.
const pendingMax = 1 << 31

// ParseECC reads the HBM lines of `-t ecc` (labels matched by words, not
// by a closed list: 950 renames some).
func ParseECC(b []byte) (ECC, error) {
	var e ECC
	seen := false
	for _, l := range lines(b) {
		if !strings.HasPrefix(l.label, "HBM ") {
			continue
		}
		bit := -1
		switch {
		case strings.Contains(l.label, "Single Bit"):
			bit = 0
		case strings.Contains(l.label, "Double Bit"):
			bit = 1
		}
		var dst *[2]ascend.Value
		switch {
		case bit < 0:
			continue
		case strings.Contains(l.label, "Next-Isolated"):
			dst = &e.Pending
		case strings.Contains(l.label, "Isolated Pages"):
			dst = &e.Isolated
		case strings.Contains(l.label, "Aggregate"):
			dst = &e.Lifetime
		case strings.HasSuffix(l.label, "Error Count"):
			dst = &e.Errors
		default:
			continue
		}
		v, ok, err := uintValue(l.value)
		if err != nil {
			return ECC{}, fmt.Errorf("ecc: %s: %w", l.label, err)
		}
		seen = true
		if dst == &e.Pending && v >= pendingMax {
			continue
		}
		dst[bit] = ascend.Value{V: v, OK: ok}
	}
	if !seen {
		return ECC{}, fmt.Errorf("ecc: %w (HBM … Bit … Count)", ErrNoData)
	}
	return e, nil
}

// ParseECCEnable reads `-t ecc-enable -i N` (card level): the HBM switch.
func ParseECCEnable(b []byte) (enabled bool, err error) {
	for _, l := range lines(b) {
		if l.label != "HBM ECC-Enable Status" {
			continue
		}
		switch strings.ToLower(l.value) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("ecc-enable: HBM ECC-Enable Status %q is neither True nor False", l.value)
	}
	return false, fmt.Errorf("ecc-enable: %w (HBM ECC-Enable Status)", ErrNoData)
}

// pcieLabels maps `-t pcie-err` labels (format A of 910B/910_93/950 and
// format B of 310P) to the type label.
var pcieLabels = map[string]string{
	"TX Error Count":       "tx",
	"RX Error Count":       "rx",
	"Lcrc Error Count":     "lcrc",
	"Ecrc Error Count":     "ecrc",
	"Retry Count":          "retry",
	"Pcs Rx Error Count":   "pcs_rx",
	"Phy Lane Error Count": "phy_lane",
	"Dl Lcrc Error Count":  "dl_lcrc",
	"Dl Dcrc Error Count":  "dl_dcrc",
}

// ParsePCIeErr reads `-t pcie-err`: counters by type.
func ParsePCIeErr(b []byte) (map[string]float64, error) {
	return counters(b, "pcie-err", pcieLabels)
}

// sioLabels maps `-t sio-info` labels to the direction label.
var sioLabels = map[string]string{"TX Error Count": "transmit", "RX Error Count": "receive"}

// ParseSIO reads `-t sio-info` (A3 die-to-die link): errors by direction.
func ParseSIO(b []byte) (map[string]float64, error) {
	return counters(b, "sio-info", sioLabels)
}

func counters(b []byte, typ string, names map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, l := range lines(b) {
		name, ok := names[l.label]
		if !ok {
			continue
		}
		v, ok, err := uintValue(l.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", typ, l.label, err)
		}
		if ok {
			out[name] = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", typ, ErrNoData)
	}
	return out, nil
}

// HCCS is `-t hccs -i N -c C` (also printed as xlink by BUILD_CH builds).
// Per-link slices are indexed by the array position (LinkNumber gives the
// hardware link number); all have Links
// entries or are nil (310P prints no lane mode and no health).
type HCCS struct {
	Healthy, HasHealth bool
	Links              int
	Lanes              []float64
	TxPackets          []float64
	RxPackets          []float64
	Retries            []float64
	Errors             []float64
}

// LinkNumber is the hardware number of the HCCS link at array position i of
// an array of n links: npu-smi prints the links env_offset..7 of the chip
// (DCMI_HCCS_910B_PCS_NUM), 7 of them from link 1 on an A2, 6 from link 2
// on an Atlas 9000 A3 SuperPoD die, and `-t hccs -lane L` and npu-exporter
// name them by that number. A 310P Duo prints one link, index 0.
func LinkNumber(i, n int) int {
	if n >= 2 && n <= 7 {
		return i + 8 - n
	}
	return i
}

// maxLinks bounds an array: 7 links on A2, 6 on A3 SuperPoD, 1 on 310P.
const maxLinks = 16

// ParseHCCS reads the HCCS block; arrays are `[v1   v2 … ]`.
func ParseHCCS(b []byte) (HCCS, error) {
	var h HCCS
	seen := false
	for _, l := range lines(b) {
		label := l.label
		switch {
		case strings.HasPrefix(label, "hccs "):
			label = strings.TrimPrefix(label, "hccs ")
		case strings.HasPrefix(label, "xlink "):
			label = strings.TrimPrefix(label, "xlink ")
		default:
			continue
		}
		var dst *[]float64
		switch label {
		case "health status":
			seen = true
			switch l.value {
			case "OK":
				h.Healthy, h.HasHealth = true, true
			case "NOK":
				h.HasHealth = true
			default:
				return HCCS{}, fmt.Errorf("hccs: health status %q is neither OK nor NOK", l.value)
			}
			continue
		case "lane mode":
			dst = &h.Lanes
		case "tx packets":
			dst = &h.TxPackets
		case "rx packets":
			dst = &h.RxPackets
		case "retry count":
			dst = &h.Retries
		case "error count":
			dst = &h.Errors
		default:
			continue
		}
		vals, err := hccsArray(l.value)
		if err != nil {
			return HCCS{}, fmt.Errorf("hccs: %s: %w", l.label, err)
		}
		if h.Links == 0 {
			h.Links = len(vals)
		} else if len(vals) != h.Links {
			return HCCS{}, fmt.Errorf("hccs: %s has %d links, earlier arrays %d", l.label, len(vals), h.Links)
		}
		*dst, seen = vals, true
	}
	if !seen {
		return HCCS{}, fmt.Errorf("hccs: %w (hccs health status, hccs … arrays)", ErrNoData)
	}
	return h, nil
}

func hccsArray(s string) ([]float64, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("%q is not a [ … ] array", s)
	}
	f := strings.Fields(s[1 : len(s)-1])
	if len(f) == 0 || len(f) > maxLinks {
		return nil, fmt.Errorf("array of %d values (want 1 to %d)", len(f), maxLinks)
	}
	out := make([]float64, len(f))
	for i, t := range f {
		v, ok, err := uintValue(t)
		if err != nil {
			return nil, err
		}
		if !ok {
			v = math.NaN()
		}
		out[i] = v
	}
	return out, nil
}

// ParseMemory reads the HBM temperature of `-t memory` (°C); ok is false
// where the product has no HBM (310P) or printed NA.
func ParseMemory(b []byte) (celsius float64, ok bool, err error) {
	seen := false
	for _, l := range lines(b) {
		switch l.label {
		case "HBM Temperature(C)", "HBM Temperature (C)":
			if strings.EqualFold(l.value, "NA") {
				return 0, false, nil
			}
			v, err := strconv.Atoi(l.value)
			if err != nil {
				return 0, false, fmt.Errorf("memory: %s %q is not an integer", l.label, l.value)
			}
			return float64(v), true, nil
		case "DDR Capacity(MB)", "HBM Capacity(MB)", "Total DDR Capacity(MB)", "Capacity(MB)":
			seen = true
		}
	}
	if !seen {
		return 0, false, fmt.Errorf("memory: %w (… Capacity(MB))", ErrNoData)
	}
	return 0, false, nil
}

// Usages is `-t usages`: utilisation ratios 0..1 by engine, and the HBM
// bandwidth utilisation.
type Usages struct {
	Engines      map[string]float64
	HBMBandwidth ascend.Value
}

// usageEngines maps `-t usages` labels to the engine label. Lines hidden in
// vNPU containers or absent from older drivers (NPU Utilization, Aicube)
// give no series.
var usageEngines = map[string]string{
	"Aicore Usage Rate(%)":   "aicore",
	"Aivector Usage Rate(%)": "aivector",
	"Aicube Usage Rate(%)":   "aicube",
	"Aicpu Usage Rate(%)":    "aicpu",
	"Ctrlcpu Usage Rate(%)":  "ctrlcpu",
	"NPU Utilization(%)":     "overall",
}

// ParseUsages reads `-t usages`.
func ParseUsages(b []byte) (Usages, error) {
	u := Usages{Engines: map[string]float64{}}
	seen := false
	for _, l := range lines(b) {
		engine, isEngine := usageEngines[l.label]
		if !isEngine && l.label != "HBM Bandwidth Usage Rate(%)" {
			if strings.HasSuffix(l.label, "Usage Rate(%)") {
				seen = true
			}
			continue
		}
		seen = true
		v, ok, err := uintValue(l.value)
		if err != nil {
			return Usages{}, fmt.Errorf("usages: %s: %w", l.label, err)
		}
		if !ok {
			continue
		}
		if v > 100 {
			return Usages{}, fmt.Errorf("usages: %s %v is above 100%%", l.label, v)
		}
		if isEngine {
			u.Engines[engine] = v / 100
		} else {
			u.HBMBandwidth = ascend.Value{V: v / 100, OK: true}
		}
	}
	if !seen {
		return Usages{}, fmt.Errorf("usages: %w (… Usage Rate(%%))", ErrNoData)
	}
	return u, nil
}

// ParseBoard reads the chip's VDie ID from `-t board -i N -c C`, its five
// words joined by '-' as MindCluster's npu-exporter labels it; "" where
// the product prints none (310P, 950).
func ParseBoard(b []byte) (vdie string, err error) {
	seen := false
	for _, l := range lines(b) {
		switch l.label {
		case "VDie ID":
			words := strings.Fields(l.value)
			if len(words) == 0 || len(words) > 8 {
				return "", fmt.Errorf("board: VDie ID %q: want up to 8 hex words", l.value)
			}
			for _, w := range words {
				if len(w) != 8 || !isHexCode(strings.ToUpper(w)) {
					return "", fmt.Errorf("board: VDie ID word %q is not 8 hex digits", w)
				}
			}
			return strings.ToUpper(strings.Join(words, "-")), nil
		case "Chip Name", "Board ID", "Chip Version":
			seen = true
		}
	}
	if !seen {
		return "", fmt.Errorf("board: %w (Chip Name, VDie ID)", ErrNoData)
	}
	return "", nil
}

// ParseVolt reads the chip's voltage from `-t volt -i N -c C` (Voltage(V),
// raw × 0.01 printed %.2f); ok is false where npu-smi printed NA (raw
// 0x7ffd-0x7fff).
func ParseVolt(b []byte) (volts float64, ok bool, err error) {
	for _, l := range lines(b) {
		if l.label != "Voltage(V)" && l.label != "Voltage (V)" {
			continue
		}
		if strings.EqualFold(l.value, "NA") {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(l.value, 64)
		if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
			return 0, false, fmt.Errorf("volt: Voltage(V) %q is not a voltage", l.value)
		}
		return v, true, nil
	}
	return 0, false, fmt.Errorf("volt: %w (Voltage(V))", ErrNoData)
}

// Common is one NPU chip's part of the card-level `-t common -i N`: its AI
// Core frequencies (rated and current), in MHz as printed.
type Common struct {
	RatedMHz, CurrentMHz ascend.Value
}

// ParseCommon reads `-t common -i N`, card level: one block per chip, each
// led by `Chip ID : c` (print_common_info; the MCU block, `Chip Name : mcu`,
// is skipped), keyed by that chip id. A 950 prints no Chip ID: its one
// block is chip "0".
func ParseCommon(b []byte) (map[string]Common, error) {
	out := map[string]Common{}
	chip, mcu, seen := "0", false, false
	for _, l := range lines(b) {
		switch l.label {
		case "Chip ID":
			if _, err := strconv.Atoi(l.value); err != nil {
				return nil, fmt.Errorf("common: Chip ID %q is not a number", l.value)
			}
			chip, mcu = l.value, false
			continue
		case "Chip Name":
			mcu = strings.EqualFold(l.value, "mcu")
			continue
		case "Aicore Freq(MHZ)", "Aicore Freq(MHz)", "Aicore curFreq(MHZ)", "Aicore curFreq(MHz)":
		default:
			if strings.HasSuffix(l.label, "Usage Rate(%)") || strings.HasPrefix(l.label, "Temperature") {
				seen = true
			}
			continue
		}
		seen = true
		if mcu {
			continue
		}
		v, ok, err := uintValue(l.value)
		if err != nil {
			return nil, fmt.Errorf("common: %s: %w", l.label, err)
		}
		c := out[chip]
		if strings.Contains(l.label, "cur") {
			c.CurrentMHz = ascend.Value{V: v, OK: ok}
		} else {
			c.RatedMHz = ascend.Value{V: v, OK: ok}
		}
		out[chip] = c
	}
	if !seen {
		return nil, fmt.Errorf("common: %w (Chip ID, Aicore Freq(MHZ), … Usage Rate(%%))", ErrNoData)
	}
	return out, nil
}

// Inventory is the card-level `-t board -i N` (print_ascend_board_info):
// the board's serial number and product name, printed on 910B, 910_93 and
// 950 servers; "" where not printed or NA.
type Inventory struct {
	SerialNumber, ProductName string
}

// maxInventoryLen bounds a label value read from the board query.
const maxInventoryLen = 128

// ParseCardBoard reads the serial number and product name of `-t board -i N`.
func ParseCardBoard(b []byte) (Inventory, error) {
	var inv Inventory
	seen := false
	for _, l := range lines(b) {
		var dst *string
		switch l.label {
		case "Serial Number":
			dst = &inv.SerialNumber
		case "Product Name":
			dst = &inv.ProductName
		case "Software Version", "Firmware Version", "Board ID", "PCIe Bus Info", "Chip Count":
			seen = true
			continue
		default:
			continue
		}
		seen = true
		v := l.value
		if strings.EqualFold(v, "NA") {
			v = ""
		}
		if len(v) > maxInventoryLen || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return Inventory{}, fmt.Errorf("board: %s %q is not a printable value of at most %d bytes", l.label, clip(v), maxInventoryLen)
		}
		*dst = v
	}
	if !seen {
		return Inventory{}, fmt.Errorf("board: %w (Serial Number, Product Name, Firmware Version)", ErrNoData)
	}
	return inv, nil
}
