package logstate

import "time"

// Liveness says whether a process is still running. The cannlog collector
// implements it once, from npu-smi's process table, its table of log roots
// and /proc (cannlog's coverage.go); the offline diagnose command has none.
type Liveness interface {
	Alive(pid int) bool
}

// LivenessReady may be implemented by a Liveness that cannot answer yet,
// such as npu-smi's process table before npu-smi first ran. The collector
// expires no process while Ready reports false (for at most ReadyGrace after
// it starts), so that a restart does not drop the series of running
// processes whose last log write is old.
type LivenessReady interface {
	Ready() bool
}

// ProcessLiveness may be implemented by a Liveness that can tell a process
// of the logs alive by more than its pid: a pod's process prints the pid in
// its container, which neither npu-smi (on A2) nor the host's /proc shows,
// but the joins match it to npu-smi's row by the device it drives.
type ProcessLiveness interface {
	AliveProcess(key ProcessKey) bool
}

// aliveProcess asks AliveProcess where live implements it, else Alive.
func aliveProcess(live Liveness, key ProcessKey) bool {
	if pl, ok := live.(ProcessLiveness); ok {
		return pl.AliveProcess(key)
	}
	return live.Alive(key.PID)
}

// ReadyGrace bounds how long expiry waits for a Liveness to become ready;
// after it, a never-ready source (npu-smi always failing) counts as "not
// alive" and the TTL alone decides.
const ReadyGrace = 5 * time.Minute

// LivenessFunc adapts a function to Liveness.
type LivenessFunc func(pid int) bool

// Alive calls f.
func (f LivenessFunc) Alive(pid int) bool { return f(pid) }
