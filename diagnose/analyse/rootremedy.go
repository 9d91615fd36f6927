package analyse

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// The remedy of an incident starts from its root cause, with the numbers of
// the process that failed, not from whichever code the bundle printed most
// (that is nearly always a timeout of the peers).

// process returns the report's process of node and pid, or nil.
func processOf(r *model.Report, node string, pid int) *model.Process {
	for i := range r.Nodes {
		if r.Nodes[i].Name != node {
			continue
		}
		for j := range r.Nodes[i].Processes {
			if r.Nodes[i].Processes[j].PID == pid {
				return &r.Nodes[i].Processes[j]
			}
		}
	}
	return nil
}

// rootRemedies fills in every incident's remedy.
func rootRemedies(r *model.Report) {
	for i := range r.Incidents {
		r.Incidents[i].Remedy = incidentRemedy(r, &r.Incidents[i])
	}
}

func incidentRemedy(r *model.Report, in *model.Incident) []model.Remedy {
	rems := incidentRemedyByRoot(r, in)
	// A rank's own failure makes its peers' links fail: the link is then
	// a consequence, not a thing to fix.
	if len(in.LinkFailures) > 0 && (in.Root == nil || in.Root.Role != model.RoleLocal) {
		rems = append(rems, linkRemedy(in.LinkFailures, in.FailingPair))
	}
	return rems
}

// linkRemedy turns the failing links HCCL named into what to check: both
// ends' logs, then the link (HCOMM's EI0009 steps for RoCE).
func linkRemedy(ls []model.LinkFailure, pair *model.FailingPair) model.Remedy {
	name := ls[0].Pair()
	if pair != nil {
		name = pair.String()
	}
	rem := model.Remedy{ID: model.RemedyCheckLink, Title: "Check the link HCCL names as failing: " + name}
	for i, l := range ls {
		if i == 3 {
			break
		}
		rem.Findings = append(rem.Findings, fmt.Sprintf("%s on %s (pid %d, %s:%d): %s.", l.Source, l.Node, l.PID, l.File, l.Line, l.Pair()))
	}
	rem.Findings = append(rem.Findings,
		"Read the logs of both ends first: a rank that failed or exited on its own makes its peers' links fail.",
		"For a RoCE link, on both servers: `hccn_tool -i <phy> -link -g` (UP?), `-optical -g` (module present, Rx power), `-ip -g` "+
			"(NIC address as in the ranktable), `-tls -g` (TLS must be the same on both ends), `-speed -g` (same speed), "+
			"and `-lldp -g` for the switch port.")
	return rem
}

// silentRemedy says what to collect about a rank that went silent.
func silentRemedy(s model.SilentRank) model.Remedy {
	last := "printed no time"
	if !s.LastLog.IsZero() {
		last = "stop at " + s.LastLog.Format(model.TextTime)
	}
	rem := model.Remedy{ID: model.RemedySilentRank, Title: fmt.Sprintf("Find out why rank %d (%s pid %d) stopped: its logs %s without an error", s.Rank, s.Node, s.PID, last)}
	rem.Findings = append(rem.Findings, s.Collect...)
	rem.Findings = append(rem.Findings, "If it was killed (OOM killer, the scheduler), fix that first: its peers' timeouts follow from it.")
	return rem
}

func incidentRemedyByRoot(r *model.Report, in *model.Incident) []model.Remedy {
	if in.Root == nil && len(in.SilentRanks) > 0 {
		return []model.Remedy{silentRemedy(in.SilentRanks[0])}
	}
	if in.Root == nil {
		find := model.Remedy{ID: "find_root", Title: "Find the rank that failed first: its logs are not in the bundle"}
		find.Findings = append(find.Findings,
			"Every event found is a peer's timeout; the failure that caused them happened in a process whose CANN logs (run/ and debug/plog) and screen log are missing.")
		for i, p := range in.SuspectedPeers {
			if i == 3 {
				break
			}
			where := "no process of the bundle has it"
			if p.InBundle {
				where = "a process of the bundle has it, but its logs show no failure of its own: look at its screen log and the node's dmesg"
			}
			find.Findings = append(find.Findings, fmt.Sprintf("%s named %s (%s).", model.PeerNamedBy(p), p.Peer, where))
		}
		find.Findings = append(find.Findings,
			fmt.Sprintf("Collect the logs of every node of the job (this bundle has %s) and run diagnose again.", model.JoinAnd(in.Nodes)))
		return []model.Remedy{find}
	}
	root := *in.Root
	p := processOf(r, root.Node, root.PID)
	switch root.Code {
	case model.CodeEI0011:
		return ei0011RootRemedies(r, root, p)
	case "EJ0002":
		return []model.Remedy{portDownRemedy(root)}
	case model.CodeEL0004:
		rem := model.Remedy{ID: model.RemedyHCCLBuffSize, Title: "NPU memory ran out while allocating: lower HCCL_BUFFSIZE or the number of communicators of the failed process, or free NPU memory"}
		if p != nil {
			rem.Findings = append(rem.Findings, fmt.Sprintf("%s holds %d communicator(s), each 2 × its buffer size (HCCL_BUFFSIZE %s, %s, unless its comm config sets one) + 1 MiB: %s of HCCL buffers.",
				model.Who(root), p.QPs.Communicators, model.FmtBytes(p.QPs.BuffSizeBytes), p.QPs.BuffSizeSetBy, model.FmtBytes(p.QPs.CCLBufferBytes)))
		}
		if r.BufferOOM != nil {
			rem.Findings = append(rem.Findings, r.BufferOOM.Findings...)
		}
		return []model.Remedy{rem}
	}
	_, title, remedy, _ := logstate.CodeInfo(root.Code)
	rem := model.Remedy{ID: "code_remedy", Title: fmt.Sprintf("%s %s on %s", root.Code, title, model.Who(root))}
	if remedy != "" {
		rem.Findings = append(rem.Findings, remedy)
	} else {
		rem.Findings = append(rem.Findings, "The fault catalog has no remedy for this code: read the line in the root's log and the HCCL fault-diagnosis guide.")
	}
	rem.Findings = append(rem.Findings, fmt.Sprintf("The line: %s:%d: %s", root.File, root.Line, root.Text))
	return []model.Remedy{rem}
}

// ei0011RootRemedies are the guide's four remedies with the failed
// process's own numbers (p nil: its settings are not in the bundle); a
// buffer-sized allocation puts HCCL_BUFFSIZE first.
func ei0011RootRemedies(r *model.Report, root model.Event, p *model.Process) []model.Remedy {
	qm := r.QPModel
	reduce, fewer, free := rootReduceMemory(root, p, qm), rootFewerLinks(root, p, qm), rootFreeMemory(root, qm)
	buff, buffer := rootBuffSize(r, root, p, qm)
	if buffer {
		return []model.Remedy{buff, free, reduce}
	}
	return []model.Remedy{reduce, fewer, free, buff}
}

// noSettings says that the failed process printed none of its own numbers.
func noSettings(root model.Event) string {
	return fmt.Sprintf("%s printed no HCCL settings or communicators in the bundle (its run/plog is missing): the numbers below are the bundle's, not its own.", model.Who(root))
}

// rootReduceMemory is remedy 1 on the failed rank: its QP and buffer memory.
func rootReduceMemory(root model.Event, p *model.Process, qm model.QPModel) model.Remedy {
	reduce := model.Remedy{ID: model.RemedyReduceMemoryUse,
		Title: "Lower the job's own NPU memory use on the failed rank's device (smaller batch size, fewer processes on it, merge or serialise communicators)"}
	if p == nil {
		reduce.Findings = append(reduce.Findings, noSettings(root))
		return reduce
	}
	q := p.QPs
	if q.QPMemoryHighBytes > 0 {
		reduce.Findings = append(reduce.Findings, fmt.Sprintf("Link setup of %s needs up to %s of NPU memory for QPs: %s QPs × %s (low bound %s QPs × %s = %s).",
			model.Who(root), model.FmtBytes(q.QPMemoryHighBytes), model.FmtNum(q.QPsHigh), model.FmtBytes(qm.QPBytesHigh), model.FmtNum(q.QPsLow), model.FmtBytes(qm.QPBytesLow), model.FmtBytes(q.QPMemoryLowBytes)))
	} else {
		reduce.Findings = append(reduce.Findings, fmt.Sprintf("%s printed no communicator with RoCE links ([Communicator Key Info] with serverNum > 1): its QP memory cannot be estimated.", model.Who(root)))
	}
	reduce.Findings = append(reduce.Findings, fmt.Sprintf("Its HCCL buffers: %d communicator(s), each 2 × its buffer size (HCCL_BUFFSIZE %s, %s, unless its comm config sets one) + 1 MiB: %s.",
		q.Communicators, model.FmtBytes(q.BuffSizeBytes), q.BuffSizeSetBy, model.FmtBytes(q.CCLBufferBytes)))
	return reduce
}

// rootFewerLinks is remedy 2 on the failed rank: its QP setting and the
// links of its communicators.
func rootFewerLinks(root model.Event, p *model.Process, qm model.QPModel) model.Remedy {
	fewer := model.Remedy{ID: model.RemedyFewerRoCELinks,
		Title: "Use fewer RoCE links: fewer QPs per connection (HCCL_RDMA_QPS_PER_CONNECTION, recommended 1 to 8), or an algorithm with fewer links"}
	if p == nil {
		fewer.Findings = append(fewer.Findings, noSettings(root))
	} else {
		q := p.QPs
		verdict := "within the recommended range [1, 8]"
		if q.AboveRecommended {
			verdict = fmt.Sprintf("ABOVE the recommended range [1, 8]: each connection creates %s QPs (N + 1); set it back to 1 (the default) or at most 8", model.FmtNum(hcclenv.QPsPerLink(q.QPsPerConnection)))
		}
		setBy := q.QPsPerConnectionSetBy
		if setBy == setByNotPrinted {
			setBy = "not printed, HCCL's default assumed"
		}
		fewer.Findings = append(fewer.Findings, fmt.Sprintf("HCCL_RDMA_QPS_PER_CONNECTION = %s (%s) in the failed process: %s.", model.FmtNum(q.QPsPerConnection), setBy, verdict))
		for i, c := range p.Communicators {
			if i == model.MaxListed {
				fewer.Findings = append(fewer.Findings, fmt.Sprintf("… and %d more communicator(s) (see the JSON report).", len(p.Communicators)-model.MaxListed))
				break
			}
			l := c.Links
			servers := fmt.Sprintf("serverNum %d", c.ServerNum)
			if c.ServerNum < 0 {
				servers = "serverNum not printed (CANN before Dec 2025)"
			}
			fewer.Findings = append(fewer.Findings, fmt.Sprintf("Its communicator %s: rankSize %d, %s → %s (ring) to %s (full mesh) RoCE peers, %s to %s QPs, %s to %s.",
				c.Name, c.RankSize, servers, model.FmtNum(l.PeersLow), model.FmtNum(l.PeersHigh), model.FmtNum(l.QPsLow), model.FmtNum(l.QPsHigh), model.FmtBytes(l.QPMemoryLowBytes), model.FmtBytes(l.QPMemoryHighBytes)))
		}
		if q.QPPortConfigPath != "" {
			fewer.Findings = append(fewer.Findings, fmt.Sprintf("HCCL_RDMA_QP_PORT_CONFIG_PATH is %s in the failed process: it takes precedence over HCCL_RDMA_QPS_PER_CONNECTION.", q.QPPortConfigPath))
		}
	}
	fewer.Findings = append(fewer.Findings, fmt.Sprintf("QP settings take effect in this order, highest first: %s.", strings.Join(qm.QPSettingPriority, " > ")))
	return fewer
}

// rootFreeMemory is remedy 3 on the failed rank's device.
func rootFreeMemory(root model.Event, qm model.QPModel) model.Remedy {
	free := model.Remedy{ID: model.RemedyFreeNPUMemory,
		Title: "Free NPU memory on the failed rank's device: stop other processes on it, look for leaks and stale communication resources"}
	dev := "its device"
	if root.Device >= 0 {
		dev = fmt.Sprintf("device %d", root.Device)
	}
	free.Findings = append(free.Findings,
		fmt.Sprintf("Run `npu-smi info` on %s and look at %s: every process there other than pid %d holds memory the link setup needed; each failed allocation is one QP of %s to %s.",
			root.Node, dev, root.PID, model.FmtBytes(qm.QPBytesLow), model.FmtBytes(qm.QPBytesHigh)),
		"While a job runs, hccl_exporter's hccl_link_setup_headroom_bytes shows free HBM minus the QP memory still ahead, per chip.")
	return free
}

// rootBuffSize is remedy 4, and whether the failed allocation was a
// buffer (then it comes first).
func rootBuffSize(r *model.Report, root model.Event, p *model.Process, qm model.QPModel) (model.Remedy, bool) {
	buff := model.Remedy{ID: model.RemedyHCCLBuffSize,
		Title: "Only for a cclBuffer out-of-memory (EL0004 from the driver, or EI0011 with a buffer-sized allocation): set HCCL_BUFFSIZE"}
	if size, ok := allocationBytes(root.Text); ok && size > qm.QPBytesHigh {
		// Newer HCCL raises EI0011 for any failed device allocation and
		// prints its exact size (cann-log-eras.md §8.3): larger than a
		// QP can be, it is a buffer, and HCCL_BUFFSIZE comes first.
		buff.Title = "The failed allocation was a buffer, not a QP: lower HCCL_BUFFSIZE (or the communicators' own buffer size), use fewer communicators, or free NPU memory"
		buff.Findings = append(buff.Findings, fmt.Sprintf("The failed allocation was %s bytes (%s), more than any QP needs (%s at most): HCCL was allocating a buffer.",
			model.FmtNum(size), model.FmtBytes(size), model.FmtBytes(qm.QPBytesHigh)))
		if p != nil {
			ccl := hcclenv.CCLBufferBytes(p.QPs.BuffSizeBytes)
			match := ""
			if math.Abs(ccl-size) < 1 {
				match = ": exactly the failed allocation"
			}
			buff.Findings = append(buff.Findings, fmt.Sprintf("Each communicator of %s allocates 2 × HCCL_BUFFSIZE %s (%s) + 1 MiB = %s at its first collective%s; it has %d communicator(s).",
				model.Who(root), model.FmtBytes(p.QPs.BuffSizeBytes), p.QPs.BuffSizeSetBy, model.FmtBytes(ccl), match, p.QPs.Communicators))
		}
		buff.Findings = append(buff.Findings, "Where a MoE or MC2 operator requires a minimum HCCL_BUFFSIZE (its own error says "+
			"the buffer is too small), keep that minimum and free NPU memory or lower the batch size instead.",
			"For large language models the guide recommends ceil(MicrobatchSize × SequenceLength × hiddenSize × sizeof(DataType) / "+
				"1 MiB) MB: `hccl_exporter diagnose buffsize --micro-batch-size N --seq-len N --hidden-size N --dtype bf16`.")
		return buff, true
	}
	if r.BufferOOM != nil && r.BufferOOM.HCCL {
		buff.Findings = append(buff.Findings, "This bundle ALSO holds a driver-reported out-of-memory while HCCL allocated its "+
			"buffer (EL0004): that one needs a smaller HCCL_BUFFSIZE or fewer communicators, not fewer QPs.")
	} else {
		buff.Findings = append(buff.Findings, "No driver-reported cclBuffer out-of-memory is in this bundle, and the failed allocation was QP-sized: HCCL_BUFFSIZE is not the lever for this EI0011.")
	}
	return buff, false
}

// markAllocate precedes the size in EI0011's message: "Failed to allocate
// <size> bytes of NPU memory."
const markAllocate = "Failed to allocate "

// allocationBytes reads the exact size of an EI0011 report ("Failed to
// allocate 420478976 bytes"); false for the QP range forms ("[size:
// [0.25MB, 3MB], …]", "262144~3145728").
func allocationBytes(text string) (float64, bool) {
	i := strings.Index(text, markAllocate)
	if i < 0 {
		return 0, false
	}
	rest := text[i+len(markAllocate):]
	l := 0
	for l < len(rest) && rest[l] >= '0' && rest[l] <= '9' {
		l++
	}
	if l == 0 || l > 15 || !strings.HasPrefix(rest[l:], " bytes") {
		return 0, false
	}
	n, err := strconv.ParseUint(rest[:l], 10, 64)
	return float64(n), err == nil
}

// portDownRemedy is the RoCE runbook's checks for a port that went down,
// on the failed rank's device.
func portDownRemedy(root model.Event) model.Remedy {
	dev := "<device>"
	if root.Device >= 0 {
		dev = fmt.Sprint(root.Device)
	}
	rem := model.Remedy{ID: "port_down", Title: fmt.Sprintf("The RoCE port of %s went down: check the link, the optics and the switch port", model.Who(root))}
	rem.Findings = append(rem.Findings,
		fmt.Sprintf("On %s: `hccn_tool -i %s -link -g` (UP or DOWN), `hccn_tool -i %s -link_stat -g` (how often it went down), "+
			"`hccn_tool -i %s -net_health -g` (Success or the failing check), `hccn_tool -i %s -optical -g` (optical "+
			"module power and temperature), `hccn_tool -i %s -lldp -g` (the switch port it is cabled to).",
			root.Node, dev, dev, dev, dev, dev),
		"A port that flaps or stays down: reseat or replace the optical module or cable, check the switch port's errors and "+
			"configuration (PFC, MTU), then restart the job; the other ranks' timeouts need no fix of their own.",
		"While a job runs, hccl_exporter's ascend_roce_link_up and ascend_roce_link_down_events_total show the port per chip (runbook: RoCELinkDown, RoCELinkFlapping in docs/runbooks.md).")
	return rem
}
