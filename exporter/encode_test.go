package exporter

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// acceptHeaders are what scrapers send: Prometheus 2 and 3, protobuf for
// native histograms, plain text, OpenMetrics with a chosen escaping, none.
var acceptHeaders = []string{
	"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
	"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5",
	"application/openmetrics-text;version=1.0.0;escaping=underscores",
	"application/openmetrics-text;version=0.0.1",
	"text/plain;version=1.0.0;escaping=allow-utf-8",
	"text/plain;version=0.0.4",
	"",
}

// familiesWithUTF8Name is a node's families plus one whose name needs
// escaping in the formats that ask for it.
func familiesWithUTF8Name(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	ms := mixedNode(11)
	dotted := prometheus.NewDesc("node.dotted.value", "A name only UTF-8 allows.", []string{"chip"}, nil)
	for i := 0; i < 10; i++ {
		ms = append(ms, prometheus.MustNewConstMetric(dotted, prometheus.GaugeValue, float64(i), fmt.Sprint(i)))
	}
	mfs, err := shardedGather(nil, ms, 1)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

type staticGatherer []*dto.MetricFamily

func (s staticGatherer) Gather() ([]*dto.MetricFamily, error) { return s, nil }

func TestEncodeAnswerEqualsPromhttp(t *testing.T) {
	mfs := familiesWithUTF8Name(t)
	errCnt := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors_total"}, []string{"cause"})
	stock := promhttp.HandlerFor(staticGatherer(mfs), promhttp.HandlerOpts{EnableOpenMetrics: true, DisableCompression: true})
	for _, accept := range acceptHeaders {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		want := httptest.NewRecorder()
		stock.ServeHTTP(want, req)
		for _, parts := range []int{1, 2, 3, 4, 9} {
			t.Run(fmt.Sprintf("%s/parts%d", accept, parts), func(t *testing.T) {
				got := httptest.NewRecorder()
				encodeAnswer(got, req, mfs, parts, nil, errCnt, func(err error) { t.Error(err) })
				if !slices.Equal(got.Header().Values("Content-Type"), want.Header().Values("Content-Type")) ||
					!slices.Equal(got.Header().Values("Vary"), want.Header().Values("Vary")) {
					t.Fatalf("headers %v, promhttp's %v", got.Header(), want.Header())
				}
				if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
					t.Fatalf("answer of %d bytes differs from promhttp's of %d", got.Body.Len(), want.Body.Len())
				}
			})
		}
	}
}

func TestCutFamilies(t *testing.T) {
	mfs := familiesWithUTF8Name(t)
	for _, parts := range []int{1, 2, 3, 4, len(mfs), len(mfs) + 3} {
		b := cutFamilies(mfs, parts, nil)
		if len(b) != parts+1 || b[0] != 0 || b[parts] != len(mfs) || !slices.IsSorted(b) {
			t.Fatalf("cutFamilies(%d families, %d) = %v", len(mfs), parts, b)
		}
	}
	b := cutFamilies(mfs, 2, nil)
	first, second := seriesIn(mfs[:b[1]]), seriesIn(mfs[b[1]:])
	// The largest family has 1,792 series: no cut can do better than that.
	if d := first - second; d > 1792 || d < -1792 {
		t.Fatalf("runs of %d and %d series", first, second)
	}
}

// TestMetricsHandlerAnswersAsPromhttp serves a worst-case node through the
// whole scrape path (registries in parallel, encoding in parts) and through
// one stock registry and promhttp: the answers are the same but for the
// values that differ between any two scrapes (durations, request counts).
func TestMetricsHandlerAnswersAsPromhttp(t *testing.T) {
	reg := NewRegistry(discard(), map[string]Collector{"node": newNodeCollector()})
	h, err := NewMetricsHandler(reg, discard(), HandlerOpts{CacheTTL: 0})
	if err != nil {
		t.Fatal(err)
	}
	ref := prometheus.NewRegistry()
	ref.MustRegister(versioncollector.NewCollector(Namespace), reg)
	stock := promhttp.HandlerFor(ref, promhttp.HandlerOpts{EnableOpenMetrics: true, DisableCompression: true})
	varying := regexp.MustCompile(`(?m)^(# (HELP|TYPE) )?(promhttp_metric_handler|hccl_exporter_collector_duration_seconds)\S*.*\n`)
	for _, accept := range acceptHeaders {
		if strings.Contains(accept, "protobuf") {
			continue // not line-oriented; encodeAnswer's own test covers it
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", accept)
		got, want := httptest.NewRecorder(), httptest.NewRecorder()
		h.ServeHTTP(got, req)
		stock.ServeHTTP(want, req)
		g, w := varying.ReplaceAllString(got.Body.String(), ""), varying.ReplaceAllString(want.Body.String(), "")
		if strings.Count(g, "\n") < 2000 {
			t.Fatalf("Accept %q: only %d lines served", accept, strings.Count(g, "\n"))
		}
		if g != w {
			t.Fatalf("Accept %q: the answer differs from promhttp's (%d and %d bytes)", accept, len(g), len(w))
		}
		if got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Fatalf("Accept %q: Content-Type %q, promhttp's %q", accept, got.Header().Get("Content-Type"), want.Header().Get("Content-Type"))
		}
	}
}

// A stable family is encoded once per format: the first answer keeps its
// bytes, the next ones write them as kept.
func TestEncodeAnswerWritesKeptEncodings(t *testing.T) {
	var cache stableCache
	ms := []prometheus.Metric{prometheus.MustNewConstMetric(stableDesc, prometheus.GaugeValue, 1, "1", "a")}
	sets, err := cache.families([]stableSet{{collector: "c", version: 1, ms: ms}})
	if err != nil {
		t.Fatal(err)
	}
	counter := prometheus.MustNewConstMetric(volatileDesc, prometheus.CounterValue, 7)
	mfs, err := shardedGather(nil, []prometheus.Metric{counter}, 1, sets...)
	if err != nil || len(mfs) != 2 {
		t.Fatalf("%v, %d families", err, len(mfs))
	}
	errCnt := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors_total"}, []string{"cause"})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	first := httptest.NewRecorder()
	encodeAnswer(first, req, mfs, 1, &cache, errCnt, func(err error) { t.Error(err) })
	kept, ok := cache.encoding(sets[0][0], expfmt.Format(first.Header().Get("Content-Type")))
	if !ok || kept == nil || !strings.Contains(string(kept.plain), `stable_setting_info{pid="1",value="a"} 1`) {
		t.Fatalf("kept %v after the first answer", kept)
	}
	// Swap the kept bytes for a marker: the next answer must write them.
	cache.encoded[sets[0][0]][expfmt.Format(first.Header().Get("Content-Type"))] = &keptEncoding{plain: []byte("# kept\n")}
	second := httptest.NewRecorder()
	encodeAnswer(second, req, mfs, 2, &cache, errCnt, func(err error) { t.Error(err) })
	if got := second.Body.String(); !strings.Contains(got, "# kept\n") || strings.Contains(got, "stable_setting_info") ||
		!strings.Contains(got, "volatile_lines_total 7") {
		t.Fatalf("second answer %q", got)
	}
	// The volatile family is never kept.
	if _, ok := cache.encoding(mfs[1], expfmt.Format(first.Header().Get("Content-Type"))); ok {
		t.Fatal("a family of no stable set is kept")
	}
}
