package npuhealth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/npufault"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// fakeTable is an npu-smi info table of chips.
type fakeTable struct {
	mu    sync.Mutex
	chips []ascend.ChipID
	err   error
}

func (f *fakeTable) Chips(context.Context) ([]ascend.ChipID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ascend.ChipID(nil), f.chips...), f.err
}
func (f *fakeTable) InFlight() <-chan struct{} { return nil }

func chips910B(n int) []ascend.ChipID {
	var out []ascend.ChipID
	for i := 0; i < n; i++ {
		out = append(out, ascend.ChipID{NPU: fmt.Sprint(i), Chip: "0"})
	}
	return out
}

// fakeNPUSMI answers `info -t <type> -i N [-c C]` from dir: <type>.<N>.txt
// when present, else <type>.txt; a missing file answers as npu-smi does for
// an unknown type (exit 215, "Error parameter of -t"). It records every call.
type fakeNPUSMI struct {
	dir   string
	mu    sync.Mutex
	calls []string
	// answer, when set, overrides the files for one call (nil: use them).
	answer func(args []string) *vendorcli.Result
}

func (f *fakeNPUSMI) exec(ctx context.Context, args []string) vendorcli.Result {
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(args, " "))
	answer := f.answer
	f.mu.Unlock()
	if answer != nil {
		if r := answer(args); r != nil {
			return *r
		}
	}
	if len(args) < 5 || args[0] != "info" || args[1] != "-t" || args[3] != "-i" {
		return vendorcli.Result{Stdout: []byte("Error parameter of -t\n"), ExitCode: 215}
	}
	typ, npu := args[2], args[4]
	names := []string{typ + "." + npu + ".txt", typ + ".txt"}
	if len(args) == 5 {
		// Card level (no -c): card-<type>.txt first, where the card's
		// answer differs from a chip's (board).
		names = append([]string{"card-" + typ + ".txt"}, names...)
	}
	for _, name := range names {
		if b, err := os.ReadFile(filepath.Join(f.dir, name)); err == nil {
			return vendorcli.Result{Stdout: b}
		}
	}
	return vendorcli.Result{Stdout: []byte("Error parameter of -t\nUsage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n"), ExitCode: 215}
}

func (f *fakeNPUSMI) count(substr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.Contains(c, substr) {
			n++
		}
	}
	return n
}

// newFake returns a collector over an 8-NPU 910B node answering from
// testdata/910b, with a devfs of 8 davinciN files and a fault-code table.
func newFake(t *testing.T) (*Collector, *fakeNPUSMI, *fakeTable) {
	t.Helper()
	dev := t.TempDir()
	for i := 0; i < 8; i++ {
		if err := os.WriteFile(filepath.Join(dev, fmt.Sprintf("davinci%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"davinci_manager", "devmm_svm", "hisi_hdc"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	table := &fakeTable{chips: chips910B(8)}
	c, err := newCollector(Config{Interval: time.Minute, FaultCodeFile: filepath.Join("testdata", "faultcodes.json")},
		Deps{Tool: vendorcli.Tool{Timeout: 5 * time.Second}, DevFS: dev, Table: table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNPUSMI{dir: filepath.Join("testdata", "910b")}
	c.exec = f.exec
	at := time.Unix(1700000000, 0)
	c.now = func() time.Time { return at }
	return c, f, table
}

// TestGolden910B: the detail answers of an 8-NPU 910B node (formats of the
// reference; NPU 3 the real multi-code Alarm capture, NPU 5 ECC errors,
// NPU 4 a degraded HCCS link, NPU 2 PCIe errors, NPU 6 the unsigned
// underflow of Next-Isolated) give the series with the values printed.
func TestGolden910B(t *testing.T) {
	c, _, _ := newFake(t)
	s := c.Sweep(context.Background())
	if s.Err != nil {
		t.Fatalf("sweep: %v", s.Err)
	}
	metrictest.Golden(t, filepath.Join("testdata", "golden", "910b-8npu.prom"), metrictest.Unchecked(c))

	// Spot checks that do not rest on the golden file alone.
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ascend_npu_chips", nil, 8},
		{"ascend_npu_device_files", nil, 8},
		{"ascend_npu_error_codes", metrictest.Labels("npu=3,chip=0"), 3},
		{"ascend_npu_error_code", metrictest.Labels("npu=3,chip=0,code=8C03A000,class=RestartNPU"), 1},
		{"ascend_npu_error_code", metrictest.Labels("npu=3,chip=0,code=A4025021,class=unknown"), 1},
		{"ascend_npu_hbm_ecc_errors_total", metrictest.Labels("npu=5,chip=0,bit=double"), 2},
		{"ascend_npu_hbm_ecc_pages", metrictest.Labels("npu=5,chip=0,bit=double,state=pending"), 1},
		{"ascend_npu_hccs_lanes", metrictest.Labels("npu=4,chip=0,link=4"), 2},
		{"ascend_npu_hccs_healthy", metrictest.Labels("npu=4,chip=0"), 0},
		{"ascend_npu_pcie_errors_total", metrictest.Labels("npu=2,chip=0,type=retry"), 415},
		// The chip's sum of its 5 types (1 + 991 + 2 + 0 + 415).
		{"ascend_npu_pcie_chip_errors_total", metrictest.Labels("npu=2,chip=0"), 1409},
		{"ascend_npu_utilization_ratio", metrictest.Labels("npu=0,chip=0,engine=overall"), 0.4},
		{"ascend_npu_hbm_temperature_celsius", metrictest.Labels("npu=7,chip=0"), 52},
	} {
		if v, ok := metrictest.Find(mfs, tc.name, tc.labels); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_hbm_ecc_pages", metrictest.Labels("npu=6,chip=0,bit=double,state=pending")); ok {
		t.Error("npu 6: the underflowed Next-Isolated count 4294967295 was exported")
	}
	if got := c.ids.Of(ascend.ChipID{NPU: "1", Chip: "0"}).VDieID; got != "185011D4-21104518-A0C4ED94-14CC040A-56102003" {
		t.Errorf("published VDie ID = %q", got)
	}
}

// TestUnsupportedAskedOnce: sio-info answers "does not support querying"
// (exit 0) on 910B: asked once per chip, never again; board and ecc-enable,
// static, are not asked again either once they answered.
func TestUnsupportedAskedOnce(t *testing.T) {
	c, f, _ := newFake(t)
	for i := 0; i < 3; i++ {
		c.Sweep(context.Background())
	}
	if n := f.count("-t sio-info"); n != 8 {
		t.Errorf("sio-info asked %d times over 3 sweeps of 8 chips, want 8 (once per chip)", n)
	}
	if n := f.count("-t health"); n != 24 {
		t.Errorf("health asked %d times, want 24", n)
	}
	if n := f.count("-t board"); n != 16 {
		t.Errorf("board asked %d times, want 16 (static: chip level for the VDie ID, card level for the serial number, once each per chip)", n)
	}
	if n := f.count("-t ecc-enable"); n != 8 {
		t.Errorf("ecc-enable asked %d times, want 8 (once per NPU, static)", n)
	}
	if v := metrictest.Value(t, metrictest.Unchecked(c), "hccl_exporter_npu_smi_detail_calls_total", metrictest.Labels("type=sio-info,result=unsupported")); v != 8 {
		t.Errorf("calls_total{sio-info,unsupported} = %v, want 8", v)
	}
}

// TestBusyRetriedNextSweep: a DCMI busy answer (-8020) is counted busy, not
// a failure; the chip keeps its previous reading and is asked again at the
// next sweep.
func TestBusyRetriedNextSweep(t *testing.T) {
	c, f, _ := newFake(t)
	c.Sweep(context.Background())
	busy := &vendorcli.Result{ExitCode: 172, Stdout: []byte("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi model initialized failed, because the device is used. ret is -8020\n")}
	f.answer = func(args []string) *vendorcli.Result {
		if strings.Join(args, " ") == "info -t ecc -i 5 -c 0" {
			return busy
		}
		return nil
	}
	s := c.Sweep(context.Background())
	if s.Err != nil {
		t.Errorf("a busy answer made the sweep fail: %v", s.Err)
	}
	if got := s.Readings[5].Results["ecc"]; got != sweep.Busy {
		t.Errorf("result %q, want busy", got)
	}
	if v := metrictest.Value(t, metrictest.Unchecked(c), "ascend_npu_hbm_ecc_errors_total", metrictest.Labels("npu=5,chip=0,bit=double")); v != 2 {
		t.Errorf("during busy: double-bit errors %v, want the previous reading 2", v)
	}
	f.answer = nil
	before := f.count("-t ecc -i 5 ")
	c.Sweep(context.Background())
	if f.count("-t ecc -i 5 ") != before+1 {
		t.Error("the busy query was not asked again at the next sweep")
	}
	if v := metrictest.Value(t, metrictest.Unchecked(c), "hccl_exporter_npu_smi_detail_calls_total", metrictest.Labels("type=ecc,result=busy")); v != 1 {
		t.Errorf("calls_total{ecc,busy} = %v, want 1", v)
	}
}

// TestChipLost: the table loses a chip: ascend_npu_chips drops below
// ascend_npu_device_files and the lost chip's series go.
func TestChipLost(t *testing.T) {
	c, _, table := newFake(t)
	c.Sweep(context.Background())
	table.mu.Lock()
	table.chips = chips910B(7)
	table.mu.Unlock()
	c.Sweep(context.Background())
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	if v, _ := metrictest.Find(mfs, "ascend_npu_chips", nil); v != 7 {
		t.Errorf("ascend_npu_chips = %v, want 7", v)
	}
	if v, _ := metrictest.Find(mfs, "ascend_npu_device_files", nil); v != 8 {
		t.Errorf("ascend_npu_device_files = %v, want 8", v)
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_error_codes", metrictest.Labels("npu=7,chip=0")); ok {
		t.Error("the lost chip still has series")
	}
	// A failed table run is not a lost chip: the last accepted one stands.
	table.mu.Lock()
	table.err = errors.New("npu-smi timed out")
	table.mu.Unlock()
	c.Sweep(context.Background())
	if v := metrictest.Value(t, metrictest.Unchecked(c), "ascend_npu_chips", nil); v != 7 {
		t.Errorf("after a failed table run: ascend_npu_chips = %v, want 7 (the last accepted table)", v)
	}
}

// TestHangDoesNotSlowScrape: while a detail call hangs (until its timeout),
// a scrape through the exporter's scraper is served at once from the last
// sweep. Latency is measured against a scrape with no call in flight.
func TestHangDoesNotSlowScrape(t *testing.T) {
	c, f, _ := newFake(t)
	c.now = time.Now
	c.Sweep(context.Background())
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	f.answer = func(args []string) *vendorcli.Result {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return &vendorcli.Result{TimedOut: true, ExitCode: -1, Duration: 5 * time.Second}
	}
	scraper := exporter.NewScraper(slog.New(slog.DiscardHandler), map[string]collector.Collector{"npuhealth": c})
	scrape := func() time.Duration {
		begin := time.Now()
		metrictest.Gather(t, scraper)
		return time.Since(begin)
	}
	idle := scrape()
	done := make(chan struct{})
	go func() { defer close(done); c.Sweep(context.Background()) }()
	<-entered
	var worst time.Duration
	for i := 0; i < 5; i++ {
		if d := scrape(); d > worst {
			worst = d
		}
	}
	close(release)
	<-done
	t.Logf("scrape idle %s, worst while a call hangs %s (ratio %.1f)", idle, worst, float64(worst)/float64(idle))
	if worst > time.Second {
		t.Errorf("a scrape took %s while a detail call hung; want it served from the last sweep at once", worst)
	}
	if v := metrictest.Value(t, metrictest.Unchecked(c), "hccl_exporter_npu_smi_detail_calls_total", metrictest.Labels("type=health,result=timeout")); v < 1 {
		t.Error("the hung call was not counted as a timeout")
	}
}

// TestStaleSweepNotServed: a sweep older than two intervals is not served.
func TestStaleSweepNotServed(t *testing.T) {
	c, _, _ := newFake(t)
	at := time.Unix(1700000000, 0)
	c.Sweep(context.Background())
	for _, tc := range []struct {
		age   time.Duration
		fresh bool
	}{{0, true}, {2 * time.Minute, true}, {2*time.Minute + time.Second, false}} {
		c.now = func() time.Time { return at.Add(tc.age) }
		ch := make(chan prometheus.Metric, 2000)
		err := c.Update(context.Background(), ch)
		close(ch)
		chips := 0
		for m := range ch {
			if m.Desc() == errorCodesDesc {
				chips++
			}
		}
		if tc.fresh && (err != nil || chips != 8) {
			t.Errorf("age %s: %d chips served, err %v; want the sweep served", tc.age, chips, err)
		}
		if !tc.fresh && (chips != 0 || !errors.Is(err, collector.ErrNoData)) {
			t.Errorf("age %s: %d chips served, err %v; want nothing per chip and ErrNoData", tc.age, chips, err)
		}
	}
}

// TestXlinkSpelling: a BUILD_CH binary knows no -t hccs; the sweep asks
// -t xlink and keeps asking it that way.
func TestXlinkSpelling(t *testing.T) {
	c, f, _ := newFake(t)
	dir := t.TempDir()
	ents, _ := os.ReadDir(f.dir)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(f.dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		name := e.Name()
		if strings.HasPrefix(name, "hccs") {
			name = "xlink" + strings.TrimPrefix(name, "hccs")
			b = []byte(strings.ReplaceAll(string(b), "hccs ", "xlink "))
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.dir = dir
	c.Sweep(context.Background())
	c.Sweep(context.Background())
	if n := f.count("-t hccs"); n != 1 {
		t.Errorf("-t hccs asked %d times, want once (then xlink)", n)
	}
	if v := metrictest.Value(t, metrictest.Unchecked(c), "ascend_npu_hccs_lanes", metrictest.Labels("npu=4,chip=0,link=4")); v != 2 {
		t.Errorf("xlink lanes = %v, want 2", v)
	}
}

// TestBuiltinClassification: without --npuhealth.fault-code-file (a
// systemd install) a code of MindCluster's documented table gets its class
// from the table built into the binary; a file replaces that table.
func TestBuiltinClassification(t *testing.T) {
	// The flags as a systemd unit without --npuhealth.fault-code-file
	// leaves them.
	app := kingpin.New("x", "")
	cfg := AddFlags(app, nil)
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	table := &fakeTable{chips: chips910B(8)}
	builtin, err := New(*cfg, Deps{Tool: vendorcli.Tool{Timeout: 5 * time.Second}, DevFS: t.TempDir(), Table: table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{"8C1F8609": "NotHandleFault", "8C03A000": "RestartNPU", "A4025021": "NotHandleFault", "DEADBEEF": npufault.ClassUnknown} {
		if got := builtin.codes.Class(code); got != want {
			t.Errorf("built in: class of %s = %q, want %q", code, got, want)
		}
	}
	// The test file lists neither 8C1F8609 nor A4025021: the file is the
	// whole table, as MindCluster's /usr/local/faultCode.json is.
	c, _, _ := newFake(t)
	for code, want := range map[string]string{"8C1F8609": npufault.ClassUnknown, "8C03A000": "RestartNPU"} {
		if got := c.codes.Class(code); got != want {
			t.Errorf("with a file: class of %s = %q, want %q", code, got, want)
		}
	}
	if _, err := New(Config{FaultCodeFile: filepath.Join("testdata", "missing.json")}, Deps{Table: table}, nil); err == nil || !strings.Contains(err.Error(), "--npuhealth.fault-code-file") {
		t.Errorf("missing file: %v", err)
	}
}

// yieldingTable has an npu-smi info run in flight until released.
type yieldingTable struct {
	fakeTable
	running chan struct{}
}

func (y *yieldingTable) InFlight() <-chan struct{} { return y.running }

// TestYieldsToTableRun: while the npusmi collector's npu-smi info run (a
// scrape's) is in flight, the sweep makes no call; it goes on once the run
// ends.
func TestYieldsToTableRun(t *testing.T) {
	c, f, _ := newFake(t)
	y := &yieldingTable{fakeTable: fakeTable{chips: chips910B(1)}, running: make(chan struct{})}
	c.table = y
	done := make(chan struct{})
	go func() { defer close(done); c.Sweep(context.Background()) }()
	time.Sleep(100 * time.Millisecond)
	if n := f.count("info -t"); n != 0 {
		t.Errorf("%d detail calls while npu-smi info was in flight, want 0", n)
	}
	close(y.running)
	<-done
	if n := f.count("info -t"); n == 0 {
		t.Error("no detail call after the table run ended")
	}
}
