package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// DefaultScrapeCacheTTL is how long one gathered scrape is served again. It
// matches the default --cannlog.poll-interval: the log state cannot change
// faster than it is polled, and npu-smi values are already up to
// --npu-smi.min-interval old, so a gather younger than this is as fresh as a
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
	// MaxRequests bounds parallel scrapes; 0 or less means no bound.
	MaxRequests int
	// WithRuntimeMetrics adds the exporter's own go_* and process_* series.
	WithRuntimeMetrics bool
	// CacheTTL is how long a gathered scrape is reused by later scrapes. With
	// 0 every scrape gathers anew, but scrapes that arrive while a gather is
	// in flight, or while its answer is still being encoded, share it.
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

// NewMetricsHandler serves the registry, hccl_exporter_build_info and, when
// asked, the exporter's own runtime metrics, through a stock
// prometheus.Registry and promhttp: content negotiation (text, OpenMetrics,
// protobuf), compression and name[] filtering are client_golang's. Errors of
// single metrics are logged and the rest is served, as node_exporter does.
//
// Scrapes are coalesced: one gather serves every scrape in flight and, for
// CacheTTL after it ended, the scrapes that follow. A Prometheus HA pair, or
// several scrapers at once, cost the node one gather.
func NewMetricsHandler(reg *Registry, logger *slog.Logger, opts HandlerOpts) (http.Handler, error) {
	// The handler's own metrics (promhttp_metric_handler_*) live here.
	static := prometheus.NewRegistry()
	own := append([]prometheus.Collector{static, versioncollector.NewCollector(Namespace)}, opts.Own...)
	if opts.WithRuntimeMetrics {
		own = append(own, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	// Registries per scrape are how the scrape's deadline reaches the
	// collectors (Collect has no context) and how its validation is spread
	// over the cores (gather.go). The exporter's own collectors are
	// registered with the scrape's metrics rather than merged with
	// prometheus.Gatherers, which would validate every metric a second
	// time. Registration conflicts show now, not at the first scrape.
	if _, err := shardedGather(own, nil, 1); err != nil {
		return nil, err
	}
	stable := &stableCache{}
	gather := func(ctx context.Context) ([]*dto.MetricFamily, error) {
		ms, sets := reg.Metrics(ctx)
		gathered, serr := stable.families(sets)
		mfs, err := shardedGather(own, ms, partsFor(len(ms)), gathered...)
		return mfs, errors.Join(serr, err)
	}
	h := newCachingHandler(gather, logger, opts)
	h.stable = stable
	h.promOpts.Registry = static // promhttp_metric_handler_errors_total
	// promhttp registers its error counter when a handler is made; the
	// answers encoded here count into the same one.
	promhttp.HandlerForTransactional(&gathering{}, h.promOpts)
	errCnt := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	are := prometheus.AlreadyRegisteredError{}
	if err := static.Register(errCnt); !errors.As(err, &are) {
		return nil, fmt.Errorf("share promhttp's error counter (client_golang changed it?): %v", err)
	}
	h.errCnt = are.ExistingCollector.(*prometheus.CounterVec)
	return promhttp.InstrumentMetricHandler(static, h), nil
}

// gatherFunc gathers under a context carrying the scrape's deadline.
type gatherFunc func(ctx context.Context) ([]*dto.MetricFamily, error)

// cachingHandler shares gathers between scrapes and leaves negotiation and
// encoding to promhttp.
type cachingHandler struct {
	g        gatherFunc
	logger   *slog.Logger
	ttl      time.Duration
	now      func() time.Time
	sem      chan struct{}
	promOpts promhttp.HandlerOpts
	errCnt   *prometheus.CounterVec // promhttp_metric_handler_errors_total
	stable   *stableCache           // the stable sets' families and encodings

	timeout, offset time.Duration

	mu  sync.Mutex
	cur *gathering // the latest gather: in flight, or done at cur.at

	// sizeHint is the size of the last uncompressed answer: the next is
	// recorded into a buffer of that size rather than one grown by copies.
	sizeHint atomic.Int64

	joined func() // test hook: a scrape joined a gather in flight
}

// gathering is one gather shared by the scrapes that joined it. Its
// families are only read once done is closed (promhttp's encoders do not
// modify them), so concurrent scrapes encode them without copies.
type gathering struct {
	done chan struct{} // closed when mfs and err are set
	at   time.Time     // when the gather ended
	mfs  []*dto.MetricFamily
	err  error

	mu        sync.Mutex
	responses map[responseKey]*response

	// answering counts the scrapes that hold this gather and have no
	// encoded answer yet. While it is above zero the gather is still in
	// flight for a scrape that arrives: it shares the answer being encoded
	// (of values gathered a few milliseconds earlier, as a scrape joining
	// a gather near its end gets) instead of starting a gather that would
	// compete with that encoding for the cores.
	answering atomic.Int32
}

// responseKey identifies an answer for one gather: its format depends on
// the Accept header only (keyed on the raw value, the negotiation stays
// promhttp's; every Prometheus sends the same value scrape after scrape, so
// a HA pair shares one encoding), its compression on whether gzip is
// accepted.
type responseKey struct {
	accept string
	gzip   bool
}

// maxResponses bounds the encodings kept per gather, against a client that
// varies its headers.
const maxResponses = 8

// response is promhttp's answer recorded once and replayed.
type response struct {
	once   sync.Once
	status int
	header http.Header
	body   *bytes.Buffer // as recorded, then as sent

	// wantGzip asks for the answer gzipped; zip compresses it while
	// promhttp still encodes (on the other core), once the first write
	// shows a successful answer.
	wantGzip bool
	zip      *gzipStream
}

func (r *response) Header() http.Header { return r.header }
func (r *response) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.body.Write(p)
	if z := r.gzip(); z != nil {
		z.feed(r.body.Bytes(), false)
	}
	return n, err
}

// gzip returns the compressor of an answer to be gzipped, started on its
// first successful write; nil for a plain answer or an error text, which
// stays plain.
func (r *response) gzip() *gzipStream {
	if !r.wantGzip || r.status != http.StatusOK {
		return nil
	}
	if r.zip == nil {
		r.zip = startGzip(r.body.Cap() / 8)
	}
	return r.zip
}

// WriteKept writes a stable family's kept encoding: compressed, its
// deflated form is reused rather than compressed again (gzip.go).
func (r *response) WriteKept(k *keptEncoding) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(k.plain)
	if z := r.gzip(); z != nil {
		z.feedKept(r.body.Bytes(), k)
	}
}

func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

// plainPool keeps the buffers gzipped answers are recorded in: only the
// compressed copy is kept, and a new buffer per gather was a quarter of the
// bytes a scrape allocated.
var plainPool sync.Pool

// replay writes the recorded answer to w.
func (r *response) replay(w http.ResponseWriter) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = slices.Clone(v) // shared by every replay: never appended to in place
	}
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Length", strconv.Itoa(r.body.Len()))
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(r.body.Bytes())
}

// response returns the recorded answer for key, or nil when the gather
// keeps too many already.
func (g *gathering) response(key responseKey) *response {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.responses[key]
	if r == nil {
		if len(g.responses) >= maxResponses {
			return nil
		}
		r = &response{header: http.Header{}}
		if g.responses == nil {
			g.responses = map[responseKey]*response{}
		}
		g.responses[key] = r
	}
	return r
}

// Gather serves the gathered families to promhttp.
func (g *gathering) Gather() ([]*dto.MetricFamily, func(), error) {
	return g.mfs, func() {}, g.err
}

func newCachingHandler(g gatherFunc, logger *slog.Logger, opts HandlerOpts) *cachingHandler {
	h := &cachingHandler{g: g, logger: logger, ttl: opts.CacheTTL, now: opts.Now,
		timeout: opts.ScrapeTimeout, offset: opts.ScrapeTimeoutOffset}
	if h.now == nil {
		h.now = time.Now
	}
	if h.ttl < 0 {
		h.ttl = 0
	}
	if h.timeout <= 0 {
		h.timeout = DefaultScrapeTimeout
	}
	if h.offset < 0 {
		h.offset = 0
	}
	if opts.MaxRequests > 0 {
		h.sem = make(chan struct{}, opts.MaxRequests)
	}
	h.promOpts = promhttp.HandlerOpts{
		// The gather's errors are logged once per gather (below); what
		// promhttp logs per scrape is mostly a client that went away.
		ErrorLog:          debugLog{logger},
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}
	return h
}

// debugLog is promhttp's Logger on slog's debug level.
type debugLog struct{ l *slog.Logger }

func (d debugLog) Println(v ...any) { d.l.Debug(fmt.Sprint(v...)) }

// gather returns the gathering this scrape uses: the one in flight (or
// whose answer is still being encoded), a finished one younger than the
// TTL, or a new one run by this caller. The caller calls g.answered once
// its answer is encoded.
func (h *cachingHandler) gather(req *http.Request) (*gathering, error) {
	h.mu.Lock()
	g := h.cur
	if g != nil {
		select {
		case <-g.done:
			if (h.ttl <= 0 || h.now().Sub(g.at) >= h.ttl) && g.answering.Load() == 0 {
				g = nil // stale: gather anew
			}
		default: // in flight: join it
			if h.joined != nil {
				h.joined()
			}
		}
	}
	if g != nil {
		g.answering.Add(1)
		h.mu.Unlock()
		select {
		case <-g.done:
			return g, nil
		case <-req.Context().Done():
			g.answering.Add(-1)
			return nil, req.Context().Err()
		}
	}
	g = &gathering{done: make(chan struct{})}
	g.answering.Add(1)
	h.cur = g
	h.mu.Unlock()

	// The gather runs under this scrape's deadline and is shared: the
	// scrapes that join it wait for it whatever their own timeouts (theirs
	// end with their connection), and this scrape's client going away must
	// not cut it short for them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()),
		ScrapeTimeout(req.Header, h.timeout, h.offset))
	defer cancel()
	func() {
		// Waiters are released even if the gather panics.
		defer func() {
			g.at = h.now()
			close(g.done)
		}()
		g.mfs, g.err = h.g(ctx)
	}()
	if g.err != nil {
		h.logger.Error("error gathering metrics", "err", g.err)
	}
	return g, nil
}

func (h *cachingHandler) ServeHTTP(rsp http.ResponseWriter, req *http.Request) {
	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
			defer func() { <-h.sem }()
		default:
			http.Error(rsp, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", cap(h.sem)), http.StatusServiceUnavailable)
			return
		}
	}
	g, err := h.gather(req)
	if err != nil {
		return // the client went away
	}
	answered := sync.OnceFunc(func() { g.answering.Add(-1) })
	defer answered()
	// promhttp negotiates and encodes, once per gather and key; filtered
	// requests (name[]) and a client varying its headers past
	// maxResponses are answered by promhttp directly, compression included.
	gz := acceptsGzip(req.Header.Get("Accept-Encoding"))
	var r *response
	if req.URL == nil || len(req.URL.Query()["name[]"]) == 0 {
		r = g.response(responseKey{req.Header.Get("Accept"), gz})
	}
	if r == nil {
		answered() // encoded for this request alone
		promhttp.HandlerForTransactional(g, h.promOpts).ServeHTTP(rsp, req)
		return
	}
	r.once.Do(func() {
		opts := h.promOpts
		opts.DisableCompression = true // compressed below, faster
		hint := int(h.sizeHint.Load()) * 9 / 8
		if gz {
			r.wantGzip = true
			if b, ok := plainPool.Get().(*bytes.Buffer); ok {
				r.body = b
			}
		}
		if r.body == nil {
			r.body = &bytes.Buffer{}
		}
		r.body.Grow(hint)
		if g.err == nil && h.errCnt != nil {
			// promhttp's answer, encoded in parts and with the stable
			// sets' encodings reused (encode.go).
			encodeAnswer(r, req, g.mfs, partsFor(seriesIn(g.mfs)), h.stable, h.errCnt,
				func(err error) { h.logger.Debug(err.Error()) })
		} else {
			promhttp.HandlerForTransactional(g, opts).ServeHTTP(r, req)
		}
		h.sizeHint.Store(int64(r.body.Len()))
		if r.zip == nil && gz && (r.status == 0 || r.status == http.StatusOK) {
			r.zip = startGzip(0) // nothing written: an empty gzip stream
		}
		if r.zip != nil {
			out, err := r.zip.finish(r.body.Bytes())
			r.zip = nil
			if err != nil {
				h.logger.Error("cannot compress the metrics answer", "err", err)
				return // sent plain
			}
			plain := r.body
			plain.Reset()
			plainPool.Put(plain)
			r.body = out
			r.header.Set("Content-Encoding", "gzip")
		}
	})
	answered()
	r.replay(rsp)
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip: gzip
// listed without q=0, or else * listed without q=0.
func acceptsGzip(header string) bool {
	gzipQ, starQ := -1.0, -1.0
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.TrimSpace(k) == "q" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if name == "gzip" {
			gzipQ = q
		} else {
			starQ = q
		}
	}
	if gzipQ >= 0 {
		return gzipQ > 0
	}
	return starQ > 0
}
