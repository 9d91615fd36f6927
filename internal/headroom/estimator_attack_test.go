package headroom

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// What one tenant prints and allocates on its own chip must not set the
// QP size another tenant's headroom is computed with (docs/headroom.md
// "The plausibility band", "Learning per owner"). The tenants are pods: the
// owner of a process is its logs' kernel identity (logstate Source.Owner),
// which no line a tenant prints can change.

const (
	victimOwner   = "pod:7f7e0a4c-1111-4222-8333-000000000002"
	attackerOwner = "pod:7f7e0a4c-1111-4222-8333-0000000000a1"
	driver        = "24.1.rc3"
)

// victimHeadroom is the headroom of a victim process on chip 1 (an op-base
// 910B communicator of 64 ranks on 8 servers, nothing linked yet) with the
// sizes learned so far.
func victimHeadroom(t *testing.T, learned *LearnedSizes) ChipHeadroom {
	t.Helper()
	chips := []ChipMemory{{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, Name: "910B3", Driver: driver, HBMUsedBytes: ascend.Value{V: 65000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}}
	procs := []ChipProcess{{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 300}}
	s := known(1, 200, world64)
	s.Communicators[0].OpBaseTags = true
	s.Owner, s.OwnerKernel = victimOwner, true
	cfg := DefaultConfig()
	cfg.Learned = learned
	hs := Model(cfg, chips, procs, func(ChipProcess) (ProcessSettings, bool) { return s, true })
	if len(hs) != 1 || hs[0].QPsExpected == 0 {
		t.Fatalf("victim: %+v: nothing pending, the test proves nothing", hs)
	}
	return hs[0]
}

// attacker is a timeline of the attacker's own chip (npu 0).
func attacker(t *testing.T, e *Estimator) *timeline {
	tl := newTimeline(t, e, 21, 0)
	tl.owner = attackerOwner
	tl.settle(3)
	return tl
}

// TestAttackFakeTransportLines: the tenant's own logs print 500 `create
// hccl transport` lines per burst while its HBM grows 1 MiB (2,097 B per
// "QP"), 32 times. 0.5.0 learned 2,097 B for 910b_op_base node-wide and
// the victim's expected QP memory fell 1,500-fold; now every burst is
// below the band, and the victim's headroom does not move.
func TestAttackFakeTransportLines(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	before := victimHeadroom(t, e.Learned(driver))
	tl := attacker(t, e)
	for range 32 {
		tl.qps[QPMode910BOpBase.Name] += 500
		tl.hbm += mib
		tl.scrape()
		tl.settle(3)
	}
	if tl.refused[refusedBelowBand] != 32 || tl.learned != 0 {
		t.Errorf("refused %v, learned %d; want 32 below_band, none learned", tl.refused, tl.learned)
	}
	after := victimHeadroom(t, e.Learned(driver))
	if after.HeadroomBytes != before.HeadroomBytes || after.QPMemoryExpectedBytes != before.QPMemoryExpectedBytes {
		t.Errorf("victim's headroom moved from %.0f to %.0f bytes", before.HeadroomBytes, after.HeadroomBytes)
	}
	if v, ok := e.Learned(driver).LookupFor(attackerOwner, "910B3", QPMode910BOpBase.Name); ok {
		t.Errorf("the attacker's own QPs are sized %v: a burst below the band was learned", v)
	}
}

// TestAttackFewQPsLargeAllocation: 8 QPs per burst while allocating 8 GiB
// taught 0.5.0 1 GiB per QP (a victim with room dropped to −6.9 GiB): now
// above the band, refused.
func TestAttackFewQPsLargeAllocation(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	before := victimHeadroom(t, e.Learned(driver))
	tl := attacker(t, e)
	for range 8 {
		tl.burst(QPMode910BOpBase.Name, 8, 1<<30)
		tl.settle(3)
	}
	if tl.refused[refusedAboveBand] != 8 || tl.learned != 0 {
		t.Errorf("refused %v, learned %d; want 8 above_band", tl.refused, tl.learned)
	}
	if after := victimHeadroom(t, e.Learned(driver)); after.HeadroomBytes != before.HeadroomBytes {
		t.Errorf("victim's headroom moved from %.0f to %.0f bytes", before.HeadroomBytes, after.HeadroomBytes)
	}
}

// TestAttackInBandStaysTheOwners: a poisoned size inside the band (6 MiB
// per 910B op-base QP, the band's top) sizes the attacker's own QPs only:
// one owner is not the node.
func TestAttackInBandStaysTheOwners(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	before := victimHeadroom(t, e.Learned(driver))
	tl := attacker(t, e)
	for range 32 {
		tl.burst(QPMode910BOpBase.Name, 8, 6*mib)
		tl.settle(3)
	}
	l := e.Learned(driver)
	if v, ok := l.LookupFor(attackerOwner, "910B3", QPMode910BOpBase.Name); !ok || v != 6*mib {
		t.Errorf("the attacker's own size %v, %v; want its 6 MiB", v, ok)
	}
	if v, ok := l.Lookup("910B3", QPMode910BOpBase.Name); ok {
		t.Errorf("one owner's bursts set the node's size to %v", v)
	}
	if after := victimHeadroom(t, l); after.HeadroomBytes != before.HeadroomBytes {
		t.Errorf("victim's headroom moved from %.0f to %.0f bytes", before.HeadroomBytes, after.HeadroomBytes)
	}
}

// TestAttackCannotMoveNodeSize: two owners agree on 4 MiB; a third
// owner's 32 bursts at the band's top leave the node's size at 4 MiB (each
// owner counts once, whatever its number of bursts; 0.5.0 needed 17 honest
// bursts to undo 32 poisoned ones).
func TestAttackCannotMoveNodeSize(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 3})
	for i, owner := range []string{victimOwner, "uid:1001"} {
		tl := newTimeline(t, e, uint64(30+i), 0)
		tl.owner, tl.npu = owner, fmt.Sprint(2+i)
		tl.settle(3)
		for range 3 {
			tl.burst(QPMode910BOpBase.Name, 32, 4*mib)
			tl.settle(3)
		}
	}
	if v, ok := e.Learned(driver).Lookup("910B3", QPMode910BOpBase.Name); !ok || v != 4*mib {
		t.Fatalf("node's size %v, %v; want the two owners' 4 MiB", v, ok)
	}
	tl := attacker(t, e)
	for range 32 {
		tl.burst(QPMode910BOpBase.Name, 8, 6*mib)
		tl.settle(3)
	}
	if tl.learned != 32 {
		t.Fatalf("learned %d of the attacker's in-band bursts, want 32 (refused %v)", tl.learned, tl.refused)
	}
	if v, ok := e.Learned(driver).Lookup("910B3", QPMode910BOpBase.Name); !ok || v != 4*mib {
		t.Errorf("after 32 poisoned bursts the node's size is %v, %v; want 4 MiB", v, ok)
	}
	// Two camps of one owner each are no node size.
	if v, ok := nodeSize([]float64{4 * mib, 6 * mib}); ok {
		t.Errorf("two disagreeing owners gave the node %v", v)
	}
	if v, ok := nodeSize([]float64{4 * mib, 4 * mib, 6 * mib, 6 * mib}); ok {
		t.Errorf("two camps of two owners gave the node %v", v)
	}
}

// TestAttackSurvivesNoRestart: a 0.5.0 state file whose node-wide
// observations were poisoned (2,097 B and 1 GiB per QP) loads, clamped into
// the band and owned by no one: neither the victim nor the node uses it.
// A version 2 file edited to hold a poisoned owner is clamped into the band.
func TestAttackSurvivesNoRestart(t *testing.T) {
	v1 := `{"version":1,"observations":{` +
		`"910B3|910b_op_base|24.1.rc3":{"values":[2097,2097,2097,2097],"total":32},` +
		`"910B3|910b_op_base_multi_qp|24.1.rc3":{"values":[1073741824,1073741824,1073741824],"total":3}},` +
		`"refused":{"capture":1}}`
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	before := victimHeadroom(t, e.Learned(driver))
	if err := e.UnmarshalJSON([]byte(v1)); err != nil {
		t.Fatal(err)
	}
	l := e.Learned(driver)
	for _, m := range []QPMode{QPMode910BOpBase, QPMode910BOpBaseMultiQP} {
		if v, ok := l.LookupFor(victimOwner, "910B3", m.Name); ok {
			t.Errorf("%s: a 0.5.0 file's value %v is used", m.Name, v)
		}
	}
	if after := victimHeadroom(t, l); after.HeadroomBytes != before.HeadroomBytes {
		t.Errorf("victim's headroom moved from %.0f to %.0f bytes", before.HeadroomBytes, after.HeadroomBytes)
	}
	keys, refused := e.Snapshot()
	if len(keys) != 2 || refused[refusedCapture] != 1 {
		t.Fatalf("loaded %+v, refused %v; want both keys and the counters", keys, refused)
	}
	for _, k := range keys {
		lo, hi, _ := bandOf(k.Key.Mode)
		if k.Median < lo || k.Median > hi || k.Owners != 0 {
			t.Errorf("%s: shown %v from %d owners, want inside [%v, %v] from none", k.Key.Mode, k.Median, k.Owners, lo, hi)
		}
	}

	// A version 2 file edited by hand: two kernel owners at 1 GiB.
	var f estimatorFile
	f.Version = estimatorVersion
	for _, o := range []string{victimOwner, "uid:1001"} {
		f.Learned = append(f.Learned, learnedEntry{Owner: o, Kernel: true, Product: "910B3", Mode: QPMode910BOpBase.Name, Driver: driver,
			observations: observations{Values: []float64{1 << 30}, At: []int64{time.Now().Unix()}, Total: 1}})
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	_, hi := QPBand(QPMode910BOpBase)
	for _, o := range []string{victimOwner, ""} {
		if v, ok := e.Learned(driver).LookupFor(o, "910B3", QPMode910BOpBase.Name); !ok || v > hi {
			t.Errorf("owner %q: size %v, %v; want at most the band's %v", o, v, ok, hi)
		}
	}
}

// TestAttackConfoundedRestart: a workload restarts; its link-setup burst
// (128 multi-QP QPs) lands in the same interval as its optimizer state or
// KV cache (5 GiB): 40.5 MiB per QP, 27 × the modelled 1.5 MiB. Refused,
// every time; the size in use stays inside the band.
func TestAttackConfoundedRestart(t *testing.T) {
	e := NewEstimator(EstimatorConfig{MinObservations: 1})
	tl := newTimeline(t, e, 41, 3*mib)
	tl.owner = victimOwner
	tl.settle(3)
	mode := QPMode910BOpBaseMultiQP
	for range 5 {
		tl.burst(mode.Name, 128, 40.5*mib)
		tl.settle(3)
	}
	if tl.refused[refusedAboveBand] != 5 {
		t.Errorf("refused %v, want 5 above_band", tl.refused)
	}
	// Honest bursts later are learned, inside the band.
	for range 3 {
		tl.burst(mode.Name, 64, 2*mib)
		tl.settle(3)
	}
	lo, hi := QPBand(mode)
	v, ok := e.Learned(driver).LookupFor(victimOwner, "910B3", mode.Name)
	if !ok || v < lo || v > hi || math.Abs(v-2*mib) > 0.05*2*mib {
		t.Errorf("size in use %v, %v; want about 2 MiB inside [%v, %v]", v, ok, lo, hi)
	}
}

// TestLearnedExpires: a size outlives neither the TTL nor a reset; both
// take it out of the state file too.
func TestLearnedExpires(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	e := NewEstimator(EstimatorConfig{MinObservations: 1, TTL: 24 * time.Hour, Now: clock})
	tl := newTimeline(t, e, 51, 0)
	tl.at = now.Add(-time.Hour)
	tl.settle(3)
	tl.burst(QPMode910BOpBase.Name, 16, 4*mib)
	tl.settle(2)
	if _, ok := e.Learned(driver).LookupFor(testOwner, "910B3", QPMode910BOpBase.Name); !ok {
		t.Fatal("nothing learned")
	}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	gen := e.Generation()
	now = now.Add(24 * time.Hour)
	if v, ok := e.Learned(driver).LookupFor(testOwner, "910B3", QPMode910BOpBase.Name); ok {
		t.Errorf("a day later the size %v is still used", v)
	}
	if e.Generation() == gen {
		t.Error("expiry did not mark the state file for writing")
	}
	if out, _ := e.MarshalJSON(); strings.Contains(string(out), testOwner) {
		t.Errorf("the state file keeps the expired size: %s", out)
	}
	// The file written before expiry, loaded after: expired on load.
	e2 := NewEstimator(EstimatorConfig{MinObservations: 1, TTL: 24 * time.Hour, Now: clock})
	if err := e2.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if keys, _ := e2.Snapshot(); len(keys) != 0 {
		t.Errorf("an expired observation loaded: %+v", keys)
	}
	// A file whose times are in the future (edited, or a clock stepped
	// back) expires a TTL after its load, not later.
	future := regexp.MustCompile(`"at":\[[0-9]+\]`).ReplaceAllString(string(b), fmt.Sprintf(`"at":[%d]`, now.Add(1000*24*time.Hour).Unix()))
	if future == string(b) {
		t.Fatalf("no observation time to edit in %s", b)
	}
	e4 := NewEstimator(EstimatorConfig{MinObservations: 1, TTL: 24 * time.Hour, Now: clock})
	if err := e4.UnmarshalJSON([]byte(future)); err != nil {
		t.Fatal(err)
	}
	if keys, _ := e4.Snapshot(); len(keys) != 1 {
		t.Fatalf("the edited file did not load: %+v", keys)
	}
	now = now.Add(24 * time.Hour)
	if keys, _ := e4.Snapshot(); len(keys) != 0 {
		t.Errorf("an observation dated in the future outlived the TTL: %+v", keys)
	}
	now = now.Add(-24 * time.Hour)
	// --headroom.learn-reset: loaded unread, and written again empty.
	now = now.Add(-24 * time.Hour)
	e3 := NewEstimator(EstimatorConfig{MinObservations: 1, Reset: true, Now: clock})
	gen = e3.Generation()
	if err := e3.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if keys, _ := e3.Snapshot(); len(keys) != 0 || e3.Generation() == gen {
		t.Errorf("after a reset: %+v (generation %d → %d)", keys, gen, e3.Generation())
	}
}

// TestBurstNeedsOneOwner: a chip shared by two owners, or holding a process
// whose logs are not read, yields no observation.
func TestBurstNeedsOneOwner(t *testing.T) {
	for _, tc := range []struct {
		name   string
		owners [][2]any // owner, kernel per process
		reason string
	}{
		{"two pods", [][2]any{{victimOwner, true}, {attackerOwner, true}}, refusedOwnersMixed},
		{"a process without logs", [][2]any{{victimOwner, true}, {"", false}}, refusedOwnersMixed},
		{"no owner", [][2]any{{"", false}}, refusedOwnerUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEstimator(EstimatorConfig{MinObservations: 1})
			at := time.Unix(1_800_000_000, 0)
			var reasons []string
			for i, q := range []float64{0, 0, 32, 32} {
				s := ChipSample{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, Product: "910B3", Driver: driver, At: at.Add(time.Duration(i) * time.Minute),
					HBMUsedBytes: ascend.Value{V: 1000*mib + q*4*mib, OK: true}, QPsByMode: map[string]float64{QPMode910BOpBase.Name: q}, Processes: "1,2"}
				for _, o := range tc.owners {
					s.AddOwner(o[0].(string), o[1].(bool))
				}
				if _, r := e.Observe(s); r != "" {
					reasons = append(reasons, r)
				}
			}
			if len(reasons) != 1 || reasons[0] != tc.reason {
				t.Errorf("refused %v, want %q", reasons, tc.reason)
			}
		})
	}
}

// TestQPBand: the band of each mode (docs/headroom.md's table).
func TestQPBand(t *testing.T) {
	for _, tc := range []struct {
		m      QPMode
		lo, hi float64
	}{
		{QPMode910BOpBase, 3 * mib, 6 * mib},
		{QPMode910BOpBaseMultiQP, 1.5 * mib, 4 * mib},
		{QPModeGraph, 264 << 10, 2 * mib},
		{QPModeA3Host, 768 << 10, 2 * mib},
		{QPModeA3HostMultiQP, 384 << 10, 2 * mib},
		{QPModeA3AICPU, 192 << 10, 2 * mib},
		{QPModeA3AICPUMultiQP, 96 << 10, 2 * mib},
	} {
		if lo, hi := QPBand(tc.m); lo != tc.lo || hi != tc.hi {
			t.Errorf("%s: band [%v, %v], want [%v, %v]", tc.m.Name, lo, hi, tc.lo, tc.hi)
		}
	}
}

// TestAttackRealQPsWhileFreeing: hccn_tool counts 500 real new QPs while the
// tenant frees memory in the same interval (999 MiB for single-QP QPs):
// the live count agrees, HBM grew by 500 MiB, 1 MiB per QP. 0.5.0 learned
// it; it is below the band of both 910B op-base modes, and refused.
func TestAttackRealQPsWhileFreeing(t *testing.T) {
	for _, m := range []QPMode{QPMode910BOpBase, QPMode910BOpBaseMultiQP} {
		e := NewEstimator(EstimatorConfig{MinObservations: 1})
		tl := attacker(t, e)
		tl.live = 100
		tl.settle(2)
		tl.qps[m.Name] += 500
		tl.live += 500
		tl.hbm += 500 * mib // the QPs' memory less what was freed
		tl.scrape()
		tl.settle(3)
		if tl.refused[refusedBelowBand] != 1 || tl.learned != 0 {
			t.Errorf("%s: refused %v, learned %d; want one below_band", m.Name, tl.refused, tl.learned)
		}
	}
}
