package hccn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// readingAdapter exports one Reading, as the collector does per device.
type readingAdapter struct{ r *Reading }

func (readingAdapter) Describe(chan<- *prometheus.Desc) {}
func (a readingAdapter) Collect(ch chan<- prometheus.Metric) {
	exportReading(ch, a.r)
}

func writeEmpty(path string) error { return os.WriteFile(path, nil, 0o644) }

// gather returns the text exposition of a collector.
func gather(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, mf := range metrictest.Gather(t, c) {
		if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// compareGolden compares c's exposition with testdata/golden/<name>.prom
// (rewritten with -update), and lints it.
func compareGolden(t *testing.T, name string, c prometheus.Collector) {
	t.Helper()
	metrictest.Golden(t, filepath.Join("testdata", "golden", name+".prom"), c)
}

// captureCommand is the command a capture file answers, from its name.
func captureCommand(name string) string {
	name = strings.TrimPrefix(name, "batch-910b3-8dev-")
	for _, c := range commands {
		if strings.HasPrefix(name, c.name+"-") {
			return c.name
		}
	}
	return ""
}

// TestGoldenPerCapture: every capture, read as the answer of device 0,
// exports exactly its golden metrics. Batch files hold one block per
// device, split at their authors' "..." lines; golden files name the block.
func TestGoldenPerCapture(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	files = append(files, filepath.Join("testdata", "stat-full-from-format.txt"))
	for _, file := range files {
		base := strings.TrimSuffix(filepath.Base(file), ".txt")
		cmd := captureCommand(base)
		if cmd == "" {
			t.Errorf("%s: no command in the file name", file)
			continue
		}
		raw := readFile(t, file)
		blocks := [][]byte{dropElisions(raw)}
		if strings.HasPrefix(base, "batch-") {
			blocks = nil
			for _, b := range strings.Split(string(raw), "...\n") {
				blocks = append(blocks, []byte(b))
			}
		}
		for i, b := range blocks {
			c := newCollector(Config{}, Deps{}, nil)
			c.loc = time.UTC
			r := &Reading{Device: Device{PhyID: 0, ChipID: ascend.ChipID{NPU: "0", Chip: "0"}}}
			for _, cm := range commands {
				if cm.name == cmd {
					if err := cm.parse(c, r, b); err != nil {
						t.Errorf("%s block %d: %v", file, i, err)
					}
				}
			}
			name := base
			if len(blocks) > 1 {
				name = fmt.Sprintf("%s.%d", base, i)
			}
			compareGolden(t, name, readingAdapter{r})
		}
	}
}

// node910B writes an 8-chip Atlas 800T A2 node for the fake: every chip UP
// and healthy, with QPs, counters and one earlier flap.
func node910B(n *fakeNode) {
	stat := string(readFile(n.t, filepath.Join("testdata", "stat-full-from-format.txt")))
	linkStat := string(capture(n.t, "link_stat-2025-with-down-count.txt"))
	for phy := range 8 {
		n.set(phy, "link", "link status: UP\n")
		n.set(phy, "net_health", "net health status: Success\n")
		n.set(phy, "link_stat", strings.ReplaceAll(linkStat, "[devid 0]", fmt.Sprintf("[devid %d]", phy)))
		n.set(phy, "stat", stat)
		n.set(phy, "qp_info", string(capture(n.t, "qp_info-4qp-2peers-from-format.txt")))
		n.set(phy, "tls", strings.Split(string(capture(n.t, "batch-910b3-8dev-tls-grep-switch.txt")), "\n")[phy]+"\n")
		n.set(phy, "speed", string(capture(n.t, "speed-200g-from-format.txt")))
		if phy == 7 {
			// No module: the tool exits non-zero with the answer on stdout.
			n.fail(phy, "optical", 1, "stdout", "Optical module is not present.")
		} else {
			n.set(phy, "optical", string(capture(n.t, "optical-910a-qsfp-4lane.txt")))
		}
	}
}

type chipList []ascend.Chip

func (c chipList) Chips(context.Context) ([]ascend.Chip, error) { return c, nil }

func chips910B(n int) chipList {
	var out chipList
	for i := range n {
		out = append(out, ascend.Chip{ChipID: ascend.ChipID{NPU: fmt.Sprint(i), Chip: "0"}})
	}
	return out
}

// newFakeCollector returns a collector driving the fake with a fixed clock:
// in this process under -short (inProcess), else a child per call.
func newFakeCollector(t *testing.T, n *fakeNode, chips ChipSource, timeout time.Duration) *Collector {
	t.Helper()
	c := newProcessCollector(t, n, chips, timeout)
	if testing.Short() {
		n.inProcess(c)
	}
	return c
}

// newProcessCollector is newFakeCollector with a child process per call,
// always: for the tests of what the process does (hangs, group kills,
// cancelled calls).
func newProcessCollector(t *testing.T, n *fakeNode, chips ChipSource, timeout time.Duration) *Collector {
	t.Helper()
	bin := n.use(t)
	c := newCollector(Config{Path: bin, Timeout: timeout, Interval: time.Hour}, Deps{Chips: chips}, nil)
	c.loc = time.UTC
	at := time.Unix(1700000000, 0)
	c.now = func() time.Time { return at }
	return c
}

func TestGoldenNode(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	// Chip 6's port has no optical module, chip 7's detect IP is
	// unreachable and its driver is too old for -qp_info.
	n.set(6, "link", string(capture(t, "link-910b3-down-no-optics.txt")))
	n.set(7, "net_health", "net health status: Unreachable\n")
	n.fail(7, "qp_info", 3, "stderr", "Get invalid major cmd.")
	c := newFakeCollector(t, n, chips910B(8), 10*time.Second)
	s := c.Sweep(context.Background())
	if !s.Complete || s.Err != nil || len(s.Devices) != 8 {
		t.Fatalf("sweep: complete=%v err=%v devices=%d", s.Complete, s.Err, len(s.Devices))
	}
	if got := len(n.calls()); got != 8*len(commands) {
		t.Errorf("%d calls, want %d", got, 8*len(commands))
	}
	if m := n.maxConcurrent(); m != 1 {
		t.Errorf("%d hccn_tool calls ran at once, want 1", m)
	}
	compareGolden(t, "node-910b-8chips", metrictest.Unchecked(c))
}

// TestHungDeviceKilledOthersRead: a device whose calls hang is killed at the
// timeout with its whole process group, costs one timeout only, exports
// nothing, and every other device is read in the same sweep.
func TestHungDeviceKilledOthersRead(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for hung fake hccn_tool runs to be killed: skipped under -short")
	}
	n := newFakeNode(t)
	node910B(n)
	n.hang(2)
	pids := filepath.Join(t.TempDir(), "pids")
	t.Setenv(fakePidsEnv, pids)
	// Long enough that a healthy call never times out on a loaded machine.
	const timeout = 3 * time.Second
	c := newProcessCollector(t, n, chips910B(4), timeout)
	c.now = time.Now
	begin := time.Now()
	s := c.Sweep(context.Background())
	took := time.Since(begin)
	if took > timeout+10*time.Second {
		t.Errorf("sweep took %s with one hung device (timeout %s)", took, timeout)
	}
	if s.Complete || s.Err == nil || !strings.Contains(s.Err.Error(), "phy_id 2 -link: timeout") {
		t.Errorf("sweep with a hung device: complete=%v err=%v", s.Complete, s.Err)
	}
	parent, child := clitest.ReadPids(t, pids)
	clitest.WaitGone(t, parent, parent, child)

	calls := n.calls()
	if want := []string{"2 link"}; !slices.Equal(filter(calls, "2 "), want) {
		t.Errorf("calls on the hung device = %v, want %v (one timeout, the rest skipped)", filter(calls, "2 "), want)
	}
	for _, phy := range []string{"0 ", "1 ", "3 "} {
		if got := len(filter(calls, phy)); got != len(commands) {
			t.Errorf("device %s: %d calls, want %d", phy, got, len(commands))
		}
	}
	if r := s.Devices[2]; r.HasLink || r.HasQPs || r.Stat != nil || r.LinkStat != nil || r.NetHealth != "" ||
		r.Results["link"] != sweep.Timeout {
		t.Errorf("hung device reading = %+v", r)
	}
	out := string(gather(t, metrictest.Unchecked(c)))
	for _, want := range []string{
		`hccl_exporter_hccn_tool_up 0`,
		`hccl_exporter_hccn_tool_calls_total{command="link",result="timeout"} 1`,
		`hccl_exporter_hccn_tool_calls_total{command="qp_info",result="success"} 3`,
		`ascend_roce_active_queue_pairs{chip="0",npu="3"} 4`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if strings.Contains(out, `npu="2"`) {
		t.Errorf("the hung device exports values:\n%s", grep(out, `npu="2"`))
	}
	// The sweep warned once; the registry does not log it again per scrape.
	if err := c.Update(context.Background(), make(chan prometheus.Metric, 1000)); err == nil || !strings.Contains(err.Error(), "timeout") ||
		!errors.Is(err, collector.ErrLogged) {
		t.Errorf("Update after an incomplete sweep: %v, want the sweep's error, marked logged", err)
	}
}

// TestConcurrentScrapesCallNothing: 50 scrapes at once, before and after
// the first sweep, run hccn_tool not once and never wait. (Under -short
// the sweep answers in this process, so the timing bound holds there too.)
func TestConcurrentScrapesCallNothing(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	c := newFakeCollector(t, n, chips910B(8), 10*time.Second)

	scrape50 := func() time.Duration {
		var wg sync.WaitGroup
		begin := time.Now()
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch := make(chan prometheus.Metric, 4096)
				_ = c.Update(context.Background(), ch)
			}()
		}
		wg.Wait()
		return time.Since(begin)
	}
	// Before any sweep: nothing to export, nothing run.
	scrape50()
	if got := n.calls(); len(got) != 0 {
		t.Fatalf("scrapes before the first sweep ran hccn_tool: %v", got)
	}
	ch := make(chan prometheus.Metric, 4096)
	if err := c.Update(context.Background(), ch); !errors.Is(err, collector.ErrNoData) {
		t.Errorf("Update before the first sweep: %v, want ErrNoData", err)
	}
	c.Sweep(context.Background())
	after := len(n.calls())
	took := scrape50()
	if got := len(n.calls()); got != after {
		t.Errorf("50 concurrent scrapes made %d hccn_tool calls, want 0", got-after)
	}
	if took > 2*time.Second {
		t.Errorf("50 concurrent scrapes took %s", took)
	}
}

// TestScrapeDuringHungSweep: while a sweep is stuck on a hung device,
// scrapes return at once with the previous sweep.
func TestScrapeDuringHungSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a hung fake hccn_tool sweep: skipped under -short")
	}
	n := newFakeNode(t)
	node910B(n)
	c := newProcessCollector(t, n, chips910B(2), 3*time.Second)
	c.now = time.Now
	first := c.Sweep(context.Background())
	n.hang(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Sweep(context.Background())
	}()
	// Wait until the hung call runs.
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(n.calls()[len(commands)*2:], "1 link") {
		if time.Now().After(deadline) {
			t.Fatal("the second sweep never reached the hung device")
		}
		time.Sleep(10 * time.Millisecond)
	}
	begin := time.Now()
	ch := make(chan prometheus.Metric, 4096)
	if err := c.Update(context.Background(), ch); err != nil {
		t.Errorf("Update during a hung sweep: %v", err)
	}
	if took := time.Since(begin); took > 100*time.Millisecond {
		t.Errorf("a scrape waited %s for a running sweep", took)
	}
	if s, _ := c.Latest(); s != first {
		t.Error("the running sweep was published before it ended")
	}
	<-done
	if s, _ := c.Latest(); s == first || s.Complete {
		t.Error("the finished sweep with the hung device was not published")
	}
}

// TestAbsentTool: without hccn_tool the collector exports only
// hccl_exporter_hccn_tool_up 0, succeeds, and says so once.
func TestAbsentTool(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	t.Setenv("PATH", t.TempDir())
	for _, path := range []string{DefaultPath, filepath.Join(t.TempDir(), "hccn_tool")} {
		logs.Reset()
		c := newCollector(Config{Path: path, Interval: time.Hour}, Deps{}, logger)
		for range 3 {
			c.Sweep(context.Background())
			if err := c.Update(context.Background(), make(chan prometheus.Metric, 100)); err != nil {
				t.Errorf("%s: Update: %v, want no error", path, err)
			}
		}
		if got := string(gather(t, metrictest.Unchecked(c))); !strings.HasSuffix(got, "hccl_exporter_hccn_tool_up 0\n") ||
			strings.Count(got, "\n") != 3 {
			t.Errorf("%s: exposition\n%s\nwant hccl_exporter_hccn_tool_up 0 only", path, got)
		}
		if n := strings.Count(logs.String(), "msg=\"hccn_tool not found"); n != 1 {
			t.Errorf("%s: logged %d times, want once:\n%s", path, n, logs.String())
		}
	}
}

// TestToolNotExecutable: a binary that is there but cannot run is a
// failing sweep (an error every scrape), not a node without RoCE NICs.
func TestToolNotExecutable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hccn_tool")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newCollector(Config{Path: path, Interval: time.Hour}, Deps{Chips: chips910B(1)}, nil)
	if s := c.Sweep(context.Background()); s.Absent || s.Complete || s.Err == nil {
		t.Errorf("sweep with a non-executable binary: absent=%v complete=%v err=%v", s.Absent, s.Complete, s.Err)
	}
	if err := c.Update(context.Background(), make(chan prometheus.Metric, 100)); err == nil {
		t.Error("Update: no error for a non-executable hccn_tool")
	}
}

// TestToolInstalledLater: the binary is resolved at every sweep.
func TestToolInstalledLater(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	bin := n.use(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "hccn_tool")
	c := newCollector(Config{Path: link, Interval: time.Hour}, Deps{Chips: chips910B(1)}, nil)
	if s := c.Sweep(context.Background()); !s.Absent {
		t.Fatalf("sweep without the binary: %+v", s)
	}
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	if s := c.Sweep(context.Background()); s.Absent || !s.Complete {
		t.Fatalf("sweep after installing: absent=%v complete=%v err=%v", s.Absent, s.Complete, s.Err)
	}
}

// TestFailuresExportNothingStale: a call that fails after a good sweep
// drops that command's series for the chip; busy counts as busy.
func TestFailuresExportNothingStale(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	c := newFakeCollector(t, n, chips910B(2), 10*time.Second)
	c.Sweep(context.Background())
	n.fail(1, "qp_info", 11, "stdout", "hccn_tool is busy, please try again.")
	n.fail(1, "stat", 1, "stderr", "Command execute failed!")
	n.set(0, "link_stat", "[devid 0]current time        : Tue Oct 28 21:46:46 2025\n")
	s := c.Sweep(context.Background())
	if s.Complete {
		t.Fatal("sweep with failures reported complete")
	}
	out := string(gather(t, metrictest.Unchecked(c)))
	for _, gone := range []string{`ascend_roce_active_queue_pairs{chip="0",npu="1"}`, `ascend_roce_retransmitted_packets_total{chip="0",npu="1"}`,
		`ascend_roce_link_down_events_total{chip="0",npu="0"}`} {
		if strings.Contains(out, gone) {
			t.Errorf("stale series served: %s", gone)
		}
	}
	for _, want := range []string{
		`hccl_exporter_hccn_tool_calls_total{command="qp_info",result="busy"} 1`,
		`hccl_exporter_hccn_tool_calls_total{command="stat",result="error"} 1`,
		`hccl_exporter_hccn_tool_calls_total{command="link_stat",result="parse_error"} 1`,
		`ascend_roce_active_queue_pairs{chip="0",npu="0"} 4`,
		`ascend_roce_link_down_events_total{chip="0",npu="1"} 1`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("exposition lacks %s", want)
		}
	}
}

// TestLinkDownEventsFromRecords: without `link down count`, LINK DOWN
// records newer than the newest seen are added, past the driver's 10.
func TestLinkDownEventsFromRecords(t *testing.T) {
	c := newCollector(Config{}, Deps{}, nil)
	rec := func(t0 time.Time, downs int) LinkStat {
		s := LinkStat{UpCount: 1}
		for i := range downs {
			at := t0.Add(time.Duration(i) * time.Minute)
			s.Records = append([]LinkRecord{{At: at, Up: false}, {At: at.Add(time.Second), Up: true}}, s.Records...)
		}
		if len(s.Records) > 10 {
			s.Records = s.Records[:10]
		}
		return s
	}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if got := c.downEvents(3, rec(t0, 2)); got != 2 {
		t.Errorf("first read = %v, want 2", got)
	}
	if got := c.downEvents(3, rec(t0, 2)); got != 2 {
		t.Errorf("same records = %v, want 2", got)
	}
	// 12 flaps in all: the driver shows only the last 5.
	if got := c.downEvents(3, rec(t0, 12)); got != 7 {
		t.Errorf("after 12 flaps, 5 records shown = %v, want 2 + 5 newer = 7", got)
	}
	if got := c.downEvents(3, LinkStat{HasDownCount: true, DownCount: 40}); got != 40 {
		t.Errorf("printed down count = %v, want 40", got)
	}
}

func filter(ss []string, prefix string) []string {
	var out []string
	for _, s := range ss {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func grep(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestActiveQPsView(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	n.fail(1, "qp_info", 11, "stdout", "hccn_tool is busy, please try again.")
	c := newFakeCollector(t, n, chipList{chip("0", "0", "0"), chip("0", "1", "1")}, 10*time.Second)
	if got := c.ActiveQPs(); got != nil {
		t.Errorf("before a sweep: %v", got)
	}
	at := time.Unix(1700000000, 0)
	c.Sweep(context.Background())
	got := c.ActiveQPs()
	want := []ascend.QPReading{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PhyID: 0, ActiveQPs: 4, QPNs: []uint32{1322, 1323, 1410, 1411}, At: at, Fresh: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ActiveQPs = %+v, want %+v (the busy chip absent, not 0)", got, want)
	}
	c.now = func() time.Time { return at.Add(c.FreshFor() + time.Second) }
	if got := c.ActiveQPs(); len(got) != 1 || got[0].Fresh {
		t.Errorf("old sweep: %+v, want the reading marked stale", got)
	}
}

// TestStartStop: sweeps run until Stop, which cancels a hung call (a real
// child, under -short too) and keeps the last complete sweep.
func TestStartStop(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	c := newProcessCollector(t, n, chips910B(2), 10*time.Second)
	c.now = time.Now
	c.cfg.Interval = 50 * time.Millisecond
	c.Start(context.Background())
	// A failed check must not leave the sweeps running: they would run the
	// fake with the environment of the tests that follow.
	t.Cleanup(func() { c.Close() })
	// Sweeps run: the first asks every command of both chips, the next
	// ones at least the fast commands again (each call is a process; under
	// -race on a loaded machine one takes a few hundred ms).
	deadline := time.Now().Add(30 * time.Second)
	for len(n.calls()) < 2*len(commands)+2 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d calls after 30s of 50ms sweeps", len(n.calls()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	n.hang(0)
	time.Sleep(100 * time.Millisecond) // let a sweep reach the hung device
	begin := time.Now()
	c.Close()
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("Stop took %s with a call hanging (timeout 10s)", took)
	}
	if m := n.maxConcurrent(); m > 1 {
		t.Errorf("%d calls at once", m)
	}
	if s, ok := c.Latest(); !ok || !s.Complete {
		t.Errorf("Stop replaced the last complete sweep by the cancelled one: %+v", s)
	}
	c.Close() // idempotent
}

func TestFlags(t *testing.T) {
	app := kingpin.New("test", "")
	cfg := AddFlags(app, nil)
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.Path != DefaultPath || cfg.Timeout != 5*time.Second || cfg.Interval != 30*time.Second {
		t.Errorf("defaults = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []Config{{Timeout: 0, Interval: time.Minute}, {Timeout: time.Second, Interval: time.Millisecond}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) accepted", bad)
		}
	}
}

// chip is a chip of npu-smi's table with its Phy-ID ("" where none).
func chip(npu, c, phy string) ascend.Chip {
	return ascend.Chip{ChipID: ascend.ChipID{NPU: npu, Chip: c}, PhyID: phy}
}
