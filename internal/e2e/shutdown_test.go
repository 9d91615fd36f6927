package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// screenEI0011 matches the EI0011 counter of the screen logs in a scrape.
var screenEI0011 = regexp.MustCompile(`(?m)^hccl_fault_events_total\{[^}]*code="EI0011"[^}]*source="screen"[^}]*\} (\S+)$`)

func scrapeBody(t *testing.T, url string) (string, error) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s: %s", resp.Status, b)
	}
	return string(b), nil
}

func ei0011Count(t *testing.T, url string) float64 {
	t.Helper()
	body, err := scrapeBody(t, url)
	if err != nil {
		t.Fatal(err)
	}
	m := screenEI0011.FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSIGTERMFinishesScrapesAndCheckpoints sends SIGTERM to the real binary
// while a scrape waits for a slow npu-smi: the scrape is answered, the
// exporter exits 0 within seconds, and the state file it leaves lets a
// restart count only what is new. The periodic checkpoint is set to an hour,
// so only the final one can have saved the offsets.
func TestSIGTERMFinishesScrapesAndCheckpoints(t *testing.T) {
	bin := buildExporter(t)
	dir := t.TempDir()
	table := filepath.Join(dir, "npu-smi-info.txt")
	writeAtomic(t, table, npuSMITable(e2eHBMUsedStartMiB))
	fake := filepath.Join(dir, "npu-smi")
	// A slow npu-smi keeps a scrape in flight when the signal arrives.
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nsleep 1.5\nexec cat '"+table+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	screen := filepath.Join(dir, "train.log")
	now := time.Now()
	if err := os.WriteFile(screen, []byte(ei0011(4242, now)+ei0011(4242, now.Add(time.Second))), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.json")
	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	url := "http://" + addr + "/metrics"
	args := []string{
		"--web.listen-address=" + addr,
		"--npusmi.path=" + fake,
		"--npusmi.min-interval=0s",
		"--web.scrape-cache-ttl=0s",
		"--cannlog.root=" + filepath.Join(dir, "log"),
		"--cannlog.screen-log-path=" + screen,
		"--cannlog.state-file=" + state,
		"--cannlog.poll-interval=100ms",
		"--cannlog.checkpoint-interval=1h",
	}
	p := testtools.StartProcess(t, dir, bin, args...)
	waitFor(t, 30*time.Second, func() bool {
		if done, _ := p.Exited(); done {
			t.Fatalf("exporter exited:\n%s", p.Output(4096))
		}
		// Both reports counted (the counter exists from the start at 0;
		// a report waits a few seconds for its process's job).
		body, err := scrapeBody(t, url)
		m := screenEI0011.FindStringSubmatch(body)
		return err == nil && m != nil && m[1] == "2"
	}, func() string { return "the exporter serving the screen log's EI0011 counter" })
	if n := ei0011Count(t, url); n != 2 {
		t.Fatalf("EI0011 before the stop = %v, want 2", n)
	}

	type result struct {
		body string
		err  error
		took time.Duration
	}
	inflight := make(chan result, 1)
	go func() {
		begin := time.Now()
		body, err := scrapeBody(t, url)
		inflight <- result{body, err, time.Since(begin)}
	}()
	time.Sleep(500 * time.Millisecond) // the scrape now waits for npu-smi
	stopAt := time.Now()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, ok := p.Wait(10 * time.Second)
	if !ok {
		t.Fatalf("exporter still running 10s after SIGTERM:\n%s", p.Output(4096))
	}
	stopped := time.Since(stopAt)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Output(4096))
	}
	if stopped > 5*time.Second {
		t.Errorf("exited %v after SIGTERM, want within a few seconds", stopped)
	}
	r := <-inflight
	if r.err != nil {
		t.Fatalf("scrape in flight at SIGTERM: %v", r.err)
	}
	if !screenEI0011.MatchString(r.body) || !regexp.MustCompile(`(?m)^hccl_exporter_npu_smi_up 1$`).MatchString(r.body) {
		t.Fatalf("scrape in flight at SIGTERM (%v) incomplete:\n%s", r.took, r.body)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("no state file after SIGTERM: %v", err)
	}

	// One new report while the exporter is down, then a restart.
	f, err := os.OpenFile(screen, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(ei0011(4242, now.Add(2*time.Second))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p2 := testtools.StartProcess(t, dir, bin, args...)
	waitFor(t, 30*time.Second, func() bool {
		if done, _ := p2.Exited(); done {
			t.Fatalf("restarted exporter exited:\n%s", p2.Output(4096))
		}
		body, err := scrapeBody(t, url)
		return err == nil && screenEI0011.MatchString(body)
	}, func() string { return "the restarted exporter serving the EI0011 counter" })
	// The restored count plus the one new line (once it has waited for its
	// process's job: no plog names one here, so the grace, 5 s), never
	// the old lines again.
	waitFor(t, 15*time.Second, func() bool {
		body, err := scrapeBody(t, url)
		m := screenEI0011.FindStringSubmatch(body)
		return err == nil && m != nil && m[1] == "3"
	}, func() string { return "the new report counted after the restart" })
	time.Sleep(500 * time.Millisecond)
	if n := ei0011Count(t, url); n != 3 {
		t.Fatalf("EI0011 after the restart = %v, want 3 (2 restored + 1 new)", n)
	}
}
