package sweep

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

func TestLoopSweepsAtOnceAndStopCancels(t *testing.T) {
	var l Loop
	var runs atomic.Int32
	first := make(chan struct{})
	cancelled := make(chan struct{})
	l.Start(time.Hour, func(ctx context.Context) {
		if runs.Add(1) == 1 {
			close(first)
		}
		<-ctx.Done() // a call in flight, killed by Stop
		close(cancelled)
	})
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep at Start: the first must not wait an interval")
	}
	l.Stop()
	select {
	case <-cancelled:
	default:
		t.Fatal("Stop returned before the sweep in flight saw its context cancelled")
	}
	l.Stop() // twice is fine
	if n := runs.Load(); n != 1 {
		t.Errorf("%d sweeps, want 1", n)
	}
	var never Loop
	never.Stop() // without Start
}

func TestLatestKeepsFullSweepAtShutdown(t *testing.T) {
	var l Latest[int]
	if l.Load() != nil {
		t.Fatal("value before the first Publish")
	}
	one, two, three := 1, 2, 3
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// The first sweep is published even when cut short: better than nothing.
	if !l.Publish(ctx, func() *int { return &one }) || *l.Load() != 1 {
		t.Fatal("first sweep not published")
	}
	if !l.Publish(context.Background(), func() *int { return &two }) || *l.Load() != 2 {
		t.Fatal("second sweep not published")
	}
	built := false
	if l.Publish(ctx, func() *int { built = true; return &three }) || *l.Load() != 2 || built {
		t.Errorf("a sweep cut short by shutdown replaced the last full one (built=%v, latest %d)", built, *l.Load())
	}
}

func TestStale(t *testing.T) {
	fin := time.Unix(1000, 0)
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{0, false}, {60 * time.Second, false}, {60*time.Second + time.Nanosecond, true}, {time.Hour, true}} {
		age, stale := Stale(fin.Add(tc.after), fin, 30*time.Second)
		if age != tc.after || stale != tc.want {
			t.Errorf("Stale after %s = %s, %v; want %s, %v", tc.after, age, stale, tc.after, tc.want)
		}
	}
}

func TestUnfinished(t *testing.T) {
	for _, tc := range []struct {
		o    vendorcli.Result
		want string
		ok   bool
	}{
		{vendorcli.Result{TimedOut: true, ExitCode: -1, Duration: 5 * time.Second}, Timeout, true},
		{vendorcli.Result{ExitCode: -1, Err: errors.New("exec: permission denied")}, Error, true},
		{vendorcli.Result{ExitCode: 3}, "", false},
		{vendorcli.Result{}, "", false},
	} {
		got, err, ok := Unfinished(tc.o)
		if got != tc.want || ok != tc.ok || (err != nil) != ok {
			t.Errorf("Unfinished(%+v) = %q, %v, %v; want %q, ok %v", tc.o, got, err, ok, tc.want, tc.ok)
		}
	}
}

func TestMatchFirstMessageWinsAndQuotesItsLine(t *testing.T) {
	msgs := []Message{{Text: "is busy", Result: Busy}, {Text: "not supported", Result: Unsupported}}
	for _, tc := range []struct {
		name           string
		stdout, stderr string
		want, line     string
		ok             bool
	}{
		{"stdout", "header\n  tool is busy, try again  \ntrailer\n", "", Busy, "tool is busy, try again", true},
		{"stderr, last line without newline", "", "x\nnot supported here", Unsupported, "not supported here", true},
		{"list order wins over output order", "not supported\n", "tool is busy\n", Busy, "tool is busy", true},
		{"no message", "all fine\n", "", "", "", false},
		{"not across the stdout/stderr seam", "is", " busy", "", "", false},
	} {
		m, line, ok := Match(msgs, []byte(tc.stdout), []byte(tc.stderr))
		if m.Result != tc.want || line != tc.line || ok != tc.ok {
			t.Errorf("%s: Match = %q, %q, %v; want %q, %q, %v", tc.name, m.Result, line, ok, tc.want, tc.line, tc.ok)
		}
	}
}

// TestCallsSendsOnlyCountedResults: a (kind, result) series is born at its
// first call; kinds and results never counted send nothing.
func TestCallsSendsOnlyCountedResults(t *testing.T) {
	desc := prometheus.NewDesc("x_calls_total", "calls", []string{"kind", "result"}, nil)
	var c Calls
	c.Add("link", Busy, 1)
	c.Add("link", Busy, 2)
	ch := make(chan prometheus.Metric, 100)
	c.Send(ch, desc, []string{"link", "stat"})
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		l := pb.GetLabel()
		got[l[0].GetValue()+"/"+l[1].GetValue()] = pb.GetCounter().GetValue()
	}
	if len(got) != 1 || got["link/busy"] != 3 {
		t.Errorf("series %v; want only link/busy 3", got)
	}
}

func TestNames(t *testing.T) {
	type cmd struct{ name string }
	got := Names([]cmd{{"link"}, {"stat"}}, func(c cmd) string { return c.name })
	if len(got) != 2 || got[0] != "link" || got[1] != "stat" {
		t.Errorf("Names = %v, want [link stat]", got)
	}
}
