package exporter

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var (
	eqGaugeDesc   = prometheus.NewDesc("eq_gauge", "A gauge with \"quotes\", a back\\slash and a\nnewline.", []string{"pid", "name", "value"}, nil)
	eqCounterDesc = prometheus.NewDesc("eq_counter_total", "A counter.", []string{"code"}, prometheus.Labels{"const": "c"})
	eqUntypedDesc = prometheus.NewDesc("eq_untyped", "Untyped.", nil, nil)
	eqSummaryDesc = prometheus.NewDesc("eq_summary_seconds", "A summary.", []string{"op"}, nil)
	eqHistDesc    = prometheus.NewDesc("eq_histogram_bytes", "A histogram.", nil, nil)
)

// mixedCollector sends every kind of metric, in random order, with label
// values that need escaping and special float values.
type mixedCollector struct{ seed uint64 }

func (c mixedCollector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	rng := rand.New(rand.NewPCG(c.seed, 1))
	var ms []prometheus.Metric
	for pid := 0; pid < 40; pid++ {
		for v := 0; v < 5; v++ {
			val := float64(rng.IntN(1000)) / 7
			switch rng.IntN(20) {
			case 0:
				val = math.Inf(1)
			case 1:
				val = math.NaN()
			case 2:
				val = math.Copysign(0, -1)
			case 3:
				val = 1e21
			}
			ms = append(ms, prometheus.MustNewConstMetric(eqGaugeDesc, prometheus.GaugeValue, val,
				strconv.Itoa(300000+pid*13), "python3", "v\"a\\l\nue "+strconv.Itoa(v)))
		}
	}
	for _, code := range []string{"EI0011", "EI0006", "EL0004"} {
		ms = append(ms, prometheus.MustNewConstMetric(eqCounterDesc, prometheus.CounterValue, float64(len(code)), code))
	}
	ms = append(ms, prometheus.MustNewConstMetric(eqUntypedDesc, prometheus.UntypedValue, 42))
	ms = append(ms, prometheus.MustNewConstSummary(eqSummaryDesc, 10, 3.5, map[float64]float64{0.5: 0.2, 0.99: 1.5}, "read"))
	ms = append(ms, prometheus.MustNewConstHistogram(eqHistDesc, 7, 900, map[float64]uint64{100: 2, 1000: 7}))
	rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	for _, m := range ms {
		ch <- m
	}
	return nil
}

func encodeText(t *testing.T, mfs []*dto.MetricFamily) string {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// The fast gather serves exactly what client_golang's registry serves.
func TestGatherMatchesClientGolang(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		reg := NewRegistry(discard(), map[string]Collector{
			"mixed": mixedCollector{seed},
			"fake":  fakeCollector{value: 3},
			"fail":  silentCollector{err: errFake},
		})
		ref := prometheus.NewPedanticRegistry()
		ref.MustRegister(reg)
		want, err := ref.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		w, g := encodeText(t, want), encodeText(t, got)
		// Durations differ between two runs; compare everything else.
		drop := func(s string) string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.HasPrefix(l, "hccl_exporter_collector_duration_seconds{") {
					out = append(out, l)
				}
			}
			return strings.Join(out, "\n")
		}
		if drop(w) != drop(g) {
			t.Fatalf("seed %d: fast gather differs from client_golang's\n--- client_golang\n%s\n--- fast\n%s", seed, w, g)
		}
	}
}

var errFake = errorString("collector failed")

type errorString string

func (e errorString) Error() string { return string(e) }

var (
	dupDesc   = prometheus.NewDesc("dup_value", "Help one.", []string{"l"}, nil)
	dupOther  = prometheus.NewDesc("dup_value", "Help two.", []string{"l"}, nil)
	badDesc   = prometheus.NewDesc("bad name", "Invalid name.", nil, nil)
	fineValue = prometheus.NewDesc("fine_value", "Fine.", nil, nil)
)

type sendAll []prometheus.Metric

func (s sendAll) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	for _, m := range s {
		ch <- m
	}
	return nil
}

// Inconsistent families and repeated label sets are reported and dropped;
// the rest is served.
func TestGatherReportsInconsistencies(t *testing.T) {
	reg := NewRegistry(discard(), map[string]Collector{"c": sendAll{
		prometheus.MustNewConstMetric(dupDesc, prometheus.GaugeValue, 1, "a"),
		prometheus.MustNewConstMetric(dupDesc, prometheus.GaugeValue, 2, "a"),
		prometheus.MustNewConstMetric(dupOther, prometheus.GaugeValue, 3, "b"),
		prometheus.MustNewConstMetric(dupDesc, prometheus.CounterValue, 4, "c"),
		prometheus.MustNewConstMetric(fineValue, prometheus.GaugeValue, 5),
	}})
	mfs, err := reg.Gather()
	if err == nil {
		t.Fatal("no error for duplicate and inconsistent metrics")
	}
	for _, want := range []string{"collected twice", `help "Help two."`, "COUNTER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	text := encodeText(t, mfs)
	if !strings.Contains(text, "fine_value 5") || !strings.Contains(text, `dup_value{l="a"} 1`) || strings.Contains(text, `l="b"`) || strings.Contains(text, `l="c"`) {
		t.Fatalf("served:\n%s", text)
	}
	if _, err := parseDesc(badDesc.String()); err != nil {
		t.Logf("invalid desc: %v", err) // its metrics cannot be built anyway
	}
	if _, err := parseDesc("something else"); err == nil {
		t.Fatal("parseDesc accepted garbage")
	}
}

// The merged handler output serves the registry's families once, beside
// build info, sorted by name.
func TestMergedGatherer(t *testing.T) {
	a := prometheus.NewRegistry()
	a.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zz_a", Help: "a"}, func() float64 { return 1 }))
	b := prometheus.NewRegistry()
	b.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aa_b", Help: "b"}, func() float64 { return 2 }))
	b.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "zz_a", Help: "a"}, func() float64 { return 3 }))
	mfs, err := mergedGatherer{a, b}.Gather()
	if err == nil || !strings.Contains(err.Error(), "zz_a served by two sources") {
		t.Fatalf("err = %v", err)
	}
	if text := encodeText(t, mfs); !strings.HasPrefix(text, "# HELP aa_b") || !strings.Contains(text, "zz_a 1") || strings.Contains(text, "zz_a 3") {
		t.Fatalf("merged:\n%s", text)
	}
}

func BenchmarkGatherFast(b *testing.B) {
	reg := NewRegistry(discard(), map[string]Collector{"mixed": mixedCollector{1}})
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGatherClientGolang(b *testing.B) {
	reg := NewRegistry(discard(), map[string]Collector{"mixed": mixedCollector{1}})
	ref := prometheus.NewRegistry()
	ref.MustRegister(reg)
	for b.Loop() {
		if _, err := ref.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// The text encoder writes what expfmt writes, byte for byte, including the
// families it hands to expfmt (summary, histogram) and odd values.
func TestTextEncoderMatchesExpfmt(t *testing.T) {
	reg := NewRegistry(discard(), map[string]Collector{"mixed": mixedCollector{3}, "fake": fakeCollector{value: -1}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ts := int64(1767685109000)
	mfs = append(mfs, &dto.MetricFamily{Name: proto("with_timestamp"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: float64p(0.5)}, TimestampMs: &ts}}})
	mfs = append(mfs, &dto.MetricFamily{Name: proto("utf8.name"), Help: proto("h"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: float64p(2)}}}})
	for _, format := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeTextPlain), expfmt.FmtText} {
		var want bytes.Buffer
		ref := expfmt.NewEncoder(&want, format)
		for _, mf := range mfs {
			if err := ref.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		var got bytes.Buffer
		enc := newTextEncoder(&got, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("format %s: text encoder differs from expfmt\n--- expfmt\n%s\n--- ours\n%s", format, want.String(), got.String())
		}
		if !strings.Contains(got.String(), "NaN") || !strings.Contains(got.String(), "+Inf") || !strings.Contains(got.String(), `\"a\\l\nue`) {
			t.Fatalf("test data lost its odd values:\n%s", got.String())
		}
	}
}
