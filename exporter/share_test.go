package exporter

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestServerPerAddressShare is the edge of issue 24: while one client held
// every --web.max-connections slot with slow connections, scrapes got no
// answer for up to the header timeout. At the cap, a connection of an
// address holding more than its share (a quarter of the slots) is closed
// first, so a scraper from another address gets a slot at once; the greedy
// address itself is still refused.
func TestServerPerAddressShare(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	addr, s, _ := startServer(t, ok, ServerOpts{ReadHeaderTimeout: time.Minute, MaxConnections: 8, ShutdownTimeout: time.Second})
	scraper := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: time.Second}
	if c, err := scraper.Dial("tcp", addr); err != nil {
		testtools.NeedsKernel(t, "cannot dial from 127.0.0.2 here: %v", err)
	} else {
		c.Close()
	}
	waitOpen := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for s.open.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, want %d", s.open.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitOpen(0)
	// The attacker: every slot, held silent.
	var held []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		defer c.Close()
	}
	waitOpen(8)
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: scraper.DialContext, DisableKeepAlives: true}}
	begin := time.Now()
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape from another address while one address holds every slot: %v", err)
	}
	resp.Body.Close()
	if took := time.Since(begin); took > time.Second {
		t.Errorf("scrape took %s", took)
	}
	// One of the attacker's connections was closed to make room.
	closed := 0
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d of the greedy address's connections closed, want 1", closed)
	}
	if s.refused.Load() == 0 {
		t.Error("the closed connection is not counted as refused")
	}
}
