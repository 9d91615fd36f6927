package logstate

import (
	"slices"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Caps that keep one runaway process from growing the state without bound.
const (
	maxPeersPerComm   = 1 << 16 // distinct remote ranks remembered per communicator
	maxConfigsPerProc = 64      // [Load] comm config entries waiting for their communicator
)

// processLinks is what a process's run log says about its links and
// buffers beyond the communicators themselves.
type processLinks struct {
	// pendingBuf sums `Create ccl buffer success` sizes not yet tied to a
	// communicator: HCCL's line names none, and allocates the buffer right
	// before the first link set of the communicator's first collective, so
	// the next `create hccl transport:` line of a communicator without a
	// buffer claims them.
	pendingBuf uint64
	// orphanQPs are QPs whose operator tag names no live communicator.
	orphanQPs uint64
	// configs holds `[Load] comm config` buffer sizes by communicator name
	// until the communicator is created.
	configs map[string]uint64
	// bufferNames holds their bufferName[…] likewise (only non-empty ones).
	bufferNames map[string]string
	// expansionModes holds their opExpansionMode (`[Load] comm config
	// info of`) likewise.
	expansionModes map[string]string
	// qpns are the `rdma qpn[…]` of its QPs (up to maxQPNsPerProc), which
	// the headroom model matches to hccn_tool's live QPs.
	qpns map[uint32]struct{}
	// peers holds the distinct remote ranks linked, per communicator.
	peers map[string]*peerSets
	// tags holds, per communicator, the first op-base tag that created QPs
	// for each collective, and the tag of the capture being counted.
	tags map[string]*commTags
}

// commTags tells a capture's re-created link set from a first one, and
// keeps each link set (tag) of the communicator.
type commTags struct {
	first   map[string]string // collective (lower case) → first tag with QPs
	capture string            // tag of the latest capture
	sets    []*linkSet        // in order of appearance, at most maxTagsPerComm
}

// linkSet is one operator tag's links.
type linkSet struct {
	view  comm.LinkSet
	peers map[int]struct{}
}

// set returns the link set of tag, creating it (nil past the cap).
func (ct *commTags) set(tag string) *linkSet {
	for _, l := range ct.sets {
		if l.view.Tag == tag {
			return l
		}
	}
	if len(ct.sets) >= maxTagsPerComm {
		return nil
	}
	l := &linkSet{view: classifyTag(tag), peers: map[int]struct{}{}}
	ct.sets = append(ct.sets, l)
	return l
}

// commViews copies the process's communicators with their link sets.
func (pr *process) commViews() []comm.Communicator {
	out := append([]comm.Communicator(nil), pr.comms...)
	for i := range out {
		out[i].LinkSets = nil
		ct := pr.links.tags[out[i].Name]
		if ct == nil || len(ct.sets) == 0 {
			continue
		}
		out[i].LinkSets = make([]comm.LinkSet, len(ct.sets))
		for j, l := range ct.sets {
			out[i].LinkSets[j] = l.view
		}
	}
	return out
}

// Tag markers (HCOMM): the level-1 algorithm auto-selection appends
// (coll_alg_operator.cc AppendTag via GenerateNewTagByAlgTypeLevel1), the
// suffix of a captured operator (hccl_communicator_host.cc ExecOp:
// `newTag += "_Capture"`), and MC2's (op_base_mc2.cc).
const (
	tagAlgLevel1 = "_ALG_LEVEL1_"
	tagCapture   = "_Capture"
	tagMC2       = "_mc2"
)

// classifyTag reads what an operator tag says: its kind, collective and
// level-1 algorithm.
func classifyTag(tag string) comm.LinkSet {
	v := comm.LinkSet{Tag: tag, Kind: comm.LinkSetOpBase}
	if i := strings.Index(tag, tagMC2); i >= 0 {
		v.Kind, v.Op = comm.LinkSetMC2, "mc2"
		return v
	}
	op := tag
	if i := strings.IndexByte(tag, '_'); i >= 0 {
		op = tag[:i]
	}
	op = strings.ToLower(op)
	if strings.HasPrefix(op, "hcom") {
		v.Kind = comm.LinkSetGraph
		op = strings.TrimPrefix(op, "hcom")
	}
	v.Op = op
	rest := tag
	if i := strings.Index(rest, tagCapture); i >= 0 {
		if v.Kind == comm.LinkSetOpBase {
			v.Kind = comm.LinkSetCapture
		}
		rest = rest[:i]
	}
	if i := strings.Index(rest, tagAlgLevel1); i >= 0 {
		a := rest[i+len(tagAlgLevel1):]
		if j := strings.IndexByte(a, '_'); j >= 0 && !strings.HasPrefix(strings.ToUpper(a), "NHR_V1") {
			a = a[:j]
		}
		v.Algo = strings.ToLower(a)
	}
	return v
}

// maxTagsPerComm bounds the collectives remembered per communicator.
const maxTagsPerComm = 64

type peerSets struct {
	roce, other map[int]struct{}
}

func (s *State) applyHCCL(dir string, p *parse.PlogLine, kind parse.LineKind) {
	key := ProcessKey{dir, p.PID}
	switch kind {
	case parse.KindSettings:
		s.applyEnv(dir, p)
	case parse.KindCommunicator:
		if c, ok := parse.ParseCommunicator(p.Msg); ok {
			s.applyCommunicator(key, p, c)
		}
	case parse.KindLocalRank:
		s.applyLocalRank(key, p)
	case parse.KindCommDestroy:
		s.applyDestroy(key, p)
	case parse.KindCCLBuffer:
		if n, ok := parse.ParseCCLBuffer(p.Msg); ok {
			if pr := s.process(key, p.PName, s.lineTime(p.Time)); pr != nil {
				pr.links.pendingBuf += n
			}
		}
	case parse.KindCommConfig:
		if cc, ok := parse.ParseCommConfig(p.Msg); ok {
			s.applyCommConfig(key, p, cc)
		}
	case parse.KindTransport:
		if t, ok := parse.ParseTransport(p.Msg); ok {
			s.applyTransport(key, p, t)
		}
	case parse.KindQPMode:
		if m, ok := parse.ParseQPMode(p.Msg); ok {
			if pr := s.process(key, p.PName, s.lineTime(p.Time)); pr != nil {
				pr.qpMode.Offline = pr.qpMode.Offline || m.Offline
				pr.qpMode.NoMultiQP = pr.qpMode.NoMultiQP || m.NoMultiQP
				if m.MultiQPFrom != "" {
					pr.qpMode.MultiQPFrom = m.MultiQPFrom
				}
			}
		}
	case parse.KindListen:
		// Only for a process the logs already describe: the listener
		// alone creates no series.
		if phy, ok := parse.ListenDevice(p.Msg); ok {
			if pr := s.procs[key]; pr != nil {
				setIfKnown(&pr.devicePhyID, phy)
			}
		}
	}
}

// applyCommunicator creates or completes a communicator. Older eras print
// several lines per communicator (Entry, SetupAgent, hcclCommInitInfo),
// each with part of what it is; later lines fill in what earlier ones
// lacked.
func (s *State) applyCommunicator(key ProcessKey, p *parse.PlogLine, ci parse.Communicator) {
	pr := s.process(key, p.PName, s.lineTime(p.Time))
	if pr == nil {
		return
	}
	name := labelValue(ci.Identifier, 2*maxValueLen)
	for i := range pr.comms {
		c := &pr.comms[i]
		if c.Name != name {
			continue
		}
		c.RankSize = ci.RankSize
		setIfKnown(&c.ServerNum, ci.ServerNum)
		setIfKnown(&c.SuperPodNum, ci.SuperPodNum)
		setIfKnown(&c.ModuleNum, ci.ModuleNum)
		setIfKnown(&c.MultiModuleDiffDeviceNum, ci.MultiModuleDiffDeviceNum)
		setIfKnown(&c.MultiSuperPodDiffServerNum, ci.MultiSuperPodDiffServerNum)
		setIfKnown(&c.DeviceType, ci.DeviceType)
		setIfKnown(&c.DevicePhyID, ci.DevicePhyID)
		setIfKnown(&pr.devicePhyID, ci.DevicePhyID)
		s.claimed(key, pr, c, ci)
		return
	}
	if s.nComms >= s.opts.MaxCommunicators && !s.evictCommFairShare(pr.owner) {
		s.dropped[labelCommunicator]++
		return
	}
	s.nComms++
	s.commGen++
	c := comm.Communicator{Name: name, RankSize: ci.RankSize, ServerNum: ci.ServerNum, SuperPodNum: ci.SuperPodNum, ModuleNum: ci.ModuleNum,
		DeviceType: ci.DeviceType, UserRank: -1, DevicePhyID: ci.DevicePhyID, SuperPodMode: -1, StandardCard: -1,
		MultiModuleDiffDeviceNum: ci.MultiModuleDiffDeviceNum, MultiSuperPodDiffServerNum: ci.MultiSuperPodDiffServerNum}
	setIfKnown(&pr.devicePhyID, ci.DevicePhyID)
	if b, ok := pr.links.configs[name]; ok {
		c.BufferSizeBytes = b
		delete(pr.links.configs, name)
	}
	if bn, ok := pr.links.bufferNames[name]; ok {
		c.BufferName = bn
		delete(pr.links.bufferNames, name)
	}
	if m, ok := pr.links.expansionModes[name]; ok {
		c.ExpansionMode = m
		delete(pr.links.expansionModes, name)
	}
	pr.comms = append(pr.comms, c)
	s.claimed(key, pr, &pr.comms[len(pr.comms)-1], ci)
}

// evictCommFairShare makes room under the communicator cap for one of
// owner's processes: the cap is shared per owner, not first come. When
// another owner holds more than one communicator more than owner would with
// the new one, the newest communicator of its process with the most is
// dropped (counted in hccl_exporter_label_values_dropped_total).
func (s *State) evictCommFairShare(owner string) bool {
	held := map[string]int{}
	for _, pr := range s.procs {
		held[pr.owner] += len(pr.comms)
	}
	largest, most := "", 0
	for o, n := range held {
		if n > most || (n == most && o < largest) {
			largest, most = o, n
		}
	}
	if most <= held[owner]+1 {
		return false
	}
	var victim *process
	var vk ProcessKey
	for k, pr := range s.procs {
		if pr.owner == largest && (victim == nil || len(pr.comms) > len(victim.comms) || (len(pr.comms) == len(victim.comms) && lessKey(k, vk))) {
			victim, vk = pr, k
		}
	}
	last := len(victim.comms) - 1
	delete(victim.links.peers, victim.comms[last].Name)
	delete(victim.links.tags, victim.comms[last].Name)
	victim.comms = victim.comms[:last]
	s.nComms--
	s.commGen++
	s.dropped[labelCommunicator]++
	return true
}

func setIfKnown(dst *int, v int) {
	if v >= 0 {
		*dst = v
	}
}

func (s *State) applyLocalRank(key ProcessKey, p *parse.PlogLine) {
	pr := s.procs[key]
	if pr == nil || len(pr.comms) == 0 {
		return
	}
	lr, ok := parse.ParseLocalRankKeyInfo(p.Msg)
	if !ok {
		return
	}
	// HCCL prints it right after the communicator's own key-info line.
	last := &pr.comms[len(pr.comms)-1]
	last.UserRank, last.DevicePhyID = lr.UserRank, lr.DevicePhyID
	setIfKnown(&pr.devicePhyID, lr.DevicePhyID)
	last.SuperPodID = labelValue(lr.SuperPodID, maxValueLen)
	last.SuperPodMode, last.StandardCard = lr.SuperPodMode, lr.StandardCard
}

func (s *State) applyDestroy(key ProcessKey, p *parse.PlogLine) {
	pr := s.procs[key]
	if pr == nil || len(pr.comms) == 0 {
		return
	}
	id, ok := parse.CommDestroy(p.Msg)
	if !ok {
		return
	}
	// CANN does not name the communicator it destroys; drop the named one
	// when it does, else the newest (sub-groups are created after and
	// destroyed before the world group).
	idx := len(pr.comms) - 1
	if id != "" {
		idx = -1
		for i := range pr.comms {
			if pr.comms[i].Name == id {
				idx = i
			}
		}
		if idx < 0 {
			return
		}
	}
	delete(pr.links.peers, pr.comms[idx].Name)
	delete(pr.links.tags, pr.comms[idx].Name)
	pr.comms = append(pr.comms[:idx], pr.comms[idx+1:]...)
	s.nComms--
	s.commGen++
}

func (s *State) applyCommConfig(key ProcessKey, p *parse.PlogLine, cc parse.CommConfig) {
	pr := s.process(key, p.PName, s.lineTime(p.Time))
	if pr == nil {
		return
	}
	name := labelValue(cc.Name, 2*maxValueLen)
	if cc.Info {
		for i := range pr.comms {
			if pr.comms[i].Name == name {
				pr.comms[i].ExpansionMode = cc.ExpansionMode
				return
			}
		}
		if pr.links.expansionModes == nil {
			pr.links.expansionModes = map[string]string{}
		}
		if _, ok := pr.links.expansionModes[name]; ok || len(pr.links.expansionModes) < maxConfigsPerProc {
			pr.links.expansionModes[name] = cc.ExpansionMode
		}
		return
	}
	for i := range pr.comms {
		if pr.comms[i].Name == name {
			pr.comms[i].BufferSizeBytes = cc.BufferBytes
			pr.comms[i].BufferName = cc.BufferName
			return
		}
	}
	// HCCL loads the config before it prints the communicator.
	if pr.links.configs == nil {
		pr.links.configs = map[string]uint64{}
	}
	if _, ok := pr.links.configs[name]; ok || len(pr.links.configs) < maxConfigsPerProc {
		pr.links.configs[name] = cc.BufferBytes
		if cc.BufferName != "" {
			if pr.links.bufferNames == nil {
				pr.links.bufferNames = map[string]string{}
			}
			pr.links.bufferNames[name] = cc.BufferName
		}
	}
}

// applyTransport records one link: a QP when the line has `rdma qpn[`.
func (s *State) applyTransport(key ProcessKey, p *parse.PlogLine, t parse.Transport) {
	pr := s.procs[key]
	if pr == nil {
		pr = s.process(key, p.PName, s.lineTime(p.Time))
		if pr == nil {
			return
		}
	}
	c := pr.commForTag(t)
	if c == nil {
		if t.HasQPN {
			pr.links.orphanQPs++
			pr.links.addQPN(t.QPN)
		}
		return
	}
	if c.CCLBufferBytes == 0 && pr.links.pendingBuf > 0 {
		c.CCLBufferBytes, pr.links.pendingBuf = pr.links.pendingBuf, 0
	}
	if pr.links.peers == nil {
		pr.links.peers = map[string]*peerSets{}
	}
	ps := pr.links.peers[c.Name]
	if ps == nil {
		ps = &peerSets{roce: map[int]struct{}{}, other: map[int]struct{}{}}
		pr.links.peers[c.Name] = ps
	}
	set := ps.other
	switch {
	case t.HasQPN:
		c.EstablishedQPs++
		set = ps.roce
		pr.links.addQPN(t.QPN)
	case t.Type == transportRoCE:
		// The AI CPU transport line (transport_device_ibverbs.cc) prints
		// no qpn: a RoCE link whose QPs live on the device.
		set = ps.roce
	}
	if _, seen := set[t.RemoteRank]; !seen && len(set) < maxPeersPerComm {
		set[t.RemoteRank] = struct{}{}
	}
	c.RoCEPeers, c.OtherPeers = len(ps.roce), len(ps.other)
	s.noteTag(pr, c, t, p.Time)
	if t.HasQPN || t.Type == transportRoCE {
		if l := pr.links.commTags(c.Name).set(t.Tag); l != nil {
			if t.HasQPN {
				l.view.QPs++
			}
			if _, seen := l.peers[t.RemoteRank]; !seen && len(l.peers) < maxPeersPerComm {
				l.peers[t.RemoteRank] = struct{}{}
				l.view.RoCEPeers = len(l.peers)
			}
		}
	}
	s.rememberLink(pr, c, t)
}

// commTags returns the tag record of communicator name, creating it.
func (l *processLinks) commTags(name string) *commTags {
	if l.tags == nil {
		l.tags = map[string]*commTags{}
	}
	ct := l.tags[name]
	if ct == nil {
		ct = &commTags{first: map[string]string{}}
		l.tags[name] = ct
	}
	return ct
}

// noteTag records what the operator tag of a link says about the
// communicator: the operator family, the mode, and ACL graph captures.
//
// HCCL (HCOMM hccl_communicator_host.cc) builds a link set per operator
// tag; when the stream is capturing an ACL graph and the tag already has
// RoCE links, it appends a capture counter to the tag, cleans the links
// (CleanTransportLinks) and creates them again (IncreAllocLink). The
// re-created QPs live as long as the captured graph. A QP line whose tag
// strictly extends an earlier op-base tag of the same collective is
// therefore counted as a capture; each new such tag is a new capture.
func (s *State) noteTag(pr *process, c *comm.Communicator, t parse.Transport, rawTime []byte) {
	tag := t.Tag
	v := classifyTag(tag)
	op := v.Op
	graph := v.Kind == comm.LinkSetGraph
	if graph {
		c.GraphTags = true
	} else {
		c.OpBaseTags = true
	}
	if v.Kind == comm.LinkSetMC2 {
		c.MC2 = true
		c.AllRanksOps = true
	}
	if strings.HasPrefix(op, "alltoall") || strings.HasPrefix(op, "send") || strings.HasPrefix(op, "recv") ||
		strings.HasPrefix(op, "batchsendrecv") {
		c.AllRanksOps = true
	}
	if graph || v.Kind == comm.LinkSetMC2 || !t.HasQPN {
		return
	}
	ct := pr.links.commTags(c.Name)
	first, ok := ct.first[op]
	switch {
	case v.Kind == comm.LinkSetCapture:
		// HCOMM-HEAD names captured link sets: the "_Capture" suffix.
	case !ok:
		if len(ct.first) < maxTagsPerComm {
			ct.first[op] = tag
		}
		return
	case v.Algo != "":
		// Another level-1 algorithm of the same collective
		// (AutoSelectAlgTypeLevel1): a new link set, not a capture.
		return
	case tag == first || !strings.HasPrefix(tag, first):
		return
	}
	if tag != ct.capture {
		ct.capture = tag
		c.Captures++
		c.LastCaptureQPs = 0
	}
	c.LastCaptureQPs++
	c.LastCaptureAt = s.lineTime(rawTime)
}

// commForTag finds the communicator a link set was built for. Op-base tags
// are "<Collective>_<identifier>"; graph-mode tags ("HcomAllReduce_<n>_0")
// name no identifier, and belong to the process's only communicator when
// it has one.
func (pr *process) commForTag(t parse.Transport) *comm.Communicator {
	id := t.Identifier()
	for i := range pr.comms {
		if pr.comms[i].Name == id {
			return &pr.comms[i]
		}
	}
	for i := range pr.comms {
		if strings.HasSuffix(t.Tag, "_"+pr.comms[i].Name) {
			return &pr.comms[i]
		}
	}
	// MC2: "<identifier><opType>_mc2" (op_base_mc2.cc), no separator
	// between the identifier and the operator type.
	if strings.Contains(t.Tag, tagMC2) {
		var best *comm.Communicator
		for i := range pr.comms {
			n := pr.comms[i].Name
			if strings.HasPrefix(t.Tag, n) && (best == nil || len(n) > len(best.Name)) {
				best = &pr.comms[i]
			}
		}
		if best != nil {
			return best
		}
	}
	// A capture appends a counter to the tag ("AllReduce_<identifier>…"):
	// the communicator with the longest identifier that the tag's
	// identifier continues with '_'.
	var best *comm.Communicator
	for i := range pr.comms {
		n := pr.comms[i].Name
		if strings.HasPrefix(id, n+"_") && (best == nil || len(n) > len(best.Name)) {
			best = &pr.comms[i]
		}
	}
	if best != nil {
		return best
	}
	if len(pr.comms) == 1 {
		return &pr.comms[0]
	}
	return nil
}

// transportRoCE is transporttype[…] of an RDMA link.
const transportRoCE = "ROCE"

// maxQPNsPerProc bounds the qpns kept per process: DCMI's MAX_QPN_NUM, the
// most QPs one port holds.
const maxQPNsPerProc = 8192

func (l *processLinks) addQPN(qpn uint32) {
	if qpn == 0 {
		return // not printed or not a number
	}
	if l.qpns == nil {
		l.qpns = map[uint32]struct{}{}
	}
	if len(l.qpns) < maxQPNsPerProc {
		l.qpns[qpn] = struct{}{}
	}
}

func (l *processLinks) sortedQPNs() []uint32 {
	if len(l.qpns) == 0 {
		return nil
	}
	out := make([]uint32, 0, len(l.qpns))
	for q := range l.qpns {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}
