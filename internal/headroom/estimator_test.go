package headroom

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// timeline scripts one chip's scrapes for the estimator: HBM used (with
// noise), the QPs its logs show created by mode, captures, buffers and
// processes, one sample per minute.
type timeline struct {
	t       *testing.T
	e       *Estimator
	rng     *rand.Rand
	noise   float64 // peak noise of one HBM reading, bytes
	at      time.Time
	hbm     float64
	qps     map[string]float64
	capt    float64
	ccl     float64
	procs   string
	live    float64
	refused map[string]int
	learned int
	// owner is the kernel-named owner of the chip's processes; npu the
	// chip's NPU ("0" when empty).
	owner, npu string
}

func newTimeline(t *testing.T, e *Estimator, seed uint64, noise float64) *timeline {
	return &timeline{t: t, e: e, rng: rand.New(rand.NewPCG(seed, 1)), noise: noise, at: time.Unix(1_800_000_000, 0),
		hbm: 20 << 30, qps: map[string]float64{}, procs: "100@/log", live: -1, refused: map[string]int{}, owner: testOwner}
}

// scrape takes one sample of the chip as it is now.
func (tl *timeline) scrape() {
	tl.t.Helper()
	tl.at = tl.at.Add(time.Minute)
	q := map[string]float64{}
	for k, v := range tl.qps {
		q[k] = v
	}
	noise := (tl.rng.Float64()*2 - 1) * tl.noise
	npu := tl.npu
	if npu == "" {
		npu = "0"
	}
	ok, reason := tl.e.Observe(ChipSample{ChipID: ascend.ChipID{NPU: npu, Chip: "0"}, Product: "910B3", Driver: "24.1.rc3", At: tl.at,
		HBMUsedBytes: ascend.Value{V: math.Round((tl.hbm+noise)/mib) * mib, OK: true}, // npu-smi prints MiB
		QPsByMode:    q, Captures: tl.capt, CCLBufferBytes: tl.ccl, Processes: tl.procs, LiveQPs: ascend.Value{V: tl.live, OK: tl.live >= 0}, Owner: tl.owner, OwnerKernel: tl.owner != ""})
	if ok {
		tl.learned++
	}
	if reason != "" {
		tl.refused[reason]++
	}
}

// settle takes n samples with nothing changing.
func (tl *timeline) settle(n int) {
	for range n {
		tl.scrape()
	}
}

// burst creates n QPs of mode costing size each, then samples.
func (tl *timeline) burst(mode string, n, size float64) {
	tl.qps[mode] += n
	tl.hbm += n * size
	if tl.live >= 0 {
		tl.live += n
	}
	tl.scrape()
}

// testOwner owns the timelines' processes (a pod's cgroup).
const testOwner = "pod:0b5c1c9e-aaaa-4bbb-8ccc-000000000001"

const trueQPBytes = 2 << 20 // a 1.5 MiB QP (910B multi-QP) in a 2 MiB aligned pool

// TestEstimatorRecoversQPSize: bursts of 16 to 128 QPs of 2 MiB each, HBM
// read to the MiB with ±3 MiB of noise, unrelated allocations between and
// during bursts (a KV cache growing, an allocation in the same interval as
// a burst), captures and buffer allocations: the learned size is within
// 5 % of 2 MiB — not the 1.5 MiB HCCL's depths give the mode.
func TestEstimatorRecoversQPSize(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { recoverQPSize(t, seed) })
	}
}

func recoverQPSize(t *testing.T, seed uint64) {
	e := NewEstimator(EstimatorConfig{})
	tl := newTimeline(t, e, seed, 3*mib)
	mode := QPMode910BOpBaseMultiQP.Name
	tl.settle(3)
	for i := range 12 {
		n := float64(16 + tl.rng.IntN(113))
		switch i {
		case 3:
			// Unrelated: 1.2 GiB allocated in the same interval as the burst.
			tl.hbm += 1200 * mib
		case 6:
			// Unrelated: the KV cache grows during the sample after the
			// burst: the burst is not bracketed by a plateau.
			tl.burst(mode, n, trueQPBytes)
			tl.hbm += 4 << 30
			tl.settle(3)
			continue
		case 8:
			// A capture re-creates links: the count grows, memory need not.
			tl.capt++
			tl.burst(mode, n, 0)
			tl.settle(3)
			continue
		case 9:
			// A first collective: its cclBuffer comes with the links.
			tl.ccl += 401 * mib
			tl.hbm += 401 * mib
		}
		tl.burst(mode, n, trueQPBytes)
		tl.settle(3)
		// Unrelated allocations between bursts: never a burst.
		tl.hbm += float64(tl.rng.IntN(2000)) * mib
		tl.settle(3)
	}
	got, n, ok := e.Estimate(testOwner, LearnKey{Product: "910B3", Mode: mode, Driver: "24.1.rc3"})
	if !ok {
		t.Fatalf("nothing learned from %d observations (refused %v)", n, tl.refused)
	}
	rel := math.Abs(got-trueQPBytes) / trueQPBytes
	t.Logf("learned %.0f bytes per QP from %d bursts: %.2f %% off the true 2 MiB", got, n, 100*rel)
	if rel > 0.05 {
		t.Errorf("learned %.0f bytes per QP, want %d within 5 %% (off by %.1f %%)", got, trueQPBytes, 100*rel)
	}
	// 12 bursts: 4 refused (not settled, capture, buffer, and the one with
	// 1.2 GiB on top: above the mode's band), 8 learned from.
	if tl.learned != 8 {
		t.Errorf("learned from %d bursts, want 8 (refused %v)", tl.learned, tl.refused)
	}
	// A small burst whose reading the noise moved by more than 5 % may be
	// rejected as an outlier.
	if n > 8 || n < 6 {
		t.Errorf("the estimate rests on %d observations, want 6 to 8", n)
	}
	for _, r := range []string{refusedUnsettled, refusedCapture, refusedBuffer, refusedAboveBand} {
		if tl.refused[r] != 1 {
			t.Errorf("refused %q %d times, want 1 (all: %v)", r, tl.refused[r], tl.refused)
		}
	}
}

// TestEstimatorRefusesAmbiguousBursts: each burst here could be something
// else's memory, and none is learned from.
func TestEstimatorRefusesAmbiguousBursts(t *testing.T) {
	mode := QPMode910BOpBase.Name
	for _, tc := range []struct {
		name   string
		script func(tl *timeline)
		reason string
	}{
		{"two modes at once", func(tl *timeline) {
			tl.qps[QPModeGraph.Name] += 32
			tl.burst(mode, 64, trueQPBytes)
		}, refusedMixed},
		{"mode not known", func(tl *timeline) { tl.burst("", 64, trueQPBytes) }, refusedMixed},
		{"too few QPs", func(tl *timeline) { tl.burst(mode, 4, trueQPBytes) }, refusedFewQPs},
		{"a process started", func(tl *timeline) {
			tl.procs = "100@/log,200@/log"
			tl.burst(mode, 64, trueQPBytes)
		}, refusedProcesses},
		{"HBM still moving before", func(tl *timeline) {
			tl.hbm += 300 * mib
			tl.scrape()
			tl.burst(mode, 64, trueQPBytes)
		}, refusedUnsettled},
		{"another RDMA user's QPs", func(tl *timeline) {
			tl.live = 10
			tl.settle(2)
			tl.live += 40 // Mooncake's, not HCCL's
			tl.burst(mode, 64, trueQPBytes)
		}, refusedForeign},
		{"HBM freed meanwhile", func(tl *timeline) {
			tl.hbm -= 2 << 30
			tl.burst(mode, 64, trueQPBytes)
		}, refusedShrunk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEstimator(EstimatorConfig{MinObservations: 1})
			tl := newTimeline(t, e, 3, mib)
			tl.settle(3)
			tc.script(tl)
			tl.settle(3)
			if tl.learned != 0 {
				t.Errorf("learned from an ambiguous burst")
			}
			if tl.refused[tc.reason] != 1 {
				t.Errorf("refused %v, want one %q", tl.refused, tc.reason)
			}
			for _, m := range []string{mode, ""} {
				if v, _, ok := e.Estimate(testOwner, LearnKey{"910B3", m, "24.1.rc3"}); ok {
					t.Errorf("estimate %v for %q from an ambiguous burst", v, m)
				}
			}
		})
	}
}

// TestEstimatorNeedsEnoughObservations: below MinObservations the model
// keeps HCCL's size; observations of another driver do not count.
func TestEstimatorNeedsEnoughObservations(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 3})
	tl := newTimeline(t, e, 5, 0)
	mode := QPMode910BOpBaseMultiQP.Name
	tl.settle(3)
	for i := range 3 {
		tl.burst(mode, 32, trueQPBytes)
		tl.settle(3)
		_, _, ok := e.Estimate(testOwner, LearnKey{"910B3", mode, "24.1.rc3"})
		if ok != (i == 2) {
			t.Errorf("after %d bursts: learned %v", i+1, ok)
		}
	}
	if v, ok := e.Learned("24.1.rc3").LookupFor(testOwner, "910B3", mode); !ok || v != trueQPBytes {
		t.Errorf("Learned(24.1.rc3) = %v, %v; want %d", v, ok, trueQPBytes)
	}
	if _, ok := e.Learned("25.0.rc1").LookupFor(testOwner, "910B3", mode); ok {
		t.Error("a size learned under driver 24.1.rc3 is used under 25.0.rc1")
	}
}

// TestEstimatorStateRoundTrip: what was learned survives the state file;
// a blob of another version is refused and changes nothing.
func TestEstimatorStateRoundTrip(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 2})
	tl := newTimeline(t, e, 9, 0)
	tl.settle(3)
	for range 2 {
		tl.burst(QPModeA3Host.Name, 64, 1<<20)
		tl.settle(3)
	}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	e2 := NewEstimator(EstimatorConfig{MinObservations: 2})
	if err := e2.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if v, n, ok := e2.Estimate(testOwner, LearnKey{"910B3", QPModeA3Host.Name, "24.1.rc3"}); !ok || v != 1<<20 || n != 2 {
		t.Errorf("after the round trip: %v, %d, %v; want 1 MiB from 2", v, n, ok)
	}
	if err := e2.UnmarshalJSON([]byte(`{"version":3}`)); err == nil {
		t.Error("a blob of version 3 was read")
	}
	if _, _, ok := e2.Estimate(testOwner, LearnKey{"910B3", QPModeA3Host.Name, "24.1.rc3"}); !ok {
		t.Error("a refused blob dropped what was learned")
	}
	if err := e2.UnmarshalJSON([]byte(`{"version":1,"observations":{"x|y|z":{"values":[-1,1e300,"a"]}}}`)); err == nil {
		t.Error("a blob with a string observation was read")
	}
}

// TestModelUsesLearnedSize: once learned, the expected and high bounds size
// the mode's QPs with the measurement; flags the user set still win.
func TestModelUsesLearnedSize(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	tl := newTimeline(t, e, 11, 0)
	tl.settle(3)
	tl.burst(QPMode910BOpBase.Name, 32, 4<<20) // 4 MiB, not HCCL's 3 MiB
	tl.settle(2)
	chips := []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, Name: "910B3", Driver: "24.1.rc3", HBMUsedBytes: ascend.Value{V: 1000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}}
	procs := []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}
	s := known(1, 200, world64)
	s.Communicators[0].OpBaseTags = true
	s.Owner, s.OwnerKernel = testOwner, true
	lookup := func(ChipProcess) (ProcessSettings, bool) { return s, true }

	cfg := DefaultConfig()
	base := Model(cfg, chips, procs, lookup)[0]
	cfg.Learned = e.Learned("24.1.rc3")
	got := Model(cfg, chips, procs, lookup)[0]
	if base.QPsExpected == 0 {
		t.Fatal("nothing pending: the test proves nothing")
	}
	if want := base.QPsExpected * (4 << 20); got.QPMemoryExpectedBytes != want {
		t.Errorf("expected QP memory %v, want %v (%v QPs × 4 MiB)", got.QPMemoryExpectedBytes, want, base.QPsExpected)
	}
	if got.QPMemoryLowBytes != base.QPMemoryLowBytes {
		t.Errorf("the low bound moved to %v from %v: it keeps HCCL's size", got.QPMemoryLowBytes, base.QPMemoryLowBytes)
	}
	cfg.QPBytesSetByUser = true
	if flag := Model(cfg, chips, procs, lookup)[0]; flag.QPMemoryExpectedBytes != base.QPsExpected*cfg.QPBytesHigh {
		t.Errorf("with the flags set: %v, want the flag's %v", flag.QPMemoryExpectedBytes, base.QPsExpected*cfg.QPBytesHigh)
	}
}

// TestModelCaptureUsesLearnedGraphSize: captured link sets are offload QPs
// with graph mode's depths; once the node's graph size is learned (two
// owners agree), the next capture's QPs are sized with it.
func TestModelCaptureUsesLearnedGraphSize(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	// Two owners agree: the node's graph size, which captures use.
	for i, owner := range []string{testOwner, "uid:1001"} {
		tl := newTimeline(t, e, uint64(13+i), 0)
		tl.owner, tl.npu = owner, fmt.Sprint(i)
		tl.settle(3)
		tl.burst(QPModeGraph.Name, 64, 2<<20) // 2 MiB, not HCCL's 264 KiB
		tl.settle(2)
	}
	now := time.Unix(1_900_000_000, 0)
	cfg := DefaultConfig()
	cfg.Now = now
	ep := world64
	ep.OpBaseTags, ep.Captures, ep.LastCaptureQPs, ep.LastCaptureAt = true, 1, 50, now.Add(-time.Minute)
	chips := []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, Name: "910B3", HBMUsedBytes: ascend.Value{V: 1000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}}
	procs := []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}
	lookup := func(ChipProcess) (ProcessSettings, bool) {
		s := known(1, 200, ep)
		s.Owner, s.OwnerKernel = testOwner, true
		return s, true
	}
	base := Model(cfg, chips, procs, lookup)[0]
	cfg.Learned = e.Learned("24.1.rc3")
	got := Model(cfg, chips, procs, lookup)[0]
	if base.CaptureQPs != 50 {
		t.Fatalf("capture QPs %v, want 50", base.CaptureQPs)
	}
	if d := got.QPMemoryExpectedBytes - base.QPMemoryExpectedBytes; d != 50*(2<<20-QPModeGraph.Bytes()) {
		t.Errorf("expected memory grew by %v with graph mode learned at 2 MiB, want 50 × (2 MiB − 264 KiB)", d)
	}
}
