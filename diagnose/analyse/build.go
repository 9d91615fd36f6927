package analyse

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// Variable names the report reads.
const (
	varQPs          = hcclenv.QPsPerConnection
	varQPPortConfig = hcclenv.QPPortConfigPath
	varBuffSize     = hcclenv.BuffSize
	varIntraRoCE    = hcclenv.IntraRoCEEnable
)

// setByNotPrinted marks a value the logs did not print and HCCL's default
// was assumed.
const setByNotPrinted = "not_printed"

// HCCL_RDMA_QPS_PER_CONNECTION's recommended range (HCCL docs: "建议配置范围
// [1,8]"; above 8 there is no guaranteed gain and memory may run out).
const (
	recommendedQPsMin = 1
	recommendedQPsMax = 8
)

// qpSettingPriority is the order in which QP settings take effect, highest
// first (HCCL_RDMA_QPS_PER_CONNECTION.md).
var qpSettingPriority = []string{
	"hccn_tool -s multi_qp (management plane)",
	"NSLB QP configuration (hccn_tool -t nslb-dp)",
	"HCCL_RDMA_QP_PORT_CONFIG_PATH",
	"HCCL_RDMA_QPS_PER_CONNECTION",
}

// build assigns groups to nodes, merges them and fills in the report, one
// step after the other.
func build(ins []*bundle.Input, opts Options) *model.Report {
	r := newReport(opts)
	nodes := assignNodes(r, ins, opts.Layout)
	names := sortedKeys(nodes)
	all := make([]*nodeData, 0, len(names))
	for _, name := range names {
		n := nodes[name]
		n.merge()
		all = append(all, n)
	}
	zones, basis := zoneNodes(r, all, &opts)
	for _, n := range all {
		r.Nodes = append(r.Nodes, buildNode(n, opts))
	}
	r.Faults = buildFaults(all, opts)
	cm, clock := measureClocks(all, zones, basis)
	for _, name := range sortedKeys(opts.NodeLocations) {
		if nodes[name] == nil {
			clock.Notes = append(clock.Notes, fmt.Sprintf("A zone was given for node %s, which is not in the bundle (nodes: %s).", name, strings.Join(names, ", ")))
		}
	}
	r.Clock = clock
	analyse(r, all, cm, opts)
	r.Settings = buildSettings(r.Nodes)
	for _, s := range r.Settings {
		if !s.Consistent && !s.PerNode {
			r.InconsistentVariables = append(r.InconsistentVariables, s.Variable)
		}
	}
	r.BufferOOM = buildBufferOOM(r, all)
	r.EI0011 = buildEI0011(r, all)
	rootRemedies(r)
	setStatus(r)
	return r
}

// newReport is an empty report: lists empty, not null, in its JSON.
func newReport(opts Options) *model.Report {
	return &model.Report{
		SchemaVersion: model.SchemaVersion,
		TimeZone:      opts.Location.String(),
		Inputs:        []model.Input{},
		Nodes:         []model.Node{},
		Faults:        []model.Fault{},
		Settings:      []model.Setting{},
		Errors:        []string{},
		QPModel: model.QPModel{
			QPBytesLow: opts.QP.QPBytesLow, QPBytesHigh: opts.QP.QPBytesHigh,
			RecommendedQPsPerConnection: [2]int{recommendedQPsMin, recommendedQPsMax},
			MaxQPsPerConnection:         headroom.HCCLMaxQPsPerConnection,
			QPSettingPriority:           qpSettingPriority,
		},
		InconsistentVariables: []string{},
	}
}

// assignNodes assigns every input's groups to nodes (by its layout) and
// lists the inputs and their read errors in the report.
func assignNodes(r *model.Report, ins []*bundle.Input, layout bundle.Layout) map[string]*nodeData {
	nodes := map[string]*nodeData{}
	for _, in := range ins {
		keys := sortedKeys(in.Groups)
		a := bundle.NewNodeAssigner(in.Name, append([]string(nil), keys...), layout)
		names := map[string]bool{}
		r.Errors = append(r.Errors, in.Errs...)
		for _, k := range keys {
			g := in.Groups[k]
			name := a.Node(k)
			names[name] = true
			n := nodes[name]
			if n == nil {
				n = &nodeData{name: name}
				nodes[name] = n
			}
			n.groups = append(n.groups, g)
			r.Errors = append(r.Errors, g.Errs...)
		}
		if len(keys) == 0 {
			r.Errors = append(r.Errors, fmt.Sprintf("%s: no log files found (plog-<pid>_<time>.log, device-<pid>_<time>.log, *.log, *.txt)", in.Path))
		}
		r.Inputs = append(r.Inputs, buildInput(in, sortedKeys(names)))
	}
	return nodes
}

// buildInput is one input of the report: what was read and skipped, the
// collection tools it showed and what it lacks.
func buildInput(in *bundle.Input, nodes []string) model.Input {
	ri := model.Input{Path: in.Path, Type: in.Type, Nodes: nodes, SkippedFiles: in.Skipped,
		Layouts: in.Layouts(), Skipped: in.SkippedGroups()}
	ri.Read, ri.ReadDirsMore = in.ReadDirs()
	plogs, screens := 0, 0
	for _, g := range in.Groups {
		if g.Kind == bundle.KindScreen {
			screens += len(g.Files)
		} else {
			plogs += len(g.Files)
		}
	}
	ri.Advice = bundle.LayoutAdvice(ri.Layouts, plogs, screens)
	if ri.Advice == nil {
		ri.Advice = []string{}
	}
	return ri
}

// zoneNodes reads each node's times in its zone: given (--node-timezone),
// inferred from its communicator identifiers (--timezone auto), assumed
// from the other nodes, or --timezone's. When every node printed in one
// zone, the report speaks it (opts.Location and r.TimeZone become it). It
// returns each node's zone and why.
func zoneNodes(r *model.Report, all []*nodeData, opts *Options) (zones, basis map[string]string) {
	zones, basis = map[string]string{}, map[string]string{}
	locs := map[string]*time.Location{}
	inferred := map[string]int{} // zone → nodes that showed it
	for _, n := range all {
		name := n.name
		zones[name] = opts.Location.String()
		basis[name] = model.ZoneBasisFlag
		locs[zones[name]] = opts.Location
		if loc := opts.NodeLocations[name]; loc != nil {
			n.rezone(opts.Location, loc)
			zones[name], basis[name] = loc.String(), model.ZoneBasisNode
			locs[zones[name]] = loc
		} else if opts.InferZones {
			if loc, votes, ok := inferNodeZone(n.sync, opts.Location); ok {
				n.rezone(opts.Location, loc)
				zones[name], basis[name] = loc.String(), fmt.Sprintf("inferred from %d communicator identifier(s)", votes)
				locs[zones[name]] = loc
				inferred[zones[name]]++
			} else {
				basis[name] = model.ZoneBasisNoEvidence
			}
		}
	}
	// A node without evidence of its own runs in the same job, usually in
	// the same cluster: it takes the zone most other nodes showed, and the
	// report says it was assumed.
	if common := mostCommon(inferred); common != "" {
		for _, n := range all {
			if basis[n.name] == model.ZoneBasisNoEvidence {
				n.rezone(opts.Location, locs[common])
				zones[n.name] = common
				basis[n.name] = model.ZoneBasisAssumed
			}
		}
	}
	// When every node printed in one zone, the report speaks it, so that
	// its times read as printed; otherwise times are converted to the
	// --timezone zone and the header says so.
	if distinct := sortedKeys(invert(zones)); len(distinct) == 1 {
		opts.Location = locs[distinct[0]]
		r.TimeZone = distinct[0]
	}
	return zones, basis
}

// setStatus sets the report's status and exit code.
func setStatus(r *model.Report) {
	switch {
	case len(r.Errors) > 0:
		r.Status, r.ExitCode = model.StatusIncomplete, 2
	case len(r.Faults) > 0 || len(r.InconsistentVariables) > 0:
		r.Status, r.ExitCode = model.StatusFindings, 1
	default:
		r.Status, r.ExitCode = model.StatusClean, 0
	}
}

// sortedKeys returns the keys of m in ascending order, never nil (JSON
// arrays built from it print [] when empty, not null).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func buildNode(n *nodeData, opts Options) model.Node {
	out := model.Node{Name: n.name, Bytes: n.bytes, Lines: n.lines, Processes: []model.Process{},
		Files: model.FileCounts{Plog: n.files.plog, Device: n.files.device, Screen: n.files.screen}}
	pids := sortedKeys(n.procs)
	for _, pid := range pids {
		out.Processes = append(out.Processes, buildProcess(n.procs[pid], opts))
	}
	return out
}

func buildProcess(p *procData, opts Options) model.Process {
	out := model.Process{PID: p.pid, Name: p.name, LastWrite: stamp(p.lastWrite, opts),
		SettingsSet: logstate.SettingsID(p.env), Settings: []model.SettingValue{}, Communicators: []model.Communicator{}}
	vars := sortedKeys(p.env)
	for _, v := range vars {
		e := p.env[v]
		sv := model.SettingValue{Variable: v, Value: e.Value, SetBy: e.SetBy}
		if e.HasNumber {
			num := e.Number
			sv.Number = &num
		}
		out.Settings = append(out.Settings, sv)
	}

	q := &out.QPs
	q.QPsPerConnection, q.QPsPerConnectionSetBy = headroom.HCCLDefaultQPsPerConnection, setByNotPrinted
	if e, ok := p.env[varQPs]; ok && e.HasNumber {
		q.QPsPerConnection, q.QPsPerConnectionSetBy = e.Number, e.SetBy
	}
	q.AboveRecommended = q.QPsPerConnection > recommendedQPsMax
	// HCCL rejects a value outside [1, 32] at init; the links then use
	// the default.
	qps := q.QPsPerConnection
	if qps < 1 || qps > headroom.HCCLMaxQPsPerConnection {
		qps = headroom.HCCLDefaultQPsPerConnection
	}
	if e, ok := p.env[varQPPortConfig]; ok {
		q.QPPortConfigPath = e.Value
	}
	if e, ok := p.env[varIntraRoCE]; ok && e.HasNumber {
		q.IntraRoCE = e.Number == 1
	}
	interHCCSDisabled := false
	if e, ok := p.env[hcclenv.InterHCCSDisable]; ok && e.HasNumber {
		interHCCSDisabled = e.Number == 1
	}
	q.BuffSizeBytes, q.BuffSizeSetBy = headroom.HCCLDefaultBuffSizeBytes, setByNotPrinted
	if e, ok := p.env[varBuffSize]; ok && e.HasNumber && e.Number > 0 {
		q.BuffSizeBytes, q.BuffSizeSetBy = e.Number, e.SetBy
	}
	q.Communicators = len(p.comms)
	// Each communicator of more than one rank allocates 2 × its buffer size
	// (its [Load] comm config, else HCCL_BUFFSIZE) + 1 MiB.
	q.CCLBufferBytes = 0
	for _, c := range p.comms {
		if c.RankSize <= 1 {
			continue
		}
		b := q.BuffSizeBytes
		if c.BufferSizeBytes > 0 {
			b = float64(c.BufferSizeBytes)
		}
		q.CCLBufferBytes += hcclenv.CCLBufferBytes(b)
	}
	for _, c := range p.comms {
		l := links(opts.QP, c, qps, q.IntraRoCE, interHCCSDisabled)
		out.Communicators = append(out.Communicators, model.Communicator{Name: c.Name, RankSize: c.RankSize,
			ServerNum: c.ServerNum, UserRank: c.UserRank, DevicePhyID: c.DevicePhyID, Links: l})
		q.QPsLow += l.QPsLow
		q.QPsHigh += l.QPsHigh
		q.QPMemoryLowBytes += l.QPMemoryLowBytes
		q.QPMemoryHighBytes += l.QPMemoryHighBytes
	}
	return out
}

// links runs the headroom model on one communicator of one process on a
// single pretend chip, as if none of its links were set up yet: with one QP
// per connection on a device type without multi-QP its QP bounds are the
// peer bounds. The QPs per connection then follow HCCL (N + 1 for N > 1,
// headroom.QPsPerLink).
func links(cfg headroom.Config, c comm.Communicator, qps float64, intraRoCE, interHCCSDisabled bool) model.Links {
	settings := func(headroom.ChipProcess) (headroom.ProcessSettings, bool) {
		return headroom.ProcessSettings{PID: 1, QPsPerConnection: 1, QPsKnown: true,
			BuffSizeBytes: headroom.HCCLDefaultBuffSizeBytes, BuffSizeKnown: true, IntraRoCE: intraRoCE, InterHCCSDisabled: interHCCSDisabled,
			Communicators: []comm.Communicator{{Name: c.Name, RankSize: c.RankSize, ServerNum: c.ServerNum,
				SuperPodNum: c.SuperPodNum, ModuleNum: c.ModuleNum, DeviceType: c.DeviceType, SuperPodMode: c.SuperPodMode, StandardCard: c.StandardCard,
				OtherPeers: c.OtherPeers}}}, true
	}
	// The pretend chip's id is the zero ChipID: only the bounds are read.
	h := headroom.Model(cfg, nil, []headroom.ChipProcess{{PID: 1}}, settings)
	var l model.Links
	if len(h) == 1 {
		l.PeersLow, l.PeersHigh = h[0].QPsLow, h[0].QPsHigh
	}
	perLink := headroom.QPsPerLink(qps, c.DeviceType)
	l.QPsLow, l.QPsHigh = l.PeersLow*perLink, l.PeersHigh*perLink
	l.QPMemoryLowBytes, l.QPMemoryHighBytes = l.QPsLow*cfg.QPBytesLow, l.QPsHigh*cfg.QPBytesHigh
	return l
}

func buildFaults(nodes []*nodeData, opts Options) []model.Fault {
	byCode := map[string]*model.Fault{}
	total := map[string]*logstate.FaultSummary{}
	for _, n := range nodes {
		codes := sortedKeys(n.faults)
		for _, c := range codes {
			fs := n.faults[c]
			mergeFault(total, *fs)
			f := byCode[c]
			if f == nil {
				f = &model.Fault{Code: c, Stage: fs.Stage, Title: fs.Title, Remedy: fs.Remedy}
				byCode[c] = f
			}
			pids := fs.PIDs
			if pids == nil {
				pids = []int{}
			}
			f.Nodes = append(f.Nodes, model.FaultNode{Node: n.name, Count: fs.Count, BySource: sources(fs.BySource),
				First: stamp(fs.First, opts), Last: stamp(fs.Last, opts), PIDs: pids})
		}
	}
	out := make([]model.Fault, 0, len(byCode))
	for _, c := range sortedKeys(byCode) {
		f := byCode[c]
		t := total[c]
		f.Count, f.BySource = t.Count, sources(t.BySource)
		f.First, f.Last = stamp(t.First, opts), stamp(t.Last, opts)
		out = append(out, *f)
	}
	return out
}

func sources(m map[string]uint64) model.Sources {
	return model.Sources{Screen: m[logstate.FaultSourceScreen], Plog: m[logstate.FaultSourcePlog]}
}

func stamp(t time.Time, opts Options) model.Timestamp {
	if t.IsZero() {
		return model.Timestamp{}
	}
	return model.Timestamp{Time: t.In(opts.Location)}
}

// buildSettings groups every process's settings by variable and value.
func buildSettings(nodes []model.Node) []model.Setting {
	type valueAgg struct {
		setBy map[string]bool
		procs int
		pids  map[string][]int
	}
	vals := map[string]map[string]*valueAgg{} // variable → value → agg
	nodeVals := map[string]map[string]map[string]bool{}
	for _, n := range nodes {
		for _, p := range n.Processes {
			for _, s := range p.Settings {
				if vals[s.Variable] == nil {
					vals[s.Variable] = map[string]*valueAgg{}
					nodeVals[s.Variable] = map[string]map[string]bool{}
				}
				a := vals[s.Variable][s.Value]
				if a == nil {
					a = &valueAgg{setBy: map[string]bool{}, pids: map[string][]int{}}
					vals[s.Variable][s.Value] = a
				}
				a.setBy[s.SetBy] = true
				a.procs++
				a.pids[n.Name] = append(a.pids[n.Name], p.PID)
				if nodeVals[s.Variable][n.Name] == nil {
					nodeVals[s.Variable][n.Name] = map[string]bool{}
				}
				nodeVals[s.Variable][n.Name][s.Value] = true
			}
		}
	}
	vars := sortedKeys(vals)
	out := make([]model.Setting, 0, len(vars))
	for _, v := range vars {
		s := model.Setting{Variable: v, Consistent: len(vals[v]) == 1, PerNode: perNodeVariables[v]}
		var first string
		for _, set := range nodeVals[v] {
			key := strings.Join(sortedKeys(set), "\x00")
			if first == "" {
				first = key
			} else if key != first {
				s.AcrossNodes = true
			}
		}
		for value, a := range vals[v] {
			g := model.SettingGroup{Value: value, SetBy: sortedKeys(a.setBy), Processes: a.procs}
			for _, node := range sortedKeys(a.pids) {
				pids := a.pids[node]
				sort.Ints(pids)
				g.Nodes = append(g.Nodes, model.NodePIDs{Node: node, PIDs: pids})
			}
			s.Values = append(s.Values, g)
		}
		sort.Slice(s.Values, func(i, j int) bool {
			if s.Values[i].Processes != s.Values[j].Processes {
				return s.Values[i].Processes > s.Values[j].Processes
			}
			return s.Values[i].Value < s.Values[j].Value
		})
		out = append(out, s)
	}
	return out
}

func faultOf(r *model.Report, code string) *model.Fault {
	for i := range r.Faults {
		if r.Faults[i].Code == code {
			return &r.Faults[i]
		}
	}
	return nil
}

// invert returns the set of values of m.
func invert(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for _, v := range m {
		out[v] = true
	}
	return out
}

// mostCommon returns the key with the highest count (the first by name on a
// tie), or "".
func mostCommon(m map[string]int) string {
	best, n := "", 0
	for _, k := range sortedKeys(m) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}
