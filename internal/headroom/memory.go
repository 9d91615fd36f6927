package headroom

import (
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
)

// Workload memory in the model: a process of a workload whose earlier
// processes ran an AlltoAll-family operator or an ACL graph capture on a
// communicator of the same shape (rank count, server count) is expected to
// run them too, from its start (docs/headroom.md "Workload memory"). The
// memory itself lives in the CANN log state (logstate/workload.go); the
// join hands the model the remembered link sets of each process's
// workload (ProcessSettings.Remembered).

// withRemembered returns c as the memory expects it (every remote rank
// once the workload ran an AlltoAll-family or MC2 operator on a
// communicator of its shape) and the QPs of the remembered capture still
// ahead for it: a capture is ahead while the process has not captured on
// the communicator itself (its own capture then says what comes next).
func withRemembered(c comm.Communicator, s ProcessSettings) (comm.Communicator, float64) {
	var capture float64
	for _, r := range s.Remembered {
		if r.RankSize != c.RankSize || r.ServerNum != c.ServerNum {
			continue
		}
		if r.Capture && c.Captures == 0 && r.CaptureQPs > 0 && float64(r.CaptureQPs) <= maxPlausibleBytes {
			capture = max(capture, float64(r.CaptureQPs))
		}
		if r.AllRanks || r.MC2 {
			c.AllRanksOps = true
		}
	}
	return c, capture
}

// rememberedQPs is what the memory adds to communicator c's expected
// QPs: d (with the memory) less the demand without it.
func rememberedQPs(cfg Config, c comm.Communicator, s ProcessSettings, qps, buff float64, opBase, graph bool, d commDemand) float64 {
	if len(s.Remembered) == 0 {
		return 0
	}
	s.Remembered = nil
	base := demand(cfg, c, s, qps, buff, opBase, graph)
	return max(0, d.qpsExpected+d.captureQPs-base.qpsExpected-base.captureQPs)
}

// RememberedLinks are the link sets an earlier process of a workload ran
// on a communicator of one shape (rank count, server count), as the log
// state's workload memory keeps them; internal/join translates them.
type RememberedLinks struct {
	RankSize, ServerNum int
	// AllRanks: an AlltoAll-family or send/recv operator ran: every remote
	// rank is linked.
	AllRanks bool
	// MC2: a fused MC2 operator (MatmulAllReduce, MoeDistributeDispatch, …)
	// set up links.
	MC2 bool
	// Capture: an ACL graph capture re-created links; CaptureQPs is the
	// most QPs one capture needs.
	Capture    bool
	CaptureQPs uint64
}

// RememberedFailure is a link setup of a workload that failed.
type RememberedFailure struct {
	Code, Resource, Stage string
	At                    time.Time // the time printed in the latest such line
}
