package model

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the version of the JSON report; it changes only when a
// field changes meaning or goes away (new fields may be added).
const SchemaVersion = 1

// Report statuses and exit codes.
const (
	StatusClean      = "clean"      // exit 0: no fault code, no inconsistent setting
	StatusFindings   = "findings"   // exit 1: fault codes or inconsistent settings
	StatusIncomplete = "incomplete" // exit 2: part of the bundle could not be read
)

// Report is the result of a diagnose run; its JSON form is documented field
// by field in docs/diagnose.md.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Status        string `json:"status"`
	ExitCode      int    `json:"exit_code"`
	TimeZone      string `json:"time_zone"`

	Inputs []Input `json:"inputs"`
	Nodes  []Node  `json:"nodes"`
	Faults []Fault `json:"faults"`

	Settings              []Setting `json:"settings"`
	InconsistentVariables []string  `json:"inconsistent_variables"`

	// Incidents name the first failure of each incident, in time order,
	// and its consequences; Clock says how the nodes' clocks compare.
	Incidents []Incident  `json:"incidents"`
	Clock     ClockReport `json:"clock"`
	// UntimedEvents counts fault events whose lines printed no time (they
	// are in the fault table, not in an incident); DroppedEvents those
	// beyond the per-file cap.
	UntimedEvents int `json:"untimed_events"`
	DroppedEvents int `json:"dropped_events"`
	// HeartbeatEvents counts the heartbeat reports (code HEARTBEAT) in
	// the incidents: HCCL prints no fault code for them, so they are not
	// in the fault table.
	HeartbeatEvents int `json:"heartbeat_events"`
	// LinkFailures are the failing links HCCL named (its link-failure
	// detector and the createLink parameters of failed links), in time
	// order; each incident lists those during it.
	LinkFailures []LinkFailure `json:"link_failures"`

	QPModel   QPModel          `json:"qp_model"`
	EI0011    *EI0011Report    `json:"ei0011"`
	BufferOOM *BufferOOMReport `json:"buffer_oom"`

	Errors []string `json:"errors"`
}

// Input is one PATH of the command line.
type Input struct {
	Path         string   `json:"path"`
	Type         string   `json:"type"` // directory, archive or file
	Nodes        []string `json:"nodes"`
	SkippedFiles int      `json:"skipped_files"`
	// Layouts are the collection tools whose layout the input showed
	// (MindCluster fault-diagnosis collection, msnpureport export,
	// npu_log_collect.sh), and Advice what such an input lacks.
	Layouts []string `json:"layouts"`
	Advice  []string `json:"advice"`
	// Read counts the files read per directory and kind (at most 64
	// directories; ReadDirsMore counts the rest), Skipped the files not
	// read, by reason.
	Read         []ReadDir      `json:"read"`
	ReadDirsMore int            `json:"read_dirs_more"`
	Skipped      []SkippedGroup `json:"skipped"`
}

// Node is what was read for one node.
type Node struct {
	Name      string     `json:"name"`
	Files     FileCounts `json:"files"`
	Bytes     int64      `json:"bytes"`
	Lines     int64      `json:"lines"`
	Processes []Process  `json:"processes"`
}

// FileCounts counts the files read, by kind.
type FileCounts struct {
	Plog   int `json:"plog"`
	Device int `json:"device"`
	Screen int `json:"screen"`
}

// Process is one training process of a node, as its CANN logs describe it.
type Process struct {
	PID       int       `json:"pid"`
	Name      string    `json:"name"`
	LastWrite Timestamp `json:"last_write"`
	// SettingsSet is its settings set, the settings label the exporter
	// gives its series (logstate.SettingsID); "" when it printed none of
	// the set's variables.
	SettingsSet   string         `json:"settings_set"`
	Settings      []SettingValue `json:"settings"`
	Communicators []Communicator `json:"communicators"`
	QPs           ProcessQPs     `json:"qps"`
}

// SettingValue is one effective HCCL setting of a process.
type SettingValue struct {
	Variable string `json:"variable"`
	Value    string `json:"value"`
	SetBy    string `json:"set_by"`
	// Number is the value in base units (bytes, seconds, count), null
	// when the value is not a number.
	Number *float64 `json:"number"`
}

// Communicator is one communicator of a process and the RoCE links it
// implies (the headroom model, docs/headroom.md).
type Communicator struct {
	Name        string `json:"name"`
	RankSize    int    `json:"rank_size"`
	ServerNum   int    `json:"server_num"`
	UserRank    int    `json:"user_rank"`
	DevicePhyID int    `json:"device_phy_id"`
	Links       Links  `json:"links"`
}

// Links bounds the RoCE peers of one rank of a communicator and the QPs and
// device memory they take: low is a ring across servers, high a full mesh.
type Links struct {
	PeersLow          float64 `json:"peers_low"`
	PeersHigh         float64 `json:"peers_high"`
	QPsLow            float64 `json:"qps_low"`
	QPsHigh           float64 `json:"qps_high"`
	QPMemoryLowBytes  float64 `json:"qp_memory_low_bytes"`
	QPMemoryHighBytes float64 `json:"qp_memory_high_bytes"`
}

// ProcessQPs sums a process's link setup: QP settings in force and QPs,
// QP memory and cclBuffer memory over its communicators.
type ProcessQPs struct {
	QPsPerConnection      float64 `json:"qps_per_connection"`
	QPsPerConnectionSetBy string  `json:"qps_per_connection_set_by"`
	AboveRecommended      bool    `json:"above_recommended"`
	QPPortConfigPath      string  `json:"qp_port_config_path"`
	IntraRoCE             bool    `json:"intra_roce"`
	BuffSizeBytes         float64 `json:"buffsize_bytes"`
	BuffSizeSetBy         string  `json:"buffsize_set_by"`
	Communicators         int     `json:"communicators"`
	QPsLow                float64 `json:"qps_low"`
	QPsHigh               float64 `json:"qps_high"`
	QPMemoryLowBytes      float64 `json:"qp_memory_low_bytes"`
	QPMemoryHighBytes     float64 `json:"qp_memory_high_bytes"`
	CCLBufferBytes        float64 `json:"ccl_buffer_bytes"`
}

// Fault is one fault code over the bundle.
type Fault struct {
	Code     string      `json:"code"`
	Stage    string      `json:"stage"`
	Title    string      `json:"title"`
	Remedy   string      `json:"remedy"`
	Count    uint64      `json:"count"`
	BySource Sources     `json:"by_source"`
	First    Timestamp   `json:"first"`
	Last     Timestamp   `json:"last"`
	Nodes    []FaultNode `json:"nodes"`
}

// Sources splits a count by where the events were read.
type Sources struct {
	Screen uint64 `json:"screen"`
	Plog   uint64 `json:"plog"`
}

// FaultNode is one fault code on one node.
type FaultNode struct {
	Node     string    `json:"node"`
	Count    uint64    `json:"count"`
	BySource Sources   `json:"by_source"`
	First    Timestamp `json:"first"`
	Last     Timestamp `json:"last"`
	PIDs     []int     `json:"pids"`
}

// Setting is one HCCL variable over every process of the bundle.
type Setting struct {
	Variable string `json:"variable"`
	// Consistent is true when every process that printed the variable
	// has the same value.
	Consistent bool `json:"consistent"`
	// AcrossNodes is true when nodes differ in the values they run (not
	// only processes within a node).
	AcrossNodes bool `json:"across_nodes"`
	// PerNode is true for variables that differ between nodes by design
	// (HCCL_IF_IP); they are never reported as inconsistent.
	PerNode bool           `json:"per_node"`
	Values  []SettingGroup `json:"values"`
}

// SettingGroup is one value of a variable and who runs it.
type SettingGroup struct {
	Value     string     `json:"value"`
	SetBy     []string   `json:"set_by"`
	Processes int        `json:"processes"`
	Nodes     []NodePIDs `json:"nodes"`
}

// NodePIDs lists processes of a node.
type NodePIDs struct {
	Node string `json:"node"`
	PIDs []int  `json:"pids"`
}

// Timestamp is a time printed in RFC 3339 with the report's zone, or null
// when the logs gave none.
type Timestamp struct{ time.Time }

// MarshalJSON implements json.Marshaler.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.Format(time.RFC3339Nano))
}

// UnmarshalJSON implements json.Unmarshaler, so a report reads back.
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = Timestamp{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = Timestamp{v}
	return nil
}

// QPModel is the link-setup arithmetic the report used.
type QPModel struct {
	QPBytesLow                  float64  `json:"qp_bytes_low"`
	QPBytesHigh                 float64  `json:"qp_bytes_high"`
	RecommendedQPsPerConnection [2]int   `json:"recommended_qps_per_connection"`
	MaxQPsPerConnection         int      `json:"max_qps_per_connection"`
	QPSettingPriority           []string `json:"qp_setting_priority"`
}

// EI0011Report is the troubleshooting guide's answer to EI0011, with the
// bundle's numbers.
type EI0011Report struct {
	Events uint64   `json:"events"`
	Nodes  []string `json:"nodes"`
	// BufferOOMPresent is true when the bundle also holds a cclBuffer
	// out-of-memory (see BufferOOMReport), which needs HCCL_BUFFSIZE, not
	// fewer QPs.
	BufferOOMPresent bool     `json:"buffer_oom_present"`
	Remedies         []Remedy `json:"remedies"`
}

// Remedy is one of the guide's remedies and what the bundle says about it.
type Remedy struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Findings []string `json:"findings"`
}

// BufferOOMReport describes EL0004, the driver's out-of-memory report.
type BufferOOMReport struct {
	Events uint64 `json:"events"`
	// PlogEvents counts HCCL's own device-memory failure lines ("[DeviceMem][Alloc]rt_malloc error").
	PlogEvents uint64 `json:"plog_events"`
	// HCCL is true when the out-of-memory happened while HCCL allocated
	// its buffer (a plog event, or a screen traceback naming HCCL).
	HCCL     bool          `json:"hccl"`
	Evidence []OOMEvidence `json:"evidence"`
	Findings []string      `json:"findings"`
}

// Setting returns the bundle-wide groups of a variable, or nil.
func (r *Report) Setting(variable string) *Setting {
	for i := range r.Settings {
		if r.Settings[i].Variable == variable {
			return &r.Settings[i]
		}
	}
	return nil
}

// OOMEvidence is one EL0004 report found in a screen log, or (Code
// "EI0011") one EI0011 report with the allocation it names.
type OOMEvidence struct {
	// Code is "EL0004" or "EI0011".
	Code string `json:"code"`
	Node string `json:"node"`
	File string `json:"file"`
	Line int64  `json:"line"`
	Text string `json:"text"`
	// HCCL is true when the report's traceback names HCCL; HCCLFrame
	// quotes that line.
	HCCL      bool   `json:"hccl"`
	HCCLFrame string `json:"hccl_frame,omitempty"`
	// SizeBytes is the allocation that failed, from "[size:N]" (EL0004)
	// or the exact size of an EI0011 report; 0 when not printed.
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// QPRange: an EI0011 report in a QP's range form ([0.25MB, 3MB] or
	// 262144~3145728).
	QPRange bool `json:"qp_range,omitempty"`
}

// SkippedGroup counts the skipped files of one reason.
type SkippedGroup struct {
	// Tool is the collection tool that put them there ("" when none).
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	Files  int    `json:"files"`
	// Examples are up to three of their paths.
	Examples []string `json:"examples"`
}

// ReadDir counts the files read in one directory.
type ReadDir struct {
	Dir   string `json:"dir"`
	Kind  string `json:"kind"` // plog, device or screen
	Files int    `json:"files"`
}

// Remedy ids, in the guide's order.
const (
	RemedyReduceMemoryUse = "reduce_memory_use"
	RemedyFewerRoCELinks  = "fewer_roce_links"
	RemedyFreeNPUMemory   = "free_npu_memory"
	RemedyHCCLBuffSize    = "hccl_buffsize"
)

const (
	CodeEI0011 = "EI0011"
	CodeEL0004 = "EL0004"
)

// RemedyCheckLink is the remedy ID of a failing link HCCL named.
const RemedyCheckLink = "check_link"

// RemedySilentRank is the remedy ID of a named peer whose logs stop
// without an error.
const RemedySilentRank = "silent_rank"
