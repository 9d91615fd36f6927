package pods

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

func TestParseDeviceID(t *testing.T) {
	for _, tc := range []struct {
		id        string
		ok        bool
		typ       string
		phy, vnpu int
	}{
		{"Ascend910-3", true, "Ascend910", 3, -1},
		{"Ascend910-15", true, "Ascend910", 15, -1},
		{"Ascend310P-0", true, "Ascend310P", 0, -1},
		{"Ascend310-7", true, "Ascend310", 7, -1},
		{"Ascend910-2c-100-3", true, "Ascend910", 3, 100},
		{"Ascend910-16c-111-0", true, "Ascend910", 0, 111},
		{"Ascend310P-2c.1cpu-100-0", true, "Ascend310P", 0, 100},
		{"Ascend310P-4c.4cpu.dvpp-102-1", true, "Ascend310P", 1, 102},
		// Not Ascend device plugin ids.
		{"GPU-8a3c6c9e-1b7b-4b8e-9c3e-3b7c2f1f9e1d", false, "", 0, 0},
		{"0000:3b:00.0", false, "", 0, 0},
		{"Ascend910", false, "", 0, 0},
		{"Ascend910-", false, "", 0, 0},
		{"Ascend910-x", false, "", 0, 0},
		{"Ascend910-2c-100", false, "", 0, 0},
		{"Ascend910-2x-100-3", false, "", 0, 0},
		{"Ascend910--100-3", false, "", 0, 0},
		{"Ascend910-99999999", false, "", 0, 0},
	} {
		d, ok := ParseDeviceID(tc.id)
		if ok != tc.ok || (ok && (d.Type != tc.typ || d.PhyID != tc.phy || d.VNPU != tc.vnpu || d.ID != tc.id)) {
			t.Errorf("ParseDeviceID(%q) = %+v %v, want %s phy %d vnpu %d ok %v", tc.id, d, ok, tc.typ, tc.phy, tc.vnpu, tc.ok)
		}
	}
	for _, f := range deviceForms {
		if _, ok := ParseDeviceID(f.example); !ok {
			t.Errorf("documented example %q of form %s does not parse", f.example, f.form)
		}
	}
}

func FuzzParseDeviceID(f *testing.F) {
	for _, s := range []string{"Ascend910-3", "Ascend910-2c-100-3", "Ascend310P-2c.1cpu-100-0", "Ascend-1-2-3-4", "GPU-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		d, ok := ParseDeviceID(id)
		if !ok {
			return
		}
		if d.PhyID < 0 || d.ID != id || !strings.HasPrefix(id, d.Type) || !strings.HasSuffix(id, "-"+phyString(d.PhyID, id)) {
			t.Fatalf("ParseDeviceID(%q) = %+v", id, d)
		}
	})
}

// phyString is the last field of id, which the phy id was read from.
func phyString(_ int, id string) string { return id[strings.LastIndexByte(id, '-')+1:] }

type chipMap map[int]ascend.ChipID

func (m chipMap) ChipsByPhyID(context.Context) (map[int]ascend.ChipID, error) { return m, nil }

type failingChips struct{}

func (failingChips) ChipsByPhyID(context.Context) (map[int]ascend.ChipID, error) {
	return nil, errors.New("npu-smi timed out")
}

// a3Chips maps the phy ids of an A3 node's NPU 4 (dies 8 and 9) and NPU 5.
var a3Chips = chipMap{8: {NPU: "4", Chip: "0"}, 9: {NPU: "4", Chip: "1"}, 10: {NPU: "5", Chip: "0"}}

func TestCollectorAgainstFakeKubelet(t *testing.T) {
	k := testtools.StartFakeKubelet(t,
		testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-8"}},
		testtools.PodDevice{Namespace: "train", Pod: "job-b-0", Container: "main", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-9"}},
		// Two vNPUs of one chip in one container count once; a chip npu-smi does not show is unmapped.
		testtools.PodDevice{Namespace: "infer", Pod: "svc-0", Container: "model", Resource: "huawei.com/Ascend910-2c", DeviceIDs: []string{"Ascend910-2c-100-10", "Ascend910-2c-101-10", "Ascend910-2c-102-12"}},
		// Other device plugins are ignored.
		testtools.PodDevice{Namespace: "train", Pod: "job-a-0", Container: "main", Resource: "rdma/hca", DeviceIDs: []string{"mlx5_0"}},
	)
	w := NewWatcher(Config{Socket: k.Socket}, nil)
	defer w.Close()
	w.Refresh(context.Background())
	c := newCollector(Config{}, Deps{Watcher: w, Chips: a3Chips})
	want := `
# HELP ascend_npu_pod_info 1 for each container the kubelet assigned the chip to (PodResources API; a chip split into vNPUs can have several).
# TYPE ascend_npu_pod_info gauge
ascend_npu_pod_info{chip="0",container="main",namespace="train",npu="4",pod="job-a-0"} 1
ascend_npu_pod_info{chip="1",container="main",namespace="train",npu="4",pod="job-b-0"} 1
ascend_npu_pod_info{chip="0",container="model",namespace="infer",npu="5",pod="svc-0"} 1
# HELP hccl_exporter_pod_resources_up 1 when the last kubelet PodResources List succeeded, 0 when it failed. Absent where the socket does not exist (bare metal, systemd).
# TYPE hccl_exporter_pod_resources_up gauge
hccl_exporter_pod_resources_up 1
# HELP hccl_exporter_pod_resources_unmapped_devices Ascend devices the kubelet assigned to containers whose physical id npu-smi's table does not show, so no chip can name their pod.
# TYPE hccl_exporter_pod_resources_unmapped_devices gauge
hccl_exporter_pod_resources_unmapped_devices 1
# HELP hccl_exporter_pod_resources_errors_total Failed kubelet PodResources queries by reason: connect, list.
# TYPE hccl_exporter_pod_resources_errors_total counter
hccl_exporter_pod_resources_errors_total{reason="connect"} 0
hccl_exporter_pod_resources_errors_total{reason="list"} 0
# HELP hccl_exporter_label_values_dropped_total Label values from logs dropped because the distinct values of the label reached the cap.
# TYPE hccl_exporter_label_values_dropped_total counter
hccl_exporter_label_values_dropped_total{label="kubelet_label_length"} 0
hccl_exporter_label_values_dropped_total{label="kubelet_pod"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
	for _, tc := range []struct {
		phy  int
		pod  string
		want bool
	}{{8, "job-a-0", true}, {9, "job-b-0", true}, {10, "svc-0", true}, {3, "", false}} {
		_, pod, _, ok := w.PodOfDevice(tc.phy)
		if ok != tc.want || pod != tc.pod {
			t.Errorf("PodOfDevice(%d) = %q %v, want %q %v", tc.phy, pod, ok, tc.pod, tc.want)
		}
	}

	// A failing kubelet drops the old answer: pods move.
	k.Fail(errors.New("kubelet restarting"))
	w.Refresh(context.Background())
	wantFailed := `
# HELP hccl_exporter_pod_resources_up 1 when the last kubelet PodResources List succeeded, 0 when it failed. Absent where the socket does not exist (bare metal, systemd).
# TYPE hccl_exporter_pod_resources_up gauge
hccl_exporter_pod_resources_up 0
# HELP hccl_exporter_pod_resources_errors_total Failed kubelet PodResources queries by reason: connect, list.
# TYPE hccl_exporter_pod_resources_errors_total counter
hccl_exporter_pod_resources_errors_total{reason="connect"} 0
hccl_exporter_pod_resources_errors_total{reason="list"} 1
# HELP hccl_exporter_label_values_dropped_total Label values from logs dropped because the distinct values of the label reached the cap.
# TYPE hccl_exporter_label_values_dropped_total counter
hccl_exporter_label_values_dropped_total{label="kubelet_label_length"} 0
hccl_exporter_label_values_dropped_total{label="kubelet_pod"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(wantFailed)); err != nil {
		t.Error(err)
	}
	k.Fail(nil)
	w.Refresh(context.Background())
	if n := testutil.CollectAndCount(c, "ascend_npu_pod_info"); n != 3 {
		t.Errorf("pod info series after recovery = %d, want 3", n)
	}

	// npu-smi failing: the error says so, the kubelet's state is still reported.
	c2 := newCollector(Config{}, Deps{Watcher: w, Chips: failingChips{}})
	if err := c2.Update(context.Background(), make(chan prometheus.Metric, 100)); err == nil {
		t.Error("no error when the chips cannot be mapped")
	}
}

// lockedBuffer is a log sink the watcher's goroutine writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

func TestMissingSocketIsSaidOnce(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	w := NewWatcher(Config{Socket: sock, Interval: 10 * time.Millisecond}, logger)
	w.Start(context.Background())
	time.Sleep(100 * time.Millisecond)
	if n := strings.Count(buf.String(), "no kubelet PodResources socket"); n != 1 {
		t.Fatalf("missing socket logged %d times, want once:\n%s", n, buf.String())
	}
	c := newCollector(Config{}, Deps{Watcher: w, Chips: a3Chips})
	if n := testutil.CollectAndCount(c, "hccl_exporter_pod_resources_up", "ascend_npu_pod_info"); n != 0 {
		t.Errorf("%d series without a socket, want none", n)
	}
	// The kubelet appears (the exporter started first): attributed from then on.
	testtools.StartFakeKubeletAt(t, sock)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, st := w.Snapshot(); st == StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("watcher never connected to the socket that appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Error(err)
	}
	if !strings.Contains(buf.String(), "reading pod device assignments from the kubelet") {
		t.Errorf("the socket's appearance was not logged:\n%s", buf.String())
	}
}

func TestDisabled(t *testing.T) {
	w := NewWatcher(Config{}, nil)
	w.Refresh(context.Background())
	if _, st := w.Snapshot(); st != StatusDisabled {
		t.Fatalf("status %v", st)
	}
	if _, err := os.Stat(DefaultSocket); err == nil {
		t.Skip("this machine is a kubelet node")
	}
}

// TestDeployDocsListDeviceForms: docs/deploy.md documents every device id
// form ParseDeviceID reads.
func TestDeployDocsListDeviceForms(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range deviceForms {
		if !strings.Contains(string(doc), "`"+f.example+"`") {
			t.Errorf("docs/deploy.md does not show the device id form %s (%s)", f.form, f.example)
		}
	}
}

// TestSocketWithoutKubelet: a socket file nothing listens on (the kubelet
// is restarting) is a connect error, not a failed List.
func TestSocketWithoutKubelet(t *testing.T) {
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "kubelet.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w := NewWatcher(Config{Socket: sock, Timeout: time.Second}, nil)
	defer w.Close()
	w.Refresh(context.Background())
	if _, st := w.Snapshot(); st != StatusFailed {
		t.Fatalf("status %v, want failed", st)
	}
	want := `
# HELP hccl_exporter_pod_resources_errors_total Failed kubelet PodResources queries by reason: connect, list.
# TYPE hccl_exporter_pod_resources_errors_total counter
hccl_exporter_pod_resources_errors_total{reason="connect"} 1
hccl_exporter_pod_resources_errors_total{reason="list"} 0
# HELP hccl_exporter_label_values_dropped_total Label values from logs dropped because the distinct values of the label reached the cap.
# TYPE hccl_exporter_label_values_dropped_total counter
hccl_exporter_label_values_dropped_total{label="kubelet_label_length"} 0
hccl_exporter_label_values_dropped_total{label="kubelet_pod"} 0
# HELP hccl_exporter_pod_resources_up 1 when the last kubelet PodResources List succeeded, 0 when it failed. Absent where the socket does not exist (bare metal, systemd).
# TYPE hccl_exporter_pod_resources_up gauge
hccl_exporter_pod_resources_up 0
`
	if err := testutil.CollectAndCompare(newCollector(Config{}, Deps{Watcher: w, Chips: a3Chips}), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
