// Package metrictest gathers a collector in tests and finds its series: the
// one "gather and find a series" helper the packages' tests share, next to
// client_golang's testutil (which compares whole expositions).
package metrictest

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// Updater is the scrape method of the exporter's collectors.
type Updater interface {
	Update(ctx context.Context, ch chan<- prometheus.Metric) error
}

// Unchecked exposes u to client_golang's test helpers as the exporter's
// registry does: an unchecked collector (it describes nothing), whose
// Update error is dropped (tests that care call Update themselves).
func Unchecked(u Updater) prometheus.Collector { return unchecked{u} }

type unchecked struct{ u Updater }

func (unchecked) Describe(chan<- *prometheus.Desc) {}
func (a unchecked) Collect(ch chan<- prometheus.Metric) {
	_ = a.u.Update(context.Background(), ch)
}

// Exposition renders c's metrics in the text format, sorted as a registry
// sorts them: the form of the packages' golden files.
func Exposition(t testing.TB, c prometheus.Collector) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range Gather(t, c) {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// Gather gathers c through a pedantic registry (which also checks that
// every metric matches the Desc it was described with) and fails t on an
// error.
func Gather(t testing.TB, c prometheus.Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("register the collector: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return mfs
}

// Sample is one series: its labels and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns every series of the family name in mfs, in the
// registry's order.
func Samples(mfs []*dto.MetricFamily, name string) []Sample {
	var out []Sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := Sample{Labels: make(map[string]string, len(m.GetLabel())), Value: value(m)}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// Find returns the value of the first series of name in mfs whose labels
// include every pair of want; ok is false when there is none.
func Find(mfs []*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
next:
	for _, s := range Samples(mfs, name) {
		for k, w := range want {
			if got, has := s.Labels[k]; !has || got != w {
				continue next
			}
		}
		return s.Value, true
	}
	return 0, false
}

// Value gathers c and returns the value of the series of name whose labels
// include want; it fails t when there is none.
func Value(t testing.TB, c prometheus.Collector, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := Find(Gather(t, c), name, want)
	if !ok {
		t.Fatalf("no series %s%v", name, want)
	}
	return v
}

// Labels parses "k=v,k=v" (no quotes, no commas in values) into a label
// map, for tables that write their selectors as strings.
func Labels(s string) map[string]string {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(pair), "="); ok {
			out[k] = v
		}
	}
	return out
}

// Golden compares c's metrics with the text-format golden file at path
// (rewritten from the current output with -update, see internal/golden)
// through client_golang's testutil.CollectAndCompare, and fails t on any
// problem testutil.CollectAndLint finds.
func Golden(t testing.TB, path string, c prometheus.Collector) {
	t.Helper()
	if golden.Updating() {
		golden.Write(t, path, Exposition(t, c))
	}
	want, err := os.Open(path)
	if err != nil {
		t.Fatalf("golden file: %v (run go test with -update to create it)", err)
	}
	defer want.Close()
	if err := testutil.CollectAndCompare(c, want); err != nil {
		t.Errorf("%s: %v (run go test with -update to accept the output, then review the diff)", path, err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: lint %s: %s", path, p.Metric, p.Text)
	}
}
