package npuhealth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// TestSplitCard: card-level answers split into the blocks the chip form
// prints. usages-910b1-real.txt is a real capture (910B1, npu-smi
// 23.0.rc2); the others are npu-smi's printf lines (card.go cites them).
func TestSplitCard(t *testing.T) {
	for _, tc := range []struct {
		file    string
		chips   []string
		failed  []string
		wantErr bool
		check   func(t *testing.T, a CardAnswer)
	}{
		{file: "usages-910b1-real.txt", chips: []string{"0"}, check: func(t *testing.T, a CardAnswer) {
			u, err := ParseUsages(a.Chips["0"])
			if err != nil {
				t.Fatal(err)
			}
			if !u.HBMBandwidth.OK || u.HBMBandwidth.V != 0 {
				t.Errorf("HBM bandwidth %+v, want 0 read", u.HBMBandwidth)
			}
		}},
		// The MCU's block (Chip Name : MCU) belongs to no chip.
		{file: "health-910b-mcu.txt", chips: []string{"0"}, check: func(t *testing.T, a CardAnswer) {
			if !bytes.Contains(a.Chips["0"], []byte("Health")) || bytes.Count(a.Chips["0"], []byte("\n")) != 1 {
				t.Errorf("chip 0's block %q, want its one Health line", a.Chips["0"])
			}
		}},
		{file: "ecc-a3-two-dies.txt", chips: []string{"0", "1"}, check: func(t *testing.T, a CardAnswer) {
			for chip, want := range map[string]float64{"0": 0, "1": 2} {
				e, err := ParseECC(a.Chips[chip])
				if err != nil {
					t.Fatal(err)
				}
				if got := e.Errors[1]; !got.OK || got.V != want {
					t.Errorf("die %s: double-bit errors %+v, want %v", chip, got, want)
				}
			}
		}},
		{file: "memory-a3-die1-failed.txt", chips: []string{"0"}, failed: []string{"1"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "card", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			a, err := SplitCard(b)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got := sortedKeys(a.Chips); !slices.Equal(got, tc.chips) {
				t.Errorf("chips %v, want %v", got, tc.chips)
			}
			if got := sortedKeys(a.Failed); !slices.Equal(got, tc.failed) {
				t.Errorf("failed %v, want %v", got, tc.failed)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

// TestSplitCardRefuses: what cannot be split is an error, and the chips
// closed before it are kept.
func TestSplitCardRefuses(t *testing.T) {
	two, err := os.ReadFile(filepath.Join("testdata", "card", "ecc-a3-two-dies.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cut := two[:bytes.LastIndex(two, []byte("\tChip ID"))] // killed before die 1's Chip ID
	for _, tc := range []struct {
		name  string
		in    []byte
		chips []string
	}{
		{"cut after die 0", cut, []string{"0"}},
		// 310/310B print the Chip ID first (card_info.c:678-680).
		{"chip id first", []byte(fmt.Sprintf("\t%-30s : 0\n\t%-30s : 1\n\n\t%-30s : 0\n\t%-30s : 47\n\n", "NPU ID", "Chip Count", "Chip ID", "Temperature(C)")), nil},
		{"chip id not a number", []byte(fmt.Sprintf("\t%-30s : 52\n\t%-30s : x\n", "HBM Temperature(C)", "Chip ID")), nil},
		{"a message", []byte("This device does not support querying ecc.\n"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := SplitCard(tc.in)
			if err == nil {
				t.Fatal("no error")
			}
			if got := sortedKeys(a.Chips); !slices.Equal(got, tc.chips) {
				t.Errorf("chips %v, want %v", got, tc.chips)
			}
		})
	}
	if _, err := SplitCard([]byte("This device does not support querying ecc.\n")); !errors.Is(err, ErrNoData) {
		t.Errorf("a message: %v, want ErrNoData", err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// fakeA3 answers an 8-NPU node of two dies per NPU. A die's chip-form
// answer (-i N -c C) is testdata/910b's of the 910B NPU (2N+C) mod 8, so
// dies differ (ECC and PCIe errors on some, not others); the card form
// (-i N) wraps the NPU's two die answers in npu-smi's card wrapper
// (card_info.c:589-615, 661-702), or, with noCard, answers as npu-smi
// does where the card form is not supported (card_info.c:1511).
type fakeA3 struct {
	noCard bool
	mu     sync.Mutex
	calls  []string
}

var perCardTypes = []string{"ecc", "pcie-err", "memory", "usages"}

func (f *fakeA3) die(typ string, npu, chip int) []byte {
	dir := filepath.Join("testdata", "910b")
	for _, name := range []string{fmt.Sprintf("%s.%d.txt", typ, (2*npu+chip)%8), typ + ".txt"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return b
		}
	}
	return nil
}

func (f *fakeA3) exec(_ context.Context, args []string) vendorcli.Result {
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(args, " "))
	f.mu.Unlock()
	var npu, chip int
	typ := args[2]
	if _, err := fmt.Sscan(args[4], &npu); err != nil {
		return vendorcli.Result{Stdout: []byte("Invalid card id.\nError parameter of -i\n"), ExitCode: 215}
	}
	if len(args) == 7 {
		if _, err := fmt.Sscan(args[6], &chip); err != nil {
			return vendorcli.Result{Stdout: []byte("Invalid chip id.\nError parameter of -c\n"), ExitCode: 215}
		}
		if b := f.die(typ, npu, chip); b != nil {
			return vendorcli.Result{Stdout: b}
		}
		return vendorcli.Result{Stdout: []byte("This device does not support querying " + typ + ".\n")}
	}
	if f.noCard || !slices.Contains(perCardTypes, typ) {
		return vendorcli.Result{Stdout: []byte("This device does not support querying " + typ + ".\n")}
	}
	w := 30
	if typ == "ecc" {
		w = 40
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "\t%-*s : %d\n\t%-*s : %d\n\n", w, "NPU ID", npu, w, "Chip Count", 2)
	for c := 0; c < 2; c++ {
		b.Write(f.die(typ, npu, c))
		fmt.Fprintf(&b, "\t%-*s : %d\n\n", w, "Chip ID", c)
	}
	return vendorcli.Result{Stdout: b.Bytes()}
}

func (f *fakeA3) count(prefix string, card bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if strings.HasPrefix(c, prefix) && strings.Contains(c, " -c ") != card {
			n++
		}
	}
	return n
}

func newA3(t *testing.T, f *fakeA3) *Collector {
	t.Helper()
	var chips []ascend.ChipID
	for n := 0; n < 8; n++ {
		for c := 0; c < 2; c++ {
			chips = append(chips, ascend.ChipID{NPU: fmt.Sprint(n), Chip: fmt.Sprint(c)})
		}
	}
	c, err := newCollector(Config{Interval: time.Minute, FaultCodeFile: filepath.Join("testdata", "faultcodes.json")},
		Deps{Tool: vendorcli.Tool{Timeout: 5 * time.Second}, DevFS: t.TempDir(), Table: &fakeTable{chips: chips}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.exec = f.exec
	at := time.Unix(1700000000, 0)
	c.now = func() time.Time { return at }
	return c
}

// hardware is the collector's ascend_npu_* series as text: what the chips
// said, whichever form npu-smi was asked.
func hardware(t *testing.T, c *Collector) string {
	var b strings.Builder
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	for _, mf := range mfs {
		if name := mf.GetName(); strings.HasPrefix(name, "ascend_npu_") {
			for _, s := range metrictest.Samples(mfs, name) {
				fmt.Fprintf(&b, "%s%v %v\n", name, s.Labels, s.Value)
			}
		}
	}
	return b.String()
}

// TestPerCardQueriesOnTwoDies: on an A3 node (8 NPUs of two dies) ecc,
// pcie-err, memory and usages are asked once per NPU in the card form and
// serve both dies the series the chip form gives, die by die; health,
// hccs and sio-info stay per die (health's card form prints no error
// code). Where the card form is not supported, each die is asked the chip
// form, from the first sweep on, and the card form is not asked again.
func TestPerCardQueriesOnTwoDies(t *testing.T) {
	card, chipForm := &fakeA3{}, &fakeA3{noCard: true}
	cc, pc := newA3(t, card), newA3(t, chipForm)
	for i := 0; i < 2; i++ {
		for _, c := range []*Collector{cc, pc} {
			if s := c.Sweep(context.Background()); s.Err != nil {
				t.Fatalf("sweep %d: %v", i, s.Err)
			}
		}
	}
	for _, typ := range perCardTypes {
		if n, m := card.count("info -t "+typ+" ", true), card.count("info -t "+typ+" ", false); n != 16 || m != 0 {
			t.Errorf("-t %s: %d card-form and %d chip-form calls over 2 sweeps, want 16 and 0 (once per NPU and sweep)", typ, n, m)
		}
		if n, m := chipForm.count("info -t "+typ+" ", true), chipForm.count("info -t "+typ+" ", false); n != 8 || m != 32 {
			t.Errorf("card form unsupported, -t %s: %d card-form and %d chip-form calls, want 8 (the first sweep) and 32", typ, n, m)
		}
	}
	if n := card.count("info -t health ", false); n != 32 {
		t.Errorf("health asked %d times with -c, want 32 (per die: its card form has no error code)", n)
	}
	got, want := hardware(t, cc), hardware(t, pc)
	if got != want {
		t.Errorf("the card form's series differ from the chip form's:\n--- card form\n%s\n--- chip form\n%s", got, want)
	}
	// The dies differ, so a block given to the wrong die would show.
	mfs := metrictest.Gather(t, metrictest.Unchecked(cc))
	for _, tc := range []struct {
		labels string
		name   string
		want   float64
	}{
		{"npu=2,chip=1,bit=double", "ascend_npu_hbm_ecc_errors_total", 2}, // 910b NPU 5's ECC
		{"npu=2,chip=0,bit=double", "ascend_npu_hbm_ecc_errors_total", 0}, // 910b NPU 4's
		{"npu=1,chip=0", "ascend_npu_pcie_chip_errors_total", 1409},       // 910b NPU 2's PCIe errors
		{"npu=1,chip=1", "ascend_npu_pcie_chip_errors_total", 0},          // 910b NPU 3's
	} {
		if v, ok := metrictest.Find(mfs, tc.name, metrictest.Labels(tc.labels)); !ok || v != tc.want {
			t.Errorf("%s{%s} = %v (found %v), want %v", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	if v := metrictest.Value(t, metrictest.Unchecked(cc), "hccl_exporter_npu_smi_detail_calls_total", metrictest.Labels("type=usages,result=success")); v != 16 {
		t.Errorf("calls_total{usages,success} = %v, want 16 (one per card-form call)", v)
	}
}

// TestPerCardDieFailed: a die whose printer failed inside the card form
// (card_info.c:689) is that die's error; the other die is served.
func TestPerCardDieFailed(t *testing.T) {
	f := &fakeA3{}
	c := newA3(t, f)
	failed, err := os.ReadFile(filepath.Join("testdata", "card", "memory-a3-die1-failed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c.exec = func(ctx context.Context, args []string) vendorcli.Result {
		if strings.Join(args, " ") == "info -t memory -i 5" {
			// npu-smi exits with the failed chip's code (card_info.c:1509).
			return vendorcli.Result{Stdout: failed, ExitCode: 211}
		}
		return f.exec(ctx, args)
	}
	s := c.Sweep(context.Background())
	if s.Err == nil || !strings.Contains(s.Err.Error(), "npu 5 chip 1 -t memory") {
		t.Errorf("sweep error %v, want npu 5 chip 1's memory failure", s.Err)
	}
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	if v, ok := metrictest.Find(mfs, "ascend_npu_hbm_temperature_celsius", metrictest.Labels("npu=5,chip=0")); !ok || v != 48 {
		t.Errorf("die 0's HBM temperature %v (found %v), want 48", v, ok)
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_hbm_temperature_celsius", metrictest.Labels("npu=5,chip=1")); ok {
		t.Error("die 1, whose printer failed, has an HBM temperature")
	}
	for _, r := range s.Readings {
		if r.NPU == "5" && r.Chip == "1" && r.Results["memory"] != sweep.Error {
			t.Errorf("die 1's memory result %q, want error", r.Results["memory"])
		}
	}
}

// TestPerCardCutFallsBack: a card answer that cannot be split (cut) serves
// the die it closed, counts a parse error, and the card's dies are asked
// the chip form from then on.
func TestPerCardCutFallsBack(t *testing.T) {
	f := &fakeA3{}
	c := newA3(t, f)
	c.exec = func(ctx context.Context, args []string) vendorcli.Result {
		r := f.exec(ctx, args)
		if strings.Join(args, " ") == "info -t ecc -i 3" {
			r.Stdout = r.Stdout[:bytes.LastIndex(r.Stdout, []byte("\tChip ID"))]
		}
		return r
	}
	c.Sweep(context.Background())
	if v := metrictest.Value(t, metrictest.Unchecked(c), "hccl_exporter_npu_smi_detail_calls_total", metrictest.Labels("type=ecc,result=parse_error")); v != 1 {
		t.Errorf("calls_total{ecc,parse_error} = %v, want 1", v)
	}
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	for _, chip := range []string{"0", "1"} {
		if _, ok := metrictest.Find(mfs, "ascend_npu_hbm_ecc_errors_total", metrictest.Labels("npu=3,chip="+chip+",bit=double")); !ok {
			t.Errorf("npu 3 die %s has no ECC series (die 0 from the cut answer, die 1 from the chip form)", chip)
		}
	}
	before := f.count("info -t ecc -i 3", true)
	c.Sweep(context.Background())
	if f.count("info -t ecc -i 3", true) != before {
		t.Error("the card form was asked again after it could not be split")
	}
	if n := f.count("info -t ecc -i 3 -c", false); n != 3 {
		t.Errorf("npu 3 asked ecc with -c %d times, want 3 (die 1 in the first sweep, both dies in the second)", n)
	}
}

// TestPerCardCallHangs: the card-form call of NPU 2's ecc hangs until its
// timeout. The die that asked it is hung (its other queries wait for the
// next sweep); the other die, which waited for the answer, keeps its
// previous ECC reading and is read as usual; the next sweep asks the card
// form again.
func TestPerCardCallHangs(t *testing.T) {
	f := &fakeA3{}
	c := newA3(t, f)
	const timeout = 200 * time.Millisecond
	c.cfg.Timeout, c.slowAfter, c.abandonAfter = timeout, timeout/5, time.Second
	c.Sweep(context.Background())
	var hang atomic.Bool
	hang.Store(true)
	c.exec = func(ctx context.Context, args []string) vendorcli.Result {
		if hang.Load() && strings.Join(args, " ") == "info -t ecc -i 2" {
			time.Sleep(timeout)
			return vendorcli.Result{TimedOut: true, ExitCode: -1, Duration: timeout}
		}
		return f.exec(ctx, args)
	}
	s := c.Sweep(context.Background())
	var results []string
	for _, r := range s.Readings {
		if r.NPU == "2" {
			results = append(results, r.Chip+":"+r.Results["ecc"])
		}
	}
	slices.Sort(results)
	if !slices.Equal(results, []string{"0:" + sweep.Timeout, "1:" + sweep.Timeout}) {
		t.Errorf("npu 2's ecc results %v, want a timeout for both dies", results)
	}
	c.mu.Lock()
	hung := map[string]bool{"0": c.turns[ascend.ChipID{NPU: "2", Chip: "0"}].hung, "1": c.turns[ascend.ChipID{NPU: "2", Chip: "1"}].hung}
	c.mu.Unlock()
	if !hung["0"] || hung["1"] {
		t.Errorf("hung %v, want die 0 (which asked) hung and die 1 not", hung)
	}
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	if v, ok := metrictest.Find(mfs, "ascend_npu_hbm_ecc_errors_total", metrictest.Labels("npu=2,chip=1,bit=double")); !ok || v != 2 {
		t.Errorf("die 1's double-bit errors %v (found %v), want its previous reading 2", v, ok)
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_hccs_healthy", metrictest.Labels("npu=2,chip=1")); !ok {
		t.Error("die 1 was not read past the hung card call")
	}
	hang.Store(false)
	before := f.count("info -t ecc -i 2", true)
	c.Sweep(context.Background())
	if f.count("info -t ecc -i 2", true) != before+1 {
		t.Error("the card form was not asked again after it hung")
	}
}
