package join

import (
	"context"

	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
	"github.com/hccl-exporter/hccl_exporter/collectors/pods"
	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// npuProcesses gives the pods collector npu-smi's process table of the
// scrape's run (host pids and chips), for pods from processes.
type npuProcesses struct {
	npu interface {
		Snapshot(ctx context.Context) (*npusmi.Snapshot, error)
	}
}

func (n npuProcesses) NPUProcesses(ctx context.Context) ([]pods.NPUProcess, error) {
	snap, err := n.npu.Snapshot(ctx)
	if err != nil {
		return nil, npuSMIAbsent(err)
	}
	out := make([]pods.NPUProcess, 0, len(snap.Processes))
	for _, p := range snap.Processes {
		out = append(out, pods.NPUProcess{Chip: ascend.ChipID{NPU: p.NPU, Chip: p.Chip}, PID: p.PID})
	}
	return out, nil
}
