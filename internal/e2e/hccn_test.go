package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestHungHCCNToolNeverDelaysScrape runs the real exporter with an
// hccn_tool that hangs on every call and leaves a child holding its stdout
// (a chip that is resetting holds hccn_tool for minutes). Every scrape still
// answers at once with the npu-smi and log series; the timeouts are counted;
// hccl_exporter_hccn_tool_up is 0; and no hccn_tool process, nor its child,
// outlives its timeout or the exporter.
func TestHungHCCNToolNeverDelaysScrape(t *testing.T) {
	bin := buildExporter(t)
	dir := t.TempDir()
	npuSMI := demoTool(t, dir, "npu-smi")
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "") // the demo's 8-chip table
	pids := filepath.Join(dir, "hccn_tool.pids")
	hung := filepath.Join(dir, "hccn_tool")
	if err := os.WriteFile(hung, []byte("#!/bin/sh\necho $$ >> '"+pids+"'\nsleep 600 &\necho $! >> '"+pids+"'\nwait\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	const timeout = 500 * time.Millisecond
	exporter := testtools.StartProcess(t, dir, bin,
		"--web.listen-address="+addr,
		"--npusmi.path="+npuSMI,
		"--cannlog.root="+filepath.Join(dir, "log"),
		"--hccn.path="+hung,
		"--hccn.timeout="+timeout.String(),
		"--hccn.interval=1s",
		"--web.scrape-cache-ttl=0s",
	)
	url := "http://" + addr + "/metrics"
	client := &http.Client{Timeout: 30 * time.Second}
	scrape := func() (string, time.Duration, error) {
		begin := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			return "", 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), time.Since(begin), err
	}
	waitFor(t, 20*time.Second, func() bool { _, _, err := scrape(); return err == nil },
		func() string { return "exporter never answered" })

	// A sweep over 8 hung chips takes 8 × the timeout; scrapes during it
	// must not wait for it.
	timeouts := regexp.MustCompile(`(?m)^hccl_exporter_hccn_tool_calls_total\{command="link",result="timeout"\} (\d+)$`)
	var slowest time.Duration
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		var took time.Duration
		var err error
		body, took, err = scrape()
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, took)
		m := timeouts.FindStringSubmatch(body)
		if n, _ := strconv.Atoi(safeIndex(m, 1)); n >= 9 { // a whole sweep and one more call
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hccn_tool timeouts not counted after 30s:\n%s", grepLines(body, "hccl_exporter_hccn_tool"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("slowest scrape while every hccn_tool call hung: %s", slowest.Round(time.Millisecond))
	// A scrape that waited for the sweep would take up to 8 × the timeout
	// (4s); 2s leaves room for a loaded machine.
	if slowest > 2*time.Second {
		t.Errorf("a scrape took %s while hccn_tool hung (call timeout %s): scrapes must not wait for the sweep", slowest, timeout)
	}
	for _, want := range []string{"hccl_exporter_hccn_tool_up 0", "hccl_exporter_npu_smi_up 1", `hccl_exporter_collector_success{collector="cannlog"} 1`} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(body, "ascend_roce_") {
		t.Errorf("values exported for chips that never answered:\n%s", grepLines(body, "ascend_roce_"))
	}

	// Every hccn_tool started and its child are gone once the exporter
	// stopped (each was killed with its process group at the timeout, the
	// one in flight at shutdown).
	if err := exporter.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, ok := exporter.Wait(15 * time.Second); !ok {
		t.Fatal("exporter did not stop on SIGTERM while an hccn_tool call hung")
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(b))
	waitFor(t, 5*time.Second, func() bool { return len(running(started)) == 0 },
		func() string {
			return fmt.Sprintf("hccn_tool processes still running: %v of %d", running(started), len(started))
		})
	t.Logf("%d hccn_tool processes and children started, none left", len(started))
}

func safeIndex(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return ""
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// running returns the pids that still run (zombies of a non-reaping init
// hold nothing and do not count).
func running(pids []string) []string {
	var out []string
	for _, p := range pids {
		b, err := os.ReadFile("/proc/" + p + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
			if st := s[i+2]; st != 'Z' && st != 'X' {
				out = append(out, p)
			}
		}
	}
	return out
}
