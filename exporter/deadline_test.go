package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

func TestScrapeTimeout(t *testing.T) {
	tests := []struct {
		header string
		def    time.Duration
		offset time.Duration
		want   time.Duration
	}{
		{"", 10 * time.Second, 500 * time.Millisecond, 9500 * time.Millisecond},
		{"10", 0, 500 * time.Millisecond, 9500 * time.Millisecond},
		{"2.5", 10 * time.Second, 500 * time.Millisecond, 2 * time.Second},
		{"0.5", 10 * time.Second, 500 * time.Millisecond, 250 * time.Millisecond}, // offset would leave nothing: half
		{"garbage", 4 * time.Second, 0, 4 * time.Second},
		{"-3", 4 * time.Second, 0, 4 * time.Second},
		{"NaN", 4 * time.Second, 0, 4 * time.Second},
		{"1e300", 4 * time.Second, 0, time.Hour}, // bounded, no overflow
		{"+Inf", 4 * time.Second, 0, time.Hour},
	}
	for _, tc := range tests {
		h := http.Header{}
		if tc.header != "" {
			h.Set(ScrapeTimeoutHeader, tc.header)
		}
		if got := ScrapeTimeout(h, tc.def, tc.offset); got != tc.want {
			t.Errorf("ScrapeTimeout(%q, %v, %v) = %v, want %v", tc.header, tc.def, tc.offset, got, tc.want)
		}
	}
}

// hungCollector ignores its context and never returns until released.
type hungCollector struct{ release chan struct{} }

func (h hungCollector) Update(_ context.Context, ch chan<- prometheus.Metric) error {
	ch <- prometheus.MustNewConstMetric(fakeDesc, prometheus.GaugeValue, 99) // half-sent: must not be served
	<-h.release
	return nil
}

// politeCollector waits for its source until ctx ends, then reports its
// own failure series, as npusmi does.
type politeCollector struct{}

var politeUpDesc = prometheus.NewDesc("polite_up", "Up.", nil, nil)

func (politeCollector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	<-ctx.Done()
	ch <- prometheus.MustNewConstMetric(politeUpDesc, prometheus.GaugeValue, 0)
	return ctx.Err()
}

type deadlineRecorder struct{ got chan time.Duration }

var recDesc = prometheus.NewDesc("rec_value", "Recorded.", nil, nil)

func (d deadlineRecorder) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	dl, ok := ctx.Deadline()
	if !ok {
		d.got <- -1
	} else {
		d.got <- time.Until(dl)
	}
	ch <- prometheus.MustNewConstMetric(recDesc, prometheus.GaugeValue, 1)
	return nil
}

func TestScraperStopsWaitingAtTheDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	reg := NewScraper(discard(), map[string]collector.Collector{
		"hung":   hungCollector{release},
		"polite": politeCollector{},
		"logs":   fakeCollector{value: 7},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	sreg, err := scrapeRegistry(nil, scrapeCollector{reg, ctx})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := sreg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("gather took %v with a 300ms deadline", took)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName()
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			got[key] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"fake_value":                             7, // the fast collector's series, not the hung one's 99
		"polite_up":                              0, // a collector honouring ctx reports its own failure in time
		"hccl_exporter_collector_success/hung":   0,
		"hccl_exporter_collector_success/polite": 0,
		"hccl_exporter_collector_success/logs":   1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

type panicCollector struct{}

func (panicCollector) Update(context.Context, chan<- prometheus.Metric) error { panic("boom") }

func TestScraperRecoversACollectorPanic(t *testing.T) {
	reg := NewScraper(discard(), map[string]collector.Collector{"p": panicCollector{}, "ok": fakeCollector{value: 1}})
	want := `
# HELP hccl_exporter_collector_success hccl_exporter: whether a collector succeeded (1) or failed (0) on this scrape.
# TYPE hccl_exporter_collector_success gauge
hccl_exporter_collector_success{collector="ok"} 1
hccl_exporter_collector_success{collector="p"} 0
`
	if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "hccl_exporter_collector_success"); err != nil {
		t.Fatal(err)
	}
}

// Each kind of collector error gives its success value and log level: a
// failure logged elsewhere (by the collector npu-smi belongs to, or by the
// collector itself when it began) is not logged again at error level on
// every scrape.
func TestCollectorErrorsSuccessAndLogLevel(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		success   string
		errorLogs int
	}{
		{"none", nil, "1", 0},
		{"no data", fmt.Errorf("first sweep: %w", collector.ErrNoData), "1", 0},
		{"dependency", errors.Join(collector.ErrDependency, errors.New("npu-smi timed out")), "0", 0},
		{"logged", fmt.Errorf("%w: %w", collector.ErrLogged, errors.New("hccn_tool timeout on npu 2")), "0", 0},
		{"other", errors.New("read /proc: permission denied"), "0", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			reg := NewScraper(logger, map[string]collector.Collector{"c": silentCollector{err: tc.err}})
			want := `
# HELP hccl_exporter_collector_success hccl_exporter: whether a collector succeeded (1) or failed (0) on this scrape.
# TYPE hccl_exporter_collector_success gauge
hccl_exporter_collector_success{collector="c"} ` + tc.success + "\n"
			if err := testutil.CollectAndCompare(reg, strings.NewReader(want), "hccl_exporter_collector_success"); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != tc.errorLogs {
				t.Fatalf("%d error-level lines, want %d:\n%s", n, tc.errorLogs, logs.String())
			}
			if tc.err != nil && !strings.Contains(logs.String(), "level=DEBUG") && tc.errorLogs == 0 {
				t.Fatalf("the error is not logged at debug level either:\n%s", logs.String())
			}
		})
	}
}

// TestHandlerPassesTheScrapeTimeout checks that the deadline a collector sees
// comes from Prometheus's header minus the offset, or from the default.
func TestHandlerPassesTheScrapeTimeout(t *testing.T) {
	rec := deadlineRecorder{got: make(chan time.Duration, 1)}
	reg := NewScraper(discard(), map[string]collector.Collector{"rec": rec})
	h, err := NewMetricsHandler(reg, discard(), HandlerOpts{ScrapeTimeout: 20 * time.Second, ScrapeTimeoutOffset: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header   string
		min, max time.Duration
	}{
		{"4", 2500 * time.Millisecond, 3 * time.Second}, // 4s − 1s offset − collector grace
		{"", 18 * time.Second, 19 * time.Second},        // the default
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.header != "" {
			req.Header.Set(ScrapeTimeoutHeader, tc.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "rec_value 1") {
			t.Fatalf("header %q: %d %q", tc.header, w.Code, w.Body.String())
		}
		got := <-rec.got
		if got < tc.min || got > tc.max {
			t.Errorf("header %q: collector deadline in %v, want within [%v, %v]", tc.header, got, tc.min, tc.max)
		}
	}
}

// FuzzScrapeTimeout: whatever a client sends as its timeout header, the
// deadline is positive, at most the cap, and never more than the header
// (or the default) asked for.
func FuzzScrapeTimeout(f *testing.F) {
	for _, s := range []string{"10", "0.5", "", "-1", "NaN", "+Inf", "1e300", "9223372036854775807", "0x10", "1_0", " 3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set(ScrapeTimeoutHeader, v)
		got := ScrapeTimeout(h, DefaultScrapeTimeout, DefaultScrapeTimeoutOffset)
		if got <= 0 || got > maxScrapeTimeout {
			t.Fatalf("ScrapeTimeout(%q) = %v", v, got)
		}
	})
}
