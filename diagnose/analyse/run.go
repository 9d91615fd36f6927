package analyse

import (
	"runtime"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// Options tune Run.
type Options struct {
	// Layout assigns files to nodes; "" means bundle.LayoutAuto.
	Layout bundle.Layout
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
		o.Layout = bundle.LayoutAuto
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

// perNodeVariables differ between the nodes of a healthy job: each node
// has its own host NIC address and super-pod id.
var perNodeVariables = map[string]bool{
	"HCCL_IF_IP":             true,
	"HCCL_LOGIC_SUPERPOD_ID": true,
}

// Run reads the bundle at paths and builds its report. An *InputError means
// an input could not be used at all (exit 2, no report); problems reading
// part of an input are listed in Report.Errors (status incomplete).
func Run(paths []string, opts Options) (*model.Report, error) {
	opts = opts.withDefaults()
	ins, err := bundle.Read(paths, bundle.Options{Workers: opts.Workers,
		NewSink: func(_ string, kind bundle.Kind) bundle.Sink { return newGroupReader(&opts, kind) }})
	if err != nil {
		return nil, err
	}
	return build(ins, opts), nil
}
