package npusmi

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// TestCutTableFailsTheRun: after a complete run, a run whose table was cut
// at a row boundary (fewer chips, or a process table that stops early) is
// a failed run: up 0, result parse_error, no per-chip series. Before, it
// was a success and the missing chips' series just vanished.
func TestCutTableFailsTheRun(t *testing.T) {
	full := readFile(t, sampleTable)
	// Cut after the separator that closes NPU 3's block, and after the
	// separator that closes NPU 5's process row.
	afterBlock := bytes.Index(full, []byte("| 4     910B4"))
	afterProc := bytes.Index(full, []byte("| 6       0 "))
	for _, tc := range []struct {
		name string
		cut  []byte
	}{
		{"device table cut between chips", full[:afterBlock]},
		{"process table cut between NPUs", full[:afterProc]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The cut between chips parses on its own (only the learned
			// check refuses it); the process table cut is refused by npusmi.Parse.
			c, _, clk := newScripted(5*time.Second, step{out: full}, step{out: tc.cut})
			if up := value(t, gather(t, c), "hccl_exporter_npu_smi_up", nil); up != 1 {
				t.Fatalf("complete run: up %v", up)
			}
			clk.advance(6 * time.Second)
			err := c.Update(context.Background(), make(chan prometheus.Metric, 1000))
			if !errors.Is(err, npusmi.ErrTruncated) {
				t.Fatalf("cut run: Update = %v, want ErrTruncated", err)
			}
			fams := gather(t, c)
			if up := value(t, fams, "hccl_exporter_npu_smi_up", nil); up != 0 {
				t.Errorf("cut run: up %v, want 0", up)
			}
			if n := value(t, fams, "hccl_exporter_npu_smi_runs_total", map[string]string{"result": "parse_error"}); n != 1 {
				t.Errorf("parse_error runs = %v, want 1", n)
			}
			if len(metrictest.Samples(fams, "ascend_npu_hbm_used_bytes")) > 0 {
				t.Error("per-chip series served from a cut run")
			}
		})
	}
}

// TestSmallerTableAcceptedAfterRepeats: a chip that is really gone shows in
// the same smaller table run after run; after npusmi.AcceptRuns of them it is the
// node's table, so one lost chip does not fail npu-smi forever.
func TestSmallerTableAcceptedAfterRepeats(t *testing.T) {
	full := readFile(t, sampleTable)
	// Remove NPU 7's device block and process row: a complete, closed table.
	smaller := bytes.Replace(full, []byte(blockOf(t, full, "| 7     910B4")), nil, 1)
	smaller = bytes.Replace(smaller, []byte(blockOf(t, smaller, "| 7       0 ")), nil, 1)
	s, err := npusmi.Parse(smaller)
	if err != nil || len(s.Chips) != 7 {
		t.Fatalf("smaller table: %v chips, %v", len(s.Chips), err)
	}
	c, _, clk, h := newScriptedHooks(time.Second, step{out: full}, step{out: smaller})
	_ = gather(t, c)
	for run := 1; run <= npusmi.AcceptRuns; run++ {
		clk.advance(2 * time.Second)
		up := value(t, gather(t, c), "hccl_exporter_npu_smi_up", nil)
		if want := map[bool]float64{true: 1, false: 0}[run == npusmi.AcceptRuns]; up != want {
			t.Fatalf("smaller run %d: up %v, want %v", run, up, want)
		}
	}
	// A cut of the accepted table still fails.
	clk.advance(2 * time.Second)
	h.exec = (&scripted{steps: []step{{out: smaller[:bytes.Index(smaller, []byte("| 4     910B4"))]}}}).exec
	if up := value(t, gather(t, c), "hccl_exporter_npu_smi_up", nil); up != 0 {
		t.Fatalf("cut of the accepted table: up %v", up)
	}
}

// blockOf returns the line starting with prefix, its following lines up to
// and including the next separator.
func blockOf(t *testing.T, b []byte, prefix string) string {
	t.Helper()
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		t.Fatalf("no %q", prefix)
	}
	rest := b[i:]
	j := bytes.Index(rest, []byte("\n+"))
	if j < 0 {
		t.Fatalf("no separator after %q", prefix)
	}
	k := bytes.IndexByte(rest[j+1:], '\n')
	return string(rest[:j+1+k+1])
}
