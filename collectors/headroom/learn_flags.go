package headroom

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// LearnConfig holds the flags of what the headroom model learns on the node:
// QP sizes (internal/headroom/estimator.go) and the workload memory
// (logstate/workload.go).
type LearnConfig struct {
	QPSize          bool
	MinObservations int
	TTL             time.Duration
	Reset           bool
	WorkloadTTL     time.Duration
	MaxWorkloads    int
}

func addLearnFlags(app *kingpin.Application, rules *flagcheck.Rules, f *LearnConfig) {
	rules.Flag(app, "headroom.learn-qp-size",
		"Learn the device memory of one QP per product, driver and QP mode from the link setups on this node (HBM before and after a burst "+
			"of QP creation on a chip that allocated nothing else), and size QPs with it once enough bursts agree; kept in --cannlog.state-file. "+
			"--no-headroom.learn-qp-size keeps HCCL's QP depths (docs/headroom.md \"Learned QP sizes\").", flagcheck.Switch).
		Default("true").BoolVar(&f.QPSize)
	rules.Flag(app, "headroom.learn-min-observations",
		"Agreeing link-setup bursts a learned QP size needs before the model uses it.", flagcheck.IntIn(1, 1<<20, "a number of agreeing bursts from 1 to 1048576, such as 5")).
		Default(fmt.Sprint(model.DefaultLearnMinObservations)).IntVar(&f.MinObservations)
	rules.Flag(app, "headroom.learn-ttl",
		"How long a link-setup burst is learned from: an observation older than this is forgotten, and with it any QP size it taught "+
			"(docs/headroom.md \"Reset and expiry\").", flagcheck.DurationIn(time.Hour, 366*24*time.Hour, "a duration from 1h to 8784h (a year), such as 168h")).
		Default(model.DefaultLearnTTL.String()).DurationVar(&f.TTL)
	rules.Flag(app, "headroom.learn-reset",
		"Drop the learned QP sizes kept in --cannlog.state-file at start (the file is written again without them at the next checkpoint); "+
			"learning starts over.", flagcheck.Switch).
		BoolVar(&f.Reset)
	rules.Flag(app, "headroom.workload-memory-ttl",
		"How long the link sets and link-setup failures of a workload are remembered after its last process was seen (a restarted "+
			"workload is expected to set them up again; docs/headroom.md \"Workload memory\").", flagcheck.Positive(30*flagcheck.MaxInterval)).
		Default(logstate.DefaultWorkloadTTL.String()).DurationVar(&f.WorkloadTTL)
	rules.Flag(app, "headroom.workload-memory-max",
		"Most workloads remembered; past it the one seen longest ago is forgotten (hccl_workload_memory_dropped_total{reason=\"capacity\"}).", flagcheck.Cap).
		Default(fmt.Sprint(logstate.DefaultMaxWorkloads)).IntVar(&f.MaxWorkloads)
}

// Validate reports flag values that cannot work.
func (f *LearnConfig) Validate() error {
	switch {
	case f.MinObservations < 1:
		return fmt.Errorf("--headroom.learn-min-observations must be at least 1, got %d", f.MinObservations)
	case f.TTL <= 0:
		return fmt.Errorf("--headroom.learn-ttl must be positive, got %s", f.TTL)
	case f.WorkloadTTL <= 0:
		return fmt.Errorf("--headroom.workload-memory-ttl must be positive, got %s", f.WorkloadTTL)
	case f.MaxWorkloads < 1:
		return fmt.Errorf("--headroom.workload-memory-max must be at least 1, got %d", f.MaxWorkloads)
	}
	return nil
}

// Estimator returns the QP-size learner the flags ask for: nil when
// learning is off, unless a reset asks to drop what the state file keeps
// (kept in the state file, never fed: the file is written again without
// it).
func (f *LearnConfig) Estimator() *model.Estimator {
	if !f.QPSize && !f.Reset {
		return nil
	}
	return model.NewEstimator(model.EstimatorConfig{MinObservations: f.MinObservations, TTL: f.TTL, Reset: f.Reset})
}
