package headroom

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

// The QP size learned on the node (docs/headroom.md "Learned QP sizes").
//
// HCCL's queue depths give each QP mode a size (QPMode.Bytes), but the
// memory is allocated by the closed RoCE provider, whose pools are 2 MiB
// aligned (HCOMM rs_rdma.c RsInitMemPool, LITE_ALIGN_2MB): what a QP costs
// on a given product and driver is measured here, from the link setups the
// node does anyway. Each scrape gives, per chip, HBM used (npu-smi) and the
// QPs its processes' logs show created, by mode. A burst is the QPs created
// between two consecutive samples; it is learned from only when the chip
// did nothing else in between, which is decided by every one of:
//
//   - the QPs created are of one known mode, at least MinQPs of them;
//   - no ACL graph capture in the interval (a capture destroys and
//     re-creates links: the QP count grows, memory need not);
//   - no cclBuffer allocated (HCCL's first collective allocates one right
//     before its links);
//   - the same processes on the chip in all four samples below;
//   - one owner (the kernel's identity of the processes' logs: a pod, a
//     uid) holds every process on the chip in the four samples;
//   - a plateau on each side: the sample before the burst equals the one
//     before it, and the sample after equals the one after it, in QPs and
//     in HBM within Noise (so the burst was finished, and nothing else was
//     allocating around it);
//   - where hccn_tool counts live QPs, they grew by the burst exactly (no
//     other RDMA user created QPs meanwhile);
//   - HBM grew, and the interval is at most MaxGap;
//   - the bytes per QP, to npu-smi's resolution, are inside the mode's
//     plausibility band (QPBand).
//
// An accepted burst gives one observation of its owner: ΔHBM / QPs,
// clamped into the band. An owner's learned size is the median of its last
// maxObservations observations after rejecting outliers (further from the
// median than 3 scaled MADs, at least 5 %), once MinObservations agree; it
// sizes that owner's QPs. The node's size, for every other process, exists
// only where at least nodeQuorum kernel-named owners have learned sizes
// that agree within nodeTolerance. Observations expire after TTL.

// Defaults of the estimator.
const (
	DefaultLearnMinObservations = 3
	DefaultLearnMinQPs          = 8
	DefaultLearnNoiseBytes      = 8 << 20
	DefaultLearnMaxGap          = 3 * time.Minute
	DefaultLearnTTL             = 7 * 24 * time.Hour
	maxObservations             = 32
	// maxLearnedKeys bounds the (owner, product, mode, driver) keys;
	// maxKeysPerOwner what one owner may hold of them, so that an owner
	// with many modes or drivers cannot crowd the others out.
	maxLearnedKeys     = 256
	maxKeysPerOwner    = 16
	maxEstimatorChips  = 1024
	maxOwnerLen        = 512
	nodeQuorum         = 2
	nodeTolerance      = 0.10
	npuSMIResolution   = 1 << 20 // npu-smi prints HBM in MiB
	estimatorVersion   = 2
	estimatorVersionV1 = 1
)

// Reasons a burst was not learned from (refusedDesc's reason label).
const (
	refusedMixed        = "mixed_or_unknown_mode"
	refusedFewQPs       = "too_few_qps"
	refusedCapture      = "capture"
	refusedBuffer       = "buffer_allocated"
	refusedProcesses    = "processes_changed"
	refusedUnsettled    = "not_settled"
	refusedForeign      = "foreign_qps"
	refusedShrunk       = "hbm_not_grown"
	refusedGap          = "interval_too_long"
	refusedBelowBand    = "below_band"
	refusedAboveBand    = "above_band"
	refusedOwnerUnknown = "owner_unknown"
	refusedOwnersMixed  = "owners_mixed"
)

// RefusedReasons lists every reason a burst is refused, in a fixed order.
var RefusedReasons = []string{refusedMixed, refusedFewQPs, refusedCapture, refusedBuffer, refusedProcesses, refusedUnsettled,
	refusedForeign, refusedShrunk, refusedGap, refusedBelowBand, refusedAboveBand, refusedOwnerUnknown, refusedOwnersMixed}

// The plausibility band of a QP's device memory (docs/headroom.md "The
// plausibility band"), from what HCOMM's source fixes:
//
//   - a QP holds at least its send queue and send CQ at the provider's
//     smallest entries: 64 B per send WQE (rdma-core providers/hns
//     hns_roce_u.h HNS_ROCE_SQWQE_SHIFT 6) and 32 B per CQE — the mode's
//     depths as the model sizes them (QPMode.Bytes). For 910B these are
//     the ends of HCCL's own EI0011 range, "262144~3145728" (adapter_hccp.cc
//     CHK_OOM_RET): graph mode's 256 KiB send CQ (+ 8 KiB SQ), op-base's
//     3 MiB;
//   - a QP holds at most its four queues (send and receive, with their
//     CQs: HCCL's receive side is DEFAULT_MAX_RECV_WR = 128 WRs and
//     DEFAULT_MAX_RECV_CQ_DEPTH = 128, adapter_hccp.h) at 64 B per entry,
//     in one pool rounded up to the provider's largest alignment: the
//     RDMA-lite path gives each op-base QP one memory pool (ra_hdc_lite.c
//     RaHdcLiteInitMemPool: one mem_idx for the QP and both CQs; rs_rdma.c
//     RsInitMemPool, sized from the four depths) aligned to 2 MiB
//     (LITE_ALIGN_2MB, PAGE_ALIGN_2MB); no path aligns to more (rs.h
//     memAlign "0,1:4KB, 2:2MB"). So 3 MiB of 910B op-base queues may
//     cost 4 MiB, and the band's top is 6 MiB, above EI0011's 3 MiB.
const (
	bandEntryBytes   = 64
	bandRecvDepth    = 128 // DEFAULT_MAX_RECV_WR, DEFAULT_MAX_RECV_CQ_DEPTH
	bandPoolAlignMax = 2 << 20
)

// qpModes are the modes a burst can be learned for, by name.
var qpModes = func() map[string]QPMode {
	m := map[string]QPMode{}
	for _, q := range []QPMode{QPMode910BOpBase, QPMode910BOpBaseMultiQP, QPModeGraph, QPModeA3Host, QPModeA3HostMultiQP,
		QPModeA3AICPU, QPModeA3AICPUMultiQP, QPModeDeviceDirect} {
		m[q.Name] = q
	}
	return m
}()

// QPBand is the range of device memory one QP of mode m can take
// (see the constants above).
func QPBand(m QPMode) (lo, hi float64) {
	lo = m.Bytes()
	queues := (m.SQDepth + m.CQDepth + 2*bandRecvDepth) * bandEntryBytes
	hi = math.Ceil(queues/bandPoolAlignMax) * bandPoolAlignMax
	return lo, hi
}

// bandOf is the band of the mode named name; ok false for a name no mode
// has.
func bandOf(name string) (lo, hi float64, ok bool) {
	m, ok := qpModes[name]
	if !ok {
		return 0, 0, false
	}
	lo, hi = QPBand(m)
	return lo, hi, true
}

// LearnKey is what a learned size holds for.
type LearnKey struct{ Product, Mode, Driver string }

// ownerKey is what one owner learned: Owner "" holds observations no owner
// can be named for (a version 1 state file's), which nothing uses.
type ownerKey struct {
	Owner string
	LearnKey
}

// EstimatorConfig tunes the estimator; zero fields take the defaults.
type EstimatorConfig struct {
	MinObservations int
	MinQPs          float64
	NoiseBytes      float64
	MaxGap          time.Duration
	// TTL: an observation older than this is forgotten, and with it any
	// size it taught (--headroom.learn-ttl).
	TTL time.Duration
	// Reset: what the state file holds is dropped when loaded, and the
	// file is written again without it (--headroom.learn-reset).
	Reset bool
	// Now is the clock observations age by; nil: time.Now.
	Now func() time.Time
}

func (c EstimatorConfig) withDefaults() EstimatorConfig {
	if c.MinObservations <= 0 {
		c.MinObservations = DefaultLearnMinObservations
	}
	if !(c.MinQPs > 0) {
		c.MinQPs = DefaultLearnMinQPs
	}
	if !(c.NoiseBytes >= 0) || c.NoiseBytes == 0 {
		c.NoiseBytes = DefaultLearnNoiseBytes
	}
	if c.MaxGap <= 0 {
		c.MaxGap = DefaultLearnMaxGap
	}
	if c.TTL <= 0 {
		c.TTL = DefaultLearnTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ChipSample is one chip at one scrape, as the estimator needs it.
type ChipSample struct {
	ascend.ChipID
	Product, Driver string
	At              time.Time
	// HBMUsedBytes is npu-smi's HBM used; a sample without it is not
	// observed.
	HBMUsedBytes ascend.Value
	// QPsByMode are the QPs its processes' logs show created, by QP mode
	// name; "" for QPs whose mode the logs do not tell.
	QPsByMode map[string]float64
	// Captures counts its processes' ACL graph captures; CCLBufferBytes
	// their allocated cclBuffers.
	Captures, CCLBufferBytes float64
	// Processes identifies the set of processes on the chip.
	Processes string
	// LiveQPs is hccn_tool's count, when it measured one.
	LiveQPs ascend.Value
	// Owner is the one owner of every process on the chip (AddOwner): ""
	// when a process has none or the processes have several (OwnersMixed).
	// OwnerKernel: the kernel named it (a pod, a uid), not a configured
	// log root.
	Owner       string
	OwnerKernel bool
	OwnersMixed bool
	ownerSeen   bool
}

// AddOwner adds the owner of one process on the chip; "" for a process
// whose owner is not known (its logs are not read).
func (s *ChipSample) AddOwner(owner string, kernel bool) {
	switch {
	case !s.ownerSeen:
		s.ownerSeen, s.Owner, s.OwnerKernel = true, owner, kernel
	case s.Owner != owner || s.OwnerKernel != kernel:
		s.Owner, s.OwnerKernel, s.OwnersMixed = "", false, true
	}
}

type observations struct {
	Values []float64 `json:"values"`
	// At are the observations' times (Unix seconds), one per value.
	At    []int64 `json:"at,omitempty"`
	Total uint64  `json:"total"`
}

// Estimator learns bytes per QP. It is safe for concurrent use.
type Estimator struct {
	cfg   EstimatorConfig
	mu    sync.Mutex
	chips map[ascend.ChipID][]ChipSample
	obs   map[ownerKey]*observations
	// kernel: the owner was named by the kernel; only those count towards
	// the node's size.
	kernel  map[string]bool
	refused map[string]uint64
	gen     uint64 // bumped by every change to save
	// nextExpiry is the earliest observation time (Unix seconds): expire
	// has nothing to do while the TTL's cutoff is before it. 0: unknown.
	nextExpiry int64
	// What Learned and Snapshot computed at generation cacheGen: every
	// scrape asks, the observations change with a burst.
	cacheGen uint64
	learned  map[string]*LearnedSizes // by driver
	snap     []KeyStats
}

// Generation changes whenever the estimator learned, refused or forgot a
// burst: the state file is then written again (logstate.Extension).
func (e *Estimator) Generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire()
	return e.gen
}

// NewEstimator returns an empty estimator.
func NewEstimator(cfg EstimatorConfig) *Estimator {
	return &Estimator{cfg: cfg.withDefaults(), chips: map[ascend.ChipID][]ChipSample{}, obs: map[ownerKey]*observations{},
		kernel: map[string]bool{}, refused: map[string]uint64{}}
}

// Observe adds one scrape's sample of a chip and learns from the burst it
// completes, if any. accepted says whether an observation was added;
// reason why a burst was refused ("" when there was no burst).
func (e *Estimator) Observe(s ChipSample) (accepted bool, reason string) {
	if !s.HBMUsedBytes.OK || !validBytes(s.HBMUsedBytes.V) {
		return false, ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := s.ChipID
	prev, ok := e.chips[k]
	if !ok && len(e.chips) >= maxEstimatorChips {
		return false, ""
	}
	if n := len(prev); n > 0 && !s.At.After(prev[n-1].At) {
		return false, "" // the same scrape twice, or a clock step
	}
	w := append(prev, s)
	if len(w) > 4 {
		w = w[len(w)-4:]
	}
	e.chips[k] = w
	if len(w) < 4 {
		return false, ""
	}
	v, key, reason, burst := e.judge(w[0], w[1], w[2], w[3])
	if !burst {
		return false, ""
	}
	e.gen++
	if reason != "" {
		e.refused[reason]++
		return false, reason
	}
	okey := ownerKey{Owner: s.Owner, LearnKey: key}
	o := e.obs[okey]
	if o == nil {
		if !e.makeRoom(s.Owner) {
			return false, ""
		}
		o = &observations{}
		e.obs[okey] = o
	}
	e.kernel[s.Owner] = s.OwnerKernel
	e.nextExpiry = 0
	o.Values = append(o.Values, v)
	o.At = append(o.At, w[2].At.Unix())
	o.trim()
	o.Total++
	return true, ""
}

// trim keeps the last maxObservations observations, and as many times as
// values.
func (o *observations) trim() {
	if len(o.At) != len(o.Values) {
		o.At = make([]int64, len(o.Values)) // an inconsistent blob: time unknown, expires first
	}
	if n := len(o.Values); n > maxObservations {
		o.Values, o.At = o.Values[n-maxObservations:], o.At[n-maxObservations:]
	}
}

// makeRoom makes room for a new key of owner: within maxKeysPerOwner, and
// under maxLearnedKeys by dropping the least recently observed key of the
// owner holding the most keys, if that owner holds more than owner would.
// The caller holds the lock.
func (e *Estimator) makeRoom(owner string) bool {
	held := map[string]int{}
	for k := range e.obs {
		held[k.Owner]++
	}
	if held[owner] >= maxKeysPerOwner {
		return false
	}
	if len(e.obs) < maxLearnedKeys {
		return true
	}
	largest, most := "", 0
	for o, n := range held {
		if n > most || n == most && o < largest {
			largest, most = o, n
		}
	}
	if most <= held[owner]+1 {
		return false
	}
	var victim ownerKey
	oldest := int64(math.MaxInt64)
	for k, o := range e.obs {
		if k.Owner == largest && o.last() < oldest {
			victim, oldest = k, o.last()
		}
	}
	delete(e.obs, victim)
	return true
}

func (o *observations) last() int64 {
	if len(o.At) == 0 {
		return 0
	}
	return o.At[len(o.At)-1]
}

// judge decides whether b→c is a burst (package comment) and, if it is one
// to learn from, its bytes per QP, clamped into its mode's band.
func (e *Estimator) judge(a, b, c, d ChipSample) (float64, LearnKey, string, bool) {
	grown, n := "", 0.0
	modes := 0
	for m, q := range c.QPsByMode {
		if dq := q - b.QPsByMode[m]; dq > 0 {
			modes++
			grown, n = m, dq
		}
	}
	if modes == 0 {
		return 0, LearnKey{}, "", false
	}
	key := LearnKey{Product: c.Product, Mode: grown, Driver: c.Driver}
	same := func(x, y ChipSample) bool { return maps(x.QPsByMode, y.QPsByMode) }
	lo, hi, known := bandOf(grown)
	switch {
	case modes > 1 || !known:
		return 0, key, refusedMixed, true
	case n < e.cfg.MinQPs:
		return 0, key, refusedFewQPs, true
	case c.Captures != b.Captures:
		return 0, key, refusedCapture, true
	case c.CCLBufferBytes != b.CCLBufferBytes:
		return 0, key, refusedBuffer, true
	case a.Processes != b.Processes || b.Processes != c.Processes || c.Processes != d.Processes ||
		a.Product != d.Product || a.Driver != d.Driver:
		return 0, key, refusedProcesses, true
	case a.OwnersMixed || b.OwnersMixed || c.OwnersMixed || d.OwnersMixed ||
		a.Owner != b.Owner || b.Owner != c.Owner || c.Owner != d.Owner || a.OwnerKernel != d.OwnerKernel:
		// One burst, one owner: QPs one owner's logs print cannot be
		// charged with memory another owner's processes allocated.
		return 0, key, refusedOwnersMixed, true
	case c.Owner == "" || len(c.Owner) > maxOwnerLen:
		return 0, key, refusedOwnerUnknown, true
	case c.At.Sub(b.At) > e.cfg.MaxGap:
		return 0, key, refusedGap, true
	case !same(a, b) || !same(c, d) || a.Captures != b.Captures || c.Captures != d.Captures ||
		a.CCLBufferBytes != b.CCLBufferBytes || c.CCLBufferBytes != d.CCLBufferBytes ||
		math.Abs(b.HBMUsedBytes.V-a.HBMUsedBytes.V) > e.cfg.NoiseBytes || math.Abs(d.HBMUsedBytes.V-c.HBMUsedBytes.V) > e.cfg.NoiseBytes:
		return 0, key, refusedUnsettled, true
	case b.LiveQPs.OK && b.LiveQPs.V >= 0 && c.LiveQPs.OK && c.LiveQPs.V >= 0 && c.LiveQPs.V-b.LiveQPs.V != n:
		return 0, key, refusedForeign, true
	}
	// Both plateaus averaged: the noise of one sample weighs half.
	before, after := (a.HBMUsedBytes.V+b.HBMUsedBytes.V)/2, (c.HBMUsedBytes.V+d.HBMUsedBytes.V)/2
	if after <= before {
		return 0, key, refusedShrunk, true
	}
	v := (after - before) / n
	// npu-smi's MiB hides up to one MiB of the burst: the burst is
	// plausible when its bytes per QP could be in the band at that
	// resolution.
	res := npuSMIResolution / n
	switch {
	case v+res < lo:
		return 0, key, refusedBelowBand, true
	case v-res > hi:
		return 0, key, refusedAboveBand, true
	}
	return clampBand(v, lo, hi), key, "", true
}

func clampBand(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

func maps(x, y map[string]float64) bool {
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	for k, v := range y {
		if x[k] != v {
			return false
		}
	}
	return true
}

// expire forgets the observations older than the TTL, and the keys left
// with none. The caller holds the lock.
func (e *Estimator) expire() {
	cutoff := e.cfg.Now().Add(-e.cfg.TTL).Unix()
	if e.nextExpiry != 0 && cutoff < e.nextExpiry {
		return
	}
	defer e.noteExpiry()
	for k, o := range e.obs {
		if !slices.ContainsFunc(o.At, func(at int64) bool { return at <= cutoff }) {
			continue
		}
		// Filtered whole: an edited file's times need not be in order.
		var vs []float64
		var ats []int64
		for i, at := range o.At {
			if at > cutoff {
				vs, ats = append(vs, o.Values[i]), append(ats, at)
			}
		}
		e.gen++
		if len(vs) == 0 {
			delete(e.obs, k)
			continue
		}
		o.Values, o.At = vs, ats
	}
	for owner := range e.kernel {
		if !e.holds(owner) {
			delete(e.kernel, owner)
		}
	}
}

// noteExpiry records the earliest observation time. The caller holds the
// lock.
func (e *Estimator) noteExpiry() {
	e.nextExpiry = math.MaxInt64
	for _, o := range e.obs {
		for _, at := range o.At {
			e.nextExpiry = min(e.nextExpiry, at)
		}
	}
}

// cached drops what Learned and Snapshot computed when the observations
// changed since. The caller holds the lock.
func (e *Estimator) cached() {
	if e.cacheGen != e.gen || e.learned == nil {
		e.cacheGen, e.learned, e.snap = e.gen, map[string]*LearnedSizes{}, nil
	}
}

func (e *Estimator) holds(owner string) bool {
	for k := range e.obs {
		if k.Owner == owner {
			return true
		}
	}
	return false
}

// Estimate returns the size owner learned for key: the median of its
// observations that are not outliers, inside the mode's band, ok when at
// least MinObservations remain. n is the number of observations it rests
// on.
func (e *Estimator) Estimate(owner string, key LearnKey) (bytes float64, n int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire()
	o := e.obs[ownerKey{owner, key}]
	if o == nil {
		return 0, 0, false
	}
	v, n := robustMedian(o.Values)
	lo, hi, known := bandOf(key.Mode)
	if !known || n == 0 {
		return 0, n, false
	}
	return clampBand(v, lo, hi), n, n >= e.cfg.MinObservations
}

// LearnedSizes are the sizes the model may use: per owner, and the node's
// for processes whose owner learned none.
type LearnedSizes struct {
	owner map[[3]string]float64 // owner, product, mode
	node  map[[2]string]float64 // product, mode
}

// Lookup returns the node's learned size of a QP of mode on product: the
// size owners agree on (Estimator.Learned).
func (l *LearnedSizes) Lookup(product, mode string) (float64, bool) {
	if l == nil {
		return 0, false
	}
	v, ok := l.node[[2]string{product, mode}]
	return v, ok
}

// LookupFor returns the size a process of owner uses for a QP of mode on
// product: its owner's own learned size, else the node's.
func (l *LearnedSizes) LookupFor(owner, product, mode string) (float64, bool) {
	if l == nil {
		return 0, false
	}
	if owner != "" {
		if v, ok := l.owner[[3]string{owner, product, mode}]; ok {
			return v, true
		}
	}
	return l.Lookup(product, mode)
}

// Learned returns the sizes learned under the node's driver that rest on
// enough observations: each owner's, and the node's where at least
// nodeQuorum kernel-named owners agree (nodeSize).
func (e *Estimator) Learned(driver string) *LearnedSizes {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire()
	e.cached()
	if l, ok := e.learned[driver]; ok {
		return l // read only: shared by the scrapes until the next change
	}
	out := &LearnedSizes{owner: map[[3]string]float64{}, node: map[[2]string]float64{}}
	if len(e.learned) < maxLearnedKeys {
		e.learned[driver] = out
	}
	votes := map[[2]string][]float64{}
	for k, o := range e.obs {
		if k.Driver != driver || k.Owner == "" {
			continue
		}
		lo, hi, known := bandOf(k.Mode)
		v, n := robustMedian(o.Values)
		if !known || n < e.cfg.MinObservations || !(v > 0) {
			continue
		}
		v = clampBand(v, lo, hi)
		out.owner[[3]string{k.Owner, k.Product, k.Mode}] = v
		if e.kernel[k.Owner] {
			pm := [2]string{k.Product, k.Mode}
			votes[pm] = append(votes[pm], v)
		}
	}
	for pm, vs := range votes {
		if v, ok := nodeSize(vs); ok {
			out.node[pm] = v
		}
	}
	return out
}

// nodeSize is the size owners agree on: the median of the largest group of
// owners' sizes that agree with one value within nodeTolerance (of the
// smaller of the two), when that group has at least nodeQuorum owners and
// no other group is as large (two camps of equal size: no node size, the
// model keeps HCCL's). Each owner counts once, whatever its number of
// bursts.
func nodeSize(vs []float64) (float64, bool) {
	var best []float64
	tie := false
	for _, c := range vs {
		var group []float64
		for _, v := range vs {
			if math.Abs(v-c) <= nodeTolerance*math.Min(v, c) {
				group = append(group, v)
			}
		}
		switch {
		case len(group) > len(best):
			best, tie = group, false
		case len(group) == len(best) && median(group) != median(best):
			tie = true
		}
	}
	if len(best) < nodeQuorum || tie {
		return 0, false
	}
	return median(best), true
}

// robustMedian is the median of vs after dropping the values further from
// their median than 3 scaled median absolute deviations (at least 5 % of
// the median), and how many values it rests on.
func robustMedian(vs []float64) (float64, int) {
	if len(vs) == 0 {
		return 0, 0
	}
	m := median(vs)
	dev := make([]float64, len(vs))
	for i, v := range vs {
		dev[i] = math.Abs(v - m)
	}
	limit := math.Max(3*1.4826*median(dev), 0.05*math.Abs(m))
	var in []float64
	for _, v := range vs {
		if math.Abs(v-m) <= limit {
			in = append(in, v)
		}
	}
	return median(in), len(in)
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// KeyStats is what the estimator learned for one key, over its owners:
// the median of every inlier observation (0 when none), their count, every
// observation counted, and the owners with a size of their own.
type KeyStats struct {
	Key    LearnKey
	Median float64 // of the inliers, inside the band; 0 when none
	Inlier int
	Total  uint64
	// Owners have a learned size of their own (MinObservations agreeing
	// observations).
	Owners int
}

// Snapshot lists every key, sorted, and the refusals by reason.
func (e *Estimator) Snapshot() ([]KeyStats, map[string]uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire()
	e.cached()
	ref := make(map[string]uint64, len(e.refused))
	for k, v := range e.refused {
		ref[k] = v
	}
	if e.snap != nil {
		return slices.Clone(e.snap), ref
	}
	byKey := map[LearnKey]*KeyStats{}
	values := map[LearnKey][]float64{}
	for k, o := range e.obs {
		st := byKey[k.LearnKey]
		if st == nil {
			st = &KeyStats{Key: k.LearnKey}
			byKey[k.LearnKey] = st
		}
		st.Total += o.Total
		values[k.LearnKey] = append(values[k.LearnKey], o.Values...)
		if _, n := robustMedian(o.Values); k.Owner != "" && n >= e.cfg.MinObservations {
			st.Owners++
		}
	}
	out := make([]KeyStats, 0, len(byKey))
	for k, st := range byKey {
		v, n := robustMedian(values[k])
		if lo, hi, ok := bandOf(k.Mode); ok && n > 0 {
			v = clampBand(v, lo, hi)
		}
		st.Median, st.Inlier = v, n
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		return a.Product+"\x00"+a.Mode+"\x00"+a.Driver < b.Product+"\x00"+b.Mode+"\x00"+b.Driver
	})
	e.snap = out
	return slices.Clone(out), ref
}

// estimatorFile is the estimator in the state file (logstate's
// AttachExtension): the observations and counters, not the samples.
// Version 1 (0.5.0) kept observations by "product|mode|driver" for the
// whole node; version 2 keeps them per owner, with their times.
type estimatorFile struct {
	Version      int                     `json:"version"`
	Observations map[string]observations `json:"observations,omitempty"` // version 1
	Learned      []learnedEntry          `json:"learned,omitempty"`      // version 2
	Refused      map[string]uint64       `json:"refused,omitempty"`
}

// learnedEntry is one owner's observations of one key.
type learnedEntry struct {
	Owner   string `json:"owner"`
	Kernel  bool   `json:"kernel,omitempty"`
	Product string `json:"product"`
	Mode    string `json:"mode"`
	Driver  string `json:"driver"`
	observations
}

// MarshalJSON encodes what the estimator learned.
func (e *Estimator) MarshalJSON() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expire()
	f := estimatorFile{Version: estimatorVersion, Refused: e.refused}
	for k, o := range e.obs {
		f.Learned = append(f.Learned, learnedEntry{Owner: k.Owner, Kernel: e.kernel[k.Owner], Product: k.Product, Mode: k.Mode,
			Driver: k.Driver, observations: *o})
	}
	sort.Slice(f.Learned, func(i, j int) bool {
		a, b := f.Learned[i], f.Learned[j]
		return a.Owner+"\x00"+a.Product+"\x00"+a.Mode+"\x00"+a.Driver < b.Owner+"\x00"+b.Product+"\x00"+b.Mode+"\x00"+b.Driver
	})
	return json.Marshal(f)
}

// UnmarshalJSON replaces what the estimator learned with a state file's.
// A blob it cannot read is an error and leaves what it learned unchanged
// (the caller logs it; learning starts over). What loads is checked as if
// learned now: values outside their mode's band are clamped into it, keys
// of no known mode dropped, observations past the TTL forgotten. A version
// 1 blob's observations belong to no owner: they are kept (and shown) but
// never size a QP, and they expire a TTL after the load. With Reset the
// blob is dropped unread.
func (e *Estimator) UnmarshalJSON(b []byte) error {
	if e.cfg.Reset {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.obs, e.kernel = map[ownerKey]*observations{}, map[string]bool{}
		e.gen++ // written again without it at the next checkpoint
		return nil
	}
	var f estimatorFile
	err := json.Unmarshal(b, &f)
	if err == nil && f.Version != estimatorVersion && f.Version != estimatorVersionV1 {
		err = fmt.Errorf("version %d, want %d or %d", f.Version, estimatorVersionV1, estimatorVersion)
	}
	if err != nil {
		return fmt.Errorf("decode learned QP sizes: %w", err)
	}
	entries := f.Learned
	if f.Version == estimatorVersionV1 {
		entries = nil
		now := e.cfg.Now().Unix()
		for ks, o := range f.Observations {
			parts := strings.SplitN(ks, "|", 3)
			if len(parts) != 3 {
				continue
			}
			o.At = make([]int64, len(o.Values))
			for i := range o.At {
				o.At[i] = now
			}
			entries = append(entries, learnedEntry{Product: parts[0], Mode: parts[1], Driver: parts[2], observations: o})
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.obs, e.kernel = map[ownerKey]*observations{}, map[string]bool{}
	now := e.cfg.Now().Unix()
	for _, en := range entries {
		lo, hi, known := bandOf(en.Mode)
		k := ownerKey{Owner: en.Owner, LearnKey: LearnKey{en.Product, en.Mode, en.Driver}}
		if !known || len(en.Owner) > maxOwnerLen || e.obs[k] != nil || !e.makeRoom(en.Owner) {
			continue
		}
		o := &observations{Total: en.Total}
		for i, v := range en.Values {
			if !(v > 0 && v <= maxPlausibleBytes) {
				continue
			}
			at := int64(0)
			if i < len(en.At) {
				// A time after now (an edited file, a clock step back)
				// counts as now: nothing outlives the TTL from its load.
				at = min(en.At[i], now)
			}
			o.Values, o.At = append(o.Values, clampBand(v, lo, hi)), append(o.At, at)
		}
		o.trim()
		e.obs[k] = o
		if en.Owner != "" {
			e.kernel[en.Owner] = en.Kernel
		}
	}
	e.nextExpiry = 0
	e.expire()
	e.gen++ // what Learned and Snapshot computed is stale
	e.refused = map[string]uint64{}
	for k, v := range f.Refused {
		if slices.Contains(RefusedReasons, k) {
			e.refused[k] = v
		}
	}
	return nil
}

// ProcessSetID identifies a set of processes (pid and log directory).
func ProcessSetID(ps []ChipProcess) string {
	ids := make([]string, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, strconv.Itoa(p.PID)+"@"+p.LogDir)
	}
	sort.Strings(ids)
	return strings.Join(slices.Compact(ids), ",")
}

// learnedBytes returns the expected and high bounds' size of one QP of
// communicator c: the size learned for its mode on product (its owner's,
// else the node's) where there is one, else what qpBytes gave. Flags the
// user set win over both.
func learnedBytes(cfg Config, product string, s ProcessSettings, c comm.Communicator, opBase, graph bool, perLink, exp, high float64) (float64, float64) {
	if cfg.Learned == nil || cfg.QPBytesSetByUser {
		return exp, high
	}
	m, ok := qpModeOf(s, c, opBase, graph, perLink)
	if !ok {
		return exp, high
	}
	if v, ok := cfg.Learned.LookupFor(s.Owner, product, m.Name); ok {
		return v, v
	}
	return exp, high
}

// AddSample adds one process's established QPs (by mode), captures,
// allocated cclBuffers and owner to its chip's sample, with the model's
// rules for the mode (qpModeOf) and QPs per link.
func AddSample(sample *ChipSample, cfg Config, s ProcessSettings, chipDevType int) {
	sample.AddOwner(s.Owner, s.OwnerKernel)
	qps := cfg.DefaultQPsPerConnection
	if s.QPsKnown && s.QPsPerConnection >= 1 && s.QPsPerConnection <= HCCLMaxQPsPerConnection {
		qps = s.QPsPerConnection
	}
	opBase, graph := false, s.GraphMode
	for _, c := range s.Communicators {
		opBase = opBase || c.OpBaseTags
		graph = graph || c.GraphTags
	}
	for _, c := range s.Communicators {
		if c.DeviceType < 0 {
			c.DeviceType = chipDevType
		}
		perLink := qpsPerLink(qps, c.DeviceType)
		if s.SingleQP {
			perLink = 1
		}
		mode := ""
		if m, ok := qpModeOf(s, c, opBase, graph, perLink); ok {
			mode = m.Name
		}
		sample.QPsByMode[mode] += float64(c.EstablishedQPs)
		sample.Captures += float64(c.Captures)
		sample.CCLBufferBytes += float64(c.CCLBufferBytes)
	}
	sample.QPsByMode[""] += nonNegative(s.UnattributedQPs)
	sample.CCLBufferBytes += nonNegative(s.UnattributedBufferBytes)
}
