package exporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// countedMetric counts how often the registry converts it.
type countedMetric struct {
	prometheus.Metric
	writes *atomic.Int64
}

func (m countedMetric) Write(out *dto.Metric) error {
	m.writes.Add(1)
	return m.Metric.Write(out)
}

var (
	stableDesc   = prometheus.NewDesc("stable_setting_info", "A setting.", []string{"pid", "value"}, nil)
	volatileDesc = prometheus.NewDesc("volatile_lines_total", "Lines.", nil, nil)
)

// stableCollector sends a counter and, as a stable set, n settings whose
// values and version the test changes between scrapes.
type stableCollector struct {
	mu      sync.Mutex
	version uint64
	value   string
	n       int
	lines   float64
	writes  atomic.Int64
	hang    chan struct{} // when set, Update waits on it
}

func (c *stableCollector) set(version uint64, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.value = version, value
}

func (c *stableCollector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	c.mu.Lock()
	c.lines++
	lines, version, value, n, hang := c.lines, c.version, c.value, c.n, c.hang
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(volatileDesc, prometheus.CounterValue, lines)
	ms := make([]prometheus.Metric, n)
	for i := range ms {
		ms[i] = countedMetric{prometheus.MustNewConstMetric(stableDesc, prometheus.GaugeValue, 1, strconv.Itoa(1000+i), value), &c.writes}
	}
	SendStable(ctx, ch, version, ms)
	if hang != nil {
		<-hang
	}
	return nil
}

func scrapeBody(t *testing.T, h http.Handler, accept string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStableSetGatheredOncePerVersion(t *testing.T) {
	for _, n := range []int{3, 3000} { // encoded by promhttp's path size and in parts
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			c := &stableCollector{n: n}
			c.set(1, "a")
			reg := NewRegistry(discard(), map[string]Collector{"c": c})
			h, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
			if err != nil {
				t.Fatal(err)
			}
			ref := prometheus.NewRegistry()
			ref.MustRegister(reg)
			stock := promhttp.HandlerFor(ref, promhttp.HandlerOpts{EnableOpenMetrics: true, DisableCompression: true})
			steps := []struct {
				version uint64
				value   string
				writes  int64 // conversions of the stable set by this scrape
			}{
				{1, "a", int64(n)},
				{1, "a", 0},
				{2, "b", int64(n)}, // a new version: gathered and encoded anew
				{2, "b", 0},
				{3, "b", int64(n)}, // same metrics, new version: gathered again
			}
			for i, s := range steps {
				c.set(s.version, s.value)
				before := c.writes.Load()
				for _, accept := range acceptHeaders[:2] {
					body := scrapeBody(t, h, accept)
					if !strings.Contains(body, `stable_setting_info{pid="1000",value="`+s.value+`"} 1`) ||
						strings.Count(body, "stable_setting_info{") != n {
						t.Fatalf("step %d: %d stable series, or not of value %q:\n%.400s", i, strings.Count(body, "stable_setting_info{"), s.value, body)
					}
					if !strings.Contains(body, "volatile_lines_total ") {
						t.Fatalf("step %d: counter missing", i)
					}
					// What promhttp serves of the same state, but for the
					// values that change between any two scrapes.
					want := scrapeBody(t, stock, accept)
					if got, want := stableOnly(body), stableOnly(want); got != want {
						t.Fatalf("step %d, Accept %q: stable series differ from promhttp's", i, accept)
					}
				}
				// promhttp's two scrapes convert the set twice more.
				if got := c.writes.Load() - before - 2*int64(n); got != s.writes {
					t.Fatalf("step %d: the stable set was converted %d times, want %d", i, got, s.writes)
				}
			}
		})
	}
}

// stableOnly keeps the stable family's lines of an answer.
func stableOnly(body string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(body, "\n") {
		if strings.Contains(l, "stable_setting_info") {
			b.WriteString(l)
		}
	}
	return b.String()
}

func TestStableSetOfACollectorPastTheDeadlineIsLeftOut(t *testing.T) {
	c := &stableCollector{n: 5, hang: make(chan struct{})}
	defer close(c.hang)
	c.set(1, "a")
	reg := NewRegistry(discard(), map[string]Collector{"c": c})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ms, sets := reg.Metrics(ctx)
	if len(sets) != 0 {
		t.Fatalf("%d stable sets of a collector cut off at the deadline", len(sets))
	}
	for _, m := range ms {
		if m.Desc() == stableDesc || m.Desc() == volatileDesc {
			t.Fatalf("a series of a collector cut off at the deadline: %v", m.Desc())
		}
	}
}

func TestSendStableOutsideAScrapeSendsOnTheChannel(t *testing.T) {
	c := &stableCollector{n: 4}
	c.set(1, "a")
	reg := NewRegistry(discard(), map[string]Collector{"c": c})
	if n := testutil.CollectAndCount(reg, "stable_setting_info"); n != 4 {
		t.Fatalf("plain Collect sent %d stable series, want 4", n)
	}
}

func TestStableCacheForgetsCollectorsAndEncodings(t *testing.T) {
	var c stableCache
	ms := []prometheus.Metric{prometheus.MustNewConstMetric(stableDesc, prometheus.GaugeValue, 1, "1", "a")}
	fams, err := c.families([]stableSet{{collector: "a", version: 1, ms: ms}, {collector: "b", version: 1, ms: ms}})
	if err != nil || len(fams) != 2 {
		t.Fatalf("families: %v, %d sets", err, len(fams))
	}
	mfA := fams[0][0]
	if k := c.keepEncoding(mfA, "fmt", []byte("x")); k == nil || string(k.plain) != "x" {
		t.Fatalf("keepEncoding returned %v", k)
	}
	if k, ok := c.encoding(mfA, "fmt"); !ok || k == nil || string(k.plain) != "x" {
		t.Fatalf("kept encoding %v %v", k, ok)
	}
	// A second answer keeping the same: the first one stays.
	if k := c.keepEncoding(mfA, "fmt", []byte("z")); k == nil || string(k.plain) != "x" {
		t.Fatalf("keepEncoding again returned %v", k)
	}
	// b sends nothing this scrape, a the same version: a's encoding stays.
	if _, err := c.families([]stableSet{{collector: "a", version: 1, ms: ms}}); err != nil {
		t.Fatal(err)
	}
	if len(c.byCol) != 1 || len(c.encoded) != 1 {
		t.Fatalf("%d sets and %d families kept, want 1 and 1", len(c.byCol), len(c.encoded))
	}
	if k, _ := c.encoding(mfA, "fmt"); k == nil || string(k.plain) != "x" {
		t.Fatal("the encoding of an unchanged set was dropped")
	}
	// A new version of a: its old family and encoding go.
	if _, err := c.families([]stableSet{{collector: "a", version: 2, ms: ms}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.encoding(mfA, "fmt"); ok {
		t.Fatal("the family of an old version is still kept")
	}
	if k := c.keepEncoding(mfA, "fmt", []byte("y")); k != nil { // too late: not kept
		t.Fatal("an encoding of a family no longer current was kept")
	}
	if len(c.encoded) != 1 {
		t.Fatalf("%d families kept", len(c.encoded))
	}
	for _, by := range c.encoded {
		if len(by) != 0 {
			t.Fatalf("encodings of a new version before any scrape: %v", by)
		}
	}
	// Formats are bounded.
	for _, f := range []string{"1", "2", "3", "4", "5", "6"} {
		for _, mf := range c.byCol["a"].mfs {
			c.keepEncoding(mf, expfmtFormat(f), []byte(f))
		}
	}
	for _, by := range c.encoded {
		if len(by) != maxEncodedFormats {
			t.Fatalf("%d formats kept, want %d", len(by), maxEncodedFormats)
		}
	}
	// A set that a registry rejects reports its error on every scrape.
	dup := append(ms, ms[0])
	for i := 0; i < 2; i++ {
		if _, err := c.families([]stableSet{{collector: "a", version: 3, ms: dup}}); err == nil || !strings.Contains(err.Error(), "collector a") {
			t.Fatalf("scrape %d: err = %v", i, err)
		}
	}
}

func expfmtFormat(s string) expfmt.Format { return expfmt.Format(s) }

// scrapeRecorder records the scrape each Update ran in.
type scrapeRecorder struct {
	mu  sync.Mutex
	ids []uint64
}

func (s *scrapeRecorder) Update(ctx context.Context, _ chan<- prometheus.Metric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, ScrapeOf(ctx))
	return nil
}

func TestScrapesAreNumbered(t *testing.T) {
	a, b := &scrapeRecorder{}, &scrapeRecorder{}
	reg := NewRegistry(discard(), map[string]Collector{"a": a, "b": b})
	reg.Metrics(context.Background())
	reg.Metrics(context.Background())
	testutil.CollectAndCount(reg) // Collect
	if len(a.ids) != 3 || len(b.ids) != 3 {
		t.Fatalf("updates: %v %v", a.ids, b.ids)
	}
	for i := range a.ids {
		if a.ids[i] == 0 || a.ids[i] != b.ids[i] || i > 0 && a.ids[i] == a.ids[i-1] {
			t.Fatalf("scrape ids of a %v and b %v: want one non-zero id per scrape, shared by its collectors", a.ids, b.ids)
		}
	}
	if ScrapeOf(context.Background()) != 0 {
		t.Fatal("a context outside a scrape has a scrape id")
	}
}
