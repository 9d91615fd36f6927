package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// countingGatherer serves one gauge whose value is the number of gathers so
// far, optionally blocking each gather until gate is closed.
type countingGatherer struct {
	n       atomic.Int64
	entered chan struct{} // receives once per gather, when not nil
	gate    chan struct{} // gathers wait for it when not nil
	err     error
}

func (c *countingGatherer) Gather() ([]*dto.MetricFamily, error) {
	n := c.n.Add(1)
	if c.entered != nil {
		c.entered <- struct{}{}
	}
	if c.gate != nil {
		<-c.gate
	}
	return []*dto.MetricFamily{{
		Name:   proto("gathers"),
		Help:   proto("Gathers so far."),
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: float64p(float64(n))}}},
	}}, c.err
}

// plain adapts a context-free gatherer.
func plain(g prometheus.Gatherer) gatherFunc {
	return func(context.Context) ([]*dto.MetricFamily, error) { return g.Gather() }
}

func proto(s string) *string      { return &s }
func float64p(v float64) *float64 { return &v }
func newReq(h http.Header) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	for k, v := range h {
		req.Header[k] = v
	}
	return req
}

// scrape serves one request and returns the decoded text body and headers.
func scrape(t *testing.T, h http.Handler, hdr http.Header) (string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(hdr))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	b := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return string(b), rec.Header()
}

func TestConcurrentScrapesShareOneGather(t *testing.T) {
	g := &countingGatherer{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h := newCachingHandler(plain(g), discard(), HandlerOpts{CacheTTL: 0})
	var joined atomic.Int64
	h.joined = func() { joined.Add(1) }
	const n = 8
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := http.Header{}
			if i%2 == 0 {
				hdr.Set("Accept-Encoding", "gzip")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newReq(hdr))
			b := rec.Body.Bytes()
			if rec.Header().Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(b))
				if err == nil {
					b, _ = io.ReadAll(zr)
				}
			}
			bodies[i] = string(b)
		}()
	}
	<-g.entered
	deadline := time.Now().Add(10 * time.Second)
	for joined.Load() < n-1 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d scrapes joined the gather in flight", joined.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(g.gate)
	wg.Wait()
	if got := g.n.Load(); got != 1 {
		t.Fatalf("%d gathers for %d concurrent scrapes, want 1", got, n)
	}
	for i, b := range bodies {
		if !strings.Contains(b, "gathers 1\n") {
			t.Fatalf("scrape %d got %q", i, b)
		}
	}
	// With TTL 0, the next scrape gathers anew.
	g.entered, g.gate = nil, nil
	if b, _ := scrape(t, h, nil); !strings.Contains(b, "gathers 2\n") {
		t.Fatalf("scrape after the shared gather got %q, want a fresh gather", b)
	}
}

func TestScrapeCacheWindow(t *testing.T) {
	g := &countingGatherer{}
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := newCachingHandler(plain(g), discard(), HandlerOpts{CacheTTL: time.Second, Now: clock})

	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, "gathers 1\n"},
		{500 * time.Millisecond, "gathers 1\n"}, // inside the window: reused
		{499 * time.Millisecond, "gathers 1\n"}, // 999 ms after the gather
		{time.Millisecond, "gathers 2\n"},       // window over: fresh values
		{10 * time.Second, "gathers 3\n"},       // long after
		{0, "gathers 3\n"},                      // same instant
	}
	for i, s := range steps {
		advance(s.advance)
		b, _ := scrape(t, h, nil)
		if !strings.Contains(b, s.want) {
			t.Fatalf("step %d: got %q, want %q", i, b, s.want)
		}
	}
}

func TestGzipPlainAndProtobufFromOneGather(t *testing.T) {
	g := &countingGatherer{}
	h := newCachingHandler(plain(g), discard(), HandlerOpts{CacheTTL: time.Hour})
	plain, ph := scrape(t, h, http.Header{"Accept": {"text/plain;version=0.0.4"}})
	if ph.Get("Content-Encoding") != "" {
		t.Fatalf("plain scrape has Content-Encoding %q", ph.Get("Content-Encoding"))
	}
	if ct := ph.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	zipped, zh := scrape(t, h, http.Header{"Accept-Encoding": {"gzip, deflate"}})
	if zh.Get("Content-Encoding") != "gzip" || !strings.Contains(strings.Join(zh.Values("Vary"), ","), "Accept-Encoding") {
		t.Fatalf("gzip not served, or without Vary: %v", zh)
	}
	if plain != zipped || !strings.Contains(plain, "# TYPE gathers gauge\ngathers 1\n") {
		t.Fatalf("plain %q and gzip %q bodies differ", plain, zipped)
	}
	// Prometheus's default Accept header negotiates OpenMetrics.
	prom, omh := scrape(t, h, http.Header{"Accept": {"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"}, "Accept-Encoding": {"gzip"}})
	if ct := omh.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Fatalf("Prometheus Accept got Content-Type %q", ct)
	}
	if !strings.Contains(prom, "# TYPE gathers gauge\ngathers 1.0\n") || !strings.HasSuffix(prom, "# EOF\n") {
		t.Fatalf("OpenMetrics body %q", prom)
	}
	omParser := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := omParser.TextToMetricFamilies(strings.NewReader(strings.TrimSuffix(prom, "# EOF\n"))); err != nil {
		t.Fatal(err)
	}
	// Protobuf, as a Prometheus with scrape_protocols PrometheusProto asks.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(http.Header{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}}))
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "protobuf") {
		t.Fatalf("protobuf not negotiated: %q", ct)
	}
	dec := expfmt.NewDecoder(rec.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	var mf dto.MetricFamily
	if err := dec.Decode(&mf); err != nil || mf.GetName() != "gathers" || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("protobuf body: %v %v", err, &mf)
	}
	if n := g.n.Load(); n != 1 {
		t.Fatalf("%d gathers, want 1 for every format and encoding", n)
	}
	// The text parser accepts the body.
	tp := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := tp.TextToMetricFamilies(strings.NewReader(plain)); err != nil {
		t.Fatal(err)
	}
}

func TestNameFilter(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "a", Help: "a"}, func() float64 { return 1 }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "b", Help: "b"}, func() float64 { return 2 }))
	h := newCachingHandler(plain(reg), discard(), HandlerOpts{CacheTTL: time.Hour})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics?name[]=b", nil))
	if b := rec.Body.String(); strings.Contains(b, "\na 1") || !strings.Contains(b, "\nb 2") {
		t.Fatalf("filtered body %q", b)
	}
	if b, _ := scrape(t, h, nil); !strings.Contains(b, "\na 1") || !strings.Contains(b, "\nb 2") {
		t.Fatalf("unfiltered body %q", b)
	}
}

func TestGatherErrors(t *testing.T) {
	// Part of the metrics failed: the rest is served.
	g := &countingGatherer{err: errors.New("one collector failed")}
	h := newCachingHandler(plain(g), discard(), HandlerOpts{})
	if b, _ := scrape(t, h, nil); !strings.Contains(b, "gathers 1") {
		t.Fatalf("partial gather not served: %q", b)
	}
	// Nothing gathered: 500.
	h = newCachingHandler(plain(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return nil, errors.New("all failed")
	})), discard(), HandlerOpts{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "all failed") {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	// A panicking gather releases the scrapes waiting for it.
	var calls atomic.Int64
	h = newCachingHandler(plain(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if calls.Add(1) == 1 {
			panic("collector bug")
		}
		return nil, errors.New("second")
	})), discard(), HandlerOpts{})
	func() {
		defer func() { _ = recover() }()
		h.ServeHTTP(httptest.NewRecorder(), newReq(nil))
	}()
	rec = httptest.NewRecorder()
	done := make(chan struct{})
	go func() { h.ServeHTTP(rec, newReq(nil)); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("scrape after a panicking gather hangs")
	}
}

func TestMaxRequests(t *testing.T) {
	g := &countingGatherer{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h := newCachingHandler(plain(g), discard(), HandlerOpts{MaxRequests: 1})
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), newReq(nil)); close(done) }()
	<-g.entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("second scrape over the limit: status %d", rec.Code)
	}
	close(g.gate)
	<-done
}

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{"gzip", true},
		{"deflate, gzip;q=1.0, *;q=0.5", true},
		{"GZIP", true},
		{"gzip;q=0", false},
		{"*", true},
		{"gzip;q=0, *", false},
		{"identity", false},
		{"br, zstd", false},
		{"*;q=0", false},
	} {
		if got := acceptsGzip(tc.header); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestMetricsHandlerCachesThroughTheRegistry(t *testing.T) {
	var calls atomic.Int64
	reg := NewRegistry(discard(), map[string]Collector{"c": collectorFunc(func(ch chan<- prometheus.Metric) error {
		ch <- prometheus.MustNewConstMetric(fakeDesc, prometheus.GaugeValue, float64(calls.Add(1)))
		return nil
	})})
	h, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i := 0; i < 3; i++ {
		resp, err := http.Get(srv.URL) // the client asks for gzip and decodes it
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "fake_value 1\n") {
			t.Fatalf("scrape %d: %q", i, b)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("collector ran %d times within the window", calls.Load())
	}
}

type collectorFunc func(ch chan<- prometheus.Metric) error

func (f collectorFunc) Update(_ context.Context, ch chan<- prometheus.Metric) error { return f(ch) }
