package npuhealth

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// hungNode is a 16-chip node whose NPUs below hung hold every call until
// the call's timeout (a chip in reset), as vendorcli does with such a call;
// the others answer at once.
func hungNode(t *testing.T, hung int, interval, timeout time.Duration) (*Collector, *fakeNPUSMI) {
	t.Helper()
	c, f, table := newFake(t)
	table.mu.Lock()
	table.chips = chips910B(16)
	table.mu.Unlock()
	c.cfg.Interval, c.cfg.Timeout, c.slowAfter = interval, timeout, timeout/5
	c.now = time.Now
	f.answer = func(args []string) *vendorcli.Result {
		if n, _ := strconv.Atoi(args[4]); n < hung {
			time.Sleep(timeout)
			return &vendorcli.Result{TimedOut: true, ExitCode: -1, Duration: timeout}
		}
		return nil
	}
	return c, f
}

// served lists the chips with an ascend_npu_error_codes series, and the
// stale-chip gauge, from one Update.
func served(c *Collector) (map[string]bool, float64) {
	ch := make(chan prometheus.Metric, 10000)
	_ = c.Update(context.Background(), ch)
	close(ch)
	npus, stale := map[string]bool{}, -1.0
	for m := range ch {
		switch m.Desc() {
		case errorCodesDesc:
			for _, l := range metricPB(m).GetLabel() {
				if l.GetName() == "npu" {
					npus[l.GetValue()] = true
				}
			}
		case staleChipsDesc:
			stale = metricPB(m).GetGauge().GetValue()
		}
	}
	return npus, stale
}

func metricPB(m prometheus.Metric) *dto.Metric {
	var pb dto.Metric
	_ = m.Write(&pb)
	return &pb
}

// TestHungChipsDoNotBlankTheNode: 12 of 16 chips hang. In 0.4.0 the sweep
// went chip after chip with a timeout each, took longer than two intervals,
// and the stale sweep dropped every chip: the 4 healthy chips' hardware
// series vanished with the hung ones'. Now each chip is served from its own
// reading: the healthy chips stay in every scrape, the hung ones are
// counted stale, and a sweep ends within its interval plus one timeout.
func TestHungChipsDoNotBlankTheNode(t *testing.T) {
	// Both hung-node tests mostly wait on sleeping fakes: they wait
	// together.
	t.Parallel()
	// 0.4.0 took 12 timeouts, 1.8 s, per sweep: more than two intervals.
	const interval, timeout = 800 * time.Millisecond, 150 * time.Millisecond
	c, f := hungNode(t, 12, interval, timeout)
	c.Start(context.Background())
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if npus, _ := served(c); len(npus) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the healthy chips were never served")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Watch at least four intervals (0.4.0 blanked the healthy chips
	// after two), and on until the hung chips are all counted stale, for
	// at most eight.
	begin := time.Now()
	var lastStale float64
	for d := time.Since(begin); d < 4*interval || (lastStale != 12 && d < 8*interval); d = time.Since(begin) {
		npus, stale := served(c)
		for n := 12; n < 16; n++ {
			if !npus[strconv.Itoa(n)] {
				t.Fatalf("healthy NPU %d not served (%d chips served): hung chips blanked it", n, len(npus))
			}
		}
		for n := 0; n < 12; n++ {
			if npus[strconv.Itoa(n)] {
				t.Fatalf("hung NPU %d served", n)
			}
		}
		lastStale = stale
		time.Sleep(20 * time.Millisecond)
	}
	if lastStale != 12 {
		t.Errorf("hccl_exporter_npu_smi_detail_stale_chips = %v, want 12", lastStale)
	}
	// Every hung chip is probed now and then (they take turns with what
	// the budget leaves), none more than once a sweep.
	for n := 0; n < 12; n++ {
		if f.count(fmt.Sprintf("-t health -i %d ", n)) == 0 {
			t.Errorf("hung NPU %d never probed again", n)
		}
	}
}

// TestSweepBudget: on a node where every chip hangs, a sweep starts no
// chip after its budget (the interval minus one timeout), so it ends within
// about one interval, with at most maxParallel calls at once; the chips it
// did not reach go first next, so every chip is probed in turn.
func TestSweepBudget(t *testing.T) {
	t.Parallel()
	const interval, timeout = 400 * time.Millisecond, 100 * time.Millisecond
	c, f := hungNode(t, 16, interval, timeout)
	var inFlight, most atomic.Int32
	hang := f.answer
	f.answer = func(args []string) *vendorcli.Result {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return hang(args)
	}
	skipped := 0
	for i := 0; i < 4; i++ {
		begin := time.Now()
		s := c.Sweep(context.Background())
		if d := time.Since(begin); d > interval+timeout+300*time.Millisecond { // 0.4.0: 1.6 s
			t.Errorf("sweep %d took %s, want at most the interval plus one timeout (%s)", i, d, interval+timeout)
		}
		skipped += s.Skipped
	}
	if skipped == 0 {
		t.Error("no chip skipped: 16 timeouts of 100ms in waves of 4 should not fit a budget of 300ms")
	}
	if m := most.Load(); m > maxParallel {
		t.Errorf("%d npu-smi calls at once, want at most %d", m, maxParallel)
	}
	for n := 0; n < 16; n++ {
		if f.count(fmt.Sprintf("-t health -i %d ", n)) == 0 {
			t.Errorf("hung NPU %d never probed in 4 sweeps", n)
		}
	}
}

// TestStuckCallLeftBehind: a call the kernel cannot kill (npu-smi stuck in
// the driver) never returns. In 0.4.0 the sweep waited for it for good and
// every chip went stale. Now it is left behind at its timeout plus
// abandonAfter: the sweep goes on, the other chips are served, and the
// chip is not asked again (no second process) until the call returns.
func TestStuckCallLeftBehind(t *testing.T) {
	c, f, _ := newFake(t)
	c.cfg.Timeout, c.abandonAfter = 50*time.Millisecond, 50*time.Millisecond
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	var once sync.Once
	defer once.Do(func() { close(release) })
	f.answer = func(args []string) *vendorcli.Result {
		if args[4] != "2" {
			return nil
		}
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release // ignores its context, as a process in D state does
		return &vendorcli.Result{ExitCode: 0, Stdout: []byte("stuck\n")}
	}
	for i := 0; i < 3; i++ {
		done := make(chan *Sweep)
		go func() { done <- c.Sweep(context.Background()) }()
		select {
		case s := <-done:
			if len(s.Readings) != 7 && i > 0 {
				t.Errorf("sweep %d read %d chips, want the 7 others", i, len(s.Readings))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("sweep %d waits for a call that never returns", i)
		}
	}
	npus, _ := served(c)
	if len(npus) != 7 || npus["2"] {
		t.Errorf("served %v, want the 7 chips other than NPU 2", npus)
	}
	if n := f.count("-i 2 "); n != 1 || most.Load() != 1 {
		t.Errorf("NPU 2 asked %d times, at most %d at once, while its first call hung; want 1 and 1", n, most.Load())
	}
	once.Do(func() { close(release) })
	deadline := time.Now().Add(2 * time.Second)
	for c.isStuck(ascend.ChipID{NPU: "2", Chip: "0"}) {
		if time.Now().After(deadline) {
			t.Fatal("the call left behind returned but its chip is still marked hung")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Sweep(context.Background())
	if n := f.count("-i 2 "); n < 2 {
		t.Error("NPU 2 not asked again once its call returned")
	}
}
