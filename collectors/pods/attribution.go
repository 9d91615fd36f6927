package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// NPUProcesses lists the NPU processes of the scrape's npu-smi run.
type NPUProcesses interface {
	NPUProcesses(ctx context.Context) ([]ascend.Process, error)
}

// processAttribution is pods from processes: each NPU process's own
// cgroup, read through procfs (the host's /proc), names its pod UID and
// container id; kubeletLogs (the kubelet's log root, /var/log) turns them
// into namespace, pod and container names. Where this disagrees with the
// kubelet's PodResources answer (MindCluster with Volcano can allocate one
// chip in the kubelet's books and hand the container another), the process
// wins: it is what actually runs on the chip.
type processAttribution struct {
	processes   NPUProcesses
	procfs      string
	kubeletLogs string
}

var (
	conflictsDesc = prometheus.NewDesc("hccl_exporter_pod_attribution_conflicts",
		"Chips whose NPU processes run in a pod (from each process's own cgroup and the kubelet's log layout) "+
			"that the kubelet's PodResources answer does not assign the chip to. ascend_npu_pod_info follows the processes. "+
			"Absent unless both sources are available.",
		nil, nil)
	attributedDesc = prometheus.NewDesc("hccl_exporter_pod_attribution_processes",
		"NPU processes of the last npu-smi run by how their pod was found: cgroup (their own cgroup and the kubelet's "+
			"log layout), none (not in a kubelet pod, or its pod has no directory under <kubelet-logs>/pods), "+
			"unreadable (its /proc entry could not be read: it exited, or the exporter lacks CAP_SYS_PTRACE).",
		[]string{"source"}, nil)
)

// npuSMIAbsent: a ChipMap or NPUProcesses source failed because npu-smi
// is not installed on this node (npusmi.ErrNotFound, the logs-only mode):
// pods are then named by the kubelet's socket alone where it has one, and
// this collector does not fail for a source it only enriches with.
func npuSMIAbsent(err error) bool { return err != nil && errors.Is(err, npusmi.ErrNotFound) }

// processOwners maps each chip with NPU processes in kubelet pods to their
// owners, sorted; nil when attribution is off.
func (c *Collector) processOwners(ctx context.Context, ch chan<- prometheus.Metric) (map[ascend.ChipID][]Owner, error) {
	a := c.attr
	if a.processes == nil || a.procfs == "" || a.kubeletLogs == "" {
		return nil, nil
	}
	procs, err := a.processes.NPUProcesses(ctx)
	if npuSMIAbsent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pods: npu-smi's process table: %w", err)
	}
	counts := map[string]int{"cgroup": 0, "none": 0, "unreadable": 0}
	defer func() {
		for _, s := range []string{"cgroup", "none", "unreadable"} {
			ch <- prometheus.MustNewConstMetric(attributedDesc, prometheus.GaugeValue, float64(counts[s]), s)
		}
	}()
	var layout *KubeletLayout
	out := map[ascend.ChipID][]Owner{}
	for _, p := range procs {
		ref, ok, err := ReadProcessCgroup(a.procfs, p.PID)
		if err != nil {
			counts["unreadable"]++
			continue
		}
		if !ok {
			counts["none"]++
			continue
		}
		if layout == nil {
			if layout, err = LoadKubeletLayout(a.kubeletLogs); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					counts["none"] += len(procs) - counts["unreadable"] - counts["none"] - counts["cgroup"]
					return nil, nil // no kubelet on this host: nothing to attribute
				}
				return nil, fmt.Errorf("pods: %w", err)
			}
		}
		o, ok := layout.Owner(a.kubeletLogs, ref)
		if !ok {
			counts["none"]++
			continue
		}
		counts["cgroup"]++
		out[p.ChipID] = append(out[p.ChipID], o)
	}
	for chip, os := range out {
		sort.Slice(os, func(i, j int) bool {
			a, b := os[i], os[j]
			if a.Namespace != b.Namespace {
				return a.Namespace < b.Namespace
			}
			if a.Pod != b.Pod {
				return a.Pod < b.Pod
			}
			return a.Container < b.Container
		})
		uniq := os[:0]
		for i, o := range os {
			if i == 0 || o != os[i-1] {
				uniq = append(uniq, o)
			}
		}
		out[chip] = uniq
	}
	return out, nil
}
