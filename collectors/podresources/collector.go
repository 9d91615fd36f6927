// Package podresources owns the attribution of NPUs to Kubernetes pods (and
// exports the join of log processes to chips that makes per-process series
// attributable too): it
// asks the kubelet's PodResources API (k8s.io/kubelet podresources/v1, the
// API dcgm-exporter and Huawei's npu-exporter use) which container holds
// which device, reads the Ascend device plugin's device ids (see
// ParseDeviceID), and exports ascend_npu_pod_info{npu,chip,namespace,pod,
// container}. The kubelet is asked in the background by a Watcher; a scrape
// only reads its last answer and maps physical ids to npu/chip through
// the ChipMap the caller provides (npu-smi's table, joined in internal/join).
package podresources

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/exporter"
)

// Chip names a chip as npu-smi prints it.
type Chip struct{ NPU, Chip string }

// ChipMap maps physical chip ids to the chips of the scrape's npu-smi run.
type ChipMap interface {
	ChipsByPhyID(ctx context.Context) (map[int]Chip, error)
}

// ProcessChip is a process of the CANN logs and the chip it runs on.
type ProcessChip struct {
	PID       string // the cannlog pid label
	Process   string // the process name its plog lines print
	Settings  string // its settings set, the settings label of the cannlog series
	NPU, Chip string // empty when npu-smi's process table does not show it
	JoinedBy  string // how the join found it: procfs, pid, container_pid, device, or none
}

// ProcessChips lists the processes of the CANN logs matched to chips.
type ProcessChips interface {
	ProcessChips(ctx context.Context) ([]ProcessChip, error)
}

var (
	processInfoDesc = prometheus.NewDesc("hccl_process_info",
		"1 for each process of the CANN logs: its settings set (the settings label of the hccl_env_* and hccl_communicator_info series) and the chip npu-smi shows it on; "+
			"joined_by says how it was matched: procfs (its host pid, found through --path.procfs), pid (host pid), container_pid (A3's Process id in container), device (the devicePhyId its plogs print), "+
			"none (npu-smi's process table does not show it: npu and chip are empty).",
		[]string{"pid", "process", "settings", "npu", "chip", "joined_by"}, nil)
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
		exporter.DroppedLabelValuesHelp, []string{"label"}, nil)
	unattributedDesc = prometheus.NewDesc("hccl_exporter_pod_resources_unmapped_devices",
		"Ascend devices the kubelet assigned to containers whose physical id npu-smi's table does not show, so no chip can name their pod.",
		nil, nil)
)

// Collector exports which pod holds each chip, and each logged process with
// its settings set and the chip it runs on.
type Collector struct {
	w     *Watcher
	chips ChipMap
	procs ProcessChips
	attr  *ProcessAttribution // pods from processes; nil: the kubelet alone
}

// New returns a collector over the watcher's answers, mapping physical ids
// through chips; procs, when not nil, gives the process-to-chip join.
func New(w *Watcher, chips ChipMap, procs ProcessChips) *Collector {
	return &Collector{w: w, chips: chips, procs: procs}
}

// Update sends the pod and process attribution series. It never asks the
// kubelet itself.
func (c *Collector) Update(ctx context.Context, ch chan<- prometheus.Metric) error {
	var errs []error
	if c.procs != nil {
		pcs, err := c.procs.ProcessChips(ctx)
		if err != nil && !npuSMIAbsent(err) {
			errs = append(errs, fmt.Errorf("podresources: match processes to chips: %w", err))
		}
		bad := 0
		for _, p := range pcs {
			// The name and the labels come from logs (or a state file):
			// a value that is still not a valid label leaves its process
			// out rather than failing the scrape.
			m, err := prometheus.NewConstMetric(processInfoDesc, prometheus.GaugeValue, 1, p.PID, p.Process, p.Settings, p.NPU, p.Chip, p.JoinedBy)
			if err != nil {
				bad++
				continue
			}
			ch <- m
		}
		if bad > 0 {
			errs = append(errs, fmt.Errorf("podresources: %d processes of the logs left out of hccl_process_info: invalid label values", bad))
		}
	}
	if err := c.updatePods(ctx, ch); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
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
		chip         Chip
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
		return fmt.Errorf("podresources: map physical ids to chips: %w: %w", exporter.ErrDependency, err)
	}
	unmapped := 0
	kubelet := map[Chip]map[[2]string]bool{}
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
	for _, d := range []*prometheus.Desc{processInfoDesc, podInfoDesc, upDesc, errorsDesc, droppedDesc, unattributedDesc, conflictsDesc, attributedDesc} {
		ch <- d
	}
}

// Collect sends the metrics of Update.
func (c *Collector) Collect(ch chan<- prometheus.Metric) { _ = c.Update(context.Background(), ch) }
