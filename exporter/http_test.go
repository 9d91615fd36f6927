package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
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
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/collector"
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

// promOpts are the promhttp options NewMetricsHandler serves with, but the
// logger and error counter.
var promOpts = promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}

// shared returns the sharing layer over promhttp's handler for g.
func shared(g prometheus.Gatherer, opts HandlerOpts) *sharedHandler {
	return newSharedHandler(promhttp.HandlerFor(g, promOpts), discard(), opts)
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
	h := shared(g, HandlerOpts{CacheTTL: 0})
	var joined atomic.Int64
	h.joined = func() { joined.Add(1) }
	gz := http.Header{"Accept-Encoding": {"gzip"}}
	const n = 8
	bodies := make([]string, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newReq(gz))
			bodies[i] = decoded(t, rec)
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
	if b, _ := scrape(t, h, gz); !strings.Contains(b, "gathers 2\n") {
		t.Fatalf("scrape after the shared gather got %q, want a fresh gather", b)
	}
}

// decoded returns rec's body, gunzipped when it is gzip.
func decoded(t *testing.T, rec *httptest.ResponseRecorder) string {
	b := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Error(err)
			return ""
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Error(err)
		}
	}
	return string(b)
}

// TestPanickingGatherReleasesEveryWaiter: a gather that panics while
// requests wait for its answer gives each of them a 500, and the next
// request gathers again instead of being served an empty answer.
func TestPanickingGatherReleasesEveryWaiter(t *testing.T) {
	var calls atomic.Int64
	entered, gate := make(chan struct{}), make(chan struct{})
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if calls.Add(1) == 1 {
			close(entered)
			<-gate
			panic("collector bug")
		}
		return (&countingGatherer{}).Gather()
	})
	h := shared(g, HandlerOpts{CacheTTL: time.Hour})
	var joined atomic.Int64
	h.joined = func() { joined.Add(1) }
	const waiters = 4
	codes := make([]int, waiters+1)
	var wg sync.WaitGroup
	for i := 0; i <= waiters; i++ {
		if i == 1 {
			<-entered // request 0 runs the gather, the others wait for it
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, newReq(nil))
			codes[i] = rec.Code
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for joined.Load() < waiters {
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests wait for the gather", joined.Load())
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusInternalServerError {
			t.Errorf("request %d got %d, want 500", i, c)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "gathers 1") || calls.Load() != 2 {
		t.Fatalf("request after the panic: %d %q after %d gathers, want a fresh gather", rec.Code, rec.Body.String(), calls.Load())
	}
}

func TestScrapeCacheWindow(t *testing.T) {
	g := &countingGatherer{}
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := shared(g, HandlerOpts{CacheTTL: time.Second, Now: clock})

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

// TestAnswersArePromhttps: whatever the headers ask, the answer is
// promhttp's, byte for byte, and one answer is shared only by requests
// asking the same.
func TestAnswersArePromhttps(t *testing.T) {
	fixed := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{{
			Name: proto("gathers"), Help: proto("Gathers so far."), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: float64p(1)}}},
		}}, nil
	})
	ref := promhttp.HandlerFor(fixed, promOpts)
	var gathers atomic.Int64
	h := shared(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		gathers.Add(1)
		return fixed.Gather()
	}), HandlerOpts{CacheTTL: time.Hour})
	headers := []http.Header{
		{},
		{"Accept": {"text/plain;version=0.0.4"}},
		{"Accept-Encoding": {"gzip, deflate"}},
		// Prometheus's default Accept header negotiates OpenMetrics.
		{"Accept": {"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"}, "Accept-Encoding": {"gzip"}},
		// Protobuf, as a Prometheus with scrape_protocols PrometheusProto asks.
		{"Accept": {"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"}},
	}
	for round := 0; round < 2; round++ {
		for i, hdr := range headers {
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			ref.ServeHTTP(want, newReq(hdr))
			h.ServeHTTP(got, newReq(hdr))
			if got.Code != want.Code || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Errorf("headers %d: got %d %q, promhttp %d %q", i, got.Code, got.Body.Bytes(), want.Code, want.Body.Bytes())
			}
			for _, k := range []string{"Content-Type", "Content-Encoding"} {
				if got.Header().Get(k) != want.Header().Get(k) {
					t.Errorf("headers %d: %s %q, promhttp %q", i, k, got.Header().Get(k), want.Header().Get(k))
				}
			}
			if v := strings.Join(got.Header().Values("Vary"), ","); v != strings.Join(want.Header().Values("Vary"), ",") {
				t.Errorf("headers %d: Vary %q", i, v)
			}
		}
	}
	if n := gathers.Load(); n != int64(len(headers)) {
		t.Fatalf("%d gathers, want one per set of headers (%d)", n, len(headers))
	}
}

func TestNameFilter(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "a", Help: "a"}, func() float64 { return 1 }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "b", Help: "b"}, func() float64 { return 2 }))
	h := shared(reg, HandlerOpts{CacheTTL: time.Hour})
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
	h := shared(g, HandlerOpts{})
	if b, _ := scrape(t, h, nil); !strings.Contains(b, "gathers 1") {
		t.Fatalf("partial gather not served: %q", b)
	}
	// Nothing gathered: 500.
	h = shared(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return nil, errors.New("all failed")
	}), HandlerOpts{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "all failed") {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
	// A failed answer is not served again: the next request gathers.
	var calls atomic.Int64
	h = shared(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("all failed")
		}
		return (&countingGatherer{}).Gather()
	}), HandlerOpts{CacheTTL: time.Hour})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, newReq(nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("failed gather: %d", rec.Code)
	}
	if b, _ := scrape(t, h, nil); !strings.Contains(b, "gathers 1") || calls.Load() != 2 {
		t.Fatalf("after a failed answer: %q, %d gathers", b, calls.Load())
	}
}

// TestVaryingHeadersAreBounded: a client varying its headers gets answers,
// but past maxAnswers they are its own, and the answers kept stay bounded.
func TestVaryingHeadersAreBounded(t *testing.T) {
	g := &countingGatherer{}
	h := shared(g, HandlerOpts{CacheTTL: time.Hour})
	for i := 0; i < 3*maxAnswers; i++ {
		scrape(t, h, http.Header{"Accept": {fmt.Sprintf("text/plain;version=0.0.4;q=0.%d", i%10+1)}, "X-I": {strconv.Itoa(i)}, "Accept-Encoding": {strconv.Itoa(i)}})
	}
	h.mu.Lock()
	n := len(h.answers)
	h.mu.Unlock()
	if n > maxAnswers {
		t.Fatalf("%d answers kept, bound %d", n, maxAnswers)
	}
	if got := g.n.Load(); got != 3*maxAnswers {
		t.Fatalf("%d gathers for %d distinct requests", got, 3*maxAnswers)
	}
	// A waiter whose client goes away is released.
	g2 := &countingGatherer{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h = shared(g2, HandlerOpts{})
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), newReq(nil)); close(done) }()
	<-g2.entered
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), newReq(nil).WithContext(ctx)); close(left) }()
	cancel()
	select {
	case <-left:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiter whose client went away is still waiting")
	}
	close(g2.gate)
	<-done
}

func TestMaxRequests(t *testing.T) {
	g := &countingGatherer{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h := shared(g, HandlerOpts{MaxRequests: 1})
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

func TestMetricsHandlerSharesAnswersWithinTheTTL(t *testing.T) {
	var calls atomic.Int64
	reg := NewScraper(discard(), map[string]collector.Collector{"c": collectorFunc(func(ch chan<- prometheus.Metric) error {
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
