package main

import (
	"fmt"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/headroom"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// learnFlags are the flags of what the headroom model learns on the node:
// QP sizes (internal/headroom/estimator.go) and the workload memory
// (logstate/workload.go).
type learnFlags struct {
	qpSize          bool
	minObservations int
	ttl             time.Duration
	reset           bool
	workloadTTL     time.Duration
	maxWorkloads    int
}

func addLearnFlags(app *kingpin.Application) *learnFlags {
	f := &learnFlags{}
	app.Flag("headroom.learn-qp-size",
		"Learn the device memory of one QP per product, driver and QP mode from the link setups on this node (HBM before and after a burst "+
			"of QP creation on a chip that allocated nothing else), and size QPs with it once enough bursts agree; kept in --cannlog.state-file. "+
			"--no-headroom.learn-qp-size keeps HCCL's QP depths (docs/headroom.md \"Learned QP sizes\").").
		Default("true").BoolVar(&f.qpSize)
	app.Flag("headroom.learn-min-observations",
		"Agreeing link-setup bursts a learned QP size needs before the model uses it.").
		Default(fmt.Sprint(model.DefaultLearnMinObservations)).IntVar(&f.minObservations)
	app.Flag("headroom.learn-ttl",
		"How long a link-setup burst is learned from: an observation older than this is forgotten, and with it any QP size it taught "+
			"(docs/headroom.md \"Reset and expiry\").").
		Default(model.DefaultLearnTTL.String()).DurationVar(&f.ttl)
	app.Flag("headroom.learn-reset",
		"Drop the learned QP sizes kept in --cannlog.state-file at start (the file is written again without them at the next checkpoint); "+
			"learning starts over.").
		BoolVar(&f.reset)
	app.Flag("headroom.workload-memory-ttl",
		"How long the link sets and link-setup failures of a workload are remembered after its last process was seen (a restarted "+
			"workload is expected to set them up again; docs/headroom.md \"Workload memory\").").
		Default(logstate.DefaultWorkloadTTL.String()).DurationVar(&f.workloadTTL)
	app.Flag("headroom.workload-memory-max",
		"Most workloads remembered; past it the one seen longest ago is forgotten (hccl_workload_memory_dropped_total{reason=\"capacity\"}).").
		Default(fmt.Sprint(logstate.DefaultMaxWorkloads)).IntVar(&f.maxWorkloads)
	return f
}

// Validate reports flag values that cannot work.
func (f *learnFlags) Validate() error {
	switch {
	case f.minObservations < 1:
		return fmt.Errorf("--headroom.learn-min-observations must be at least 1, got %d", f.minObservations)
	case f.ttl <= 0:
		return fmt.Errorf("--headroom.learn-ttl must be positive, got %s", f.ttl)
	case f.workloadTTL <= 0:
		return fmt.Errorf("--headroom.workload-memory-ttl must be positive, got %s", f.workloadTTL)
	case f.maxWorkloads < 1:
		return fmt.Errorf("--headroom.workload-memory-max must be at least 1, got %d", f.maxWorkloads)
	}
	return nil
}

// estimator returns the QP-size learner the flags ask for: nil when
// learning is off, unless a reset asks to drop what the state file keeps
// (attached, never fed: the state file is written again without it).
func (f *learnFlags) estimator() *model.Estimator {
	if !f.qpSize && !f.reset {
		return nil
	}
	return model.NewEstimator(model.EstimatorConfig{MinObservations: f.minObservations, TTL: f.ttl, Reset: f.reset})
}

// learnStore is what learning needs of the CANN logs (the cannlog
// collector): the state file for the learned sizes, and the workload
// memory's size.
type learnStore interface {
	headroom.WorkloadStatsSource
	AttachExtension(name string, ext logstate.Extension) error
}
