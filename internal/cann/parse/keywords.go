package parse

import "bytes"

// Stages of an HCCL job, as exported in the `stage` label.
const (
	StageInit      = "init"
	StageLinkSetup = "link_setup"
	StageExecution = "execution"
	StageUnknown   = "unknown"
)

// stageKeywords maps the level-1 multi-level search keywords of HCCL
// (CANN ≥ 8.5.0, HCCL debug_thinking.md) to stages, with their known
// level-2 keywords. Unknown level-2 words become "unknown" so that a label
// never carries free text from a log.
var stageKeywords = []struct {
	keyword string
	stage   string
	reasons []string
}{
	{"InitGroupStage", StageInit, []string{"EnvConfig", "RanktableConfig", "RanktableCheck", "RanktableDetect", "Resource"}},
	{"InitChannelStage", StageLinkSetup, []string{"ParameterConflict", "VersionConflict", "Timeout", "Resource"}},
	{"TaskExecStage", StageExecution, []string{"InvalidArgument", "Not Supported", "NotSupported", "Timeout", "RunFailed", "HeartbeatAbnormal"}},
}

var markStage = []byte("Stage][")

// StageKeywords finds `[<Level1>Stage][<Level2>]` in an HCCL message and
// returns the stage and reason label values; both are "unknown" when the
// message carries no known keyword.
//
// One message prints its level-1 keyword swapped: a socket that cannot
// listen (hccl_socket.cc) prints `[InitChannelStage][RanktableDetect]` for
// the host NIC (socket type[2], cluster negotiation at communicator init)
// and `[InitGroupStage][RanktableDetect]` for the NPU NIC (types 0 and 1,
// the parameter plane of link setup). The stage follows the socket type.
func StageKeywords(msg []byte) (stage, reason string) {
	if st, ok := listenFailureStage(msg); ok {
		return st, "RanktableDetect"
	}
	return levelKeywords(msg)
}

var (
	markListenOn   = []byte("listen on ip[")
	markSocketType = []byte("socket type[")
)

// listenFailureStage is the stage of a socket-listen failure by its socket
// type (HCOMM NicType: 2 is HOST_NIC_TYPE).
func listenFailureStage(msg []byte) (string, bool) {
	if !bytes.Contains(msg, markListenOn) || !bytes.Contains(msg, []byte("[RanktableDetect]")) {
		return "", false
	}
	i := bytes.Index(msg, markSocketType)
	if i < 0 || i+len(markSocketType)+1 >= len(msg) || msg[i+len(markSocketType)+1] != ']' {
		return "", false
	}
	switch msg[i+len(markSocketType)] {
	case '2':
		return StageInit, true
	case '0', '1':
		return StageLinkSetup, true
	}
	return "", false
}

func levelKeywords(msg []byte) (stage, reason string) {
	for off := 0; off < len(msg); {
		i := bytes.Index(msg[off:], markStage)
		if i < 0 {
			break
		}
		i += off
		off = i + len(markStage)
		open := bytes.LastIndexByte(msg[:i], '[')
		if open < 0 {
			continue
		}
		level1 := msg[open+1 : i+len("Stage")]
		end := bytes.IndexByte(msg[off:], ']')
		if end < 0 {
			continue
		}
		level2 := msg[off : off+end]
		for _, k := range stageKeywords {
			if string(level1) != k.keyword {
				continue
			}
			for _, r := range k.reasons {
				if string(level2) == r {
					if r == "Not Supported" {
						r = "NotSupported" // one spelling per label value
					}
					return k.stage, r
				}
			}
			return k.stage, StageUnknown
		}
	}
	return StageUnknown, StageUnknown
}
