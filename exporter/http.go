package exporter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// DefaultScrapeCacheTTL is how long one answer is served again. It
// matches the default --cannlog.poll-interval: the log state cannot change
// faster than it is polled, and npu-smi values are already up to
// --npusmi.min-interval old, so a gather younger than this is as fresh as a
// new one.
const DefaultScrapeCacheTTL = time.Second

// DefaultScrapeTimeout is the time a scrape may take when the request does
// not say (no X-Prometheus-Scrape-Timeout-Seconds header): Prometheus's
// default scrape_timeout.
const DefaultScrapeTimeout = 10 * time.Second

// DefaultScrapeTimeoutOffset is kept back from the scrape's timeout for
// encoding and sending the body, as blackbox_exporter's --timeout-offset.
const DefaultScrapeTimeoutOffset = 500 * time.Millisecond

// maxScrapeTimeout bounds what a header can ask for (and keeps the
// conversion to time.Duration from overflowing).
const maxScrapeTimeout = time.Hour

// ScrapeTimeoutHeader is where Prometheus sends its scrape_timeout, in
// seconds.
const ScrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// ScrapeTimeout returns how long the collectors of a scrape with header h
// may run: the scraper's timeout (def when it sends none or an unusable
// value) minus offset, but at least half the timeout, so that an offset
// larger than a short scrape_timeout still leaves the collectors time.
func ScrapeTimeout(h http.Header, def, offset time.Duration) time.Duration {
	timeout := def
	if v := h.Get(ScrapeTimeoutHeader); v != "" {
		if sec, err := strconv.ParseFloat(v, 64); err == nil && sec > 0 {
			timeout = time.Duration(min(sec, maxScrapeTimeout.Seconds()) * float64(time.Second))
		}
	}
	if timeout <= 0 {
		timeout = DefaultScrapeTimeout
	}
	return max(timeout-offset, timeout/2)
}

// HandlerOpts configures the metrics endpoint.
type HandlerOpts struct {
	// MaxRequests bounds parallel scrape requests, those waiting for a
	// shared answer included; 0 or less means no bound.
	MaxRequests int
	// WithRuntimeMetrics adds the exporter's own go_* and process_* series.
	WithRuntimeMetrics bool
	// CacheTTL is how long an answer is served again to requests with the
	// same Accept and Accept-Encoding headers. With 0, only requests that
	// arrive while it is being gathered share it.
	CacheTTL time.Duration
	// ScrapeTimeout is the scrape's time budget when the request carries no
	// X-Prometheus-Scrape-Timeout-Seconds header; 0 means
	// DefaultScrapeTimeout.
	ScrapeTimeout time.Duration
	// ScrapeTimeoutOffset is subtracted from the scrape's timeout to give
	// the collectors' deadline; negative means none.
	ScrapeTimeoutOffset time.Duration
	// Own are more of the exporter's own collectors (the HTTP server's
	// counters), served with hccl_exporter_build_info.
	Own []prometheus.Collector
	// Now is the clock; nil means time.Now. Tests replace it.
	Now func() time.Time
}

// NewMetricsHandler serves the scraper's collectors,
// hccl_exporter_build_info and, when asked, the exporter's own runtime
// metrics. Each scrape registers them in a new prometheus.Registry (the
// scraper bound to the scrape's deadline, which Collect has no way to
// receive) and is answered by promhttp.HandlerFor over it: validation,
// content negotiation (text, OpenMetrics, protobuf), compression and name[]
// filtering are client_golang's. Errors of single metrics are logged and the
// rest is served, as node_exporter does.
//
// Requests with the same Accept and Accept-Encoding headers share one
// answer: those arriving while it is gathered, and for CacheTTL after, those
// that follow. A Prometheus HA pair, or a burst of scrapers, costs the node
// one gather.
func NewMetricsHandler(s *Scraper, logger *slog.Logger, opts HandlerOpts) (http.Handler, error) {
	// promhttp_metric_handler_* live in static, which is served too.
	static := prometheus.NewRegistry()
	own := append([]prometheus.Collector{static, versioncollector.NewCollector(collector.Namespace)}, opts.Own...)
	if opts.WithRuntimeMetrics {
		own = append(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	// Registration conflicts show now, not at the first scrape.
	if _, err := scrapeRegistry(own, nil); err != nil {
		return nil, err
	}
	timeout, offset := opts.ScrapeTimeout, max(opts.ScrapeTimeoutOffset, 0)
	if timeout <= 0 {
		timeout = DefaultScrapeTimeout
	}
	promOpts := promhttp.HandlerOpts{
		ErrorLog:          errorLog{logger},
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
		Registry:          static, // promhttp_metric_handler_errors_total
	}
	scrape := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// The answer may be shared: the scrape runs under its own
		// deadline, and this request's client going away does not cut
		// it short for the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()),
			ScrapeTimeout(req.Header, timeout, offset))
		defer cancel()
		reg, err := scrapeRegistry(own, scrapeCollector{s, ctx})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		promhttp.HandlerFor(reg, promOpts).ServeHTTP(w, req)
	})
	return promhttp.InstrumentMetricHandler(static, newSharedHandler(scrape, logger, opts)), nil
}

// scrapeRegistry returns a registry of the exporter's own collectors and,
// when not nil, one scrape's collectors.
func scrapeRegistry(own []prometheus.Collector, scrape prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range own {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register the exporter's own metrics: %w", err)
		}
	}
	if scrape != nil {
		if err := reg.Register(scrape); err != nil {
			return nil, fmt.Errorf("register the collectors for this scrape: %w", err)
		}
	}
	return reg, nil
}

// errorLog is promhttp's Logger on slog's error level: what promhttp logs
// is an inconsistent gather, or an answer it could not encode.
type errorLog struct{ l *slog.Logger }

func (e errorLog) Println(v ...any) { e.l.Error(strings.TrimSuffix(fmt.Sprintln(v...), "\n")) }

// sharedHandler lets requests with the same headers share the answer of
// next: the first request records next's answer, those that arrive before
// it is done wait for it, and it is replayed to them and, for ttl after, to
// the requests that follow. A failed answer (not 200) is replayed only to
// the requests that waited for it.
type sharedHandler struct {
	next   http.Handler
	logger *slog.Logger
	ttl    time.Duration
	now    func() time.Time
	sem    chan struct{}

	mu      sync.Mutex
	answers map[shareKey]*answer

	joined func() // test hook: a request waits for an answer in the making
}

// shareKey is what an answer depends on: its format on Accept, its
// compression on Accept-Encoding (keyed on the raw values, so the
// negotiation stays promhttp's: a Prometheus sends the same ones scrape
// after scrape), its series on the name[] filter of the query.
type shareKey struct{ accept, encoding, query string }

// maxAnswers bounds the answers kept, against a client varying its headers:
// past it, a request is answered on its own.
const maxAnswers = 16

// answer is one recorded answer of next.
type answer struct {
	done   chan struct{} // closed when the fields below are final
	at     time.Time     // when it was done
	status int
	header http.Header
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}
func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// replay writes the recorded answer to w.
func (a *answer) replay(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range a.header {
		h[k] = slices.Clone(v)
	}
	h.Set("Content-Length", strconv.Itoa(a.body.Len()))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body.Bytes())
}

func newSharedHandler(next http.Handler, logger *slog.Logger, opts HandlerOpts) *sharedHandler {
	h := &sharedHandler{next: next, logger: logger, ttl: max(opts.CacheTTL, 0), now: opts.Now,
		answers: map[shareKey]*answer{}}
	if h.now == nil {
		h.now = time.Now
	}
	if opts.MaxRequests > 0 {
		h.sem = make(chan struct{}, opts.MaxRequests)
	}
	return h
}

func (h *sharedHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", cap(h.sem)),
				http.StatusServiceUnavailable)
			return
		}
	}
	key := shareKey{accept: req.Header.Get("Accept"), encoding: req.Header.Get("Accept-Encoding")}
	if req.URL != nil {
		key.query = req.URL.RawQuery
	}
	h.mu.Lock()
	if a := h.answers[key]; a != nil {
		select {
		case <-a.done: // kept only while fresh and successful
			if h.now().Sub(a.at) < h.ttl {
				h.mu.Unlock()
				a.replay(w)
				return
			}
			delete(h.answers, key)
		default:
			if h.joined != nil {
				h.joined()
			}
			h.mu.Unlock()
			select {
			case <-a.done:
				a.replay(w)
			case <-req.Context().Done(): // the client went away
			}
			return
		}
	}
	if len(h.answers) >= maxAnswers {
		h.prune()
	}
	if len(h.answers) >= maxAnswers {
		h.mu.Unlock()
		h.next.ServeHTTP(w, req)
		return
	}
	a := &answer{done: make(chan struct{}), header: http.Header{}}
	h.answers[key] = a
	h.mu.Unlock()

	// The outcome is recorded however next ends: a panic (out of
	// client_golang or a collector's Describe) answers every waiter 500,
	// and a failed answer is dropped so the next request asks again.
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error("serving metrics panicked", "panic", p, "stack", string(debug.Stack()))
			a.status, a.header = http.StatusInternalServerError, http.Header{}
			a.header.Set("Content-Type", "text/plain; charset=utf-8")
			a.body.Reset()
			fmt.Fprintf(&a.body, "An error has occurred while serving metrics:\n\n%v\n", p)
		}
		if a.status == 0 {
			a.status = http.StatusOK
		}
		a.at = h.now()
		close(a.done)
		if a.status != http.StatusOK || h.ttl == 0 {
			h.mu.Lock()
			if h.answers[key] == a {
				delete(h.answers, key)
			}
			h.mu.Unlock()
		}
		a.replay(w)
	}()
	h.next.ServeHTTP(a, req)
}

// prune drops the answers no longer fresh; the caller holds h.mu.
func (h *sharedHandler) prune() {
	now := h.now()
	for k, a := range h.answers {
		select {
		case <-a.done:
			if now.Sub(a.at) >= h.ttl {
				delete(h.answers, k)
			}
		default:
		}
	}
}
