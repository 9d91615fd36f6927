package exporter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
)

// startServer serves h with opts on a loopback port until the test ends.
func startServer(t *testing.T, h http.Handler, opts ServerOpts) (addr string, s *Server, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	s = NewServer(h, opts, discard())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	noSystemd, noConfig := false, ""
	flags := &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebSystemdSocket: &noSystemd, WebConfigFile: &noConfig}
	go func() { errc <- s.ListenAndServe(ctx, flags) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			// The probe is held until the server has counted it, and
			// waited for until it has let it go: a probe still in the
			// accept queue would otherwise count against the test's
			// own connections.
			for s.open.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			c.Close()
			for s.open.Load() != 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not listening on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			stopErr = <-errc
		})
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return addr, s, stop
}

// TestServerClosesIdleAndDrippingConnections opens 2,000 connections that
// would each hold a goroutine and buffers forever without server timeouts:
// silent ones, ones dripping a header that never ends, and keep-alive ones
// idle after an answer. The server must close every one of them.
func TestServerClosesIdleAndDrippingConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections")
	}
	const n = 2000
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr, _, _ := startServer(t, ok, ServerOpts{
		ReadHeaderTimeout: 500 * time.Millisecond,
		IdleTimeout:       500 * time.Millisecond,
		WriteTimeout:      time.Second,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ShutdownTimeout:   time.Second,
	})
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		switch i % 3 {
		case 1: // a header that never ends
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Drip: a"); err != nil {
				t.Fatal(err)
			}
		case 2: // one request, then idle on keep-alive
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	begin := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(c)
			if i%3 == 2 {
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					errs <- fmt.Errorf("connection %d: answer: %w", i, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			// What remains: at most an error answer (408/400), then EOF.
			_, err := io.Copy(io.Discard, r)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				errs <- fmt.Errorf("connection %d (kind %d) still open after 10s", i, i%3)
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed < 5 {
			t.Error(err)
		}
		failed++
	}
	if failed > 0 {
		t.Fatalf("%d of %d connections not closed by the server", failed, n)
	}
	t.Logf("%d connections closed by the server within %v", n, time.Since(begin).Round(time.Millisecond))
}

func TestServerConnectionCap(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr, s, _ := startServer(t, ok, ServerOpts{ReadHeaderTimeout: time.Minute, MaxConnections: 3, ShutdownTimeout: time.Second})
	// The readiness probe's connection may still count for a moment.
	waitOpen := func(want int64) {
		deadline := time.Now().Add(5 * time.Second)
		for s.open.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, want %d", s.open.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitOpen(0)
	var held []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitOpen(3)
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("a connection over the cap was kept open")
	}
	extra.Close()
	want := `
# HELP hccl_exporter_http_connections_refused_total hccl_exporter: connections closed on arrival because --web.max-connections were open.
# TYPE hccl_exporter_http_connections_refused_total counter
hccl_exporter_http_connections_refused_total 1
`
	if err := testutil.CollectAndCompare(s, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	for _, c := range held {
		c.Close()
	}
	waitOpen(0)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("served nothing after the held connections closed: %v", err)
	}
	resp.Body.Close()
}

// TestServerStopFinishesRequestsInFlight: a stop lets a request in flight
// answer, refuses new connections and returns nil.
func TestServerStopFinishesRequestsInFlight(t *testing.T) {
	entered := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		time.Sleep(500 * time.Millisecond)
		_, _ = io.WriteString(w, "finished\n")
	})
	addr, _, stop := startServer(t, slow, ServerOpts{ShutdownTimeout: 5 * time.Second})
	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	begin := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(begin); took > 3*time.Second {
		t.Fatalf("stop took %v", took)
	}
	r := <-got
	if r.err != nil || r.body != "finished\n" {
		t.Fatalf("request in flight: %q, %v", r.body, r.err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting connections after the stop")
	}
}
