package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gather runs every collector and returns their metric families sorted by
// name, each family's metrics sorted by label values: what a
// prometheus.Registry returns for the Registry, at a fraction of the cost.
// client_golang's registry hashes and re-validates every label of every
// metric on every scrape (half the CPU of a scrape of a large node); here the
// collectors' const metrics were validated when built, and only what can
// still go wrong is checked: a family whose help or type disagrees between
// metrics, and a label set collected twice (found as neighbours after the
// sort). Either is reported as an error and the offending metric dropped,
// the rest is served.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultScrapeTimeout)
	defer cancel()
	return r.GatherContext(ctx)
}

// GatherContext is Gather under the deadline of ctx.
func (r *Registry) GatherContext(ctx context.Context) ([]*dto.MetricFamily, error) {
	ch := make(chan prometheus.Metric, 256)
	go func() {
		r.CollectContext(ctx, ch)
		close(ch)
	}()
	byName := map[string]*dto.MetricFamily{}
	var errs []error
	var slab []dto.Metric // allocated in chunks: one allocation per 256 metrics
	for m := range ch {
		info, err := r.descs.info(m.Desc())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(slab) == cap(slab) {
			slab = make([]dto.Metric, 0, 256)
		}
		slab = slab[:len(slab)+1]
		pb := &slab[len(slab)-1]
		if err := m.Write(pb); err != nil {
			errs = append(errs, fmt.Errorf("collect %s: %w", info.name, err))
			continue
		}
		typ, ok := metricType(pb)
		if !ok {
			errs = append(errs, fmt.Errorf("collect %s: metric of no known type", info.name))
			continue
		}
		mf := byName[info.name]
		if mf == nil {
			mf = &dto.MetricFamily{Name: &info.name, Help: &info.help, Type: typ.Enum()}
			if info.unit != "" {
				mf.Unit = &info.unit
			}
			byName[info.name] = mf
		} else if mf.GetType() != typ || mf.GetHelp() != info.help {
			errs = append(errs, fmt.Errorf("collect %s: %s with help %q is inconsistent with earlier %s with help %q",
				info.name, typ, info.help, mf.GetType(), mf.GetHelp()))
			continue
		}
		mf.Metric = append(mf.Metric, pb)
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		// Collectors that send in order make this a linear check.
		if !slices.IsSortedFunc(mf.Metric, compareMetrics) {
			slices.SortStableFunc(mf.Metric, compareMetrics)
		}
		kept := mf.Metric[:1]
		for _, m := range mf.Metric[1:] {
			if compareLabels(kept[len(kept)-1], m) == 0 {
				errs = append(errs, fmt.Errorf("collect %s: label set %s collected twice", mf.GetName(), labelString(m)))
				continue
			}
			kept = append(kept, m)
		}
		mf.Metric = kept
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, errors.Join(errs...)
}

func metricType(m *dto.Metric) (dto.MetricType, bool) {
	switch {
	case m.Gauge != nil:
		return dto.MetricType_GAUGE, true
	case m.Counter != nil:
		return dto.MetricType_COUNTER, true
	case m.Untyped != nil:
		return dto.MetricType_UNTYPED, true
	case m.Summary != nil:
		return dto.MetricType_SUMMARY, true
	case m.Histogram != nil:
		return dto.MetricType_HISTOGRAM, true
	}
	return 0, false
}

// compareLabels orders label sets as client_golang does: by label count,
// then value by value (labels are sorted by name).
func compareLabels(a, b *dto.Metric) int {
	if c := cmp.Compare(len(a.Label), len(b.Label)); c != 0 {
		return c
	}
	for i, lp := range a.Label {
		if c := strings.Compare(lp.GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}

// compareMetrics is compareLabels, then timestamps (none last), as
// client_golang sorts.
func compareMetrics(a, b *dto.Metric) int {
	if c := compareLabels(a, b); c != 0 {
		return c
	}
	switch {
	case a.TimestampMs == nil && b.TimestampMs == nil:
		return 0
	case a.TimestampMs == nil:
		return 1
	case b.TimestampMs == nil:
		return -1
	}
	return cmp.Compare(a.GetTimestampMs(), b.GetTimestampMs())
}

func labelString(m *dto.Metric) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, lp := range m.Label {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(lp.GetName() + "=" + strconv.Quote(lp.GetValue()))
	}
	b.WriteByte('}')
	return b.String()
}

// descInfo is what a family needs from a metric's descriptor.
type descInfo struct{ name, help, unit string }

// descCache reads each descriptor once. prometheus.Desc keeps its name and
// help private; its String form prints them Go-quoted, which reads back
// exactly. Descriptors are long-lived (built once per collector), so the
// cache stays small.
type descCache struct {
	mu sync.Mutex
	m  map[*prometheus.Desc]descInfo
}

func (c *descCache) info(d *prometheus.Desc) (descInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.m[d]; ok {
		return in, nil
	}
	in, err := parseDesc(d.String())
	if err != nil {
		return descInfo{}, err
	}
	if c.m == nil {
		c.m = map[*prometheus.Desc]descInfo{}
	}
	c.m[d] = in
	return in, nil
}

// parseDesc reads `Desc{fqName: "…", help: "…", unit: "…", …}`.
func parseDesc(s string) (descInfo, error) {
	var in descInfo
	rest := s
	for _, f := range []struct {
		prefix string
		dst    *string
		opt    bool
	}{{"Desc{fqName: ", &in.name, false}, {", help: ", &in.help, false}, {", unit: ", &in.unit, true}} {
		if !strings.HasPrefix(rest, f.prefix) {
			if f.opt {
				continue
			}
			return in, fmt.Errorf("unexpected metric descriptor %q", s)
		}
		rest = rest[len(f.prefix):]
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return in, fmt.Errorf("unexpected metric descriptor %q: %w", s, err)
		}
		if *f.dst, err = strconv.Unquote(q); err != nil {
			return in, fmt.Errorf("unexpected metric descriptor %q: %w", s, err)
		}
		rest = rest[len(q):]
	}
	if in.name == "" {
		// NewDesc records construction errors in the descriptor; its
		// metrics cannot be served.
		return in, fmt.Errorf("invalid metric descriptor %s", s)
	}
	return in, nil
}
