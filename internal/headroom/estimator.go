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
//   - a plateau on each side: the sample before the burst equals the one
//     before it, and the sample after equals the one after it, in QPs and
//     in HBM within Noise (so the burst was finished, and nothing else was
//     allocating around it);
//   - where hccn_tool counts live QPs, they grew by the burst exactly (no
//     other RDMA user created QPs meanwhile);
//   - HBM grew, and the interval is at most MaxGap.
//
// An accepted burst gives one observation: ΔHBM / QPs. The learned size is
// the median of the last maxObservations observations after rejecting
// outliers (further from the median than 3 scaled MADs, at least 5 %); the
// model uses it once MinObservations observations agree.

// Defaults of the estimator.
const (
	DefaultLearnMinObservations = 3
	DefaultLearnMinQPs          = 8
	DefaultLearnNoiseBytes      = 8 << 20
	DefaultLearnMaxGap          = 3 * time.Minute
	maxObservations             = 32
	maxLearnedKeys              = 64
	maxEstimatorChips           = 1024
)

// Reasons a burst was not learned from (refusedDesc's reason label).
const (
	refusedMixed     = "mixed_or_unknown_mode"
	refusedFewQPs    = "too_few_qps"
	refusedCapture   = "capture"
	refusedBuffer    = "buffer_allocated"
	refusedProcesses = "processes_changed"
	refusedUnsettled = "not_settled"
	refusedForeign   = "foreign_qps"
	refusedShrunk    = "hbm_not_grown"
	refusedGap       = "interval_too_long"
)

// RefusedReasons lists every reason a burst is refused, in a fixed order.
var RefusedReasons = []string{refusedMixed, refusedFewQPs, refusedCapture, refusedBuffer, refusedProcesses, refusedUnsettled,
	refusedForeign, refusedShrunk, refusedGap}

// LearnKey is what a learned size holds for.
type LearnKey struct{ Product, Mode, Driver string }

// EstimatorConfig tunes the estimator; zero fields take the defaults.
type EstimatorConfig struct {
	MinObservations int
	MinQPs          float64
	NoiseBytes      float64
	MaxGap          time.Duration
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
	return c
}

// ChipSample is one chip at one scrape, as the estimator needs it.
type ChipSample struct {
	NPU, Chip, Product, Driver string
	At                         time.Time
	HBMUsedBytes               float64
	// QPsByMode are the QPs its processes' logs show created, by QP mode
	// name; "" for QPs whose mode the logs do not tell.
	QPsByMode map[string]float64
	// Captures counts its processes' ACL graph captures; CCLBufferBytes
	// their allocated cclBuffers.
	Captures, CCLBufferBytes float64
	// Processes identifies the set of processes on the chip.
	Processes string
	// LiveQPs is hccn_tool's count, -1 unknown.
	LiveQPs float64
}

type observations struct {
	Values []float64 `json:"values"`
	Total  uint64    `json:"total"`
}

// Estimator learns bytes per QP. It is safe for concurrent use.
type Estimator struct {
	cfg     EstimatorConfig
	mu      sync.Mutex
	chips   map[ascend.ChipID][]ChipSample
	obs     map[LearnKey]*observations
	refused map[string]uint64
	gen     uint64 // bumped by every change to save
}

// Generation changes whenever the estimator learned or refused a burst:
// the state file is then written again (logstate.Extension).
func (e *Estimator) Generation() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.gen
}

// NewEstimator returns an empty estimator.
func NewEstimator(cfg EstimatorConfig) *Estimator {
	return &Estimator{cfg: cfg.withDefaults(), chips: map[ascend.ChipID][]ChipSample{}, obs: map[LearnKey]*observations{},
		refused: map[string]uint64{}}
}

// Observe adds one scrape's sample of a chip and learns from the burst it
// completes, if any. accepted says whether an observation was added;
// reason why a burst was refused ("" when there was no burst).
func (e *Estimator) Observe(s ChipSample) (accepted bool, reason string) {
	if !validBytes(s.HBMUsedBytes) {
		return false, ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	k := ascend.ChipID{NPU: s.NPU, Chip: s.Chip}
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
	o := e.obs[key]
	if o == nil {
		if len(e.obs) >= maxLearnedKeys {
			return false, ""
		}
		o = &observations{}
		e.obs[key] = o
	}
	o.Values = append(o.Values, v)
	if len(o.Values) > maxObservations {
		o.Values = o.Values[len(o.Values)-maxObservations:]
	}
	o.Total++
	return true, ""
}

// judge decides whether b→c is a burst (package comment) and, if it is one
// to learn from, its bytes per QP.
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
	switch {
	case modes > 1 || grown == "":
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
	case c.At.Sub(b.At) > e.cfg.MaxGap:
		return 0, key, refusedGap, true
	case !same(a, b) || !same(c, d) || a.Captures != b.Captures || c.Captures != d.Captures ||
		a.CCLBufferBytes != b.CCLBufferBytes || c.CCLBufferBytes != d.CCLBufferBytes ||
		math.Abs(b.HBMUsedBytes-a.HBMUsedBytes) > e.cfg.NoiseBytes || math.Abs(d.HBMUsedBytes-c.HBMUsedBytes) > e.cfg.NoiseBytes:
		return 0, key, refusedUnsettled, true
	case b.LiveQPs >= 0 && c.LiveQPs >= 0 && c.LiveQPs-b.LiveQPs != n:
		return 0, key, refusedForeign, true
	}
	// Both plateaus averaged: the noise of one sample weighs half.
	before, after := (a.HBMUsedBytes+b.HBMUsedBytes)/2, (c.HBMUsedBytes+d.HBMUsedBytes)/2
	if after <= before {
		return 0, key, refusedShrunk, true
	}
	return (after - before) / n, key, "", true
}

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

// Estimate returns the learned size for key: the median of the
// observations that are not outliers, ok when at least MinObservations
// remain. n is the number of observations it rests on.
func (e *Estimator) Estimate(key LearnKey) (bytes float64, n int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := e.obs[key]
	if o == nil {
		return 0, 0, false
	}
	v, n := robustMedian(o.Values)
	return v, n, n >= e.cfg.MinObservations
}

// LearnedSizes are the sizes the model may use: product and mode → bytes.
type LearnedSizes struct{ m map[[2]string]float64 }

// Lookup returns the learned size of a QP of mode on product.
func (l *LearnedSizes) Lookup(product, mode string) (float64, bool) {
	if l == nil {
		return 0, false
	}
	v, ok := l.m[[2]string{product, mode}]
	return v, ok
}

// Learned returns the sizes learned for the node's driver that rest on
// enough observations.
func (e *Estimator) Learned(driver string) *LearnedSizes {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := &LearnedSizes{m: map[[2]string]float64{}}
	for k, o := range e.obs {
		if k.Driver != driver {
			continue
		}
		if v, n := robustMedian(o.Values); n >= e.cfg.MinObservations && v > 0 && v <= maxPlausibleBytes {
			out.m[[2]string{k.Product, k.Mode}] = v
		}
	}
	return out
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

// learned is one key's state for the metrics.
// KeyStats is what the estimator learned for one key: the median of the
// inlier observations (0 when none), their count and every observation
// counted.
type KeyStats struct {
	Key    LearnKey
	Median float64 // of the inliers; 0 when none
	Inlier int
	Total  uint64
}

// Snapshot lists every key, sorted, and the refusals by reason.
func (e *Estimator) Snapshot() ([]KeyStats, map[string]uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]KeyStats, 0, len(e.obs))
	for k, o := range e.obs {
		v, n := robustMedian(o.Values)
		out = append(out, KeyStats{Key: k, Median: v, Inlier: n, Total: o.Total})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Key, out[j].Key
		return a.Product+"\x00"+a.Mode+"\x00"+a.Driver < b.Product+"\x00"+b.Mode+"\x00"+b.Driver
	})
	ref := make(map[string]uint64, len(e.refused))
	for k, v := range e.refused {
		ref[k] = v
	}
	return out, ref
}

// estimatorFile is the estimator in the state file (logstate's
// AttachExtension): the observations and counters, not the samples.
type estimatorFile struct {
	Version      int                     `json:"version"`
	Observations map[string]observations `json:"observations,omitempty"` // key: product|mode|driver
	Refused      map[string]uint64       `json:"refused,omitempty"`
}

// MarshalJSON encodes what the estimator learned.
func (e *Estimator) MarshalJSON() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := estimatorFile{Version: 1, Observations: map[string]observations{}, Refused: e.refused}
	for k, o := range e.obs {
		f.Observations[k.Product+"|"+k.Mode+"|"+k.Driver] = *o
	}
	return json.Marshal(f)
}

// UnmarshalJSON replaces what the estimator learned with a state file's.
// A blob it cannot read is an error and leaves what it learned unchanged
// (the caller logs it; learning starts over).
func (e *Estimator) UnmarshalJSON(b []byte) error {
	var f estimatorFile
	err := json.Unmarshal(b, &f)
	if err == nil && f.Version != 1 {
		err = fmt.Errorf("version %d, want 1", f.Version)
	}
	if err != nil {
		return fmt.Errorf("decode learned QP sizes: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.obs = map[LearnKey]*observations{}
	for ks, o := range f.Observations {
		parts := strings.SplitN(ks, "|", 3)
		if len(parts) != 3 || len(e.obs) >= maxLearnedKeys {
			continue
		}
		var vs []float64
		for _, v := range o.Values {
			if v > 0 && v <= maxPlausibleBytes {
				vs = append(vs, v)
			}
		}
		if len(vs) > maxObservations {
			vs = vs[len(vs)-maxObservations:]
		}
		e.obs[LearnKey{parts[0], parts[1], parts[2]}] = &observations{Values: vs, Total: o.Total}
	}
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
// communicator c: the size learned for its mode on product where the
// estimator has enough observations, else what qpBytes gave. Flags the
// user set win over both.
func learnedBytes(cfg Config, product string, s ProcessSettings, c comm.Communicator, opBase, graph bool, perLink, exp, high float64) (float64, float64) {
	if cfg.Learned == nil || cfg.QPBytesSetByUser {
		return exp, high
	}
	m, ok := qpModeOf(s, c, opBase, graph, perLink)
	if !ok {
		return exp, high
	}
	if v, ok := cfg.Learned.Lookup(product, m.Name); ok {
		return v, v
	}
	return exp, high
}

// AddSample adds one process's established QPs (by mode), captures and
// allocated cclBuffers to its chip's sample, with the model's rules for
// the mode (qpModeOf) and QPs per link.
func AddSample(sample *ChipSample, cfg Config, s ProcessSettings, chipDevType int) {
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
