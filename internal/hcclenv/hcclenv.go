// Package hcclenv is the one definition of the HCCL settings hccl_exporter
// reads: each variable's name, HCCL's default, the range HCCL accepts, the
// unit a plog line prints it in, what makes it effective, and how each CANN
// era prints it. The cannlog collector (which exports the values), the
// headroom model (which computes with them) and the offline diagnose report
// all take these facts from here, so that they cannot drift apart.
//
// It also says which variables HCCL requires to agree across the ranks of
// a communicator (Consistent, settings.go): a process's values of those are
// its settings set, and SettingsID names the set with the short stable hash
// the exported series carry as their `settings` label.
//
// Ranges are HCCL's own: a value outside them makes HCCL refuse the variable
// at communicator init (HCOMM externalinput.cc / env_config.cc return
// HCCL_E_PARA), so a printed value outside the range never is the value a
// job runs with and must not be exported as a number.
package hcclenv

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Variable names the product computes with.
const (
	BuffSize         = "HCCL_BUFFSIZE"
	QPsPerConnection = "HCCL_RDMA_QPS_PER_CONNECTION"
	ConnectTimeout   = "HCCL_CONNECT_TIMEOUT"
	ExecTimeout      = "HCCL_EXEC_TIMEOUT"
	MultiQPThreshold = "HCCL_MULTI_QP_THRESHOLD"
	IntraRoCEEnable  = "HCCL_INTRA_ROCE_ENABLE"
	IntraPCIeEnable  = "HCCL_INTRA_PCIE_ENABLE"
	InterHCCSDisable = "HCCL_INTER_HCCS_DISABLE"
	QPPortConfigPath = "HCCL_RDMA_QP_PORT_CONFIG_PATH"
	RDMATimeout      = "HCCL_RDMA_TIMEOUT"
	RDMARetryCnt     = "HCCL_RDMA_RETRY_CNT"
	RDMATC           = "HCCL_RDMA_TC"
	RDMASL           = "HCCL_RDMA_SL"
)

// HCCL's defaults and limits that code computes with (the table below
// holds the same numbers).
const (
	// DefaultQPsPerConnection is HCCL_RDMA_QPS_PER_CONNECTION when unset.
	DefaultQPsPerConnection = 1
	// MaxQPsPerConnection is HCCL_QPS_PER_CONNECTION_MAX: larger values
	// fail communicator init.
	MaxQPsPerConnection = 32
	// DefaultBuffSizeBytes is HCCL_BUFFSIZE when unset: 200 MB, where
	// HCCL's MB is MiB.
	DefaultBuffSizeBytes = 200 << 20
)

// Device types HCCL prints as deviceType[N] (DevType, HCOMM
// dtype_common.h). Multi-QP applies on 910B and 910_93 only; superpods are
// 910_93.
const (
	DevType910    = 0
	DevType910B   = 2 // Atlas A2
	DevType910_93 = 4 // Atlas A3
	DevType950    = 6
)

// Kind says how a value is read.
type Kind int

const (
	// Number values are decimal numbers, converted to base units.
	Number Kind = iota
	// Bool values are 0/1 or TRUE/FALSE (case-insensitive).
	Bool
	// Text values are kept as printed.
	Text
)

// Setting is what hccl_exporter knows about one HCCL variable.
type Setting struct {
	Name string
	Kind Kind
	// Default is HCCL's value when the variable is unset, in base units
	// (bytes, seconds, count; 1/0 for Bool).
	Default float64
	// Min and Max bound the values HCCL accepts, in the unit HCCL reads
	// the variable in (Unit); HCCL refuses others at init.
	Min, Max float64
	// Step, when set, is the granularity HCCL requires: the value must be
	// a multiple of it (HCCL_RDMA_TC: 4, the DSCP field of the ToS byte).
	Step float64
	// Unit is the unit of the variable as the user sets it and as HCCL
	// prints it ("M" = MiB, "s", "KB" = KiB, "" = a count); a line that
	// prints no unit is read in this unit.
	Unit string
	// Effective says what makes the value take effect, from HCCL's docs
	// and source.
	Effective string
	// Wordings are the plog forms that print it, oldest era first
	// (reference: cann-log-eras.md §3). Tests parse each one.
	Wordings []Wording
}

// Wording is one way an era prints a setting; %v stands for the value.
type Wording struct {
	Era, Format string
}

// unitScale converts a printed unit to base units (bytes, seconds).
var unitScale = map[string]float64{
	"":  1,
	"B": 1, "M": 1 << 20, "MB": 1 << 20, "K": 1 << 10, "KB": 1 << 10, "G": 1 << 30, "GB": 1 << 30,
	"s": 1, "ms": 1e-3,
}

// Eras, as docs/cannlog.md names them.
const (
	Era2023     = "2023 [EVENT]"
	EraUntagged = "2024–2025 untagged"
	EraTagged   = "2026 [HCCL_ENV]"
)

// table is the settings definition. Sources: HCCL docs
// (docs/zh/user_guide/.../hccl_env/*.md), HCOMM externalinput.cc.
var table = []Setting{
	{Name: BuffSize, Kind: Number, Default: DefaultBuffSizeBytes, Min: 1, Max: math.MaxUint32, Unit: "M",
		Effective: "every communicator created after it is read; HcclCommConfig.hcclBufferSize ([Load] comm config bufferSize) " +
			"overrides it for one communicator. Each communicator allocates 2 × it + 1 MiB at its first collective.",
		Wordings: []Wording{
			{EraUntagged, "HCCL_BUFFSIZE set by default to [%v]M"},
			{EraUntagged, "HCCL_BUFFSIZE set by environment to [%v]M"},
			{EraTagged, "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [%v]M"},
		}},
	{Name: QPsPerConnection, Kind: Number, Default: DefaultQPsPerConnection, Min: 1, Max: MaxQPsPerConnection, Unit: "",
		Effective: "op-base (single-operator) mode on 910B and 910_93 only; N > 1 creates N + 1 QPs per connection " +
			"(transport_ibverbs.cc CreateQp); hccn_tool -s multi_qp, NSLB and HCCL_RDMA_QP_PORT_CONFIG_PATH take " +
			"precedence. Recommended [1, 8].",
		Wordings: []Wording{
			{EraUntagged, "HCCL_RDMA_QPS_PER_CONNECTION is set to default value [%v]"},
			{EraUntagged, "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%v]"},
			{EraTagged, "[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%v]"},
		}},
	{Name: ConnectTimeout, Kind: Number, Default: 120, Min: 120, Max: 7200, Unit: "s",
		Effective: "link setup (socket establishment) waits this plus 20 s.",
		Wordings: []Wording{
			{Era2023, "environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[%v]"},
			{EraUntagged, "HCCL_CONNECT_TIMEOUT set by environment to [%v]s"},
			{EraTagged, "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by default to [%v]s"},
		}},
	{Name: ExecTimeout, Kind: Number, Default: 1836, Min: 0, Max: 2147483647, Unit: "s",
		Effective: "notify wait of a running collective; with HCCL_OP_EXPANSION_MODE=AIV defaults to and is capped at 1091 s (EffectiveExecTimeout).",
		Wordings: []Wording{
			{Era2023, "ExecTimeOut is set to timeOut[%v]"},
			{EraUntagged, "HCCL_EXEC_TIMEOUT set by environment to [%v]s"},
			{EraTagged, "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [%v]s"},
		}},
	{Name: MultiQPThreshold, Kind: Number, Default: 512 << 10, Min: 1, Max: 8192, Unit: "KB",
		Effective: "with multi-QP, data below it per QP uses one QP.",
		Wordings: []Wording{
			{EraUntagged, "HCCL_MULTI_QP_THRESHOLD is set to default value [%v]KB"},
			{EraUntagged, "environmental variable HCCL_MULTI_QP_THRESHOLD is set to [%v]KB"},
			// Ascend 950 prints it converted to bytes (HCOMM-HEAD
			// ascend950 base_config_legacy.cc:133).
			{EraTagged, "[HCCL_ENV] HCCL_MULTI_QP_THRESHOLD set by environment to [%v]B"},
		}},
	{Name: IntraRoCEEnable, Kind: Bool, Default: 0, Min: 0, Max: 1,
		Effective: "only on PCIe-connected products (Atlas 300T Pro, Atlas 200T A2 Box16: isStandardCard[1]); on HCCS-connected " +
			"servers it adds no same-server RoCE links. Not allowed together with HCCL_INTRA_PCIE_ENABLE=1.",
		Wordings: []Wording{
			{EraUntagged, "HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [%v]"},
			{EraTagged, "[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by environment to [0], HCCL_INTRA_ROCE_ENABLE set by environment to [%v]"},
		}},
	{Name: IntraPCIeEnable, Kind: Bool, Default: 1, Min: 0, Max: 1,
		Effective: "same-server links over PCIe/HCCS (default 1).",
		Wordings: []Wording{
			{EraUntagged, "HCCL_INTRA_PCIE_ENABLE set by default to [%v], HCCL_INTRA_ROCE_ENABLE set by default to [0]"},
		}},
	{Name: InterHCCSDisable, Kind: Bool, Default: 0, Min: 0, Max: 1,
		Effective: "A3 (910_93) superpods only: TRUE makes links between servers of one superpod RoCE instead of HCCS (comm_base.cc IsSupportInterHccs).",
		Wordings: []Wording{
			{EraUntagged, "environmental variable HCCL_INTER_HCCS_DISABLE is set to [%v], interHccsDisable[1]"},
		}},
	// Max is the largest value any device accepts: 24 on 910 (A1), 20 on
	// 910B and 910_93 (HCOMM-HEAD env_config.h HCCL_RDMA_TIMEOUT_MAX = 24,
	// HCCL_RDMA_TIMEOUT_MAX_910_93 = 20, applied per device type by
	// env_config.cc); a settings line does not say the device, so 21–24
	// are not refused here.
	{Name: RDMATimeout, Kind: Number, Default: 20, Min: 5, Max: 24, Unit: "",
		Effective: "RoCE retransmission timeout exponent (4.096 µs × 2^value per try); at most 24 on 910, 20 on 910B and 910_93.",
		Wordings:  []Wording{{EraUntagged, "HCCL_RDMA_TIMEOUT set by default to [%v]"}}},
	{Name: RDMARetryCnt, Kind: Number, Default: 7, Min: 1, Max: 7, Unit: "",
		Effective: "RoCE retransmissions before an error CQE.",
		Wordings:  []Wording{{EraUntagged, "HCCL_RDMA_RETRY_CNT set by default to [%v]"}}},
	// HCCL docs HCCL_RDMA_TC.md: "取值范围为[0,255]，且需要配置为4的整数倍，默认值为132"
	// (bits 0-1 of the ToS byte are 0, bits 2-7 the DSCP).
	{Name: RDMATC, Kind: Number, Default: 132, Min: 0, Max: 255, Step: 4, Unit: "",
		Effective: "RoCE traffic class (DSCP × 4): a multiple of 4.",
		Wordings:  []Wording{{EraUntagged, "HCCL_RDMA_TC set by default to [%v]"}}},
	{Name: RDMASL, Kind: Number, Default: 4, Min: 0, Max: 7, Unit: "",
		Effective: "RoCE service level (priority).",
		Wordings:  []Wording{{EraUntagged, "HCCL_RDMA_SL set by default to [%v]"}}},
	{Name: QPPortConfigPath, Kind: Text,
		Effective: "per-IP-pair QP source ports; takes precedence over HCCL_RDMA_QPS_PER_CONNECTION.",
		Wordings:  []Wording{{EraUntagged, "HCCL_RDMA_QP_PORT_CONFIG_PATH set by environment to [%v], realpath[/etc/qp.cfg]"}}},
}

var index = func() map[string]*Setting {
	m := make(map[string]*Setting, len(table))
	for i := range table {
		m[table[i].Name] = &table[i]
	}
	return m
}()

// Lookup returns the definition of a variable.
func Lookup(name string) (Setting, bool) {
	s, ok := index[name]
	if !ok {
		return Setting{}, false
	}
	return *s, true
}

// All returns a copy of the definitions, in table order.
func All() []Setting {
	out := make([]Setting, len(table))
	copy(out, table)
	return out
}

// Default returns HCCL's default of a defined variable in base units.
func Default(name string) float64 {
	if s, ok := index[name]; ok {
		return s.Default
	}
	return math.NaN()
}

// Max returns the largest value HCCL accepts for a defined variable, in
// its own unit.
func Max(name string) float64 {
	if s, ok := index[name]; ok {
		return s.Max
	}
	return math.NaN()
}

// ErrOutOfRange marks a value HCCL would refuse.
type ErrOutOfRange struct {
	Name  string
	Value string
	Min   float64
	Max   float64
	// Step is set when the value is in range but not a multiple of it.
	Step float64
}

func (e *ErrOutOfRange) Error() string {
	if e.Step > 0 {
		return fmt.Sprintf("%s = %q is not a multiple of %v as HCCL requires; HCCL refuses it at init, so it is not exported as a number",
			e.Name, e.Value, e.Step)
	}
	return fmt.Sprintf("%s = %q is outside the range HCCL accepts [%v, %v]; HCCL refuses it at init, so it is not exported as a number",
		e.Name, e.Value, e.Min, e.Max)
}

// Value reads the value printed for name (with the unit printed after it,
// "" if none) into base units. ok is false when the value is not a number
// (text variables, "EmptyString", an empty value). err is an
// *ErrOutOfRange when name is defined here and the value lies outside
// HCCL's range, or is NaN or infinite: such a value must not be exported
// as a number. Variables not defined here are converted without a range
// check (finite numbers only).
func Value(name, printed, unit string) (v float64, ok bool, err error) {
	def := index[name]
	if def != nil && def.Kind == Bool {
		switch strings.ToUpper(printed) {
		case "TRUE":
			return 1, true, nil
		case "FALSE":
			return 0, true, nil
		}
	}
	if printed == "" || def != nil && def.Kind == Text {
		return 0, false, nil
	}
	f, perr := strconv.ParseFloat(printed, 64)
	if perr != nil {
		// ParseFloat reports a range error for 1e400 with f = ±Inf: HCCL
		// cannot hold it either.
		if ne, isNum := perr.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return 0, false, outOfRange(name, printed, def)
		}
		return 0, false, nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false, outOfRange(name, printed, def)
	}
	if unit == "" && def != nil {
		unit = def.Unit
	}
	scale, known := unitScale[unit]
	if !known {
		scale = 1
	}
	if def != nil {
		// The range is in the variable's own unit: convert the printed
		// value to it first (a line may print KB where HCCL reads MB).
		own := f * scale / unitScale[def.Unit]
		if own < def.Min || own > def.Max {
			return 0, false, outOfRange(name, printed, def)
		}
		if def.Step > 0 && math.Mod(own, def.Step) != 0 {
			e := outOfRange(name, printed, def).(*ErrOutOfRange)
			e.Step = def.Step
			return 0, false, e
		}
	}
	return f * scale, true, nil
}

func outOfRange(name, printed string, def *Setting) error {
	e := &ErrOutOfRange{Name: name, Value: printed, Min: math.Inf(-1), Max: math.Inf(1)}
	if def != nil {
		e.Min, e.Max = def.Min, def.Max
	}
	return e
}

// QPsPerLink is the number of QPs HCCL creates per RoCE connection for
// HCCL_RDMA_QPS_PER_CONNECTION = n: one, or n + 1 when n > 1 — the
// transport always creates one QP, then n more when multi-QP applies
// (HCOMM transport_ibverbs.cc CreateQp: CreateSingleQp, then CreateMultiQp
// with the port list resized to n; aicpu_communicator.cc roceQpNumSum =
// qpsPerConnection + (qpsPerConnection != 1)).
func QPsPerLink(n float64) float64 {
	if n > 1 {
		return n + 1
	}
	return 1
}

// CCLBufferBytes is what a communicator allocates at its first collective
// for a buffer size of b bytes: input and output buffers of b each plus the
// 1 MiB expansion buffer (ccl_buffer_manager.cc, EXP_BUFFER_SIZE).
func CCLBufferBytes(b float64) float64 { return 2*b + ExpBufferBytes }

// ExpBufferBytes is the expansion buffer HCCL adds to every communicator's
// cclBuffer ("for MC2").
const ExpBufferBytes = 1 << 20
