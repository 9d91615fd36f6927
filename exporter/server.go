package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// ServerOpts bounds what HTTP clients can hold. A scrape target faces
// whatever can reach its port: without these, idle or header-dripping
// connections were held forever (docs/security.md).
type ServerOpts struct {
	// ReadHeaderTimeout closes a connection whose request headers have not
	// arrived in full this long after it opened (or, on a kept-alive
	// connection, after the next request began).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long. Above the
	// scrape interval, Prometheus keeps one connection (and TLS session)
	// per target.
	IdleTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer: a client that reads slowly cannot hold the answer
	// longer. Keep it above scrape_timeout.
	WriteTimeout time.Duration
	// MaxHeaderBytes caps request headers (Go's default is 1 MiB).
	MaxHeaderBytes int
	// MaxConnections caps open connections; a connection beyond it is
	// closed at once. 0 or less: no cap.
	MaxConnections int
	// ShutdownTimeout is how long a stop waits for requests in flight
	// before closing their connections.
	ShutdownTimeout time.Duration
}

// Defaults of ServerOpts, the flags' defaults.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultWriteTimeout      = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConnections    = 512
	DefaultShutdownTimeout   = 5 * time.Second
)

// Server is an http.Server with the limits of ServerOpts and a counter of
// the connections it refused.
type Server struct {
	*http.Server
	opts    ServerOpts
	logger  *slog.Logger
	open    atomic.Int64
	refused atomic.Uint64

	// byAddr holds the open connections of each client address, oldest
	// first, for the per-address share.
	mu     sync.Mutex
	byAddr map[string][]net.Conn

	warnOnce sync.Once
}

var refusedDesc = prometheus.NewDesc(
	prometheus.BuildFQName(collector.Namespace, "http", "connections_refused_total"),
	"hccl_exporter: connections closed on arrival because --web.max-connections were open.",
	nil, nil)

// NewServer returns a server for handler with opts' limits.
func NewServer(handler http.Handler, opts ServerOpts, logger *slog.Logger) *Server {
	s := &Server{opts: opts, logger: logger, byAddr: map[string][]net.Conn{}}
	s.Server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		WriteTimeout:      opts.WriteTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		ConnState:         s.connState,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	return s
}

// connState counts open connections and closes one that arrives over the
// cap. It works on every listener exporter-toolkit opens (TCP, systemd
// sockets, vsock, TLS), which wrapping a listener would not.
//
// At the cap, connections beyond a per-address share (a quarter of the
// cap) go first: when the new connection's address holds less than its
// share and another address holds more, that address's oldest connection
// is closed instead of the new one. So a client holding every slot with
// slow connections (slowloris) cannot keep a scraper from another address
// out; the greedy address itself is still refused.
func (s *Server) connState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		addr := hostOf(c.RemoteAddr())
		s.mu.Lock()
		s.byAddr[addr] = append(s.byAddr[addr], c)
		var victim net.Conn
		n := s.open.Add(1)
		over := s.opts.MaxConnections > 0 && n > int64(s.opts.MaxConnections)
		if over {
			victim = c
			if len(s.byAddr[addr]) <= s.share() {
				if greedy := s.greediest(); greedy != "" && len(s.byAddr[greedy]) > s.share() {
					victim = s.byAddr[greedy][0]
				}
			}
		}
		s.mu.Unlock()
		if victim != nil {
			s.refused.Add(1)
			s.warnOnce.Do(func() {
				s.logger.Warn("connection limit reached, closing new connections, or the oldest of an address holding more than a quarter of them (counted in hccl_exporter_http_connections_refused_total)",
					"max_connections", s.opts.MaxConnections)
			})
			_ = victim.Close() // the server then reports it StateClosed
		}
	case http.StateClosed, http.StateHijacked:
		s.open.Add(-1)
		addr := hostOf(c.RemoteAddr())
		s.mu.Lock()
		conns := s.byAddr[addr]
		for i, x := range conns {
			if x == c {
				conns = append(conns[:i], conns[i+1:]...)
				break
			}
		}
		if len(conns) == 0 {
			delete(s.byAddr, addr)
		} else {
			s.byAddr[addr] = conns
		}
		s.mu.Unlock()
	}
}

// share is how many connections one address may hold once the cap is
// reached before its own are closed first.
func (s *Server) share() int { return max(1, s.opts.MaxConnections/4) }

// greediest is the address with the most open connections.
func (s *Server) greediest() string {
	best, n := "", 0
	for a, conns := range s.byAddr {
		if len(conns) > n {
			best, n = a, len(conns)
		}
	}
	return best
}

// hostOf is the client address without its port.
func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// Describe and Collect export the refused-connection counter.
func (s *Server) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

// Collect sends the refused-connection counter.
func (s *Server) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(s.refused.Load()))
}

// ListenAndServe serves on the listeners exporter-toolkit's flags name
// until ctx ends, then stops gracefully: no new connections, requests in
// flight finish (for up to ShutdownTimeout, then their connections are
// closed). It returns nil after such a stop.
func (s *Server) ListenAndServe(ctx context.Context, flags *web.FlagConfig) error {
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(s.Server, flags, s.logger) }()
	select {
	case err := <-errc:
		return err // could not listen, or a bad web config
	case <-ctx.Done():
	}
	s.logger.Info("stopping: no new connections, waiting for requests in flight", "timeout", s.opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	err := s.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.logger.Warn("requests still in flight at the shutdown timeout; closing their connections")
		err = s.Close()
	}
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return err
}
