package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// TestDemoNodeTellsOneStory runs the real collectors on examples/demo as
// `make demo` does: NPU 0's headroom is negative (its process 210001, with
// HCCL_RDMA_QPS_PER_CONNECTION=16, has link setup ahead that does not fit),
// the screen log holds that process's EI0011, and diagnose names the same
// process as the root cause.
func TestDemoNodeTellsOneStory(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo")
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	reg := wiredRegistry(t,
		"--npusmi.path="+filepath.Join(demo, "npu-smi"),
		"--npusmi.min-interval=0s",
		"--hccn.path="+filepath.Join(demo, "hccn_tool"),
		"--hccn.interval=1s",
		"--cannlog.root="+filepath.Join(demo, "log"),
		"--cannlog.screen-log-path="+filepath.Join(demo, "screen", "*.log"),
		"--cannlog.poll-interval=50ms",
		"--pods.kubelet-socket=",
	)
	deadline := time.Now().Add(15 * time.Second)
	for {
		v0, ok0 := gauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=0")
		v1, ok1 := gauge(t, reg, "hccl_link_setup_headroom_bytes", "npu=1")
		if ok0 && ok1 && v0 < 0 && v1 > 0 {
			t.Logf("demo headroom: NPU 0 %.0f MiB, NPU 1 %.0f MiB", v0/mib, v1/mib)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo headroom NPU 0 = %v (%v), NPU 1 = %v (%v); want NPU 0 below zero, NPU 1 above", v0, ok0, v1, ok1)
		}
		time.Sleep(100 * time.Millisecond)
	}

	selected, code, stdout, _, err := parseDiagnose(t, "diagnose", "--format", "json", demo)
	if err != nil || !selected || code != 1 {
		t.Fatalf("diagnose examples/demo: selected %v exit %d err %v", selected, code, err)
	}
	for _, want := range []string{`"code": "EI0011"`, `"pid": 210001`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("diagnose examples/demo lacks %s", want)
		}
	}
	// One time for the demo's EI0011 in both tools: the screen log prints
	// no zone, and is read in the zone of the process it names (210001,
	// whose plogs both tools read in UTC+08:00). 0.5.0's exporter read it
	// in its own zone, 8 h away from diagnose's.
	exported, ok := gauge(t, reg, "hccl_fault_last_event_timestamp_seconds", "code=EI0011,source=screen")
	if !ok {
		t.Fatal("the exporter serves no screen EI0011 time")
	}
	diagnosed := diagnosedEventTime(t, stdout, "EI0011", "screen")
	// A float of seconds holds the microseconds to within a few hundred ns.
	if got := time.Unix(0, int64(exported*1e9)).UTC(); got.Sub(diagnosed).Abs() > time.Millisecond {
		t.Errorf("the demo's EI0011: exporter %v, diagnose %v; want one time", got, diagnosed.UTC())
	}
	_, _, text, _, _ := parseDiagnose(t, "diagnose", demo)
	if !strings.Contains(text, "ROOT CAUSE EI0011 (link_setup) on demo pid 210001") {
		t.Errorf("diagnose examples/demo does not name pid 210001 as the root cause:\n%.1500s", text)
	}
}

// diagnosedEventTime is the time diagnose's JSON report gives the event
// of code read from source (every incident's events).
func diagnosedEventTime(t *testing.T, report, code, source string) time.Time {
	t.Helper()
	var r model.Report
	if err := json.Unmarshal([]byte(report), &r); err != nil {
		t.Fatalf("diagnose JSON: %v", err)
	}
	for _, in := range r.Incidents {
		for _, e := range in.Events {
			if e.Code == code && e.Source == source && !e.Time.IsZero() {
				return e.Time.Time
			}
		}
	}
	t.Fatalf("diagnose reports no %s event from %s", code, source)
	return time.Time{}
}

// TestDemoPortOverride runs scripts/demo.sh --serve (what make run-demo
// runs) with DEMO_PORT: 0.4.0 always served on 9842. It serves /healthz on
// the port asked for, and a port that is not one is refused.
func TestDemoPortOverride(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo")
	}
	script := filepath.Join("..", "..", "scripts", "demo.sh")
	bad := exec.Command("bash", script, "--serve")
	bad.Env = append(os.Environ(), "DEMO_PORT=http")
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "DEMO_PORT=http") {
		t.Errorf("DEMO_PORT=http: %v %s; want a refusal naming it", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cmd := exec.Command("bash", script, "--serve")
	cmd.Env = append(os.Environ(), "DEMO_PORT="+port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(90 * time.Second) // the script builds the binary
	for {
		resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("demo on DEMO_PORT=%s: /healthz %d", port, resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo not serving on DEMO_PORT=%s: %v\n%s", port, err, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "127.0.0.1:"+port) {
		t.Errorf("the demo does not say where it serves: %q", stderr.String())
	}
}

// lockedBuffer is a strings.Builder a child process writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
