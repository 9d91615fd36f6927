package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestHealthzHandler: liveness answers 200 "ok" to GET and HEAD, cheaply
// and never cached, and refuses other methods.
func TestHealthzHandler(t *testing.T) {
	for _, tc := range []struct {
		method string
		code   int
		body   string
	}{
		{http.MethodGet, 200, "ok"},
		{http.MethodHead, 200, ""},
		{http.MethodPost, 405, "method not allowed\n"},
	} {
		rec := httptest.NewRecorder()
		healthz(rec, httptest.NewRequest(tc.method, healthzPath, nil))
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, healthzPath, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}

// TestHealthzServed runs the binary (0.4.0 answered /healthz with the
// landing page's 404): /healthz is 200 "ok" beside /metrics.
func TestHealthzServed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--no-collector.npusmi", "--no-collector.headroom",
		"--no-collector.npuhealth", "--no-collector.hccn", "--no-collector.pods", "--no-collector.cannlog")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("GET /healthz = %d %q, want 200 \"ok\"", resp.StatusCode, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %v %v", resp, err)
	}
	resp.Body.Close()
}
