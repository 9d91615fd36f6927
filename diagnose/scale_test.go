package diagnose

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// A job of our users' scale: 128 nodes × 8 NPUs = 1,024 ranks. Rank 517
// (node-65, device 5) runs out of NPU memory at link setup (EI0011); every
// rank of the other nodes times out waiting for it (EI0006). Generated, not committed (2,048
// files).
func scaleBundle(t testing.TB) string {
	t.Helper()
	j := newJob(era2026, 128, 8, "10.0.0.1%enp_60000_0_1773836162000123", 2100000)
	j.settings = map[string]string{"HCCL_CONNECT_TIMEOUT": "1180", "HCCL_EXEC_TIMEOUT": "1836", "HCCL_BUFFSIZE": "200", "HCCL_RDMA_QPS_PER_CONNECTION": "4"}
	t0 := day(20, 16, 2, 0)
	j.start(t0, day(20, 16, 5, 120))
	root := j.rankAt(517)
	fail := day(20, 18, 46, 447)
	j.ei0011(root, fail, t0)
	for _, r := range j.ranks {
		if r.node == root.node {
			continue
		}
		j.ei0006(r, root, "1180", fail.Add(1200*time.Second+time.Duration(r.rank*7)*time.Millisecond), t0)
	}
	dir := t.TempDir()
	writeTree(t, dir, j.contents())
	return dir
}

// renderAll runs diagnose and writes every format, as the command would.
func renderAll(t testing.TB, dir string) (*model.Report, string, string) {
	t.Helper()
	r, err := Run([]string{dir}, Options{Location: time.UTC, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var text, page, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	return r, text.String(), page.String()
}

// TestScale1000Ranks: the bundle of 1,024 ranks is read and written in
// every format within 5 s (on the 2-core test machine, shared), the text
// report stays short and leads with the incident, and the HTML report folds
// its per-rank tables.
func TestScale1000Ranks(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 2,048 files")
	}
	dir := scaleBundle(t)
	start := time.Now()
	r, text, page := renderAll(t, dir)
	took := time.Since(start)
	if dst := os.Getenv("DIAGNOSE_DUMP"); dst != "" {
		_ = os.WriteFile(dst+".txt", []byte(text), 0o644)
		_ = os.WriteFile(dst+".html", []byte(page), 0o644)
	}
	t.Logf("1,024 ranks: read and rendered in %v; text %d lines, HTML %d KiB", took, strings.Count(text, "\n"), len(page)/1024)
	if took > time.Duration(scaleLimit) {
		t.Errorf("took %v, want ≤ %v", took, time.Duration(scaleLimit))
	}
	nprocs := 0
	for _, n := range r.Nodes {
		nprocs += len(n.Processes)
	}
	if len(r.Nodes) != 128 || nprocs != 1024 {
		t.Fatalf("%d nodes, %d processes", len(r.Nodes), nprocs)
	}
	if len(r.Incidents) != 1 || r.Incidents[0].Root == nil || r.Incidents[0].Root.Rank != 517 {
		t.Fatalf("incidents %+v", r.Incidents)
	}
	// The text: the incident within its first 10 lines, no per-process
	// line, and short enough to read.
	lines := strings.Split(text, "\n")
	if !strings.Contains(strings.Join(lines[:10], "\n"), "ROOT CAUSE EI0011 (link_setup) on node-65 pid 2165005 (rank 517 of 1024") {
		t.Errorf("the text does not lead with the incident:\n%s", strings.Join(lines[:10], "\n"))
	}
	if strings.Contains(text, " pid 2100001 python3, settings set") {
		t.Errorf("the text lists processes without --detail")
	}
	if len(lines) > 400 {
		t.Errorf("the text report is %d lines for 1,024 ranks", len(lines))
	}
	var detail bytes.Buffer
	if err := WriteTextWith(&detail, r, TextOptions{Detail: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail.String(), "node-1 pid 2101000 python3, settings set") {
		t.Errorf("--detail does not list the processes")
	}
	// The HTML folds every table of a row per rank or node.
	for _, w := range []string{`<details class="fold" id="processes-all">`, `<details class="fold" id="nodes-all">`, `<details class="fold" id="clocks-all">`} {
		if !strings.Contains(page, w) {
			t.Errorf("HTML lacks %s", w)
		}
	}
	if n := strings.Count(page, "Reduce the QPs per connection"); n > 1 {
		t.Errorf("a remedy is printed %d times", n)
	}
}

// TestScaleHTMLInChromium renders the 1,024-rank report in headless
// chromium: no console message, and a screenshot of the first screen
// (docs/diagnose-html-1000.png; -update rewrites it) that a person can
// read: the incident, its pair or root and the folded tables.
func TestScaleHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	bin := testtools.EnsureTool(t, "chromium", "chromium")
	dir := scaleBundle(t)
	_, _, page := renderAll(t, dir)
	out := t.TempDir()
	file := filepath.Join(out, "report.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := loadPage(t, bin, file)
	if !strings.Contains(dom, `id="root-1"`) {
		t.Errorf("rendered page lacks the root")
	}
	shot := screenshot(t, bin, file, 1280, 2000, "diagnose-html-1000.png")
	if dst := os.Getenv("DIAGNOSE_DUMP"); dst != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(dst+".png", b, 0o644)
	}
}
