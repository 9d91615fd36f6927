package main

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/treegen"
)

// Regression guard of the collector's ingest path (follower + state, as
// readTree runs it), measured as a ratio against the floor of any line
// reader on the same files in the same process: reading them and counting
// newlines with bytes.Count. The limit is far above what is measured
// (docs/benchmarks.md) so that only a real regression fails on a busy
// machine; the race detector slows our Go code, not bytes.Count's assembly,
// hence its own limit.
func TestIngestThroughputRegressionGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("timing guard")
	}
	dir := t.TempDir()
	spec := treegen.Default()
	spec.Bytes = ingestGuardBytes
	want, err := treegen.Write(filepath.Join(dir, "log"), spec)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "log")
	var ours, floor []time.Duration
	for r := 0; r < 5; r++ { // alternated; medians compared
		t0 := time.Now()
		a, err := readTree(root)
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, time.Since(t0))
		t0 = time.Now()
		n, err := newlineScan(root)
		if err != nil {
			t.Fatal(err)
		}
		floor = append(floor, time.Since(t0))
		if a.Lines != want.Lines || n != want.Lines || a.Error != want.Error || a.EI0011 != want.EI0011 || a.HCCLEnv != want.HCCLEnv {
			t.Fatalf("counts: ingest %+v, newline scan %d, generator %+v", a, n, want)
		}
	}
	slices.Sort(ours)
	slices.Sort(floor)
	ratio := float64(ours[2]) / float64(floor[2])
	mbps := float64(want.Bytes) / 1e6 / ours[2].Seconds()
	t.Logf("ingest %v (%.0f MB/s), newline scan %v: ratio %.1f (limit %.0f)", ours[2], mbps, floor[2], ratio, ingestGuardLimit)
	if ratio > ingestGuardLimit {
		t.Errorf("ingest takes %.1f× a newline scan of the same files, limit %.0f×", ratio, ingestGuardLimit)
	}
}
