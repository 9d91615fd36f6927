package pods

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// manyChips maps physical ids 0..15 to NPU 0..15 chip 0.
type manyChips struct{}

func (manyChips) ChipsByPhyID(context.Context) (map[int]ascend.ChipID, error) {
	m := map[int]ascend.ChipID{}
	for i := range 16 {
		m[i] = ascend.ChipID{NPU: strconv.Itoa(i), Chip: "0"}
	}
	return m, nil
}

// attackPods is the answer of the attack of issue 24: n pods, one Ascend
// device each, spread over 16 chips.
func attackPods(n int) []testtools.PodDevice {
	pods := make([]testtools.PodDevice, n)
	for i := range pods {
		pods[i] = testtools.PodDevice{Namespace: "ns", Pod: "p" + strconv.Itoa(i), Container: "c",
			Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-" + strconv.Itoa(i%16)}}
	}
	return pods
}

// TestPodBounds is the attack of issue 24: 100,000 pods from the kubelet
// were exported as 100,000 ascend_npu_pod_info series, and pod and
// namespace names of 100 KB whole. Now at most --pods.max-assignments series
// (and 64 per chip) are kept, values are cut at 256 bytes, and both are
// counted in hccl_exporter_label_values_dropped_total.
func TestPodBounds(t *testing.T) {
	long := strings.Repeat("n", 100<<10)
	pods := append(attackPods(5000),
		testtools.PodDevice{Namespace: long, Pod: long + "é", Container: "c", Resource: "huawei.com/Ascend910", DeviceIDs: []string{"Ascend910-3"}})
	k := testtools.StartFakeKubelet(t, pods...)
	w := NewWatcher(Config{Socket: k.Socket, MaxPods: 300}, nil)
	defer w.Close()
	w.Refresh(context.Background())
	c := newCollector(Config{}, Deps{Watcher: w, Chips: manyChips{}})
	if n := testutil.CollectAndCount(c, "ascend_npu_pod_info"); n != 300 {
		t.Errorf("%d pod info series, want 300 (--pods.max-assignments)", n)
	}
	as, _ := w.Snapshot()
	perChip := map[int]int{}
	for _, a := range as {
		perChip[a.Device.PhyID]++
		if len(a.Namespace) > MaxLabelBytes || len(a.Pod) > MaxLabelBytes {
			t.Errorf("label value of %d bytes kept", max(len(a.Namespace), len(a.Pod)))
		}
	}
	for phy, n := range perChip {
		if n > maxPodsPerChip {
			t.Errorf("chip %d: %d pods, cap %d", phy, n, maxPodsPerChip)
		}
	}
	got := dropped(t, c)
	if got[droppedPod] != 5001-300 {
		t.Errorf("dropped pods = %v, want %d", got[droppedPod], 5001-300)
	}

	// The long names alone, within the caps: cut and counted, valid UTF-8.
	k.Set(pods[len(pods)-1])
	w.Refresh(context.Background())
	as, _ = w.Snapshot()
	if len(as) != 1 || len(as[0].Namespace) != MaxLabelBytes || len(as[0].Pod) != MaxLabelBytes {
		t.Fatalf("assignments %d, namespace %d bytes, pod %d bytes", len(as), len(as[0].Namespace), len(as[0].Pod))
	}
	// The first answer dropped that pod at the cap before cutting; this one
	// cuts its namespace and pod.
	if got := dropped(t, c); got[droppedLength] != 2 {
		t.Errorf("cut values = %v, want 2", got[droppedLength])
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}

	// 64 pods per chip: a chip shared by 100 containers keeps 64.
	var shared []testtools.PodDevice
	for i := range 100 {
		shared = append(shared, testtools.PodDevice{Namespace: "ns", Pod: "v" + strconv.Itoa(i), Container: "c",
			Resource: "huawei.com/Ascend910-2c", DeviceIDs: []string{fmt.Sprintf("Ascend910-2c-%d-5", 100+i)}})
	}
	k.Set(shared...)
	w.Refresh(context.Background())
	if n := testutil.CollectAndCount(c, "ascend_npu_pod_info"); n != maxPodsPerChip {
		t.Errorf("one chip: %d pod info series, want %d", n, maxPodsPerChip)
	}
}

func dropped(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "hccl_exporter_label_values_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestPeakRSSUnder100000Pods measures the peak RSS of a process that asks
// a fake kubelet answering 100,000 pods (and, apart, one container with
// 100,000 device ids) and serves the result once: at most 200 MiB (it was
// 497 MB and 597 MB). The exporter side runs in a child process (this test
// binary again) so that the fake kubelet's own memory is not counted.
func TestPeakRSSUnder100000Pods(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 pods: skipped under -short")
	}
	if raceEnabled {
		t.Skip("the race detector multiplies memory: the RSS bound is measured without it (go test without -race)")
	}
	if sock := os.Getenv("HCCL_PODS_CHILD_SOCKET"); sock != "" {
		t.Skip("child")
	}
	for _, tc := range []struct {
		name string
		pods []testtools.PodDevice
	}{
		{"100000 pods", attackPods(100000)},
		{"100000 device ids in one container", func() []testtools.PodDevice {
			ids := make([]string, 100000)
			for i := range ids {
				ids[i] = "Ascend910-2c-" + strconv.Itoa(100+i) + "-" + strconv.Itoa(i%16)
			}
			return []testtools.PodDevice{{Namespace: "ns", Pod: "p", Container: "c", Resource: "huawei.com/Ascend910-2c", DeviceIDs: ids}}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := testtools.StartFakeKubelet(t, tc.pods...)
			cmd := exec.Command(os.Args[0], "-test.run=^TestPodsChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HCCL_PODS_CHILD_SOCKET="+k.Socket)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			rss := float64(ru.Maxrss) / 1024 // KiB → MiB
			t.Logf("peak RSS %.1f MiB; child said: %s", rss, strings.TrimSpace(lastLine(string(out))))
			if rss > 200 {
				t.Errorf("peak RSS %.1f MiB, want ≤ 200", rss)
			}
			if !strings.Contains(string(out), "series=") {
				t.Errorf("child did not report: %s", out)
			}
		})
	}
}

func lastLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "series=") {
			return l
		}
	}
	return ""
}

// TestPodsChild is the exporter side of TestPeakRSSUnder100000Pods.
func TestPodsChild(t *testing.T) {
	sock := os.Getenv("HCCL_PODS_CHILD_SOCKET")
	if sock == "" {
		t.Skip("run by TestPeakRSSUnder100000Pods")
	}
	w := NewWatcher(Config{Socket: sock}, nil)
	defer w.Close()
	w.Refresh(context.Background())
	_, st := w.Snapshot()
	c := newCollector(Config{}, Deps{Watcher: w, Chips: manyChips{}})
	n := testutil.CollectAndCount(c, "ascend_npu_pod_info")
	if st != StatusOK || n > DefaultMaxPods {
		t.Errorf("status %v, %d series", st, n)
	}
	fmt.Printf("status=%v series=%d dropped=%v\n", st, n, w.dropped)
}
