package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// closedForm is docs/scale.md's per-node formula:
//
//	series = 26·X + X_p + X_b + 2·P + S·(V_e + 4) + C_n·(S + 5) + 2·K_h + K_o + M + 143
//
// (X_b chips with a process, S settings sets, C_n distinct communicators, K_h
// codes counted as HCCL's, K_o other components' codes; 143 = 9 npu-smi + 27
// headroom + 3 workload memory + 5 fault and screen bookkeeping + 29 log
// reader + 2 time zone + 1 hccn + 5 pods + 12 exporter + 50 runtime; the 14
// refused-settings counters are behind --cannlog.rejected-values).
func closedForm(n *nodegen.Node) int {
	X, Xp := len(n.Chips), 0
	for _, c := range n.Chips {
		if c.PowerWatts > 0 {
			Xp++
		}
	}
	Kh, Ko := faultCounts(n)
	M := 2
	if n.Spec.NoiseLines > 0 {
		M += min(n.Spec.NoiseLines, 3)
	}
	S, Cn := settingsSets(n), distinctCommunicators(n)
	return 26*X + Xp + min(X, len(n.Processes)) + 2*len(n.Processes) + S*(envExported+4) + Cn*(S+5) + 2*Kh + Ko + M + 143
}

// TestFormula: the per-family formula the scale tool checks every scrape
// against sums to the closed form of docs/scale.md at every point, and the
// worst-case node (16 NPUs × 2 dies, 64 processes × 8 communicators) stays
// at or below 1,500 series.
func TestFormula(t *testing.T) {
	for _, p := range points() {
		n, err := nodegen.New(p.spec)
		if err != nil {
			t.Fatal(err)
		}
		got := sum(formula(n)) + runtimeSeries
		if want := closedForm(n); got != want {
			t.Errorf("%s: per-family formula sums to %d, closed form %d", p.name, got, want)
		}
	}
	worst, err := nodegen.New(nodegen.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if c := worst.Counts(); c.Chips != 32 || c.Processes != 64 || c.Communicators != 64*8 {
		t.Fatalf("DefaultSpec is not the worst case of docs/scale.md: %+v", c)
	}
	total := sum(formula(worst)) + runtimeSeries
	t.Logf("worst-case node: %d series", total)
	if total > 1500 {
		t.Errorf("worst-case node: %d series, want ≤ 1,500", total)
	}
	// The settings and communicator series do not grow with the processes
	// of one job: twice the ranks, the same settings and communicator series.
	spec := nodegen.DefaultSpec()
	spec.Processes *= 2
	more, err := nodegen.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := formula(worst), formula(more)
	for _, fam := range []string{"hccl_env_info", "hccl_env_rdma_qps_per_connection", "hccl_communicator_info",
		"hccl_communicator_ranks", "hccl_communicator_established_queue_pairs"} {
		if f1[fam] != f2[fam] {
			t.Errorf("%s: %d series with 64 ranks, %d with 128", fam, f1[fam], f2[fam])
		}
	}
}

// TestDocsFormula: docs/scale.md states the formula this tool checks.
func TestDocsFormula(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "series = 26·X + X_p + X_b + 2·P + S·(V_e + 4) + C_n·(S + 5) + 2·K_h + K_o + M + 143"
	if !strings.Contains(string(b), want) {
		t.Errorf("docs/scale.md does not state the formula %q", want)
	}
	// The totals the doc quotes are the formula's for the 8-NPU point and
	// the worst-case node (the tool checks every scrape against the formula).
	small, err := nodegen.New(points()[0].spec)
	if err != nil {
		t.Fatal(err)
	}
	worst, err := nodegen.New(nodegen.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	s, w := sum(formula(small))+runtimeSeries, sum(formula(worst))+runtimeSeries
	// Every point of the measured table: its series and formula columns
	// are the formula's total (the tool exits non-zero when a scrape is
	// not).
	for _, p := range points() {
		n, err := nodegen.New(p.spec)
		if err != nil {
			t.Fatal(err)
		}
		total := thousands(sum(formula(n)) + runtimeSeries)
		if !strings.Contains(string(b), "| "+total+" | "+total+" |") && !strings.Contains(string(b), "| **"+total+"** | "+total+" |") {
			t.Errorf("docs/scale.md's measured table has no row of %s with %s series (the formula's)", p.name, total)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("is **%s series**", thousands(w)),
		fmt.Sprintf("%s series on the 8-NPU\ngenerated node (`%s`), %s on the worst-case one", thousands(s), points()[0].name, thousands(w)),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docs/scale.md does not say %q (the formula's totals)", want)
		}
	}
}

// TestFormulaMatchesBinary: the real binary on two of the formula's points
// (the 8-NPU node, and the worst case with every catalog code) serves every
// family as the formula says, so the formula cannot drift from the product
// again unnoticed (it did in 0.6.0: bench/scale.sh timed out on the A3
// points and 27 families were missing from it).
func TestFormulaMatchesBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exporter binary on two generated nodes: skipped under -short")
	}
	bin := testtools.BuildExporter(t, filepath.Join("..", ".."))
	for _, p := range points() {
		if p.name != "8x1/8p/1c/0k" && p.name != "16x2/64p/8c/26k" {
			continue
		}
		r, err := measure(bin, filepath.Join(t.TempDir(), "node"), p, 2, 1)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		for _, m := range r.mismatch {
			t.Errorf("%s: %s", p.name, m)
		}
		if r.total != r.predicted {
			t.Errorf("%s: %d series, the formula says %d", p.name, r.total, r.predicted)
		}
	}
}
