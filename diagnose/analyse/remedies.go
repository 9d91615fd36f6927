package analyse

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// procRef is a process with its node, for findings.
type procRef struct {
	node string
	p    *model.Process
}

func procsOf(r *model.Report) []procRef {
	var out []procRef
	for i := range r.Nodes {
		for j := range r.Nodes[i].Processes {
			out = append(out, procRef{r.Nodes[i].Name, &r.Nodes[i].Processes[j]})
		}
	}
	return out
}

func buildEI0011(r *model.Report, nodes []*nodeData) *model.EI0011Report {
	f := faultOf(r, model.CodeEI0011)
	if f == nil {
		return nil
	}
	out := &model.EI0011Report{Events: f.Count, Nodes: []string{},
		BufferOOMPresent: r.BufferOOM != nil && r.BufferOOM.HCCL}
	for _, n := range f.Nodes {
		out.Nodes = append(out.Nodes, n.Node)
	}
	procs := procsOf(r)
	qpSized, bufSized := ei0011Allocations(r, procs, nodes)
	// The example process of the bundle-wide findings is one that reported
	// EI0011 where the logs say which (the root cause's node, not the
	// first node of the bundle whose processes merely have the same
	// settings); any process otherwise.
	examples := reportersOf(procs, f)
	if len(examples) == 0 {
		examples = procs
	}
	in := ei0011Inputs{r: r, f: f, procs: procs, examples: examples, qpSized: qpSized, bufSized: bufSized, bufferOOM: out.BufferOOMPresent}
	out.Remedies = append(out.Remedies, in.reduceMemoryUse(), in.fewerRoCELinks(), in.freeNPUMemory(), in.hcclBuffSize())
	return out
}

// ei0011Inputs are what the bundle-wide EI0011 remedies are written from.
type ei0011Inputs struct {
	r         *model.Report
	f         *model.Fault // the EI0011 fault
	procs     []procRef
	examples  []procRef // the processes that reported EI0011, else all
	qpSized   []model.OOMEvidence
	bufSized  []model.OOMEvidence
	bufferOOM bool // the bundle also holds a cclBuffer out-of-memory
}

// reduceMemoryUse is remedy 1: the job's own memory use.
func (in ei0011Inputs) reduceMemoryUse() model.Remedy {
	procs, examples, qm := in.procs, in.examples, in.r.QPModel
	reduce := model.Remedy{ID: model.RemedyReduceMemoryUse,
		Title: "Lower the job's own NPU memory use (smaller batch size, close unneeded processes, merge or serialise communicators)"}
	if p, ok := maxBy(examples, func(q *model.Process) float64 { return q.QPs.QPMemoryHighBytes }); ok && p.p.QPs.QPMemoryHighBytes > 0 {
		reduce.Findings = append(reduce.Findings, fmt.Sprintf(
			"Link setup needs up to %s of NPU memory for QPs in one process: %s pid %d, %s QPs × %s (low bound %s QPs × %s = %s).",
			model.FmtBytes(p.p.QPs.QPMemoryHighBytes), p.node, p.p.PID, model.FmtNum(p.p.QPs.QPsHigh), model.FmtBytes(qm.QPBytesHigh),
			model.FmtNum(p.p.QPs.QPsLow), model.FmtBytes(qm.QPBytesLow), model.FmtBytes(p.p.QPs.QPMemoryLowBytes)))
	} else {
		reduce.Findings = append(reduce.Findings,
			"No communicator in the logs implies RoCE links (none printed [Communicator Key Info], or all are single-server): the QP memory cannot be estimated from this bundle.")
	}
	comms := 0
	for _, p := range procs {
		comms += p.p.QPs.Communicators
	}
	if p, ok := maxBy(examples, func(q *model.Process) float64 { return q.QPs.CCLBufferBytes }); ok && p.p.QPs.CCLBufferBytes > 0 {
		reduce.Findings = append(reduce.Findings, fmt.Sprintf(
			"HCCL also holds 2 × HCCL_BUFFSIZE + 1 MiB per communicator: up to %s in one process (%s pid %d: %d communicator(s) × (2 × %s + 1 MiB)); %d communicator(s) in %d process(es) in all.",
			model.FmtBytes(p.p.QPs.CCLBufferBytes), p.node, p.p.PID, p.p.QPs.Communicators, model.FmtBytes(p.p.QPs.BuffSizeBytes), comms, len(procs)))
	}
	return reduce

}

// fewerRoCELinks is remedy 2: fewer RoCE links and QPs.
func (in ei0011Inputs) fewerRoCELinks() model.Remedy {
	r, procs, qm := in.r, in.procs, in.r.QPModel
	fewer := model.Remedy{ID: model.RemedyFewerRoCELinks,
		Title: "Use fewer RoCE links: fewer QPs per connection (HCCL_RDMA_QPS_PER_CONNECTION, recommended 1 to 8), or an algorithm with fewer links"}
	fewer.Findings = append(fewer.Findings, qpsFindings(r, procs)...)
	fewer.Findings = append(fewer.Findings, fmt.Sprintf(
		"QP settings take effect in this order, highest first: %s. If changing HCCL_RDMA_QPS_PER_CONNECTION has no effect, check the higher ones on the nodes.",
		strings.Join(qm.QPSettingPriority, " > ")))
	if s := r.Setting(varQPPortConfig); s != nil {
		for _, g := range s.Values {
			v := g.Value
			if v == "" {
				v = "empty"
			}
			fewer.Findings = append(fewer.Findings, fmt.Sprintf("HCCL_RDMA_QP_PORT_CONFIG_PATH is %s on %s.", v, model.Where(g.Nodes)))
		}
	} else {
		fewer.Findings = append(fewer.Findings, "HCCL_RDMA_QP_PORT_CONFIG_PATH: not printed in the logs.")
	}
	fewer.Findings = append(fewer.Findings, communicatorFindings(procs, qm)...)
	return fewer

}

// freeNPUMemory is remedy 3: free memory.
func (in ei0011Inputs) freeNPUMemory() model.Remedy {
	f, qm := in.f, in.r.QPModel
	free := model.Remedy{ID: model.RemedyFreeNPUMemory,
		Title: "Free NPU memory: stop unrelated inference, training or other processes on the nodes, look for leaks and stale communication resources, restart the job's processes"}
	var pids []string
	for _, n := range f.Nodes {
		pids = append(pids, n.Node+" ("+model.PIDList(n.PIDs)+")")
	}
	what := fmt.Sprintf("each failed allocation in the range form is one QP: %s to %s depending on the QP depth", model.FmtBytes(qm.QPBytesLow), model.FmtBytes(qm.QPBytesHigh))
	if n := len(in.qpSized); n > 0 && len(in.bufSized) > 0 {
		what = fmt.Sprintf("%d report(s) name a QP's size (%s to %s, depending on the QP depth)", n, model.FmtBytes(qm.QPBytesLow), model.FmtBytes(qm.QPBytesHigh))
	}
	if n := len(in.bufSized); n > 0 {
		what += fmt.Sprintf("; %d name a buffer-sized allocation (see the HCCL_BUFFSIZE remedy)", n)
	}
	free.Findings = append(free.Findings,
		fmt.Sprintf("EI0011 was reported %d time(s), on %s; %s.", f.Count, model.FewOf(pids), what),
		"Run `npu-smi info` on those nodes to see which processes hold NPU memory; hccl_exporter's hccl_link_setup_headroom_bytes shows free HBM minus the QP memory bound per chip while a job runs.")
	return free

}

// hcclBuffSize is remedy 4: HCCL_BUFFSIZE, for the other kind of HCCL out-of-memory.
func (in ei0011Inputs) hcclBuffSize() model.Remedy {
	r := in.r
	buff := model.Remedy{ID: model.RemedyHCCLBuffSize,
		Title: "Only for a cclBuffer out-of-memory reported by the driver (EL0004), not for EI0011: set HCCL_BUFFSIZE"}
	if len(in.bufSized) > 0 {
		buff.Title = "For a cclBuffer out-of-memory (EI0011 naming a buffer-sized allocation, or the driver's EL0004): set HCCL_BUFFSIZE"
	}
	buff.Findings = append(buff.Findings, buffSizeFindings(r)...)
	for i, ev := range in.bufSized {
		if i == model.MaxListed {
			buff.Findings = append(buff.Findings, fmt.Sprintf("… and %d more buffer-sized EI0011 reports.", len(in.bufSized)-model.MaxListed))
			break
		}
		buff.Findings = append(buff.Findings, fmt.Sprintf(
			"EI0011 at %s %s:%d failed to allocate %d bytes (%s): at least 2 × HCCL_BUFFSIZE, so the cclBuffer, not a QP (HCCL "+
				"reports every failed device allocation as EI0011 with its exact size since Jan 2026). Lower HCCL_BUFFSIZE or "+
				"the number of communicators; fewer QPs do not help this allocation.",
			ev.Node, ev.File, ev.Line, ev.SizeBytes, model.FmtBytes(float64(ev.SizeBytes))))
	}
	if len(in.bufSized) > 0 {
		buff.Findings = append(buff.Findings,
			"Exception: MoE / MC2 fused operators (MoeDistributeDispatch and Combine, MatmulAllReduce, AllGatherMatmul, …) check "+
				"that HCCL_BUFFSIZE is large enough and fail with \"HCCL_BUFFSIZE too small\" otherwise: for such a job keep "+
				"HCCL_BUFFSIZE as they require and free NPU memory or use fewer communicators instead.")
	}
	if len(in.bufSized) > 0 {
		buff.Findings = append(buff.Findings, "This EI0011 is the buffer failure: the QP remedies above do not apply to those reports.")
	} else if in.bufferOOM {
		buff.Findings = append(buff.Findings,
			"This bundle ALSO holds a driver-reported out-of-memory while HCCL allocated its buffer (EL0004): that failure needs a "+
				"smaller HCCL_BUFFSIZE or fewer communicators, not fewer QPs (see the buffer out-of-memory section).")
	} else {
		buff.Findings = append(buff.Findings,
			"No driver-reported cclBuffer out-of-memory (EL0004 with HCCL in its traceback) is in this bundle: HCCL_BUFFSIZE is not the cause of this EI0011.")
	}
	buff.Findings = append(buff.Findings,
		"For large language models the guide recommends ceil(MicrobatchSize × SequenceLength × hiddenSize × sizeof(DataType) / 1 "+
			"MiB) MB: `hccl_exporter diagnose buffsize --micro-batch-size N --seq-len N --hidden-size N --dtype bf16`.")
	return buff
}

// ei0011Allocations sorts the bundle's EI0011 reports by the allocation
// they name: a QP (the range forms, or an exact size within the per-QP
// bounds) or a buffer (an exact size of at least 2 × the smallest
// HCCL_BUFFSIZE in force: the cclBuffer's input and output halves). Other
// exact sizes are in neither list.
func ei0011Allocations(r *model.Report, procs []procRef, nodes []*nodeData) (qp, buffer []model.OOMEvidence) {
	minBuff := float64(hcclenv.DefaultBuffSizeBytes)
	for i, p := range procs {
		if b := p.p.QPs.BuffSizeBytes; b > 0 && (i == 0 || b < minBuff) {
			minBuff = b
		}
	}
	for _, n := range nodes {
		for _, ev := range n.oom {
			if ev.Code != model.CodeEI0011 {
				continue
			}
			switch {
			case ev.QPRange || ev.SizeBytes > 0 && float64(ev.SizeBytes) <= r.QPModel.QPBytesHigh:
				qp = append(qp, ev)
			case float64(ev.SizeBytes) >= 2*minBuff:
				buffer = append(buffer, ev)
			}
		}
	}
	return qp, buffer
}

// qpsFindings lists the HCCL_RDMA_QPS_PER_CONNECTION values in force.
func qpsFindings(r *model.Report, procs []procRef) []string {
	if len(procs) == 0 {
		return []string{"No process printed its HCCL settings ([HCCL_ENV] lines in run/plog): HCCL_RDMA_QPS_PER_CONNECTION is unknown; HCCL's default is 1."}
	}
	type key struct {
		v     float64
		setBy string
	}
	groups := map[key]map[string][]int{}
	for _, p := range procs {
		k := key{p.p.QPs.QPsPerConnection, p.p.QPs.QPsPerConnectionSetBy}
		if groups[k] == nil {
			groups[k] = map[string][]int{}
		}
		groups[k][p.node] = append(groups[k][p.node], p.p.PID)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].v != keys[j].v {
			return keys[i].v > keys[j].v
		}
		return keys[i].setBy < keys[j].setBy
	})
	var out []string
	for _, k := range keys {
		var nodes []model.NodePIDs
		for _, n := range sortedKeys(groups[k]) {
			nodes = append(nodes, model.NodePIDs{Node: n, PIDs: groups[k][n]})
		}
		verdict := "within the recommended range [1, 8]"
		switch {
		case k.v > 8:
			verdict = fmt.Sprintf("ABOVE the recommended range [1, 8]: every connection creates %s QPs (N + 1, HCCL's transport "+
				"code); set it back to 1 (the default) or at most 8", model.FmtNum(hcclenv.QPsPerLink(k.v)))
		case k.v < 1:
			verdict = "outside HCCL's range [1, 32]"
		}
		setBy := k.setBy
		if setBy == setByNotPrinted {
			setBy = "not printed, HCCL's default assumed"
		}
		out = append(out, fmt.Sprintf("HCCL_RDMA_QPS_PER_CONNECTION = %s (%s) on %s: %s.", model.FmtNum(k.v), setBy, model.Where(nodes), verdict))
	}
	return out
}

// communicatorFindings describes the links of the bundle's communicators,
// one line per distinct shape (rank size, server count, QPs per connection).
func communicatorFindings(procs []procRef, qm model.QPModel) []string {
	type shape struct {
		rankSize, serverNum int
		qps                 float64
		intraRoCE           bool
	}
	type agg struct {
		links model.Links
		names map[string]bool
		procs int
	}
	shapes := map[shape]*agg{}
	for _, p := range procs {
		for _, c := range p.p.Communicators {
			qps := 0.0
			if c.Links.PeersHigh > 0 {
				qps = c.Links.QPsHigh / c.Links.PeersHigh
			}
			s := shape{c.RankSize, c.ServerNum, qps, p.p.QPs.IntraRoCE}
			a := shapes[s]
			if a == nil {
				a = &agg{links: c.Links, names: map[string]bool{}}
				shapes[s] = a
			}
			a.names[c.Name] = true
			a.procs++
		}
	}
	if len(shapes) == 0 {
		return []string{"No communicator printed [Communicator Key Info] (rankSize, serverNum) in run/plog: the number of RoCE links cannot be computed from this bundle."}
	}
	keys := make([]shape, 0, len(shapes))
	for s := range shapes {
		keys = append(keys, s)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := shapes[keys[i]].links.QPMemoryHighBytes, shapes[keys[j]].links.QPMemoryHighBytes
		if a != b {
			return a > b
		}
		if keys[i].rankSize != keys[j].rankSize {
			return keys[i].rankSize > keys[j].rankSize
		}
		return keys[i].serverNum > keys[j].serverNum
	})
	var out []string
	for i, s := range keys {
		if i == model.MaxListed {
			out = append(out, fmt.Sprintf("… and %d more communicator shapes (see the JSON report).", len(keys)-model.MaxListed))
			break
		}
		a := shapes[s]
		names := sortedKeys(a.names)
		name := names[0]
		if len(names) > 1 {
			name = fmt.Sprintf("%s and %d more", names[0], len(names)-1)
		}
		l := a.links
		if l.PeersHigh == 0 {
			out = append(out, fmt.Sprintf("Communicator %s: rankSize %d, %s: no RoCE links (one server or one A3 superpod; HCCL_INTRA_ROCE_ENABLE only adds links on PCIe cards).",
				name, s.rankSize, model.ServerNumText(s.serverNum)))
			continue
		}
		out = append(out, fmt.Sprintf(
			"Communicator %s (%d rank(s) in the bundle): rankSize %d, %s → each rank links to %s (ring) to %s (full mesh) peers "+
				"over RoCE × %s QPs per connection = %s to %s QPs → %s to %s of NPU memory (%s to %s per QP).",
			name, a.procs, s.rankSize, model.ServerNumText(s.serverNum), model.FmtNum(l.PeersLow), model.FmtNum(l.PeersHigh), model.FmtNum(s.qps),
			model.FmtNum(l.QPsLow), model.FmtNum(l.QPsHigh), model.FmtBytes(l.QPMemoryLowBytes), model.FmtBytes(l.QPMemoryHighBytes),
			model.FmtBytes(qm.QPBytesLow), model.FmtBytes(qm.QPBytesHigh)))
	}
	return out
}

// buffSizeFindings lists the HCCL_BUFFSIZE values in force.
func buffSizeFindings(r *model.Report) []string {
	s := r.Setting(varBuffSize)
	if s == nil {
		return []string{"HCCL_BUFFSIZE: not printed in the logs; HCCL's default is 200 MB (2 × 200 MB per communicator)."}
	}
	var out []string
	for _, g := range s.Values {
		out = append(out, fmt.Sprintf("HCCL_BUFFSIZE = %s MB (%s) on %s: each communicator holds 2 × %s MB.",
			g.Value, strings.Join(g.SetBy, ", "), model.Where(g.Nodes), g.Value))
	}
	if !s.Consistent {
		out = append(out, "HCCL_BUFFSIZE differs between processes: the guide requires the same value on every node.")
	}
	return out
}

// reportersOf returns the processes that reported fault f (by node and
// pid), with a QP model only.
func reportersOf(procs []procRef, f *model.Fault) []procRef {
	reported := map[string]map[int]bool{}
	for _, n := range f.Nodes {
		for _, pid := range n.PIDs {
			if reported[n.Node] == nil {
				reported[n.Node] = map[int]bool{}
			}
			reported[n.Node][pid] = true
		}
	}
	var out []procRef
	for _, p := range procs {
		if reported[p.node][p.p.PID] && p.p.QPs.QPMemoryHighBytes > 0 {
			out = append(out, p)
		}
	}
	return out
}

func maxBy(procs []procRef, f func(*model.Process) float64) (procRef, bool) {
	best, ok := procRef{}, false
	bestV := math.Inf(-1)
	for _, p := range procs {
		if v := f(p.p); v > bestV {
			best, bestV, ok = p, v, true
		}
	}
	return best, ok
}

func buildBufferOOM(r *model.Report, nodes []*nodeData) *model.BufferOOMReport {
	f := faultOf(r, model.CodeEL0004)
	if f == nil {
		return nil
	}
	out := &model.BufferOOMReport{Events: f.Count, PlogEvents: f.BySource.Plog, Evidence: []model.OOMEvidence{}}
	for _, n := range nodes {
		for _, ev := range n.oom {
			if ev.Code == model.CodeEL0004 {
				out.Evidence = append(out.Evidence, ev)
			}
		}
	}
	out.HCCL = out.PlogEvents > 0
	for _, ev := range out.Evidence {
		if ev.HCCL {
			out.HCCL = true
		}
	}
	if !out.HCCL {
		out.Findings = append(out.Findings,
			"EL0004 (driver out-of-memory) was reported, but neither a traceback naming HCCL nor HCCL's own device-memory failure "+
				"([DeviceMem][Alloc]) is in the bundle: another component ran out of NPU memory; HCCL_BUFFSIZE is not the "+
				"lever, free memory instead.")
		return out
	}
	out.Findings = append(out.Findings,
		"The driver ran out of NPU memory while HCCL allocated its buffer (cclBuffer): this is not EI0011. Each communicator holds "+
			"2 × HCCL_BUFFSIZE MB; lower HCCL_BUFFSIZE, use fewer communicators, or free NPU memory.")
	for _, ev := range out.Evidence {
		if ev.HCCL && ev.SizeBytes > 0 {
			out.Findings = append(out.Findings, fmt.Sprintf(
				"%s %s:%d: the failed allocation was %d bytes (%s); compare it with 2 × HCCL_BUFFSIZE per communicator.",
				ev.Node, ev.File, ev.Line, ev.SizeBytes, model.FmtBytes(float64(ev.SizeBytes))))
			break
		}
	}
	out.Findings = append(out.Findings, buffSizeFindings(r)...)
	out.Findings = append(out.Findings,
		"For large language models the guide recommends ceil(MicrobatchSize × SequenceLength × hiddenSize × sizeof(DataType) / 1 "+
			"MiB) MB: `hccl_exporter diagnose buffsize --micro-batch-size N --seq-len N --hidden-size N --dtype bf16`.")
	return out
}
