package npusmi

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// fakeProc writes <procfs>/<pid>/comm and status (NSpid chain).
func fakeProc(t *testing.T, procfs string, pid int, comm string, nspid ...int) {
	t.Helper()
	d := filepath.Join(procfs, strconv.Itoa(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	chain := []string{strconv.Itoa(pid)}
	for _, p := range nspid {
		chain = append(chain, strconv.Itoa(p))
	}
	for name, data := range map[string]string{
		"comm":   comm + "\n",
		"status": "Name:\t" + comm + "\nPid:\t" + strconv.Itoa(pid) + "\nNSpid:\t" + strings.Join(chain, "\t") + "\n",
	} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckPIDNamespace: npu-smi run with the host's pids (the processes
// exist under procfs as the same programs) versus run inside a container
// that lists its own namespace's pids (they do not exist, or are other
// processes), and A3's Process id in container against NSpid.
func TestCheckPIDNamespace(t *testing.T) {
	procfs := t.TempDir()
	fakeProc(t, procfs, 210001, "python3", 156)
	fakeProc(t, procfs, 210002, "python3.10", 157)
	fakeProc(t, procfs, 156, "containerd-shim") // the host's pid 156 is another program
	fakeProc(t, procfs, 1, "systemd")
	for _, tc := range []struct {
		name  string
		procs []ascend.Process
		want  pidVerdict
	}{
		{"host pids", []ascend.Process{{PID: 210001, Name: "python3"}, {PID: 210002, Name: "python3.10"}}, pidsHost},
		{"host pids, names cut differently", []ascend.Process{{PID: 210002, Name: "python3.10-train-main"}}, pidsHost},
		{"host pids, one exited since", []ascend.Process{{PID: 210001, Name: "python3"}, {PID: 999999, Name: "python3"}}, pidsHost},
		{"no name to compare", []ascend.Process{{PID: 210001}}, pidsHost},
		{"container pids that do not exist on the host", []ascend.Process{{PID: 77, Name: "python3"}, {PID: 78, Name: "python3"}}, pidsForeign},
		{"container pids that are other host processes", []ascend.Process{{PID: 156, Name: "python3"}, {PID: 1, Name: "python3"}}, pidsForeign},
		{"A3: Process id in container matches NSpid", []ascend.Process{{PID: 210001, Name: "python3", ContainerPID: "156"}}, pidsHost},
		{"A3: Process id in container disagrees with NSpid", []ascend.Process{{PID: 210001, Name: "python3", ContainerPID: "999"}}, pidsForeign},
		{"no process", nil, pidsUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := checkPIDNamespace(procfs, tc.procs); got != tc.want {
				t.Errorf("checkPIDNamespace = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
	if got, _ := checkPIDNamespace("", []ascend.Process{{PID: 77}}); got != pidsUnknown {
		t.Errorf("without --path.procfs: %v, want unknown", got)
	}
}

// TestForeignPIDNamespaceMetric: the gauge follows the verdict and the
// warning is logged once per change, not per scrape.
func TestForeignPIDNamespaceMetric(t *testing.T) {
	procfs := t.TempDir()
	fakeProc(t, procfs, 210001, "python3")
	var logs strings.Builder
	c, _ := newTestCollector(npusmi.RunnerConfig{}, Deps{Procfs: procfs}, newTextLogger(&logs))
	foreign := &npusmi.Snapshot{Processes: []ascend.Process{{PID: 42, Name: "python3"}}}
	host := &npusmi.Snapshot{Processes: []ascend.Process{{PID: 210001, Name: "python3"}}}
	gauge := func(s *npusmi.Snapshot) string {
		ch := make(chan prometheus.Metric, 1)
		c.reportPIDNamespace(ch, s)
		close(ch)
		m, ok := <-ch
		if !ok {
			return "absent"
		}
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		return strconv.FormatFloat(pb.GetGauge().GetValue(), 'g', -1, 64)
	}
	for i, step := range []struct {
		snap *npusmi.Snapshot
		want string
	}{{foreign, "1"}, {foreign, "1"}, {host, "0"}, {&npusmi.Snapshot{}, "absent"}} {
		if got := gauge(step.snap); got != step.want {
			t.Errorf("step %d: gauge %s, want %s", i, got, step.want)
		}
	}
	if n := strings.Count(logs.String(), "another pid namespace"); n != 1 {
		t.Errorf("warning logged %d times over two foreign runs, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "pids are the host's again") {
		t.Errorf("the return to host pids is not logged:\n%s", logs.String())
	}
}

func newTextLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// TestPIDNamespaceCheckedOncePerRun: the scrapes served the same npu-smi
// run get the verdict of its first check (procfs is not read again); the
// next run is checked anew.
func TestPIDNamespaceCheckedOncePerRun(t *testing.T) {
	procfs := t.TempDir()
	fakeProc(t, procfs, 210001, "python3")
	c, _ := newTestCollector(npusmi.RunnerConfig{}, Deps{Procfs: procfs}, newTextLogger(io.Discard))
	gauge := func(s *npusmi.Snapshot) float64 {
		ch := make(chan prometheus.Metric, 1)
		c.reportPIDNamespace(ch, s)
		close(ch)
		var pb dto.Metric
		if err := (<-ch).Write(&pb); err != nil {
			t.Fatal(err)
		}
		return pb.GetGauge().GetValue()
	}
	run := &npusmi.Snapshot{Processes: []ascend.Process{{PID: 210001, Name: "python3"}}}
	if g := gauge(run); g != 0 {
		t.Fatalf("host pids: gauge %v, want 0", g)
	}
	// The process exits before npu-smi runs again: procfs no longer has it.
	if err := os.RemoveAll(filepath.Join(procfs, "210001")); err != nil {
		t.Fatal(err)
	}
	if g := gauge(run); g != 0 {
		t.Errorf("same run re-scraped: gauge %v, want the run's verdict 0", g)
	}
	next := &npusmi.Snapshot{Processes: []ascend.Process{{PID: 210001, Name: "python3"}}}
	if g := gauge(next); g != 1 {
		t.Errorf("next run listing a pid procfs lacks: gauge %v, want 1", g)
	}
}
