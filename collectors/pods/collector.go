// Package pods owns the pods collector (--collector.pods, --pods.*): the
// attribution of NPUs to Kubernetes pods. It asks the kubelet's
// PodResources API (k8s.io/kubelet podresources/v1, the API dcgm-exporter and Huawei's npu-exporter use) which container holds
// which device, reads the Ascend device plugin's device ids (see
// ParseDeviceID), and exports ascend_npu_pod_info{npu,chip,namespace,pod,
// container}. The kubelet is asked in the background by a Watcher; a scrape
// only reads its last answer and maps physical ids to npu/chip through
// the ChipMap the caller provides (npu-smi's table, joined in
// cmd/hccl_exporter). hccl_process_info, which joins the processes of the
// CANN logs to chips, is the cannlog collector's.
package pods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// ChipMap maps physical chip ids to the chips of the scrape's npu-smi run.
type ChipMap interface {
	ChipsByPhyID(ctx context.Context) (map[int]ascend.ChipID, error)
}

var (
	podInfoDesc = prometheus.NewDesc("ascend_npu_pod_info",
		"1 for each container the kubelet assigned the chip to (PodResources API; a chip split into vNPUs can have several).",
		[]string{"npu", "chip", "namespace", "pod", "container"}, nil)
	upDesc = prometheus.NewDesc("hccl_exporter_pod_resources_up",
		"1 when the last kubelet PodResources List succeeded, 0 when it failed. Absent where the socket does not exist (bare metal, systemd).",
		nil, nil)
	errorsDesc = prometheus.NewDesc("hccl_exporter_pod_resources_errors_total",
		"Failed kubelet PodResources queries by reason: connect, list.",
		[]string{"reason"}, nil)
	droppedDesc = prometheus.NewDesc("hccl_exporter_label_values_dropped_total",
		collector.DroppedLabelValuesHelp, []string{"label"}, nil)
	unattributedDesc = prometheus.NewDesc("hccl_exporter_pod_resources_unmapped_devices",
		"Ascend devices the kubelet assigned to containers whose physical id npu-smi's table does not show, so no chip can name their pod.",
		nil, nil)
)

// Collector exports which pod holds each chip.
type Collector struct {
	w     *Watcher
	chips ChipMap
	attr  processAttribution // pods from processes; off: the kubelet alone
}

// Deps are what main gives the collector besides its own flags.
type Deps struct {
	// Watcher holds the kubelet's answers (built from this collector's
	// Config, and shared: the cannlog and headroom collectors ask it the
	// pod of a device).
	Watcher *Watcher
	// Chips maps physical ids to the chips of the scrape's npu-smi run.
	Chips ChipMap
	// Processes lists the NPU processes of the scrape's npu-smi run, whose
	// own cgroups name their pods (attribution.go); nil: the kubelet alone.
	Processes NPUProcesses
	// Procfs is the host's /proc (--path.procfs) the cgroups are read
	// through; "" turns pods from processes off, as an empty
	// --pods.kubelet-logs (cfg.KubeletLogs) does.
	Procfs string
}

// New returns a collector over the watcher's answers, mapping physical ids
// through deps.Chips, and naming the pods of chips with NPU processes from
// the processes where deps and cfg give what that needs.
func New(cfg Config, deps Deps, _ *slog.Logger) (*Collector, error) {
	if deps.Watcher == nil {
		return nil, errors.New("pods: no kubelet watcher")
	}
	return newCollector(cfg, deps), nil
}

// Start does nothing: the watcher, which main shares, asks the kubelet.
func (c *Collector) Start(context.Context) {}

// Close does nothing: main closes the shared watcher after the collectors.
func (c *Collector) Close() error { return nil }

// newCollector is New for tests.
func newCollector(cfg Config, deps Deps) *Collector {
	return &Collector{w: deps.Watcher, chips: deps.Chips, attr: processAttribution{
		processes: deps.Processes, procfs: deps.Procfs, kubeletLogs: cfg.KubeletLogs,
	}}
}

// Update sends the pod attribution series. It never asks the kubelet
// itself.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	return c.updatePods(ctx, ch)
}

func (c *Collector) updatePods(ctx context.Context, ch chan<- prometheus.Metric) error {
	as, st := c.w.Snapshot()
	c.w.mu.Lock()
	for _, r := range errorReasons {
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(c.w.errors[r]), r)
	}
	if st != StatusDisabled && st != StatusNoSocket {
		for _, r := range droppedReasons {
			ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(c.w.dropped[r]), r)
		}
	}
	c.w.mu.Unlock()
	// Pods from the processes themselves, then the kubelet's view for the
	// chips no process names (idle chips) and as the cross-check.
	owners, err := c.processOwners(ctx, ch)
	if err != nil {
		return err
	}
	type key struct {
		chip         ascend.ChipID
		ns, pod, ctr string
	}
	seen := map[key]bool{}
	for chip, os := range owners {
		for _, o := range os {
			k := key{chip, o.Namespace, o.Pod, o.Container}
			if !seen[k] {
				seen[k] = true
				ch <- prometheus.MustNewConstMetric(podInfoDesc, prometheus.GaugeValue, 1, chip.NPU, chip.Chip, o.Namespace, o.Pod, o.Container)
			}
		}
	}
	switch st {
	case StatusDisabled, StatusNoSocket:
		return nil
	case StatusFailed:
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return nil
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	if len(as) == 0 && owners == nil {
		ch <- prometheus.MustNewConstMetric(unattributedDesc, prometheus.GaugeValue, 0)
		return nil
	}
	byPhy, err := c.chips.ChipsByPhyID(ctx)
	if npuSMIAbsent(err) {
		return nil // no npu-smi on this node: no chip can be named (logs-only mode)
	}
	if err != nil {
		return fmt.Errorf("pods: map physical ids to chips: %w: %w", collector.ErrDependency, err)
	}
	unmapped := 0
	kubelet := map[ascend.ChipID]map[[2]string]bool{}
	for _, a := range as {
		chip, ok := byPhy[a.Device.PhyID]
		if !ok {
			unmapped++
			continue
		}
		if kubelet[chip] == nil {
			kubelet[chip] = map[[2]string]bool{}
		}
		kubelet[chip][[2]string{a.Namespace, a.Pod}] = true
		if _, byProcess := owners[chip]; byProcess {
			continue // the processes on the chip say whose it is
		}
		k := key{chip, a.Namespace, a.Pod, a.Container}
		if seen[k] {
			continue // several vNPUs of one chip in one container
		}
		seen[k] = true
		ch <- prometheus.MustNewConstMetric(podInfoDesc, prometheus.GaugeValue, 1, chip.NPU, chip.Chip, a.Namespace, a.Pod, a.Container)
	}
	ch <- prometheus.MustNewConstMetric(unattributedDesc, prometheus.GaugeValue, float64(unmapped))
	if owners != nil {
		conflicts := 0
		for chip, os := range owners {
			for _, o := range os {
				if !kubelet[chip][[2]string{o.Namespace, o.Pod}] {
					conflicts++
					break
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(conflictsDesc, prometheus.GaugeValue, float64(conflicts))
	}
	return nil
}

// Describe and Collect make the collector usable with a plain registry.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{podInfoDesc, upDesc, errorsDesc, droppedDesc, unattributedDesc, conflictsDesc, attributedDesc} {
		ch <- d
	}
}

// Collect sends the metrics of Update.
func (c *Collector) Collect(ch chan<- prometheus.Metric) { _ = c.Update(context.Background(), ch) }
