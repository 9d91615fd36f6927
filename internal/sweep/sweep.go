// Package sweep owns what the collectors that read a vendor CLI in the
// background (hccn, npuhealth) have in common: the loop that sweeps at once
// and then every interval until Stop, the latest published sweep and when
// it is too old to serve, and the results a finished call is counted under.
// What a sweep asks and how a tool's answer is read stay in the collectors.
package sweep

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// Loop runs one sweep at once and then one every interval, until Stop. The
// zero value is ready to use; Start it at most once.
type Loop struct {
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// Start begins the sweeps and returns immediately. run gets a context that
// Stop cancels, so a call in flight is killed at shutdown.
func (l *Loop) Start(interval time.Duration, run func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			run(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the sweeps, killing a call in flight, and waits for them. It
// may be called more than once, and without Start.
func (l *Loop) Stop() {
	l.stopOnce.Do(func() {
		if l.cancel != nil {
			l.cancel()
			<-l.done
		}
	})
}

// Latest holds the last published sweep, read by scrapes without waiting.
type Latest[T any] struct{ p atomic.Pointer[T] }

// Load returns the last published value; nil before the first.
func (l *Latest[T]) Load() *T { return l.p.Load() }

// Publish stores build()'s value, unless ctx is cancelled and a value is
// already held: a sweep cut short by shutdown does not replace the last
// full one. It reports whether it stored.
func (l *Latest[T]) Publish(ctx context.Context, build func() *T) bool {
	if ctx.Err() != nil && l.p.Load() != nil {
		return false
	}
	l.p.Store(build())
	return true
}

// Stale reports whether a sweep that finished at finished is too old to be
// served at now: more than two intervals ago, so the sweep after it hangs.
// age is how long ago it finished.
func Stale(now, finished time.Time, interval time.Duration) (age time.Duration, stale bool) {
	age = now.Sub(finished)
	return age, age > 2*interval
}

// Call results, the values of the collectors' *_calls_total{result}.
const (
	Success     = "success"
	Timeout     = "timeout"
	Busy        = "busy"
	Unsupported = "unsupported"
	Error       = "error"
	ParseError  = "parse_error"
)

// Results lists every call result, in the order Send sends them.
var Results = []string{Success, Timeout, Busy, Unsupported, Error, ParseError}

// Calls counts a sweeper's calls by what was asked (a command, a query
// type) and result. The zero value is ready; the sweep adds while scrapes
// send.
type Calls struct {
	mu sync.Mutex
	n  map[[2]string]float64
}

// Add counts n calls of kind that ended in result.
func (c *Calls) Add(kind, result string, n float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[[2]string]float64{}
	}
	c.n[[2]string{kind, result}] += n
}

// Send sends desc (labels kind, result) for every kind and result that
// has been counted: a (kind, result) series is born at its first call.
// Exporting all six results of every kind from zero was 54 npu-smi and 48
// hccn_tool series per node, most of them zeros for life; the alerts on
// failing calls fire on repeated failures (increase over 30 minutes of
// sweeps), which a series born at its first failure still shows.
func (c *Calls) Send(ch chan<- prometheus.Metric, desc *prometheus.Desc, kinds []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range kinds {
		for _, r := range Results {
			if n, ok := c.n[[2]string{k, r}]; ok {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, n, k, r)
			}
		}
	}
}

// Names lists name(item) of every item: the label values of a Calls
// counter, from a collector's table of commands or queries.
func Names[T any](items []T, name func(T) string) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}

// Message classifies a call whose output contains Text as Result.
type Message struct{ Text, Result string }

// Unfinished classifies a call that did not run to an exit status: it timed
// out (Timeout) or could not be run (Error). ok is false for a call that
// exited; the caller then reads its status and output.
func Unfinished(o vendorcli.Result) (result string, err error, ok bool) {
	switch {
	case o.TimedOut:
		return Timeout, fmt.Errorf("timed out after %s (its process group was killed)", o.Duration.Round(time.Millisecond)), true
	case o.Err != nil:
		return Error, o.Err, true
	}
	return "", nil, false
}

// Match finds the first of msgs whose text occurs in stdout or stderr (the
// tools print messages on either), and the line of the output holding it.
func Match(msgs []Message, stdout, stderr []byte) (m Message, line string, ok bool) {
	both := append(append(append(make([]byte, 0, len(stdout)+1+len(stderr)), stdout...), '\n'), stderr...)
	for _, m := range msgs {
		if i := bytes.Index(both, []byte(m.Text)); i >= 0 {
			return m, lineAt(both, i), true
		}
	}
	return Message{}, "", false
}

// lineAt is the line of b holding offset i, trimmed.
func lineAt(b []byte, i int) string {
	start := bytes.LastIndexByte(b[:i], '\n') + 1
	end := bytes.IndexByte(b[i:], '\n')
	if end < 0 {
		return string(bytes.TrimSpace(b[start:]))
	}
	return string(bytes.TrimSpace(b[start : i+end]))
}
