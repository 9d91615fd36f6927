package logstate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// snapshotVersion is bumped when the blob's meaning changes; an unknown
// version is refused rather than misread.
const snapshotVersion = 1

// snapshot is the JSON form of State, saved with the read offsets by the
// follower so that a restart neither recounts nor forgets settings.
type snapshot struct {
	Version    int               `json:"version"`
	Lines      []snapLines       `json:"lines,omitempty"`
	Processes  []snapProcess     `json:"processes,omitempty"`
	Faults     []snapFault       `json:"faults,omitempty"`
	ExtraCodes []string          `json:"extra_codes,omitempty"`
	Pods       []podKeyJSON      `json:"pods,omitempty"`
	Summaries  []snapSummary     `json:"summaries,omitempty"`
	PlogErrors []snapPlogError   `json:"plog_errors,omitempty"`
	Dropped    map[string]uint64 `json:"dropped,omitempty"`
	Unparsable map[string]uint64 `json:"unparsable,omitempty"`
	Rejected   map[string]uint64 `json:"rejected,omitempty"`
	// Untied counts screen reports not tied to their pid's process.
	Untied  map[string]uint64 `json:"screen_untied,omitempty"`
	Partial []snapPartial     `json:"partial,omitempty"`
	Recent  []string          `json:"recent,omitempty"`
	// FaultsExpired counts the fault series expired (expireFaults).
	FaultsExpired uint64 `json:"faults_expired,omitempty"`
	// Workloads is the workload memory (workload.go); WorkloadsDropped
	// what it forgot, by reason.
	// Held are faults waiting for their process's communicator
	// (held.go); FirstClaims the first claimant of each job identity
	// (claims.go).
	Held             []snapHeld           `json:"held,omitempty"`
	FirstClaims      map[string][2]string `json:"first_claims,omitempty"`
	Workloads        []snapWorkload       `json:"workloads,omitempty"`
	WorkloadsDropped map[string]uint64    `json:"workloads_dropped,omitempty"`
	// Extensions are the blobs of other packages' state kept in the same
	// file (AttachExtension), by name.
	Extensions map[string]json.RawMessage `json:"extensions,omitempty"`
}

type snapLines struct {
	Module string   `json:"module"`
	Counts []uint64 `json:"counts"` // indexed by parse.Level
}

type snapProcess struct {
	PID           int                `json:"pid"`
	Dir           string             `json:"dir,omitempty"`   // absent in files written before version 1 kept it
	Label         string             `json:"label,omitempty"` // absent likewise: the pid
	Name          string             `json:"name"`
	LastWrite     time.Time          `json:"last_write"`
	Env           map[string]snapEnv `json:"env,omitempty"`
	Communicators []snapComm         `json:"communicators,omitempty"`
	Links         *snapLinks         `json:"links,omitempty"`
	DevicePhyID   *int               `json:"device_phy_id,omitempty"` // absent in older files: unknown
	QPMode        *QPModeView        `json:"qp_mode,omitempty"`       // absent: nothing printed
	Owner         string             `json:"owner,omitempty"`         // absent in older files: its directory
	OwnerPod      *[3]string         `json:"owner_pod,omitempty"`     // absent: no pod named
	RankTable     string             `json:"rank_table,omitempty"`    // absent: no world group from a rank table
	Workload      *snapProcWorkload  `json:"workload,omitempty"`      // absent: not bound
}

// The state file has types of its own, so that the exported views
// (EnvSetting, comm.Communicator, FaultSummary) can change without changing
// what is on disk. Their JSON keys are the Go field names the file used
// when it stored the views directly, so files written then still load.

// snapEnv is an EnvSetting on disk.
type snapEnv struct {
	Value     string  `json:"Value"`
	SetBy     string  `json:"SetBy"`
	Number    float64 `json:"Number"`
	HasNumber bool    `json:"HasNumber"`
}

// snapComm is a comm.Communicator on disk. The fields that files written
// before headroom v2 lack are pointers: absent means unknown (-1), not 0
// (deviceType 0 is a real device type).
type snapComm struct {
	Name            string `json:"Name"`
	RankSize        int    `json:"RankSize"`
	ServerNum       int    `json:"ServerNum"`
	SuperPodNum     *int   `json:"SuperPodNum,omitempty"`
	ModuleNum       *int   `json:"ModuleNum,omitempty"`
	MultiModuleDiff *int   `json:"MultiModuleDiffDeviceNum,omitempty"`
	MultiSPDiff     *int   `json:"MultiSuperPodDiffServerNum,omitempty"`
	DeviceType      *int   `json:"DeviceType,omitempty"`
	UserRank        int    `json:"UserRank"`
	DevicePhyID     int    `json:"DevicePhyID"`
	SuperPodID      string `json:"SuperPodID,omitempty"`
	SuperPodMode    *int   `json:"SuperPodMode,omitempty"`
	StandardCard    *int   `json:"StandardCard,omitempty"`
	BufferSizeBytes uint64 `json:"BufferSizeBytes,omitempty"`
	BufferName      string `json:"BufferName,omitempty"`
	CCLBufferBytes  uint64 `json:"CCLBufferBytes,omitempty"`
	EstablishedQPs  uint64 `json:"EstablishedQPs,omitempty"`
	RoCEPeers       int    `json:"RoCEPeers,omitempty"`
	OtherPeers      int    `json:"OtherPeers,omitempty"`
	// What the link sets' tags said (absent in older files: nothing).
	AllRanksOps    bool      `json:"AllRanksOps,omitempty"`
	OpBaseTags     bool      `json:"OpBaseTags,omitempty"`
	GraphTags      bool      `json:"GraphTags,omitempty"`
	MC2            bool      `json:"MC2,omitempty"`
	Captures       int       `json:"Captures,omitempty"`
	LastCaptureQPs uint64    `json:"LastCaptureQPs,omitempty"`
	LastCaptureAt  time.Time `json:"LastCaptureAt,omitzero"`
	ExpansionMode  string    `json:"ExpansionMode,omitempty"`
	AIVOpBase      bool      `json:"AIVOpBase,omitempty"`
	AIVOffload     bool      `json:"AIVOffload,omitempty"`
	ObservedQP     uint64    `json:"ObservedQPBytes,omitempty"`
	ObservedCapQP  uint64    `json:"ObservedCaptureQPBytes,omitempty"`
}

func toSnapComm(c comm.Communicator) snapComm {
	ip := func(v int) *int { return &v }
	return snapComm{Name: c.Name, RankSize: c.RankSize, ServerNum: c.ServerNum, SuperPodNum: ip(c.SuperPodNum), ModuleNum: ip(c.ModuleNum),
		MultiModuleDiff: ip(c.MultiModuleDiffDeviceNum), MultiSPDiff: ip(c.MultiSuperPodDiffServerNum),
		DeviceType: ip(c.DeviceType), UserRank: c.UserRank, DevicePhyID: c.DevicePhyID, SuperPodID: c.SuperPodID,
		SuperPodMode: ip(c.SuperPodMode), StandardCard: ip(c.StandardCard), BufferSizeBytes: c.BufferSizeBytes, BufferName: c.BufferName,
		CCLBufferBytes: c.CCLBufferBytes, EstablishedQPs: c.EstablishedQPs, RoCEPeers: c.RoCEPeers, OtherPeers: c.OtherPeers,
		AllRanksOps: c.AllRanksOps, OpBaseTags: c.OpBaseTags, GraphTags: c.GraphTags, MC2: c.MC2, Captures: c.Captures,
		LastCaptureQPs: c.LastCaptureQPs, LastCaptureAt: c.LastCaptureAt, ExpansionMode: c.ExpansionMode,
		AIVOpBase: c.AIVOpBase, AIVOffload: c.AIVOffload, ObservedQP: c.ObservedQPBytes, ObservedCapQP: c.ObservedCaptureQPBytes}
}

func (c snapComm) view() comm.Communicator {
	or := func(p *int) int {
		if p == nil {
			return -1
		}
		return *p
	}
	return comm.Communicator{Name: c.Name, RankSize: c.RankSize, ServerNum: c.ServerNum, SuperPodNum: or(c.SuperPodNum), ModuleNum: or(c.ModuleNum),
		MultiModuleDiffDeviceNum: or(c.MultiModuleDiff), MultiSuperPodDiffServerNum: or(c.MultiSPDiff),
		DeviceType: or(c.DeviceType), UserRank: c.UserRank, DevicePhyID: c.DevicePhyID, SuperPodID: c.SuperPodID,
		SuperPodMode: or(c.SuperPodMode), StandardCard: or(c.StandardCard), BufferSizeBytes: c.BufferSizeBytes, BufferName: c.BufferName,
		CCLBufferBytes: c.CCLBufferBytes, EstablishedQPs: c.EstablishedQPs, RoCEPeers: c.RoCEPeers, OtherPeers: c.OtherPeers,
		AllRanksOps: c.AllRanksOps, OpBaseTags: c.OpBaseTags, GraphTags: c.GraphTags, MC2: c.MC2, Captures: c.Captures,
		LastCaptureQPs: c.LastCaptureQPs, LastCaptureAt: c.LastCaptureAt, ExpansionMode: c.ExpansionMode,
		AIVOpBase: c.AIVOpBase, AIVOffload: c.AIVOffload, ObservedQPBytes: c.ObservedQP, ObservedCaptureQPBytes: c.ObservedCapQP}
}

// snapSummary is a FaultSummary on disk.
type snapSummary struct {
	Code     string            `json:"Code"`
	Stage    string            `json:"Stage"`
	Title    string            `json:"Title"`
	Remedy   string            `json:"Remedy"`
	Count    uint64            `json:"Count"`
	BySource map[string]uint64 `json:"BySource"`
	First    time.Time         `json:"First"`
	Last     time.Time         `json:"Last"`
	PIDs     []int             `json:"PIDs"`
}

// snapLinks is processLinks on disk.
type snapLinks struct {
	PendingBuf uint64               `json:"pending_buffer_bytes,omitempty"`
	OrphanQPs  uint64               `json:"orphan_qps,omitempty"`
	Configs    map[string]uint64    `json:"configs,omitempty"`
	BufNames   map[string]string    `json:"buffer_names,omitempty"`
	QPNs       []uint32             `json:"qpns,omitempty"`
	Peers      map[string]snapPeers `json:"peers,omitempty"`
	// ExpansionModes are `[Load] comm config info` modes waiting for their
	// communicator; Tags each communicator's link sets (absent in older
	// files: none).
	ExpansionModes map[string]string   `json:"expansion_modes,omitempty"`
	Tags           map[string]snapTags `json:"tags,omitempty"`
	PendingAIV     []string            `json:"pending_aiv,omitempty"`
	PendingQPBytes uint64              `json:"pending_qp_bytes,omitempty"`
	LastDestroy    time.Time           `json:"last_destroy,omitzero"`
	ReleasedBuf    uint64              `json:"released_buffer_bytes,omitempty"`
	ReleasedAt     time.Time           `json:"released_at,omitzero"`
}

// snapTags is commTags on disk.
type snapTags struct {
	First   map[string]string `json:"first,omitempty"`
	Capture string            `json:"capture,omitempty"`
	Round   []string          `json:"round,omitempty"`
	Sets    []snapLinkSet     `json:"sets,omitempty"`
}

// snapLinkSet is a linkSet on disk. Its kind, collective, level-1 name
// and executor are read again from the tag when loaded.
type snapLinkSet struct {
	Tag   string `json:"tag"`
	QPs   uint64 `json:"qps,omitempty"`
	Peers []int  `json:"peers,omitempty"`
}

type snapPeers struct {
	RoCE  []int `json:"roce,omitempty"`
	Other []int `json:"other,omitempty"`
}

func (l *processLinks) snapshot() *snapLinks {
	if l.pendingBuf == 0 && l.orphanQPs == 0 && len(l.configs) == 0 && len(l.bufferNames) == 0 && len(l.qpns) == 0 && len(l.peers) == 0 &&
		len(l.expansionModes) == 0 && len(l.tags) == 0 && len(l.pendingAIV) == 0 && l.pendingQPBytes == 0 && l.lastDestroy.IsZero() && l.releasedBuf == 0 {
		return nil
	}
	out := &snapLinks{PendingBuf: l.pendingBuf, OrphanQPs: l.orphanQPs, Configs: l.configs, BufNames: l.bufferNames, QPNs: l.sortedQPNs(),
		ExpansionModes: l.expansionModes, PendingAIV: l.pendingAIV, PendingQPBytes: l.pendingQPBytes, LastDestroy: l.lastDestroy,
		ReleasedBuf: l.releasedBuf, ReleasedAt: l.releasedAt}
	if len(l.tags) > 0 {
		out.Tags = make(map[string]snapTags, len(l.tags))
		for name, ct := range l.tags {
			st := snapTags{First: ct.first, Capture: ct.capture}
			for b := range ct.round {
				st.Round = append(st.Round, b)
			}
			sort.Strings(st.Round)
			for _, ls := range ct.sets {
				st.Sets = append(st.Sets, snapLinkSet{Tag: ls.view.Tag, QPs: ls.view.QPs, Peers: sortedInts(ls.peers)})
			}
			out.Tags[name] = st
		}
	}
	if len(l.peers) > 0 {
		out.Peers = make(map[string]snapPeers, len(l.peers))
		for name, ps := range l.peers {
			out.Peers[name] = snapPeers{RoCE: sortedInts(ps.roce), Other: sortedInts(ps.other)}
		}
	}
	return out
}

// restore rebuilds processLinks; ids are the process's communicator
// identifiers, which split the saved tags as when they were read.
func (sl *snapLinks) restore(ids []string) processLinks {
	if sl == nil {
		return processLinks{}
	}
	l := processLinks{pendingBuf: sl.PendingBuf, orphanQPs: sl.OrphanQPs, configs: sl.Configs, bufferNames: sl.BufNames,
		expansionModes: sl.ExpansionModes, pendingQPBytes: sl.PendingQPBytes, lastDestroy: sl.LastDestroy,
		releasedBuf: sl.ReleasedBuf, releasedAt: sl.ReleasedAt}
	for _, m := range sl.PendingAIV {
		if len(l.pendingAIV) < maxPendingAIV && (m == parse.AIVModeOpBase || m == parse.AIVModeOffload) {
			l.pendingAIV = append(l.pendingAIV, m)
		}
	}
	for name, st := range sl.Tags {
		ct := l.commTags(name)
		for op, tag := range st.First {
			if len(ct.first) < maxTagsPerComm {
				ct.first[op] = tag
			}
		}
		ct.capture = st.Capture
		if len(st.Round) > 0 {
			ct.round = map[string]bool{}
			for _, b := range st.Round {
				if len(ct.round) < maxTagsPerComm {
					ct.round[b] = true
				}
			}
		}
		for _, ss := range st.Sets {
			if len(ct.sets) >= maxTagsPerComm {
				break
			}
			ls := &linkSet{view: classifyTag(ss.Tag, ids...), peers: map[int]struct{}{}}
			ls.view.QPs = ss.QPs
			for _, r := range ss.Peers {
				if len(ls.peers) < maxPeersPerComm {
					ls.peers[r] = struct{}{}
				}
			}
			ls.view.RoCEPeers = len(ls.peers)
			ct.sets = append(ct.sets, ls)
		}
	}
	for _, q := range sl.QPNs {
		l.addQPN(q)
	}
	if len(sl.Peers) > 0 {
		l.peers = make(map[string]*peerSets, len(sl.Peers))
		for name, sp := range sl.Peers {
			ps := &peerSets{roce: map[int]struct{}{}, other: map[int]struct{}{}}
			for _, r := range sp.RoCE {
				ps.roce[r] = struct{}{}
			}
			for _, r := range sp.Other {
				ps.other[r] = struct{}{}
			}
			l.peers[name] = ps
		}
	}
	return l
}

func sortedInts(m map[int]struct{}) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

type snapFault struct {
	Code      string    `json:"code"`
	Resource  string    `json:"resource,omitempty"` // absent in files written before it existed: none
	Source    string    `json:"source"`
	Namespace string    `json:"namespace,omitempty"`
	Pod       string    `json:"pod,omitempty"`
	Container string    `json:"container,omitempty"`
	Job       string    `json:"job,omitempty"`    // absent before hccl_job existed: none
	CANN      bool      `json:"cann,omitempty"`   // another component's code (ascend_cann_fault_events_total)
	Reason    string    `json:"reason,omitempty"` // of a CANN series
	Count     uint64    `json:"count"`
	Last      time.Time `json:"last"`
	Seen      time.Time `json:"seen,omitzero"` // absent before expiry existed: the time of loading
}

type podKeyJSON struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container"`
	Job       string `json:"job,omitempty"`
}

type snapPlogError struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	Count  uint64 `json:"count"`
}

type snapPartial struct {
	Path   string `json:"path"`
	Stream uint8  `json:"stream"`
	Data   []byte `json:"data"`
}

// MarshalBinary serialises the state for the follower's checkpoint.
func (s *State) MarshalBinary() ([]byte, error) {
	// Extensions first, outside the lock: their owners may read the state.
	ext, err := s.marshalExtensions()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	// Held screen reports are counted, and expired fault series dropped,
	// before they are saved: the file never brings back a gone pod's series.
	s.flushAllPending()
	s.expireFaults(s.opts.Now())
	snap := snapshot{Version: snapshotVersion, Dropped: copyCounts(s.dropped), Unparsable: copyCounts(s.unparsable), Rejected: copyCounts(s.rejected),
		Untied:        copyCounts(s.untied),
		FaultsExpired: s.faultsExpired}
	for m, c := range s.lines {
		snap.Lines = append(snap.Lines, snapLines{Module: m, Counts: append([]uint64(nil), c[:]...)})
	}
	for k, pr := range s.procs {
		sp := snapProcess{PID: k.PID, Dir: k.Dir, Label: pr.label, Name: pr.name, LastWrite: s.lastWrite(pr), Env: make(map[string]snapEnv, len(pr.env)),
			Links: pr.links.snapshot(), DevicePhyID: &pr.devicePhyID, Owner: pr.owner}
		if pr.ownerPod != ([3]string{}) {
			op := pr.ownerPod
			sp.OwnerPod = &op
		}
		sp.RankTable = pr.rankTable
		if pr.qpMode != (QPModeView{}) {
			m := pr.qpMode
			sp.QPMode = &m
		}
		sp.Workload = pr.wl.snapshot()
		for k, v := range pr.env {
			sp.Env[k] = snapEnv(v)
		}
		for _, c := range pr.comms {
			sp.Communicators = append(sp.Communicators, toSnapComm(c))
		}
		snap.Processes = append(snap.Processes, sp)
	}
	for k, v := range s.faults {
		snap.Faults = append(snap.Faults, snapFault{Code: k.code, Resource: k.resource, Source: k.source, Namespace: k.namespace, Pod: k.pod, Container: k.container,
			Job: k.job, CANN: k.cann, Reason: k.reason, Count: v.count, Last: v.last, Seen: v.seen})
	}
	for c := range s.extraCodes {
		snap.ExtraCodes = append(snap.ExtraCodes, c)
	}
	for p := range s.pods {
		snap.Pods = append(snap.Pods, podKeyJSON{p.namespace, p.pod, p.container, p.job})
	}
	for _, sm := range s.summaries {
		snap.Summaries = append(snap.Summaries, snapSummary(*sm))
	}
	for k, v := range s.plogErrors {
		snap.PlogErrors = append(snap.PlogErrors, snapPlogError{k.stage, k.reason, v})
	}
	for k, v := range s.partial {
		snap.Partial = append(snap.Partial, snapPartial{Path: k.path, Stream: k.stream, Data: v})
	}
	for _, r := range s.recent {
		if r != "" {
			snap.Recent = append(snap.Recent, r)
		}
	}
	snap.Workloads, snap.WorkloadsDropped = s.snapshotWorkloads()
	snap.Held = s.snapshotHeld()
	for name, fc := range s.firstClaims {
		if snap.FirstClaims == nil {
			snap.FirstClaims = map[string][2]string{}
		}
		snap.FirstClaims[name] = [2]string{fc.kernel, fc.dir}
	}
	snap.Extensions = ext
	// Marshal under the lock: the snapshot shares slices with the state.
	b, err := json.Marshal(snap)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("encode cannlog state: %w", err)
	}
	return b, nil
}

// UnmarshalBinary replaces the state with a blob from MarshalBinary. An
// empty blob leaves the state empty. On error the state is unchanged.
func (s *State) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	var snap snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("decode cannlog state: %w", err)
	}
	if snap.Version != snapshotVersion {
		return fmt.Errorf("decode cannlog state: version %d, want %d", snap.Version, snapshotVersion)
	}
	fresh := NewState(s.opts)
	for _, l := range snap.Lines {
		c := new([parse.NumLevels]uint64)
		copy(c[:], l.Counts)
		fresh.lines[l.Module] = c
	}
	for _, p := range snap.Processes {
		// A last write saved ahead of now (an older exporter kept printed
		// times as they were) counts as now.
		pr := &process{label: p.Label, name: p.Name, lastWrite: notAfter(p.LastWrite, fresh.opts.Now()), env: make(map[string]EnvSetting, len(p.Env)),
			devicePhyID: -1, owner: p.Owner}
		if p.OwnerPod != nil {
			pr.ownerPod = *p.OwnerPod
		}
		pr.rankTable = p.RankTable
		for k, v := range p.Env {
			pr.env[k] = EnvSetting(v)
		}
		for _, c := range p.Communicators {
			pr.comms = append(pr.comms, c.view())
		}
		pr.links = p.Links.restore(pr.commNames())
		if p.DevicePhyID != nil {
			pr.devicePhyID = *p.DevicePhyID
		}
		if p.QPMode != nil {
			pr.qpMode = *p.QPMode
		}
		pr.wl = p.Workload.restore()
		if pr.label == "" {
			pr.label = strconv.Itoa(p.PID)
		}
		fresh.procs[ProcessKey{p.Dir, p.PID}] = pr
		fresh.nComms += len(p.Communicators)
	}
	for _, f := range snap.Faults {
		seen := f.Seen
		if seen.IsZero() {
			seen = fresh.opts.Now()
		}
		if !f.CANN && f.Code != codeRuntimeOOM && !parse.IsHCCLCode([]byte(f.Code)) {
			// Written before other components' codes were counted apart.
			f.CANN = true
		}
		fresh.faults[faultKey{code: f.Code, resource: f.Resource, source: f.Source, namespace: f.Namespace, pod: f.Pod, container: f.Container,
			job: f.Job, cann: f.CANN, reason: f.Reason}] = &faultCount{count: f.Count, last: f.Last, seen: seen}
	}
	for _, c := range snap.ExtraCodes {
		fresh.extraCodes[c] = struct{}{}
	}
	for _, p := range snap.Pods {
		fresh.pods[podKey{p.Namespace, p.Pod, p.Container, p.Job}] = struct{}{}
	}
	for i := range snap.Summaries {
		sm := FaultSummary(snap.Summaries[i])
		if sm.BySource == nil {
			sm.BySource = map[string]uint64{}
		}
		fresh.summaries[sm.Code] = &sm
	}
	for _, e := range snap.PlogErrors {
		fresh.plogErrors[plogErrKey{e.Stage, e.Reason}] = e.Count
	}
	for k, v := range snap.Dropped {
		fresh.dropped[k] = v
	}
	for k, v := range snap.Unparsable {
		fresh.unparsable[k] = v
	}
	for k, v := range snap.Rejected {
		fresh.rejected[k] = v
	}
	for _, r := range untiedReasons { // a fixed set, whatever the file holds
		fresh.untied[r] = snap.Untied[r]
	}
	for _, p := range snap.Partial {
		fresh.partial[partialKey{p.Path, p.Stream}] = p.Data
	}
	for i, r := range snap.Recent {
		if i < dedupWindow {
			fresh.recent[i] = r
			fresh.recentNext = (i + 1) % dedupWindow
		}
	}
	fresh.faultsExpired = snap.FaultsExpired
	fresh.restoreWorkloads(snap.Workloads, snap.WorkloadsDropped)
	fresh.held = restoreHeld(snap.Held)
	for name, fc := range snap.FirstClaims {
		if fresh.firstClaims == nil {
			fresh.firstClaims = map[string]claim{}
		}
		fresh.firstClaims[name] = claim{kernel: fc[0], dir: fc[1]}
	}
	// A state file written before a pod went away: its series expire now.
	fresh.expireFaults(fresh.opts.Now())
	s.mu.Lock()
	s.lines, s.procs, s.nComms, s.faults = fresh.lines, fresh.procs, fresh.nComms, fresh.faults
	s.commGen++
	s.faultsExpired = fresh.faultsExpired
	s.extraCodes, s.pods, s.summaries, s.plogErrors = fresh.extraCodes, fresh.pods, fresh.summaries, fresh.plogErrors
	s.dropped, s.unparsable, s.rejected, s.partial = fresh.dropped, fresh.unparsable, fresh.rejected, fresh.partial
	s.recent, s.recentNext = fresh.recent, fresh.recentNext
	s.untied = fresh.untied
	s.wl = fresh.wl
	s.held, s.firstClaims, s.claims = fresh.held, fresh.firstClaims, nil
	s.mu.Unlock()
	// Outside the lock, as they are written.
	s.restoreExtensions(snap.Extensions)
	return nil
}

func copyCounts(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
