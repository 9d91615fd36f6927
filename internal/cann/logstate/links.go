package logstate

import (
	"slices"
	"strings"
	"time"

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
	// pendingAIV are the modes of `[CreateCommAIVbuffer]` lines not yet
	// tied to a communicator: HCCL allocates them in AllocAlgResource,
	// right before the link set's transports, so the next transport line
	// claims them like pendingBuf.
	pendingAIV []string
	// pendingQPBytes is the size of the QP the latest `[ConstructQpAttrs]`
	// line announced; the next QP line is that QP.
	pendingQPBytes uint64
	// lastDestroy is when the process last destroyed a communicator: the
	// cclBuffer release lines that follow are that communicator's.
	lastDestroy time.Time
	// releasedBuf are cclBuffer bytes `[ReleaseCCLbuffer]` lines freed
	// since releasedAt that no destroy has explained yet: HEAD prints the
	// destroy line after the destructor's releases, so they are applied
	// to a live communicator only once no destroy follows within
	// releaseAfterDestroy.
	releasedBuf uint64
	releasedAt  time.Time
}

// commTags tells a capture's re-created link set from a first one, and
// keeps each link set (tag) of the communicator.
type commTags struct {
	first   map[string]string // collective (lower case) → first op-base tag with QPs
	capture string            // tag of the latest capture
	sets    []*linkSet        // in order of appearance, at most maxTagsPerComm
	// round holds the captured link sets (capture tags without their
	// counter) of the capture being counted: a set seen again starts the
	// next capture.
	round map[string]bool
}

// linkSet is one operator tag's links.
type linkSet struct {
	view  comm.LinkSet
	peers map[int]struct{}
}

// set returns the link set of tag, creating it (nil past the cap); ids
// are the process's communicator identifiers (classifyTag).
func (ct *commTags) set(tag string, ids []string) *linkSet {
	for _, l := range ct.sets {
		if l.view.Tag == tag {
			return l
		}
	}
	if len(ct.sets) >= maxTagsPerComm {
		return nil
	}
	l := &linkSet{view: classifyTag(tag, ids...), peers: map[int]struct{}{}}
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

// classifyTag reads what an operator tag says (parse.ParseTag): its kind,
// collective, level-1 algorithm and executor. ids are the identifiers of
// the process's communicators (nil: split the tag by its shape alone).
func classifyTag(tag string, ids ...string) comm.LinkSet {
	v := comm.LinkSet{Tag: tag, Kind: comm.LinkSetOpBase}
	t, ok := parse.ParseTag(tag, ids)
	if !ok {
		return v
	}
	v.Op, v.Level1, v.Executor = t.Op, t.Level1, t.Executor
	v.Algo = algoOfLevel1(t.Level1)
	switch t.Kind {
	case parse.TagGraph:
		v.Kind = comm.LinkSetGraph
	case parse.TagMC2:
		v.Kind = comm.LinkSetMC2
	case parse.TagSendRecv, parse.TagBatchSendRecv:
		v.Kind = comm.LinkSetSendRecv
	}
	if t.Capture {
		v.Kind = comm.LinkSetCapture
	}
	return v
}

// algoOfLevel1 maps HCCL_ALGO_LEVEL1_NAME_MAP's names (common.h:226-232)
// to the model's lower-case algorithm names.
func algoOfLevel1(l string) string {
	switch l {
	case "", "null":
		return ""
	case "H-D":
		return "hd"
	case "AHC_BROKE":
		return "ahc"
	}
	return strings.ToLower(l)
}

// maxTagsPerComm bounds the collectives remembered per communicator.
const maxTagsPerComm = 64

type peerSets struct {
	roce, other map[int]struct{}
}

func (s *State) applyHCCL(dir string, p *parse.PlogLine, kind parse.LineKind) {
	key := ProcessKey{dir, p.PID}
	if pr := s.procs[key]; pr != nil && pr.links.releasedBuf > 0 && kind != parse.KindCCLRelease && kind != parse.KindCommDestroy {
		if at := s.lineTime(p.Time); at.Sub(pr.links.releasedAt) > releaseAfterDestroy {
			s.applyRelease(pr)
		}
	}
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
	case parse.KindAIVBuffer:
		if mode, ok := parse.ParseAIVBuffer(p.Msg); ok {
			if pr := s.process(key, p.PName, s.lineTime(p.Time)); pr != nil {
				// The 36 MiB + 4 MiB printed just before as `Create ccl
				// buffer success` are AIV buffers, not a cclBuffer.
				pr.links.pendingBuf -= min(pr.links.pendingBuf, aivModeBytes)
				if len(pr.links.pendingAIV) < maxPendingAIV {
					pr.links.pendingAIV = append(pr.links.pendingAIV, mode)
				}
			}
		}
	case parse.KindCCLRelease:
		if n, ok := parse.ParseCCLRelease(p.Msg); ok {
			if pr := s.procs[key]; pr != nil {
				at := s.lineTime(p.Time)
				ld := pr.links.lastDestroy
				if !ld.IsZero() && !at.Before(ld) && at.Sub(ld) <= releaseAfterDestroy {
					break // the releases of a communicator just destroyed
				}
				if pr.links.releasedBuf == 0 {
					pr.links.releasedAt = at
				}
				pr.links.releasedBuf += n
			}
		}
	case parse.KindSelectAlg:
		if sa, ok := parse.ParseSelectAlg(p.Msg); ok {
			if pr := s.procs[key]; pr != nil {
				s.applySelectAlg(pr, sa)
			}
		}
	case parse.KindQPAttrs:
		if a, ok := parse.ParseQPAttrs(p.Msg); ok {
			if pr := s.procs[key]; pr != nil {
				// HCCP's provider sizes a QP by its send queue and send CQ
				// (the model's QPMode.Bytes).
				pr.links.pendingQPBytes = uint64(a.MaxSendWR)*64 + uint64(a.SendCQDepth)*32
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
	pr.links.lastDestroy = s.lineTime(p.Time)
	pr.links.releasedBuf, pr.links.releasedAt = 0, time.Time{} // the destroyed communicator's
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
	for _, m := range pr.links.pendingAIV {
		switch m {
		case parse.AIVModeOpBase:
			c.AIVOpBase = true
		case parse.AIVModeOffload:
			c.AIVOffload = true
		}
	}
	pr.links.pendingAIV = nil
	if t.HasQPN && pr.links.pendingQPBytes > 0 {
		if ot, ok := parse.ParseTag(t.Tag, nil); ok && ot.Capture {
			c.ObservedCaptureQPBytes = pr.links.pendingQPBytes
		} else {
			c.ObservedQPBytes = pr.links.pendingQPBytes
		}
		pr.links.pendingQPBytes = 0
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
		if l := pr.links.commTags(c.Name).set(t.Tag, pr.commNames()); l != nil {
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

// AIV buffers of one mode (HCOMM ccl_buffer_manager.h: AIV_DATA_SIZE
// 36 MiB + AIV_FLAG_SIZE 4 MiB), and the most modes waiting for their
// communicator.
const (
	aivModeBytes  = 36<<20 + 4<<20
	maxPendingAIV = 8
)

// releaseAfterDestroy is how long after a communicator's destroy the
// process's cclBuffer release lines are that communicator's.
const releaseAfterDestroy = 10 * time.Second

// applyRelease applies the cclBuffer bytes released while no destroy
// followed: an allocation no communicator claimed yet, else a live
// communicator freed its cclBuffer (the newest that holds one), which HCCL
// allocates again at its next collective (hcclComm::ReleaseCommCCLbuffer).
func (s *State) applyRelease(pr *process) {
	n := pr.links.releasedBuf
	pr.links.releasedBuf, pr.links.releasedAt = 0, time.Time{}
	if pr.links.pendingBuf >= n {
		pr.links.pendingBuf -= n
		return
	}
	for i := len(pr.comms) - 1; i >= 0; i-- {
		if c := &pr.comms[i]; c.CCLBufferBytes > 0 {
			c.CCLBufferBytes -= min(c.CCLBufferBytes, n)
			return
		}
	}
}

// applySelectAlg applies a `[SelectAlg]` line: the operator's link set
// (newTag) is certain to be set up if it is not yet, the plane is
// moduleNum_, and the operator runs in the expansion mode printed.
func (s *State) applySelectAlg(pr *process, sa parse.SelectAlg) {
	ids := pr.commNames()
	ot, ok := parse.ParseTag(sa.NewTag, ids)
	if !ok || !ot.IdentifierKnown {
		return
	}
	var c *comm.Communicator
	for i := range pr.comms {
		if pr.comms[i].Name == ot.Identifier {
			c = &pr.comms[i]
		}
	}
	if c == nil {
		return
	}
	if sa.AlgName != "" {
		if sa.ModuleNum > 0 {
			c.ModuleNum = sa.ModuleNum
		}
		if !ot.Capture && ot.Kind != parse.TagGraph {
			c.OpBaseTags = true
			pr.links.commTags(c.Name).set(sa.NewTag, ids)
		}
		return
	}
	switch sa.ExpansionMode {
	case "AIV", "AI_CPU", "HOST":
		c.ExpansionMode = sa.ExpansionMode
	case "HOST_TS":
		c.ExpansionMode = "HOST"
	}
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
// HCCL (HCOMM hccl_communicator_host.cc ExecOp) builds a link set per
// operator tag (newTag); a captured operator's tag gets "_Capture"
// (:4657), and when that tag already has RoCE links, a counter per
// communicator (:4679): the links are cleaned and created again
// (IncreAllocLink) and live as long as the captured graph. One capture of
// a graph captures several operators; a captured set seen again in the
// same capture starts the next one.
func (s *State) noteTag(pr *process, c *comm.Communicator, t parse.Transport, rawTime []byte) {
	tag := t.Tag
	v := classifyTag(tag, pr.commNames()...)
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
	// AlltoAll links every remote rank. Send/recv and batch send/recv
	// link only the peers they use (CalcIncreLinkRequest): their sets
	// are what the logs show.
	if strings.HasPrefix(op, "alltoall") {
		c.AllRanksOps = true
	}
	if graph || v.Kind == comm.LinkSetMC2 || !t.HasQPN {
		return
	}
	ct := pr.links.commTags(c.Name)
	if v.Kind != comm.LinkSetCapture {
		if _, ok := ct.first[op]; !ok && len(ct.first) < maxTagsPerComm {
			ct.first[op] = tag
		}
		return
	}
	base := tag[:strings.LastIndex(tag, "_Capture")]
	if tag != ct.capture {
		if ct.round == nil || ct.round[base] {
			ct.round = map[string]bool{}
			c.Captures++
			c.LastCaptureQPs = 0
		}
		if len(ct.round) < maxTagsPerComm {
			ct.round[base] = true
		}
		ct.capture = tag
	}
	c.LastCaptureQPs++
	c.LastCaptureAt = s.lineTime(rawTime)
}

// commNames are the identifiers of the process's communicators.
func (pr *process) commNames() []string {
	out := make([]string, len(pr.comms))
	for i := range pr.comms {
		out[i] = pr.comms[i].Name
	}
	return out
}

// commForTag finds the communicator a link set was built for: the one
// whose identifier the tag names (parse.ParseTag: the longest identifier
// of the process's communicators at the identifier's place, whatever
// level-1 name, executor, suffixes or capture counter follow). Graph-mode
// tags ("Hcom…") name no identifier, and belong to the process's only
// communicator when it has one.
func (pr *process) commForTag(t parse.Transport) *comm.Communicator {
	if ot, ok := parse.ParseTag(t.Tag, pr.commNames()); ok && ot.IdentifierKnown {
		for i := range pr.comms {
			if pr.comms[i].Name == ot.Identifier {
				return &pr.comms[i]
			}
		}
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
