package npusmi

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// Snapshot is one parsed `npu-smi info` run. It is shared between collectors
// and must be treated as read-only.
type Snapshot struct {
	// Version is the npu-smi version of the header line (`npu-smi 24.1.rc3`).
	Version string
	// DriverVersion is the `Version:` field of the same header line.
	DriverVersion string
	Chips         []Chip
	Processes     []ascend.Process
	// Warnings lists the rows or values that were dropped (or partly dropped)
	// because they did not parse or failed validation.
	Warnings []string
	// Notices holds lines npu-smi printed besides the table, such as the
	// driver `[WARNING]The driver package may not be completely installed…`.
	Notices []string
	// ProcessNPUs lists the NPUs the process table accounts for, by a
	// process row or a `No running processes found in NPU <id>` row; nil
	// when the output has no process table. npu-smi accounts for every NPU
	// there, so an NPU missing from a table that once listed all of them
	// means the output was cut (see the collector's completeness check).
	ProcessNPUs []string

	// hbm: the device table has an HBM layout (910, 910B, 910_93, 950),
	// for which npu-smi always prints the process table (SRC
	// print_total_info*); without one, the table cannot prove it is whole.
	hbm bool
}

// Chip is one chip block (a die on Atlas A3, a chip of a 300I Duo card).
// NPU and Chip are as printed; PhyID is set only where npu-smi prints it (A3);
// BusID is empty where npu-smi prints `NA`.
type Chip struct {
	ascend.ChipID
	PhyID, Name, BusID, Health        string
	HBMUsedBytes, HBMTotalBytes       ascend.Value
	MemoryUsedBytes, MemoryTotalBytes ascend.Value
	HugepagesUsed, HugepagesTotal     ascend.Value
	AICoreRatio                       ascend.Value
	PowerWatts                        ascend.Value
	TemperatureCelsius                ascend.Value
}

// HealthStates are the health strings npu-smi prints (its DCMI health index
// 0..4), in that order. Anything else is reported as UNKNOWN.
var HealthStates = []string{"OK", "Warning", "Alarm", "Critical", "UNKNOWN"}

// Errors Parse returns for outputs that hold no device table. They are wrapped
// with the line npu-smi printed, so errors.Is works and the log says what happened.
var (
	ErrDCMIInit = errors.New("npu-smi cannot initialise the DCMI driver library")
	ErrNoCard   = errors.New("npu-smi reports no NPU card on this server")
	ErrNoTable  = errors.New("no npu-smi info device table in the output")
	ErrNoChips  = errors.New("npu-smi info device table lists no chips")
	// ErrTruncated is a table cut short: a run killed or a pipe closed
	// while npu-smi printed. Such a run fails as a whole rather than
	// pass as a node with fewer chips or processes.
	ErrTruncated = errors.New("npu-smi info output is cut short")
)

// failureMarkers are whole-output failures npu-smi prints instead of a table
// (npu-smi exits 0 on some of them, so the text is what tells).
var failureMarkers = []struct {
	substr string
	err    error
	hint   string
}{
	{"dcmi module initialize failed", ErrDCMIInit,
		"usually the driver or firmware was upgraded without a reboot, or the exporter lacks access to /dev/davinci*"},
	{"libdcmi.so failed to load", ErrDCMIInit, "is the Ascend driver installed and on LD_LIBRARY_PATH?"},
	{"There is no NPU card on this server", ErrNoCard, ""},
}

const (
	kib = 1024
	mib = 1024 * 1024
	gib = 1024 * 1024 * 1024
)

// scale converts a printed number into the exported base unit: v*mul/div.
// (Dividing percentages by 100 keeps 82% exactly 0.82.)
type scale struct{ mul, div float64 }

func (s scale) apply(v float64) float64 { return v * s.mul / s.div }

// unitScale maps a header unit to its scale. npu-smi's MB is MiB;
// percentages become ratios.
var unitScale = map[string]scale{
	"B": {1, 1}, "KB": {kib, 1}, "MB": {mib, 1}, "GB": {gib, 1},
	"W": {1, 1}, "C": {1, 1}, "page": {1, 1}, "%": {1, 100},
}

type target int

const (
	tUnknown target = iota
	tPower
	tTemp
	tHugepages
	tAICore
	tMemory
	tHBM
)

// headerFields maps a header token (lower case, unit stripped) to the chip
// field it fills. A token not listed here still takes its position in the row.
var headerFields = map[string]target{
	"power":           tPower,
	"temp":            tTemp,
	"hugepages-usage": tHugepages,
	"aicore":          tAICore,
	"npu util":        tAICore,
	"memory-usage":    tMemory,
	"hbm-usage":       tHBM,
}

// field is one token of a header cell such as `Power(W)` or `HBM-Usage(MB)`.
type field struct {
	label  string // as printed, for messages
	target target
	scale  scale
	pair   bool // a `used / total` pair rather than one number
}

var (
	headerTokenRe = regexp.MustCompile(`([^()]+?)\(([^)]*)\)`)
	pairRe        = regexp.MustCompile(`(\S+?)\s*/\s*(\S+)`)
	numberRe      = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
	intRe         = regexp.MustCompile(`^[0-9]{1,9}$`)
	busIDRe       = regexp.MustCompile(`^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]+$`)
	versionRe     = regexp.MustCompile(`npu-smi\s+(\S+)\s+Version:\s*(\S+)`)
)

func parseHeaderFields(cell string) ([]field, error) {
	var out []field
	for _, m := range headerTokenRe.FindAllStringSubmatch(cell, -1) {
		name := strings.ToLower(strings.TrimSpace(m[1]))
		unit := strings.TrimSpace(m[2])
		f := field{label: strings.TrimSpace(m[0]), target: headerFields[name], pair: strings.HasSuffix(name, "usage")}
		sc, ok := unitScale[unit]
		if !ok && f.target != tUnknown {
			return nil, fmt.Errorf("unknown unit %q in header field %q", unit, f.label)
		}
		f.scale = sc
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fields in header cell %q", cell)
	}
	return out, nil
}

// devLayout says where each value sits in the two rows of a chip block. It is
// read from the two header rows, so wider or reordered columns still parse.
type devLayout struct {
	cells1, cells2 int
	npuCol         int
	nameCol        int // == npuCol when `NPU   Name` share one cell
	healthCol      int
	statsCol       int
	stats          []field

	chipCol  int // -1: no chip column (Ascend 950), the chip index is "0"
	phyID    bool
	busCol   int
	utilCol  int
	util     []field
	haveRow2 bool
}

// procLayout says where each value sits in a process row, read from the header.
type procLayout struct {
	cells    int
	npuCol   int
	pidCol   int
	cpidCol  int
	nameCol  int
	memCol   int
	memScale scale
}

type parseState int

const (
	stBefore parseState = iota
	stDevices
	stProcesses
)

type procKey struct {
	npu, chip string
	pid       int
}

// nameRow is the first row of a chip block, kept until its chip row arrives.
type nameRow struct {
	line string
	chip Chip
}

type parser struct {
	snap      Snapshot
	state     parseState
	dev       devLayout
	proc      procLayout
	pending   *nameRow
	seenChip  map[ascend.ChipID]bool
	seenProc  map[procKey]bool
	firstLine string
	lastTable string // the last line of the table (a row or a separator)
	procNPUs  map[string]bool
}

// noProcessesRe is npu-smi's row for an NPU without processes.
var noProcessesRe = regexp.MustCompile(`No running processes found in NPU\s+(\d+)`)

// Parse turns the output of `npu-smi info` into a Snapshot. It does no I/O.
// It returns an error for outputs that hold no usable device table (DCMI
// failure, no card, other sub-commands, garbage); rows it cannot read are
// dropped and listed in Snapshot.Warnings.
func Parse(out []byte) (*Snapshot, error) {
	p := parser{seenChip: map[ascend.ChipID]bool{}, seenProc: map[procKey]bool{}}
	for _, raw := range bytes.Split(out, []byte("\n")) {
		// Label values must be valid UTF-8, whatever the bytes were.
		line := strings.TrimRight(strings.ToValidUTF8(string(raw), "\uFFFD"), " \t\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			continue
		}
		if p.firstLine == "" {
			p.firstLine = trimmed
		}
		switch trimmed[0] {
		case '+':
			p.lastTable = trimmed
			continue // separators differ between hosts: never rely on them
		case '|':
			p.lastTable = trimmed
			if err := p.row(trimmed); err != nil {
				return nil, err
			}
			continue
		}
		for _, m := range failureMarkers {
			if strings.Contains(trimmed, m.substr) {
				if m.hint != "" {
					return nil, fmt.Errorf("%w: %q (%s)", m.err, clip(trimmed), m.hint)
				}
				return nil, fmt.Errorf("%w: %q", m.err, clip(trimmed))
			}
		}
		if strings.HasPrefix(trimmed, "[WARNING]") || strings.HasPrefix(trimmed, "[ERROR]") {
			p.snap.Notices = append(p.snap.Notices, trimmed)
			continue
		}
		if p.state != stBefore {
			p.warn("unexpected line %q", trimmed)
		}
	}
	if p.state == stBefore {
		if p.firstLine == "" {
			return nil, fmt.Errorf("%w: the output is empty", ErrNoTable)
		}
		return nil, fmt.Errorf("%w: it starts with %q", ErrNoTable, clip(p.firstLine))
	}
	// A complete table ends with a line of its own and a closing separator;
	// an NPU row must have its chip row.
	switch {
	case len(out) > 0 && out[len(out)-1] != '\n':
		return nil, fmt.Errorf("%w: the output ends mid-line (%d bytes)", ErrTruncated, len(out))
	case strings.HasPrefix(p.lastTable, "|"):
		return nil, fmt.Errorf("%w: the table is not closed after row %q", ErrTruncated, clip(p.lastTable))
	case p.pending != nil:
		return nil, fmt.Errorf("%w: NPU row %q has no chip row", ErrTruncated, clip(p.pending.line))
	}
	if p.procNPUs != nil {
		// npu-smi prints the process table NPU by NPU after the whole
		// device table, and accounts for every NPU there (a process row or
		// "No running processes found in NPU <id>"): a process table that
		// stops before an NPU of the device table was cut, even when the
		// cut fell on a separator.
		for _, c := range p.snap.Chips {
			if !p.procNPUs[c.NPU] {
				return nil, fmt.Errorf("%w: the process table stops before NPU %s (npu-smi lists every NPU there)", ErrTruncated, c.NPU)
			}
		}
		p.snap.ProcessNPUs = make([]string, 0, len(p.procNPUs))
		for npu := range p.procNPUs {
			p.snap.ProcessNPUs = append(p.snap.ProcessNPUs, npu)
		}
		slices.Sort(p.snap.ProcessNPUs)
	}
	if len(p.snap.Chips) == 0 {
		if len(p.snap.Warnings) > 0 {
			return nil, fmt.Errorf("%w (%d rows dropped, first: %s)", ErrNoChips, len(p.snap.Warnings), p.snap.Warnings[0])
		}
		return nil, ErrNoChips
	}
	return &p.snap, nil
}

func clip(s string) string {
	const max = 160
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

func (p *parser) warn(format string, args ...any) {
	p.snap.Warnings = append(p.snap.Warnings, fmt.Sprintf(format, args...))
}

// splitRow splits `| a | b |` into trimmed cells.
func splitRow(line string) []string {
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func isProcessHeader(cells []string) bool {
	for _, c := range cells {
		if strings.HasPrefix(strings.ToLower(c), "process id") {
			return true
		}
	}
	return false
}

func isDeviceHeader(cells []string) bool {
	if len(cells) < 2 || !strings.HasPrefix(cells[0], "NPU") {
		return false
	}
	for _, c := range cells {
		if c == "Health" {
			return true
		}
	}
	return false
}

func (p *parser) row(line string) error {
	cells := splitRow(line)
	switch {
	case isDeviceHeader(cells):
		if p.state != stBefore {
			p.warn("second device table header %q ignored", line)
			return nil
		}
		if err := p.deviceHeader1(cells); err != nil {
			return fmt.Errorf("parse npu-smi header %q: %w", line, err)
		}
		p.state = stDevices
		return nil
	case isProcessHeader(cells):
		p.flushPending()
		if p.procNPUs == nil {
			p.procNPUs = map[string]bool{}
		}
		if err := p.processHeader(cells); err != nil {
			p.warn("process table header %q: %v; process rows skipped", line, err)
			p.proc = procLayout{}
		}
		p.state = stProcesses
		return nil
	}
	switch p.state {
	case stBefore:
		if m := versionRe.FindStringSubmatch(line); m != nil {
			p.snap.Version, p.snap.DriverVersion = m[1], m[2]
		}
	case stDevices:
		if !p.dev.haveRow2 {
			if err := p.deviceHeader2(cells); err != nil {
				return fmt.Errorf("parse npu-smi header %q: %w", line, err)
			}
			return nil
		}
		p.deviceRow(line, cells)
	case stProcesses:
		p.processRow(line, cells)
	}
	return nil
}

func indexOf(cells []string, match func(string) bool) int {
	for i, c := range cells {
		if match(c) {
			return i
		}
	}
	return -1
}

func (p *parser) deviceHeader1(cells []string) error {
	d := devLayout{cells1: len(cells), npuCol: 0}
	d.healthCol = indexOf(cells, func(c string) bool { return c == "Health" })
	d.statsCol = indexOf(cells, func(c string) bool { return strings.Contains(c, "Power") })
	if strings.Contains(cells[0], "Name") {
		d.nameCol = 0
	} else {
		d.nameCol = indexOf(cells, func(c string) bool { return c == "Name" })
	}
	if d.healthCol < 0 || d.statsCol < 0 || d.nameCol < 0 {
		return errors.New("expected NPU, Name, Health and Power(W) columns")
	}
	var err error
	if d.stats, err = parseHeaderFields(cells[d.statsCol]); err != nil {
		return err
	}
	p.dev = d
	return nil
}

func (p *parser) deviceHeader2(cells []string) error {
	d := &p.dev
	d.cells2 = len(cells)
	d.busCol = indexOf(cells, func(c string) bool { return c == "Bus-Id" })
	d.utilCol = indexOf(cells, func(c string) bool { return strings.Contains(c, "Memory-Usage") })
	if d.busCol < 0 || d.utilCol < 0 {
		return errors.New("expected a second header row with Bus-Id and Memory-Usage(MB) columns")
	}
	d.chipCol = -1
	if strings.HasPrefix(cells[0], "Chip") {
		d.chipCol = 0
		d.phyID = strings.Contains(cells[0], "Phy-ID")
	}
	var err error
	if d.util, err = parseHeaderFields(cells[d.utilCol]); err != nil {
		return err
	}
	d.haveRow2 = true
	p.snap.hbm = strings.Contains(cells[d.utilCol], "HBM")
	return nil
}

func isHealth(s string) bool {
	for _, h := range HealthStates {
		if strings.EqualFold(s, h) {
			return true
		}
	}
	return false
}

func isBusIDCell(s string) bool {
	return busIDRe.MatchString(s) || isPlaceholder(s)
}

func isPlaceholder(s string) bool {
	switch s {
	case "NA", "N/A", "-", "--", "":
		return true
	}
	return false
}

// deviceRow handles one row of the device table. A chip block is a name row
// (NPU id, name, health, power…) followed by a chip row (chip index, Bus-Id,
// utilisation, memory). Rows are told apart by their content, not by the
// separators around them.
func (p *parser) deviceRow(line string, cells []string) {
	d := &p.dev
	if strings.Contains(line, "No running processes found") {
		return
	}
	at := func(i int) string {
		if i < len(cells) {
			return cells[i]
		}
		return ""
	}
	chipRow := !isHealth(at(d.healthCol)) && (isBusIDCell(at(d.busCol)) || p.pending != nil)
	if chipRow {
		if len(cells) != d.cells2 {
			p.warn("chip row %q: %d columns, header has %d; row dropped", line, len(cells), d.cells2)
			p.pending = nil
			return
		}
		p.chipRow(line, cells)
		return
	}
	p.flushPending()
	if len(cells) != d.cells1 {
		p.warn("NPU row %q: %d columns, header has %d; row dropped", line, len(cells), d.cells1)
		return
	}
	var c Chip
	npuTokens := strings.Fields(cells[d.npuCol])
	if len(npuTokens) == 0 || !intRe.MatchString(npuTokens[0]) {
		p.warn("NPU row %q: no NPU id; row dropped", line)
		return
	}
	c.NPU = npuTokens[0]
	if d.nameCol == d.npuCol {
		c.Name = strings.Join(npuTokens[1:], " ")
	} else {
		c.Name = cells[d.nameCol]
	}
	c.Health = cells[d.healthCol]
	if !isHealth(c.Health) {
		p.warn("NPU %s: unknown health %q reported as UNKNOWN", c.NPU, c.Health)
	}
	p.fillStats(&c, cells[d.statsCol], d.stats, line)
	p.pending = &nameRow{line: line, chip: c}
}

func (p *parser) flushPending() {
	if p.pending != nil {
		p.warn("NPU row %q has no chip row; dropped", p.pending.line)
		p.pending = nil
	}
}

func (p *parser) chipRow(line string, cells []string) {
	d := &p.dev
	if p.pending == nil {
		p.warn("chip row %q without an NPU row; dropped", line)
		return
	}
	c := p.pending.chip
	p.pending = nil
	c.Chip = "0"
	if d.chipCol >= 0 {
		t := strings.Fields(cells[d.chipCol])
		if len(t) == 0 || !intRe.MatchString(t[0]) {
			p.warn("chip row %q: no chip index; block of NPU %s dropped", line, c.NPU)
			return
		}
		c.Chip = t[0]
		if d.phyID && len(t) > 1 && !isPlaceholder(t[1]) {
			c.PhyID = t[1]
		}
	}
	if bus := cells[d.busCol]; !isPlaceholder(bus) {
		c.BusID = bus
	}
	p.fillStats(&c, cells[d.utilCol], d.util, line)
	k := c.ChipID
	if p.seenChip[k] {
		p.warn("NPU %s chip %s listed twice; second block dropped", c.NPU, c.Chip)
		return
	}
	p.seenChip[k] = true
	p.snap.Chips = append(p.snap.Chips, c)
}

// fillStats reads a cell such as `70.0   34   0 / 0` against its header
// fields: `used / total` pairs go to pair fields in order, the remaining
// numbers to single fields in order.
func (p *parser) fillStats(c *Chip, cell string, fields []field, line string) {
	var pairs [][2]string
	rest := pairRe.ReplaceAllStringFunc(cell, func(m string) string {
		sm := pairRe.FindStringSubmatch(m)
		pairs = append(pairs, [2]string{sm[1], sm[2]})
		return " "
	})
	scalars := strings.Fields(rest)
	var nPairs, nScalars int
	for _, f := range fields {
		if f.pair {
			nPairs++
		} else {
			nScalars++
		}
	}
	okPairs := len(pairs) == nPairs
	okScalars := len(scalars) == nScalars
	if !okPairs || !okScalars {
		p.warn("NPU %s: cell %q has %d values and %d pairs, header expects %d and %d; mismatched values dropped",
			c.NPU, cell, len(scalars), len(pairs), nScalars, nPairs)
	}
	var si, pi int
	for _, f := range fields {
		if f.pair {
			if okPairs {
				used, total := p.pairValue(c.NPU, f, pairs[pi])
				if u, t := pairTarget(c, f.target); u != nil {
					*u, *t = used, total
				}
			}
			pi++
			continue
		}
		if okScalars {
			v := p.scalarValue(c.NPU, f, scalars[si])
			if dst := scalarTarget(c, f.target); dst != nil {
				*dst = v
			}
		}
		si++
	}
}

func pairTarget(c *Chip, t target) (used, total *ascend.Value) {
	switch t {
	case tHugepages:
		return &c.HugepagesUsed, &c.HugepagesTotal
	case tMemory:
		return &c.MemoryUsedBytes, &c.MemoryTotalBytes
	case tHBM:
		return &c.HBMUsedBytes, &c.HBMTotalBytes
	}
	return nil, nil
}

func scalarTarget(c *Chip, t target) *ascend.Value {
	switch t {
	case tPower:
		return &c.PowerWatts
	case tTemp:
		return &c.TemperatureCelsius
	case tAICore:
		return &c.AICoreRatio
	}
	return nil
}

// number reads a non-negative decimal; placeholders give OK=false and no error.
func number(s string, sc scale) (ascend.Value, error) {
	if isPlaceholder(s) {
		return ascend.Value{}, nil
	}
	if !numberRe.MatchString(s) {
		return ascend.Value{}, fmt.Errorf("not a number: %q", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return ascend.Value{}, fmt.Errorf("not a number: %q", s)
	}
	return ascend.Value{V: sc.apply(f), OK: true}, nil
}

func (p *parser) scalarValue(npu string, f field, s string) ascend.Value {
	v, err := number(s, f.scale)
	if err != nil {
		p.warn("NPU %s %s: %v", npu, f.label, err)
		return ascend.Value{}
	}
	if f.target == tAICore && v.OK && v.V > 1 {
		p.warn("NPU %s %s: %s%% is above 100%%; dropped", npu, f.label, s)
		return ascend.Value{}
	}
	return v
}

// pairValue reads `used / total`. `0 / 0` is npu-smi's placeholder (910B
// prints it for DDR); used > total is nonsense and drops the pair.
func (p *parser) pairValue(npu string, f field, pair [2]string) (used, total ascend.Value) {
	u, err1 := number(pair[0], f.scale)
	t, err2 := number(pair[1], f.scale)
	if err := errors.Join(err1, err2); err != nil {
		p.warn("NPU %s %s %s/%s: %v; dropped", npu, f.label, pair[0], pair[1], err)
		return ascend.Value{}, ascend.Value{}
	}
	if u.OK && t.OK {
		if u.V == 0 && t.V == 0 {
			return ascend.Value{}, ascend.Value{}
		}
		if u.V > t.V {
			p.warn("NPU %s %s: used %s above total %s; dropped", npu, f.label, pair[0], pair[1])
			return ascend.Value{}, ascend.Value{}
		}
	}
	return u, t
}

func (p *parser) processHeader(cells []string) error {
	l := procLayout{cells: len(cells), npuCol: 0, pidCol: -1, cpidCol: -1, nameCol: -1, memCol: -1}
	for i, c := range cells {
		low := strings.ToLower(c)
		switch {
		case strings.HasPrefix(low, "process id in container"):
			l.cpidCol = i
		case strings.HasPrefix(low, "process id"):
			l.pidCol = i
		case strings.HasPrefix(low, "process name"):
			l.nameCol = i
		case strings.HasPrefix(low, "process memory"):
			l.memCol = i
			m := headerTokenRe.FindStringSubmatch(c)
			if m == nil {
				return fmt.Errorf("no unit in %q", c)
			}
			sc, ok := unitScale[strings.TrimSpace(m[2])]
			if !ok || sc.div != 1 {
				return fmt.Errorf("unknown unit in %q", c)
			}
			l.memScale = sc
		}
	}
	if !strings.HasPrefix(cells[0], "NPU") || l.pidCol < 0 || l.memCol < 0 {
		return errors.New("expected NPU, Process id and Process memory columns")
	}
	p.proc = l
	return nil
}

func (p *parser) processRow(line string, cells []string) {
	l := p.proc
	if strings.Contains(line, "No running processes found") {
		if m := noProcessesRe.FindStringSubmatch(line); m != nil {
			p.procNPUs[m[1]] = true
		}
		return
	}
	// The row accounts for its NPU even when it is dropped below: the
	// table was printed that far, which is what completeness asks.
	if f := strings.Fields(cells[0]); len(f) > 0 && intRe.MatchString(f[0]) {
		p.procNPUs[f[0]] = true
	}
	if l.cells == 0 {
		return // header was unusable; already warned
	}
	if len(cells) != l.cells {
		p.warn("process row %q: %d columns, header has %d; row dropped", line, len(cells), l.cells)
		return
	}
	ids := strings.Fields(cells[l.npuCol])
	if len(ids) == 0 || len(ids) > 2 || !intRe.MatchString(ids[0]) || (len(ids) == 2 && !intRe.MatchString(ids[1])) {
		p.warn("process row %q: no NPU/chip ids; row dropped", line)
		return
	}
	pr := ascend.Process{ChipID: ascend.ChipID{NPU: ids[0], Chip: "0"}}
	if len(ids) == 2 {
		pr.Chip = ids[1]
	}
	pidStr := cells[l.pidCol]
	pid, err := strconv.Atoi(pidStr)
	if err != nil || !intRe.MatchString(pidStr) || pid <= 0 {
		p.warn("process row %q: bad pid %q; row dropped", line, pidStr)
		return
	}
	pr.PID = pid
	if l.nameCol >= 0 {
		pr.Name = cells[l.nameCol]
	}
	if l.cpidCol >= 0 {
		pr.ContainerPID = cells[l.cpidCol]
	}
	if pr.MemoryBytes, err = number(cells[l.memCol], l.memScale); err != nil {
		p.warn("process %d: memory: %v; value dropped", pid, err)
	}
	p.procNPUs[pr.NPU] = true
	k := procKey{pr.NPU, pr.Chip, pr.PID}
	if p.seenProc[k] {
		p.warn("process %d on NPU %s chip %s listed twice; second row dropped", pid, pr.NPU, pr.Chip)
		return
	}
	p.seenProc[k] = true
	p.snap.Processes = append(p.snap.Processes, pr)
}
