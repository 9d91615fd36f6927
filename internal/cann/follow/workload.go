package follow

import "github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"

// The workload memory and the state file's extensions, for the headroom
// join (logstate/workload.go says what they are).

// BindWorkload ties a process of the logs to its workload's identity and
// returns what is remembered about the workload.
func (c *Collector) BindWorkload(key logstate.ProcessKey, id string) (logstate.WorkloadView, bool) {
	return c.state.BindWorkload(key, id)
}

// WorkloadStats returns the workload memory's size and what it dropped.
func (c *Collector) WorkloadStats() logstate.WorkloadStats { return c.state.WorkloadStats() }

// AttachExtension keeps another package's state in the state file.
func (c *Collector) AttachExtension(name string, ext logstate.Extension) error {
	return c.state.AttachExtension(name, ext)
}
