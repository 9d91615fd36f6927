package exporter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Most of a busy node's series change only when a process starts, ends or
// sets up its links: the settings every process printed and its
// communicators, 4,000 of the worst-case node's 5,000 series, and npu-smi's
// chips between two runs. A collector already keeps such metrics between
// scrapes (const metrics are immutable); SendStable lets the scrape path keep
// their gathered form too, so that an uncached scrape validates and converts
// only what changed. The values served are those of the collector's state at
// the scrape, as before: a set is gathered again as soon as its version
// changes.

// SendStable sends ms, metrics that stay the same for as long as version
// does, from a collector's Update. Within a scrape of the Registry they are
// gathered once per version and reused (the collector promises that the same
// version means the same metrics); anywhere else (a plain Collect, tests)
// they are sent on ch. A collector calls it at most once per Update.
func SendStable(ctx context.Context, ch chan<- prometheus.Metric, version uint64, ms []prometheus.Metric) {
	if s, ok := ctx.Value(stableSinkKey{}).(*stableSink); ok {
		s.set = &stableSet{version: version, ms: ms}
		return
	}
	for _, m := range ms {
		ch <- m
	}
}

type stableSinkKey struct{}

// stableSink receives a collector's stable set during one Update.
type stableSink struct{ set *stableSet }

// stableSet is one collector's stable metrics in one scrape.
type stableSet struct {
	collector string
	version   uint64
	ms        []prometheus.Metric
}

// stableCache keeps each collector's stable set gathered, per version, and
// the encodings of its families, per format.
type stableCache struct {
	mu    sync.Mutex
	byCol map[string]*gatheredSet
	// encoded holds the families of the current sets, with their
	// encodings so far: expfmt encodes a family alone (the same bytes
	// whatever comes before or after it), so one encoded for a scrape is
	// reused by the next ones while the family is.
	encoded map[*dto.MetricFamily]map[expfmt.Format]*keptEncoding
}

// maxEncodedFormats bounds the formats a family's encodings are kept in:
// Prometheus servers ask for one or two; a client varying its Accept header
// gets its answers encoded afresh.
const maxEncodedFormats = 4

// gatheredSet is a stable set as a stock registry gathered it. Its families
// are shared by every scrape until the version changes and are never
// modified: mergeFamilies builds a new family where it merges.
type gatheredSet struct {
	version uint64
	mfs     []*dto.MetricFamily
	err     error
}

// encoding returns mf's kept encoding in format, and whether mf belongs to a
// current stable set (whether an encoding of it may be kept). A nil cache
// keeps nothing.
func (c *stableCache) encoding(mf *dto.MetricFamily, format expfmt.Format) (*keptEncoding, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	byFormat, ok := c.encoded[mf]
	return byFormat[format], ok
}

// keepEncoding keeps b as mf's encoding in format, if mf still belongs to a
// current set, and returns what is kept (nil when nothing is). b must not be
// modified afterwards.
func (c *stableCache) keepEncoding(mf *dto.MetricFamily, format expfmt.Format, b []byte) *keptEncoding {
	c.mu.Lock()
	defer c.mu.Unlock()
	byFormat, ok := c.encoded[mf]
	if !ok {
		return nil
	}
	if k := byFormat[format]; k != nil { // kept by a concurrent answer
		return k
	}
	if len(byFormat) >= maxEncodedFormats {
		return nil
	}
	if byFormat == nil {
		byFormat = map[expfmt.Format]*keptEncoding{}
		c.encoded[mf] = byFormat
	}
	k := &keptEncoding{plain: b}
	byFormat[format] = k
	return k
}

// families returns the gathered families of each set, gathering the sets
// whose version changed (or that are new) through a stock registry, and
// forgets the collectors that sent none this scrape.
func (c *stableCache) families(sets []stableSet) ([][]*dto.MetricFamily, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byCol == nil {
		c.byCol = map[string]*gatheredSet{}
	}
	out := make([][]*dto.MetricFamily, 0, len(sets))
	var errs []error
	seen := make(map[string]bool, len(sets))
	changed := false
	for _, s := range sets {
		seen[s.collector] = true
		g := c.byCol[s.collector]
		if g == nil || g.version != s.version {
			changed = true
			reg := prometheus.NewRegistry()
			g = &gatheredSet{version: s.version}
			if err := reg.Register(metricSlice(s.ms)); err != nil {
				g.err = err
			} else {
				g.mfs, g.err = reg.Gather()
			}
			if g.err != nil {
				g.err = fmt.Errorf("collector %s: %w", s.collector, g.err)
			}
			c.byCol[s.collector] = g
		}
		out = append(out, g.mfs)
		if g.err != nil {
			errs = append(errs, g.err)
		}
	}
	for name := range c.byCol {
		if !seen[name] {
			delete(c.byCol, name)
			changed = true
		}
	}
	if changed || c.encoded == nil {
		// Encodings of families still current are kept; the others go.
		encoded := make(map[*dto.MetricFamily]map[expfmt.Format]*keptEncoding, len(c.encoded))
		for _, g := range c.byCol {
			for _, mf := range g.mfs {
				encoded[mf] = c.encoded[mf]
			}
		}
		c.encoded = encoded
	}
	return out, errors.Join(errs...)
}

// UpdateStable runs c's Update once as a scrape does and returns the stable
// set it sent with SendStable: its version and metrics, ok false when it sent
// none. The other metrics are dropped. Collectors' tests check with it that
// their version changes with their series.
func UpdateStable(ctx context.Context, c Collector) (version uint64, ms []prometheus.Metric, ok bool, err error) {
	sink := &stableSink{}
	ch := make(chan prometheus.Metric)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ch {
		}
	}()
	err = c.Update(context.WithValue(ctx, stableSinkKey{}, sink), ch)
	close(ch)
	<-done
	if sink.set == nil {
		return 0, nil, false, err
	}
	return sink.set.version, sink.set.ms, true, err
}
