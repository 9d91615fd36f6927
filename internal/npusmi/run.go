package npusmi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// RunnerConfig is how the one shared npu-smi run is made.
type RunnerConfig struct {
	// Tool is the npu-smi binary and the timeout of one run
	// (--npusmi.path, --npusmi.timeout), shared with the npuhealth sweep.
	// Zero fields: npu-smi from PATH, 10s.
	Tool vendorcli.Tool
	// MinInterval: a completed run younger than this is reused, so npu-smi
	// runs at most once per interval whatever the scrape load
	// (--npusmi.min-interval).
	MinInterval time.Duration
	// Exec replaces running Tool (tests); nil runs Tool.
	Exec func(ctx context.Context) ([]byte, error)
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Results of a run, the values of hccl_exporter_npu_smi_runs_total{result}.
const (
	resultSuccess    = "success"
	resultTimeout    = "timeout"
	resultExecError  = "exec_error"
	resultParseError = "parse_error"
)

// RunResults are the results a run is counted under, in order.
var RunResults = []string{resultSuccess, resultTimeout, resultExecError, resultParseError}

// Run is one completed npu-smi run, shared by its callers: read-only.
type Run struct {
	// Snap is the parsed table, nil when the run failed (Err).
	Snap     *Snapshot
	Err      error
	At       time.Time // when the run finished
	Duration time.Duration

	// unseen, under the collector's mu: the run landed after every caller
	// had stopped waiting for it, and no caller has been served it since;
	// servedTo is the scrape (collector.ScrapeOf) it was then served to.
	unseen   bool
	servedTo uint64
}

// call is a run in flight that concurrent callers wait on.
type call struct {
	done chan struct{}
	res  *Run
	// began is when the run was started; abandoned, under the collector's
	// mu, that a caller stopped waiting for it (or that it was started for
	// a later scrape): its result is then unseen when it lands.
	began     time.Time
	abandoned bool
}

// Runner runs npu-smi info for every consumer: one run shared by all
// concurrent callers, reused for MinInterval. Snapshots it hands out are
// shared and must be treated as read-only.
type Runner struct {
	cfg    RunnerConfig
	logger *slog.Logger
	exec   func(ctx context.Context) ([]byte, error)
	now    func() time.Time

	mu            sync.Mutex
	inflight      *call
	last          *Run // last completed run, success or failure
	good          *Run // last successful run
	runs          map[string]float64
	parseWarnings float64
	failing       bool
	warnedCount   int // warnings of the last run, to log a change once
	expect        expectation
}

// InFlight returns a channel closed when the npu-smi info run in flight
// ends, or nil when none runs. Other npu-smi callers (the detail sweep) wait
// on it so that they do not meet the scrape's run inside DCMI, which
// answers one of them busy.
func (c *Runner) InFlight() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == nil {
		return nil
	}
	return c.inflight.done
}

// NewRunner returns the runner of cfg; it runs nothing until asked.
func NewRunner(cfg RunnerConfig, logger *slog.Logger) *Runner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Tool = cfg.Tool.Or(vendorcli.NPUSMI)
	r := &Runner{cfg: cfg, logger: logger, now: cfg.Now, exec: cfg.Exec, runs: map[string]float64{}}
	if r.now == nil {
		r.now = time.Now
	}
	if r.exec == nil {
		r.exec = func(ctx context.Context) ([]byte, error) {
			return RunInfo(ctx, r.cfg.Tool.Path, r.cfg.Tool.Timeout)
		}
	}
	return r
}

// Tool is the npu-smi binary and timeout the runner runs.
func (c *Runner) Tool() vendorcli.Tool { return c.cfg.Tool }

// Snapshot returns the result of the shared npu-smi run: a run finished less
// than MinInterval ago (successful or not) is reused, a run in flight is
// joined, otherwise one is started. ctx only bounds the wait of this caller;
// the run itself is bounded by Timeout and finishes for the others.
// The returned Snapshot is shared: do not modify it.
func (c *Runner) Snapshot(ctx context.Context) (*Snapshot, error) {
	res, err := c.Result(ctx)
	if err != nil {
		return nil, err
	}
	return res.Snap, res.Err
}

// Latest returns the last successful snapshot and when it was taken, without
// running npu-smi; ok is false when no run has succeeded yet. It may be old:
// callers decide how old is too old.
func (c *Runner) Latest() (snap *Snapshot, at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.good == nil {
		return nil, time.Time{}, false
	}
	return c.good.Snap, c.good.At, true
}

// behindMaxAge bounds the age of a run served to the scrape after the one
// that gave up on it (see Result): past it, the run is not served.
const behindMaxAge = 2 * time.Minute

// ErrBehind is returned to a scrape that does not wait for the run in
// flight: one an earlier scrape gave up on, or one started for the scrape
// after the one served the last run.
var ErrBehind = errors.New("npu-smi is still running a run that no scrape waits for (it is slower than a scrape may wait)")

// Result returns the run a caller gets: the last one while younger than
// MinInterval, or a new one it starts (or joins) and waits for until ctx's
// deadline. npu-smi slower than the scrape deadline (a driver in trouble)
// would fail every scrape that way, and make each wait its whole deadline
// while the CANN-log series wait with it; so once a scrape gave up on a run:
//   - later callers do not wait for that run again: they fail at once
//     (ErrBehind), but for the collectors of the scrape that was served the
//     last run (below), which all get that run;
//   - when it lands, no scrape has seen it yet; if it took longer than the
//     next caller could wait, that caller's scrape is served it (once, and
//     only within behindMaxAge; hccl_exporter_npu_smi_last_success_timestamp_seconds
//     says when it ran) and the next run starts in the background for the
//     scrape after. A run quick enough to wait for is run and waited for
//     again, as before.
//
// A run is never served to two scrapes past MinInterval: values a scrape
// got are not served again as if fresh.
func (c *Runner) Result(ctx context.Context) (*Run, error) {
	scrape := collector.ScrapeOf(ctx)
	c.mu.Lock()
	now := c.now()
	if c.last != nil && now.Sub(c.last.At) < c.cfg.MinInterval {
		res := c.last
		c.mu.Unlock()
		return res, nil
	}
	if c.inflight != nil && c.inflight.abandoned {
		res := c.last
		since := now.Sub(c.inflight.began)
		c.mu.Unlock()
		if res != nil && scrape != 0 && res.servedTo == scrape {
			return res, nil
		}
		return nil, fmt.Errorf("%w (running for %s)", ErrBehind, since.Round(time.Millisecond))
	}
	if c.last != nil && c.last.unseen && now.Sub(c.last.At) < behindMaxAge {
		if dl, ok := ctx.Deadline(); ok && c.last.Duration >= time.Until(dl) {
			res := c.last
			res.unseen, res.servedTo = false, scrape
			if c.inflight == nil {
				c.inflight = &call{done: make(chan struct{}), abandoned: true, began: now}
				go c.run(c.inflight)
			}
			c.mu.Unlock()
			return res, nil
		}
	}
	cl := c.inflight
	if cl == nil {
		cl = &call{done: make(chan struct{}), began: now}
		c.inflight = cl
		go c.run(cl)
	}
	c.mu.Unlock()
	select {
	case <-cl.done:
		return cl.res, nil
	case <-ctx.Done():
		c.mu.Lock()
		cl.abandoned = true
		c.mu.Unlock()
		return nil, fmt.Errorf("waiting for npu-smi: %w", ctx.Err())
	}
}

// run executes npu-smi once and publishes the result to every waiter.
func (c *Runner) run(cl *call) {
	begin := c.now()
	out, err := c.exec(context.Background())
	var snap *Snapshot
	kind := resultSuccess
	switch {
	case errors.Is(err, ErrTimeout):
		kind = resultTimeout
	case err != nil:
		kind = resultExecError
	default:
		if snap, err = Parse(out); err != nil {
			kind = resultParseError
			err = fmt.Errorf("parse npu-smi info output: %w", err)
		}
	}
	if snap != nil {
		// Only run touches the expectation, and one run at a time.
		accepted, cerr := c.expect.check(snap)
		switch {
		case cerr != nil:
			snap, kind = nil, resultParseError
			err = fmt.Errorf("parse npu-smi info output: %w", cerr)
		case accepted:
			c.logger.Warn("npu-smi has listed the same smaller table several runs in a row; taking it as the node's chips now",
				"chips", len(snap.Chips), "runs", AcceptRuns)
		}
	}
	end := c.now()
	res := &Run{Snap: snap, Err: err, At: end, Duration: end.Sub(begin)}

	c.mu.Lock()
	res.unseen = cl.abandoned
	c.runs[kind]++
	if snap != nil {
		c.parseWarnings += float64(len(snap.Warnings))
		c.good = res
	}
	c.last = res
	c.inflight = nil
	wasFailing := c.failing
	c.failing = err != nil
	logWarnings := false
	if snap != nil {
		logWarnings = len(snap.Warnings) > 0 && len(snap.Warnings) != c.warnedCount
		c.warnedCount = len(snap.Warnings)
	}
	c.mu.Unlock()

	// The registry logs the error of every failed scrape; here only the
	// changes of state and the details worth a look are logged.
	switch {
	case err == nil && wasFailing:
		c.logger.Info("npu-smi works again", "chips", len(snap.Chips))
	case err != nil && !wasFailing:
		c.logger.Debug("npu-smi run failed", "result", kind, "err", err)
	}
	if snap != nil {
		for _, w := range snap.Warnings {
			c.logger.Debug("npu-smi output row dropped", "warning", w)
		}
		if logWarnings {
			c.logger.Warn("npu-smi output had rows or values that could not be read", "count", len(snap.Warnings), "first", snap.Warnings[0])
		}
	}
	cl.res = res
	close(cl.done)
}

// Stats are the runner's counters: runs by result (RunResults), the rows
// and values dropped from accepted tables, and the last successful run.
type Stats struct {
	Runs          map[string]float64
	ParseWarnings float64
	// LastSuccess is the last successful run; nil before the first.
	LastSuccess *Run
}

// Stats returns a copy of the runner's counters.
func (c *Runner) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	runs := make(map[string]float64, len(c.runs))
	for k, v := range c.runs {
		runs[k] = v
	}
	return Stats{Runs: runs, ParseWarnings: c.parseWarnings, LastSuccess: c.good}
}
