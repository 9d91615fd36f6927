package diagnose

import (
	"encoding/json"
	"runtime"
	"sort"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
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

// Options tune Run.
type Options struct {
	// Layout assigns files to nodes; "" means LayoutAuto.
	Layout Layout
	// Location is the zone the logs' times were printed in (CANN prints
	// local time without a zone); nil means time.Local. Times are reported
	// in the same zone, so they read as printed.
	Location *time.Location
	// Workers bounds the goroutines reading files; ≤ 0 means GOMAXPROCS.
	Workers int
	// QP holds the per-QP memory bounds; zero means headroom.DefaultConfig.
	QP headroom.Config
	// NodeLocations overrides Location for the named nodes: nodes of one
	// job may print their times in different zones.
	NodeLocations map[string]*time.Location
	// InferZones reads each node (not in NodeLocations) in the zone its
	// communicator identifiers show (zone.go), where they show one;
	// Location otherwise.
	InferZones bool
}

func (o *Options) stateOptions() logstate.Options {
	opts := logstate.DefaultOptions()
	opts.Location = o.Location
	// Diagnose keeps every process of the bundle, whatever its age: Expire
	// is never called, and a line without a time gets the zero time (shown
	// as unknown) rather than the time of the analysis.
	opts.Now = func() time.Time { return time.Time{} }
	// A bundle is read once, offline: keep far more than a live exporter.
	opts.MaxPIDs = 1 << 16
	opts.MaxCommunicators = 1 << 18
	opts.MaxCodes = 1 << 12
	opts.MaxPods = 1 << 12
	opts.MaxModules = 1 << 12
	return opts
}

func (o Options) withDefaults() Options {
	if o.Layout == "" {
		o.Layout = LayoutAuto
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.QP.QPBytesLow == 0 && o.QP.QPBytesHigh == 0 {
		o.QP = headroom.DefaultConfig()
	}
	return o
}

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

	// nodesData is what was read, for the analyses that need more than
	// the report shows.
	nodesData []*nodeData
	// ranks finds the bundle's processes by rank, server and device.
	ranks *rankIndex
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

// perNodeVariables differ between the nodes of a healthy job: each node
// has its own host NIC address and super-pod id.
var perNodeVariables = map[string]bool{
	"HCCL_IF_IP":             true,
	"HCCL_LOGIC_SUPERPOD_ID": true,
}

// Run reads the bundle at paths and builds its report. An *InputError means
// an input could not be used at all (exit 2, no report); problems reading
// part of an input are listed in Report.Errors (status incomplete).
func Run(paths []string, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	ins, err := openInputs(paths)
	if err != nil {
		return nil, err
	}
	// Archives are read sequentially (one stream each) and are usually the
	// largest inputs: start them first; then the groups of directories,
	// largest first, so the last jobs are short.
	var jobs []func([]byte)
	var groups []*group
	for _, in := range ins {
		if in.typ == "archive" {
			jobs = append(jobs, func(buf []byte) { in.readArchive(&opts, buf) })
			continue
		}
		if err := in.list(&opts); err != nil {
			return nil, err
		}
		for _, g := range in.groups {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].size != groups[j].size {
			return groups[i].size > groups[j].size
		}
		return groups[i].key < groups[j].key
	})
	for _, g := range groups {
		jobs = append(jobs, g.readJob)
	}
	runJobs(jobs, opts.Workers)
	return build(ins, opts), nil
}
