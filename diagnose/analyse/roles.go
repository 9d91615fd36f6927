package analyse

import (
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// Which faults start an incident and which are its consequences. When one
// rank fails (runs out of NPU memory at link setup, loses its port, exits),
// its peers do not see the failure: they wait for it, and report a timeout
// when their own timer runs out. So the codes fall into three roles, and a
// waiting code is explained by an earlier failure only within the timer
// that produces it: the waiting process's own setting where its logs print
// it, HCCL's default otherwise.

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

// codeRoles is the role table. A code not listed is RoleEither with the link
// setup timer.
var codeRoles = map[string]codeRole{
	// A rank's own failures.
	"EI0001": {Role: model.RoleLocal}, // invalid environment variable
	"EI0003": {Role: model.RoleLocal}, // invalid operator argument
	"EI0004": {Role: model.RoleLocal}, // ranktable cannot be read
	"EI0007": {Role: model.RoleLocal}, // resource allocation (QPs, device memory)
	"EI0008": {Role: model.RoleLocal}, // HCCL versions differ
	"EI0011": {Role: model.RoleLocal}, // NPU memory for QPs (or any HCCL device allocation)
	"EI0012": {Role: model.RoleLocal}, // SDMA task exception
	"EI0014": {Role: model.RoleLocal}, // ranktable check
	"EI0016": {Role: model.RoleLocal}, // config invalid
	"EI0017": {Role: model.RoleLocal}, // ranktable config missing
	"EI0019": {Role: model.RoleLocal}, // host port already bound
	"EI0020": {Role: model.RoleLocal}, // NPU port already bound
	"EJ0001": {Role: model.RoleLocal}, // HCCP did not start
	"EJ0002": {Role: model.RoleLocal}, // network port down
	"EJ0003": {Role: model.RoleLocal}, // HCCP bind failed
	"EJ0004": {Role: model.RoleLocal}, // invalid IP address
	"EL0004": {Role: model.RoleLocal}, // driver out of memory
	// Peers waiting for a rank that failed.
	"EI0006": {Role: model.RoleWaiting, Timer: connectTimer, Why: "a peer did not connect at link setup in time"},
	"EI0015": {Role: model.RoleWaiting, Timer: connectTimer, Why: "ranks did not reach the root of the communicator's negotiation in time"},
	"EI0002": {Role: model.RoleWaiting, Timer: execTimer, Why: "a peer did not answer a collective's notify in time"},
	// A heartbeat lost (30 s without one) or stuck (checked every third of
	// HCCL_EXEC_TIMEOUT) after a rank failed or exited: its process may
	// linger for a while after the failure, so the window is the exec
	// timer.
	model.CodeHeartbeat: {Role: model.RoleWaiting, Timer: execTimer, Why: "a peer's heartbeat was lost or stuck"},
	// Ranks out of step report inconsistent arguments when a peer
	// restarted or failed mid-sequence.
	"EI0005": {Role: model.RoleWaiting, Timer: connectTimer, Why: "its peers called a collective with other arguments, as when a peer restarted or failed mid-sequence"},
	// Either.
	"EI0009": {Role: model.RoleEither, Timer: connectTimer}, // transport init error
	"EI0010": {Role: model.RoleEither, Timer: connectTimer}, // P2P failed
	"EI0013": {Role: model.RoleEither, Timer: rdmaTimer},    // RoCE error CQE
	"EI0018": {Role: model.RoleEither, Timer: rdmaTimer},    // UB error CQE
	"EI9999": {Role: model.RoleEither, Timer: connectTimer}, // inner error
}

// roleOf returns the row of a code.
func roleOf(code string) codeRole {
	if r, ok := codeRoles[code]; ok {
		return r
	}
	return codeRole{Role: model.RoleEither, Timer: connectTimer}
}
