package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/exporter"
)

// TestHungNPUSMIStillServesFaultCounters: with npu-smi hung (it would be
// killed only at --npusmi.timeout, 10s), a scrape carrying Prometheus's 10s
// timeout header answers within it, with npu-smi down and the EI0011
// counter from the logs served. Before scrape deadlines the scrape waited
// the full npu-smi timeout and Prometheus dropped all of it.
func TestHungNPUSMIStillServesFaultCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 10s scrape deadline")
	}
	t.Parallel()
	dir := t.TempDir()
	npuSMI := filepath.Join(dir, "npu-smi")
	if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen := filepath.Join(dir, "train.log")
	if err := os.WriteFile(screen, []byte(
		"[PID: 2103452] 2025-11-03-20:30:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := wiredRegistry(t, "--npusmi.path="+npuSMI, "--cannlog.root="+filepath.Join(dir, "log"),
		"--cannlog.screen-log-path="+screen, "--cannlog.poll-interval=50ms")
	h, err := exporter.NewMetricsHandler(reg, slog.New(slog.NewTextHandler(io.Discard, nil)), exporter.HandlerOpts{})
	if err != nil {
		t.Fatal(err)
	}
	// Let the follower read the screen log first, and count its report:
	// a report whose process has named no job yet is held for the job
	// grace (5 s at this poll interval) before it is counted without one.
	time.Sleep(5500 * time.Millisecond)

	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set(exporter.ScrapeTimeoutHeader, "10")
	w := httptest.NewRecorder()
	begin := time.Now()
	h.ServeHTTP(w, req)
	took := time.Since(begin)
	if took >= 10*time.Second {
		t.Fatalf("scrape took %v, beyond Prometheus's 10s timeout", took)
	}
	body := w.Body.String()
	for _, want := range []string{
		`(?m)^hccl_fault_events_total\{[^}]*code="EI0011"[^}]*source="screen"[^}]*\} 1$`,
		`(?m)^hccl_exporter_npu_smi_up 0$`,
		`(?m)^hccl_exporter_collector_success\{collector="npusmi"\} 0$`,
		`(?m)^hccl_exporter_collector_success\{collector="headroom"\} 0$`,
		`(?m)^hccl_exporter_collector_success\{collector="cannlog"\} 1$`,
	} {
		if !regexp.MustCompile(want).MatchString(body) {
			t.Errorf("scrape after %v lacks %s:\n%s", took, want, body)
		}
	}
	if regexp.MustCompile(`(?m)^ascend_npu_hbm_used_bytes`).MatchString(body) {
		t.Errorf("per-chip series served although npu-smi never answered")
	}
	// The next scrape does not wait for the hung run again.
	w = httptest.NewRecorder()
	begin = time.Now()
	h.ServeHTTP(w, req)
	if took := time.Since(begin); took > 2*time.Second {
		t.Fatalf("the scrape after waited %v for the run the first one gave up on", took)
	}
	for _, want := range []string{
		`(?m)^hccl_fault_events_total\{[^}]*code="EI0011"[^}]*source="screen"[^}]*\} 1$`,
		`(?m)^hccl_exporter_npu_smi_up 0$`,
	} {
		if !regexp.MustCompile(want).MatchString(w.Body.String()) {
			t.Errorf("the scrape after lacks %s", want)
		}
	}
}
