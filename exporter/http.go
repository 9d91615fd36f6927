package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// DefaultScrapeCacheTTL is how long one gathered and encoded scrape is served
// again. It matches the default --cannlog.poll-interval: the log state
// cannot change faster than it is polled, and npu-smi values are already up
// to --npu-smi.min-interval old, so a body younger than this is as fresh as a
// new gather.
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
	// in flight still share it.
	CacheTTL time.Duration
	// ScrapeTimeout is the scrape's time budget when the request carries no
	// X-Prometheus-Scrape-Timeout-Seconds header; 0 means
	// DefaultScrapeTimeout.
	ScrapeTimeout time.Duration
	// ScrapeTimeoutOffset is subtracted from the scrape's timeout to give
	// the collectors' deadline; negative means none.
	ScrapeTimeoutOffset time.Duration
	// Now is the clock; nil means time.Now. Tests replace it.
	Now func() time.Time
}

// NewMetricsHandler serves the registry, hccl_exporter_build_info and, when
// asked, the exporter's own runtime metrics. Errors of single metrics are
// logged and the rest is served, as node_exporter does.
//
// Scrapes are coalesced: one gather and one encoding per format and
// compression serve every scrape in flight and, for CacheTTL after the
// gather ended, the scrapes that follow. A Prometheus HA pair, or several
// scrapers at once, cost the node one gather.
func NewMetricsHandler(reg *Registry, logger *slog.Logger, opts HandlerOpts) (http.Handler, error) {
	r := prometheus.NewRegistry()
	if err := r.Register(versioncollector.NewCollector(Namespace)); err != nil {
		return nil, err
	}
	if opts.WithRuntimeMetrics {
		if err := r.Register(collectors.NewGoCollector()); err != nil {
			return nil, err
		}
		if err := r.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, err
		}
	}
	// The collectors' families come from the Registry's own Gather, which
	// skips client_golang's per-metric re-validation (see Registry.Gather).
	h := newCachingHandler(contextMerged{r, reg}, logger, opts)
	return promhttp.InstrumentMetricHandler(r, h), nil
}

// ContextGatherer gathers under a context carrying the scrape's deadline.
type ContextGatherer interface {
	GatherContext(ctx context.Context) ([]*dto.MetricFamily, error)
}

// contextMerged is mergedGatherer whose second part runs under the scrape's
// context.
type contextMerged struct {
	static prometheus.Gatherer
	reg    *Registry
}

func (c contextMerged) Gather() ([]*dto.MetricFamily, error) {
	return mergedGatherer{c.static, c.reg}.Gather()
}

func (c contextMerged) GatherContext(ctx context.Context) ([]*dto.MetricFamily, error) {
	return mergedGatherer{c.static, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return c.reg.GatherContext(ctx)
	})}.Gather()
}

// mergedGatherer concatenates the families of gatherers whose metric names
// are disjoint, sorted by name; a name served by two of them is an error and
// only its first family is kept.
type mergedGatherer []prometheus.Gatherer

func (m mergedGatherer) Gather() ([]*dto.MetricFamily, error) {
	var out []*dto.MetricFamily
	var errs []error
	for _, g := range m {
		mfs, err := g.Gather()
		out = append(out, mfs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortStableFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	kept := out[:0]
	for _, mf := range out {
		if len(kept) > 0 && kept[len(kept)-1].GetName() == mf.GetName() {
			errs = append(errs, fmt.Errorf("metric family %s served by two sources", mf.GetName()))
			continue
		}
		kept = append(kept, mf)
	}
	return kept, errors.Join(errs...)
}

// cachingHandler serves gathered metric families, sharing gathers and
// encoded bodies between scrapes.
type cachingHandler struct {
	g      ContextGatherer
	logger *slog.Logger
	ttl    time.Duration
	now    func() time.Time
	sem    chan struct{}

	timeout, offset time.Duration

	mu  sync.Mutex
	cur *gathering // the latest gather: in flight, or done at cur.at

	joined func() // test hook: a scrape joined a gather in flight
}

// gathering is one gather shared by the scrapes that joined it.
type gathering struct {
	done chan struct{} // closed when mfs and err are set
	at   time.Time     // when the gather ended
	mfs  []*dto.MetricFamily
	err  error

	mu     sync.Mutex
	bodies map[bodyKey]*body
}

type bodyKey struct {
	format expfmt.Format
	gzip   bool
}

type body struct {
	once sync.Once
	b    []byte
	err  error
}

// plainGatherer runs a context-free gatherer; the deadline is not passed on.
type plainGatherer struct{ prometheus.Gatherer }

func (p plainGatherer) GatherContext(context.Context) ([]*dto.MetricFamily, error) { return p.Gather() }

func newCachingHandler(g prometheus.Gatherer, logger *slog.Logger, opts HandlerOpts) *cachingHandler {
	cg, ok := g.(ContextGatherer)
	if !ok {
		cg = plainGatherer{g}
	}
	h := &cachingHandler{g: cg, logger: logger, ttl: opts.CacheTTL, now: opts.Now,
		timeout: opts.ScrapeTimeout, offset: opts.ScrapeTimeoutOffset}
	if h.timeout <= 0 {
		h.timeout = DefaultScrapeTimeout
	}
	if h.offset < 0 {
		h.offset = 0
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.ttl < 0 {
		h.ttl = 0
	}
	if opts.MaxRequests > 0 {
		h.sem = make(chan struct{}, opts.MaxRequests)
	}
	return h
}

// gather returns the gathering this scrape uses: the one in flight, a
// finished one younger than the TTL, or a new one run by this caller.
func (h *cachingHandler) gather(req *http.Request) (*gathering, error) {
	h.mu.Lock()
	g := h.cur
	if g != nil {
		select {
		case <-g.done:
			if h.ttl <= 0 || h.now().Sub(g.at) >= h.ttl {
				g = nil // stale: gather anew
			}
		default: // in flight: join it
			if h.joined != nil {
				h.joined()
			}
		}
	}
	if g != nil {
		h.mu.Unlock()
		select {
		case <-g.done:
			return g, nil
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	g = &gathering{done: make(chan struct{}), bodies: map[bodyKey]*body{}}
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
		// Waiters are released even if a collector panics.
		defer func() {
			g.at = h.now()
			close(g.done)
		}()
		g.mfs, g.err = h.g.GatherContext(ctx)
	}()
	if g.err != nil {
		h.logger.Error("error gathering metrics", "err", g.err)
	}
	return g, nil
}

// encoded returns the body of g in format, gzipped or not, encoding it once.
func (g *gathering) encoded(format expfmt.Format, gz bool) ([]byte, error) {
	k := bodyKey{format, gz}
	g.mu.Lock()
	b := g.bodies[k]
	if b == nil {
		b = &body{}
		g.bodies[k] = b
	}
	g.mu.Unlock()
	b.once.Do(func() { b.b, b.err = encode(g.mfs, format, gz, nil) })
	return b.b, b.err
}

// gzipPool keeps compressors between scrapes: a new one allocates about a
// megabyte. BestSpeed is several times faster than the default level, and
// the repetitive exposition still shrinks more than tenfold.
var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// encode writes mfs (only the families in filter when it is not nil).
func encode(mfs []*dto.MetricFamily, format expfmt.Format, gz bool, filter map[string]bool) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(64 << 10)
	var zw *gzip.Writer
	var w io.Writer = &buf
	if gz {
		zw = gzipPool.Get().(*gzip.Writer)
		defer gzipPool.Put(zw)
		zw.Reset(&buf)
		w = zw
	}
	var enc expfmt.Encoder
	if format.FormatType() == expfmt.TypeTextPlain {
		enc = newTextEncoder(w, format)
	} else {
		enc = expfmt.NewEncoder(w, format)
	}
	for _, mf := range mfs {
		if filter != nil && !filter[mf.GetName()] {
			continue
		}
		if err := enc.Encode(mf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			return nil, err
		}
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
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
	if g.err != nil && len(g.mfs) == 0 {
		http.Error(rsp, "An error has occurred while serving metrics:\n\n"+g.err.Error(), http.StatusInternalServerError)
		return
	}
	format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultAcceptedFormats()...)
	gz := acceptsGzip(req.Header.Get("Accept-Encoding"))
	var b []byte
	if names := req.URL.Query()["name[]"]; len(names) > 0 {
		filter := make(map[string]bool, len(names))
		for _, n := range names {
			filter[n] = true
		}
		b, err = encode(g.mfs, format, gz, filter)
	} else {
		b, err = g.encoded(format, gz)
	}
	if err != nil {
		h.logger.Error("error encoding metrics", "err", err)
		http.Error(rsp, "An error has occurred while encoding metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := rsp.Header()
	hd.Add("Vary", "Accept")
	hd.Add("Vary", "Accept-Encoding")
	hd.Set("Content-Type", string(format))
	if gz {
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	if req.Method == http.MethodHead {
		return
	}
	_, _ = rsp.Write(b)
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
