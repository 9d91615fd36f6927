package follow

import "github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"

// The workload memory, for the headroom join (logstate/workload.go says
// what it is).

// BindWorkload ties a process of the logs to its workload's identity and
// returns what is remembered about the workload.
func (c *Service) BindWorkload(key logstate.ProcessKey, id string) (logstate.WorkloadView, bool) {
	return c.state.BindWorkload(key, id)
}

// WorkloadStats returns the workload memory's size and what it dropped.
func (c *Service) WorkloadStats() logstate.WorkloadStats { return c.state.WorkloadStats() }

// Workload returns what is remembered about workload id.
func (c *Service) Workload(id string) (logstate.WorkloadView, bool) { return c.state.Workload(id) }
