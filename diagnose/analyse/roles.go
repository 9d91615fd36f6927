package analyse

import (
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// Which faults start an incident and which are its consequences. When one
// rank fails (runs out of NPU memory at link setup, loses its port, exits),
// its peers do not see the failure: they wait for it, and report a timeout
// when their own timer runs out. So the codes fall into three roles, and a
// waiting code is explained by an earlier failure only within the timer
// that produces it: the waiting process's own setting where its logs print
// it, HCCL's default otherwise. The roles are the fault-code table's
// (internal/cann/logstate codes.go), the same the alerting policy's
// inhibitions follow.

// timer is the HCCL setting whose expiry produces a waiting code, and how
// long it runs: Seconds(setting) + Plus.
type timer struct {
	Setting string  // HCCL variable; "" for a fixed window
	Default float64 // HCCL's default, seconds
	Plus    float64 // added by HCCL (link setup waits the timeout + 20 s)
}

// codeRole is one row of the role table.
type codeRole struct {
	Role  string
	Timer timer
	// Why says, for a waiting code, what the reporting rank saw of its
	// peers.
	Why string
}

const (
	varConnectTimeout = hcclenv.ConnectTimeout
	varExecTimeout    = hcclenv.ExecTimeout
)

// HCCL's defaults come from the one definition of the settings
// (internal/hcclenv); the link setup wait is the timeout plus 20 s
// (HCCL_CONNECT_TIMEOUT.md: "实际的建链超时等待时间是该环境变量的值加上20秒").
var (
	connectTimer = timer{Setting: varConnectTimeout, Default: hcclenv.Default(varConnectTimeout), Plus: 20}
	execTimer    = timer{Setting: varExecTimeout, Default: hcclenv.Default(varExecTimeout)}
	// rdmaTimer bounds an error CQE after a peer is gone: 4.096 µs ×
	// 2^HCCL_RDMA_TIMEOUT (default 20, ~4.3 s) × HCCL_RDMA_RETRY_CNT
	// (default 7) ≈ 30 s.
	rdmaTimer = timer{Default: 30}
)

// timers turns the table's timer names into diagnose's timers.
var timers = map[logstate.Timer]timer{
	logstate.TimerConnect: connectTimer,
	logstate.TimerExec:    execTimer,
	logstate.TimerRDMA:    rdmaTimer,
}

// heartbeatRole is the one code diagnose knows that the fault-code table
// does not: a heartbeat lost (30 s without one) or stuck (checked every
// third of HCCL_EXEC_TIMEOUT) after a rank failed or exited. Its process
// may linger for a while after the failure, so the window is the exec
// timer.
var heartbeatRole = codeRole{Role: model.RoleWaiting, Timer: execTimer, Why: "a peer's heartbeat was lost or stuck"}

// roleOf returns the row of a code: its role, timer and why from the one
// fault-code table (internal/cann/logstate codes.go), which also drives the
// alerting policy's inhibitions; a code outside it is RoleEither with the
// link setup timer.
func roleOf(code string) codeRole {
	if code == model.CodeHeartbeat {
		return heartbeatRole
	}
	role, tm := logstate.RoleOf(code)
	r := codeRole{Role: string(role), Timer: timers[tm]}
	if row, ok := logstate.CodeRow(code); ok {
		r.Why = row.Why
	}
	return r
}
