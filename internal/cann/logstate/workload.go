package logstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// Workload memory: what the processes of one workload did in their link
// setups (the link-set kinds they ran and the link setups that failed),
// remembered across the processes' restarts and the exporter's (the state
// file), so that the headroom model can expect a restarted workload's link
// sets from its start (docs/headroom.md "Workload memory").
//
// The state does not know which workload a process belongs to: the
// headroom join binds each process it sees on a chip to its identity
// (BindWorkload; WorkloadOfPod and WorkloadOfShape build it). From then on
// the process's link lines and link-setup failures are remembered under
// that identity, and the lines read before the binding are taken over when
// it happens.

// Defaults of the workload memory's bounds (the --headroom.workload-memory-*
// flags).
const (
	DefaultWorkloadTTL  = 7 * 24 * time.Hour
	DefaultMaxWorkloads = 256
)

// maxFailuresPerWorkload bounds the distinct (code, resource) failures kept
// per workload.
const maxFailuresPerWorkload = 8

// maxShapesPerWorkload bounds the communicator shapes kept per workload.
const maxShapesPerWorkload = 32

// Reasons a remembered workload is forgotten (WorkloadStats.Dropped).
const (
	WorkloadDroppedExpired  = "expired"
	WorkloadDroppedCapacity = "capacity"
)

// RememberedLinks is what the processes of a workload linked on
// communicators of one shape (rank count, server count): the shape, not
// the identifier, ties a restarted process's communicator to its
// predecessor's (identifiers carry the creation time or a port).
type RememberedLinks struct {
	RankSize, ServerNum int
	// AllRanks: an AlltoAll-family or send/recv operator ran: every remote
	// rank is linked.
	AllRanks bool
	// MC2: a fused MC2 operator (MatmulAllReduce, MoeDistributeDispatch, …)
	// set up links.
	MC2 bool
	// Capture: an ACL graph capture re-created links; CaptureQPs is the
	// most QPs one capture needs: one per link of the captured operator's
	// first link set (which the capture re-creates), or what the capture
	// created if more.
	Capture    bool
	CaptureQPs uint64
}

// RememberedFailure is a link setup of a workload that failed.
type RememberedFailure struct {
	Code, Resource, Stage string
	At                    time.Time // the time printed in the latest such line
}

// WorkloadView is what is remembered about one workload.
type WorkloadView struct {
	ID       string
	Links    []RememberedLinks
	Failures []RememberedFailure
	LastSeen time.Time
}

// WorkloadStats are the memory's size and what it dropped.
type WorkloadStats struct {
	Workloads int
	Dropped   map[string]uint64 // by WorkloadDropped*
}

type shapeKey struct{ ranks, servers int }

type workloadRecord struct {
	links    map[shapeKey]*RememberedLinks
	failures map[[2]string]*RememberedFailure // (code, resource)
	lastSeen time.Time
	// owner is the owner (process.owner) of the process that first bound
	// it: the cap on workloads is shared per owner.
	owner string
}

// processWorkload is a process's part in the memory: the workload it is
// bound to.
type processWorkload struct {
	id string
}

type workloadMemory struct {
	records map[string]*workloadRecord
	dropped map[string]uint64
	// gen counts changes worth a checkpoint (Generation).
	gen uint64
}

func (s *State) workloadTTL() time.Duration {
	if s.opts.WorkloadTTL > 0 {
		return s.opts.WorkloadTTL
	}
	return DefaultWorkloadTTL
}

func (s *State) maxWorkloads() int {
	if s.opts.MaxWorkloads > 0 {
		return s.opts.MaxWorkloads
	}
	return DefaultMaxWorkloads
}

// BindWorkload ties the process to workload id (the caller's identity,
// WorkloadOfPod or WorkloadOfShape) and returns what is remembered about
// the workload, the process's own links included. It is idempotent; a
// process bound again to another id moves to it (its pod became known).
// ok is false when the logs do not know the process or id is empty.
//
// An identity outside Kubernetes ("host/…", WorkloadOfShape) is what the
// process printed: any tenant can print another's settings and shape. It
// is kept under the process's owner as the kernel names it (a uid, and the
// container's cgroup; scopedWorkload), so that another tenant's processes
// of the same shape are another workload.
func (s *State) BindWorkload(key ProcessKey, id string) (WorkloadView, bool) {
	if id == "" {
		return WorkloadView{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.procs[key]
	if pr == nil {
		return WorkloadView{}, false
	}
	id = scopedWorkload(id, pr.owner)
	now := s.opts.Now()
	s.expireWorkloads(now)
	rec := s.workload(id, pr.owner, now)
	if rec == nil {
		return WorkloadView{}, false
	}
	if pr.wl.id != id {
		pr.wl.id = id
		s.wl.gen++
	}
	rec.lastSeen = now
	// The lines read before the binding.
	for i := range pr.comms {
		s.rememberComm(pr, rec, &pr.comms[i])
	}
	return rec.view(id), true
}

// Workload returns what is remembered about workload id.
func (s *State) Workload(id string) (WorkloadView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.wl.records[id]
	if rec == nil {
		return WorkloadView{}, false
	}
	return rec.view(id), true
}

// WorkloadStats returns the memory's size and drops.
func (s *State) WorkloadStats() WorkloadStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireWorkloads(s.opts.Now())
	out := WorkloadStats{Workloads: len(s.wl.records), Dropped: map[string]uint64{}}
	for _, r := range []string{WorkloadDroppedExpired, WorkloadDroppedCapacity} {
		out.Dropped[r] = s.wl.dropped[r]
	}
	return out
}

// scopedWorkload is id under owner: a "host/…" identity gets the owner's
// tag, "host/<settings>/<ranks>x<servers>@<12 hex of the owner>"; other
// identities (a pod's workload, which the kubelet names) and processes
// without an owner (diagnose) are left as they are.
func scopedWorkload(id, owner string) string {
	if owner == "" || !strings.HasPrefix(id, "host/") {
		return id
	}
	h := sha256.Sum256([]byte(owner))
	return id + "@" + hex.EncodeToString(h[:6])
}

// workload returns id's record, creating it for owner, and making room
// when the memory is full (evictWorkload). The caller holds the lock.
func (s *State) workload(id, owner string, now time.Time) *workloadRecord {
	if s.wl.records == nil {
		s.wl.records = map[string]*workloadRecord{}
	}
	if s.wl.dropped == nil {
		s.wl.dropped = map[string]uint64{}
	}
	if rec := s.wl.records[id]; rec != nil {
		return rec
	}
	for len(s.wl.records) >= s.maxWorkloads() {
		s.evictWorkload(owner)
	}
	rec := &workloadRecord{links: map[shapeKey]*RememberedLinks{}, failures: map[[2]string]*RememberedFailure{}, lastSeen: now, owner: owner}
	s.wl.records[id] = rec
	s.wl.gen++
	return rec
}

// evictWorkload drops one workload to make room for one of owner's: the
// cap is shared per owner, as the caps on pids and label sets are. When
// another owner holds more than one workload more than owner would with
// the new one, its workload seen longest ago goes; otherwise owner's own
// (or, when it holds none, the oldest of the owners holding the most). A
// tenant making up workloads evicts its own. The caller holds the lock.
func (s *State) evictWorkload(owner string) {
	held := map[string]int{}
	for _, r := range s.wl.records {
		held[r.owner]++
	}
	most := 0
	for _, n := range held {
		most = max(most, n)
	}
	from := func(o string) bool { return held[o] == most }
	switch {
	case most > held[owner]+1:
	case held[owner] > 0:
		from = func(o string) bool { return o == owner }
	}
	oldest := ""
	for k, r := range s.wl.records {
		if !from(r.owner) {
			continue
		}
		if oldest == "" || r.lastSeen.Before(s.wl.records[oldest].lastSeen) ||
			r.lastSeen.Equal(s.wl.records[oldest].lastSeen) && k < oldest {
			oldest = k
		}
	}
	delete(s.wl.records, oldest)
	s.wl.dropped[WorkloadDroppedCapacity]++
}

// expireWorkloads forgets the workloads not seen for the TTL. The caller
// holds the lock.
func (s *State) expireWorkloads(now time.Time) {
	ttl := s.workloadTTL()
	for id, r := range s.wl.records {
		if now.Sub(r.lastSeen) > ttl {
			delete(s.wl.records, id)
			s.wl.dropped[WorkloadDroppedExpired]++
		}
	}
}

func (r *workloadRecord) view(id string) WorkloadView {
	v := WorkloadView{ID: id, LastSeen: r.lastSeen}
	for _, l := range r.links {
		v.Links = append(v.Links, *l)
	}
	sort.Slice(v.Links, func(i, j int) bool {
		a, b := v.Links[i], v.Links[j]
		return a.RankSize < b.RankSize || a.RankSize == b.RankSize && a.ServerNum < b.ServerNum
	})
	for _, f := range r.failures {
		v.Failures = append(v.Failures, *f)
	}
	sort.Slice(v.Failures, func(i, j int) bool { return v.Failures[i].At.Before(v.Failures[j].At) })
	return v
}

// rememberLink is the hook of applyTransport: after a link line of
// communicator c, remember what the communicator ran under the process's
// workload. The caller holds the lock.
func (s *State) rememberLink(pr *process, c *comm.Communicator, _ parse.Transport) {
	if pr.wl.id == "" {
		return
	}
	if rec := s.wl.records[pr.wl.id]; rec != nil {
		s.rememberComm(pr, rec, c)
	} // else expired or dropped: bound again at the next scrape
}

// rememberComm folds what communicator c ran into rec.
func (s *State) rememberComm(pr *process, rec *workloadRecord, c *comm.Communicator) {
	if !c.AllRanksOps && !c.MC2 && c.Captures == 0 {
		return
	}
	l := rec.shape(c)
	if l == nil {
		return
	}
	before := *l
	l.AllRanks = l.AllRanks || c.AllRanksOps
	l.MC2 = l.MC2 || c.MC2
	if c.Captures > 0 {
		l.Capture = true
		l.CaptureQPs = max(l.CaptureQPs, c.LastCaptureQPs, capturedSetQPs(pr, c))
	}
	if *l != before {
		s.wl.gen++
	}
}

// capturedSetQPs is the QPs a full capture of the operator the
// communicator's latest capture captured needs: one offload QP per link of
// that operator's first link set (a capture re-creates the set with one QP
// per link, whatever HCCL_RDMA_QPS_PER_CONNECTION; docs/headroom.md rule
// 19), for a capture that failed half-way. 0 when the logs do not show it.
func capturedSetQPs(pr *process, c *comm.Communicator) uint64 {
	ct := pr.links.tags[c.Name]
	if ct == nil || ct.capture == "" {
		return 0
	}
	first, ok := ct.first[classifyTag(ct.capture).Op]
	if !ok {
		return 0
	}
	for _, set := range ct.sets {
		if set.view.Tag == first {
			return uint64(max(set.view.RoCEPeers, 0))
		}
	}
	return 0
}

func (r *workloadRecord) shape(c *comm.Communicator) *RememberedLinks {
	k := shapeKey{c.RankSize, c.ServerNum}
	l := r.links[k]
	if l == nil {
		if len(r.links) >= maxShapesPerWorkload {
			return nil
		}
		l = &RememberedLinks{RankSize: c.RankSize, ServerNum: c.ServerNum}
		r.links[k] = l
	}
	return l
}

// rememberFailure is the hook of recordFault: a link setup that failed for
// want of memory or QPs (EI0011, EI0007 resource[qp]) is remembered under
// the workload of the process that printed it (a plog line's process; for a
// screen report, the process of the report's pid that shares the screen
// log's owner, screenProcess).
// The caller holds the lock.
func (s *State) rememberFailure(code, resource, source string, src *Source, pid int, ts time.Time) {
	if pid <= 0 || !(code == "EI0011" || code == "EI0007" && resource == ResourceQP) {
		return
	}
	var pr *process
	if source == FaultSourcePlog {
		pr = s.procs[ProcessKey{src.Dir, pid}]
	} else {
		// Only the process the screen log may speak for (its writer's):
		// a pid another pod or tenant prints is not theirs to remember.
		pr, _ = s.screenProcess(src, pid)
	}
	if pr == nil || pr.wl.id == "" {
		return
	}
	rec := s.wl.records[pr.wl.id]
	if rec == nil {
		return
	}
	k := [2]string{code, resource}
	f := rec.failures[k]
	if f == nil {
		if len(rec.failures) >= maxFailuresPerWorkload {
			return
		}
		f = &RememberedFailure{Code: code, Resource: resource, Stage: s.cat.stage(code)}
		rec.failures[k] = f
	}
	if ts.After(f.At) {
		f.At = ts
		s.wl.gen++
	}
}

// WorkloadOfPod is the identity of the workload of a pod: its namespace
// and owner, "k8s/<namespace>/<owner>". The owner is the pod's name minus
// the suffix its controller generated: a ReplicaSet's template hash and
// random suffix (Deployment: name-7d9f8b6c5-x2k4q), a Job's or
// DaemonSet's random suffix (name-x2k4q), a StatefulSet's ordinal
// (name-0), a training operator's replica type and index (PyTorchJob,
// MPIJob: name-master-0, name-worker-3). A pod whose name has none of
// these is its own owner (a bare pod). The kubelet's PodResources API
// names pods, not their owners: a name that merely looks generated (a bare
// pod "cache-abcde") loses its last part, so two such pods share a
// workload; the memory then errs towards expecting more, never less.
func WorkloadOfPod(namespace, pod string) string {
	if pod == "" {
		return ""
	}
	return "k8s/" + namespace + "/" + podOwner(pod)
}

var (
	// Kubernetes' generateName suffix: 5 characters of its alphabet
	// (k8s.io/apimachinery utilrand: consonants and digits without 0, 1,
	// 3, vowels and confusables); the ReplicaSet's pod-template-hash, up
	// to 10 characters of the same alphabet.
	randSuffix   = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	hashSuffix   = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{6,10}$`)
	replicaIndex = regexp.MustCompile(`-(master|worker|launcher|chief|ps|evaluator|leader)-[0-9]+$`)
	ordinal      = regexp.MustCompile(`-[0-9]+$`)
)

func podOwner(pod string) string {
	if loc := replicaIndex.FindStringIndex(pod); loc != nil && loc[0] > 0 {
		return pod[:loc[0]]
	}
	if loc := randSuffix.FindStringIndex(pod); loc != nil && loc[0] > 0 {
		owner := pod[:loc[0]]
		if h := hashSuffix.FindStringIndex(owner); h != nil && h[0] > 0 {
			owner = owner[:h[0]]
		}
		return owner
	}
	if loc := ordinal.FindStringIndex(pod); loc != nil && loc[0] > 0 {
		return pod[:loc[0]]
	}
	return pod
}

// WorkloadOfShape is the identity of a workload outside Kubernetes: its
// settings set (ProcessView.Settings) and the shape of its first
// communicator (the world group: rank count, server count),
// "host/<settings>/<ranks>x<servers>". Two jobs of one owner with the
// same settings and shape are one workload; BindWorkload keeps it under
// the process's owner (scopedWorkload); "" when either is unknown.
func WorkloadOfShape(settings string, first comm.Communicator) string {
	if settings == "" || first.RankSize <= 0 {
		return ""
	}
	return "host/" + settings + "/" + itoa(first.RankSize) + "x" + itoa(first.ServerNum)
}

func itoa(v int) string {
	if v < 0 {
		return "?"
	}
	return strconv.Itoa(v)
}

// The workload memory on disk (the state file, persist.go).

type snapWorkload struct {
	ID       string              `json:"id"`
	Owner    string              `json:"owner,omitempty"`
	LastSeen time.Time           `json:"last_seen"`
	Links    []RememberedLinks   `json:"links,omitempty"`
	Failures []RememberedFailure `json:"failures,omitempty"`
}

type snapProcWorkload struct {
	ID string `json:"id,omitempty"`
}

func (w processWorkload) snapshot() *snapProcWorkload {
	if w.id == "" {
		return nil
	}
	return &snapProcWorkload{ID: w.id}
}

func (sw *snapProcWorkload) restore() processWorkload {
	if sw == nil {
		return processWorkload{}
	}
	return processWorkload{id: sw.ID}
}

// snapshotWorkloads is the memory for the state file; the caller holds
// the lock. Expired workloads are dropped first.
func (s *State) snapshotWorkloads() ([]snapWorkload, map[string]uint64) {
	s.expireWorkloads(s.opts.Now())
	out := make([]snapWorkload, 0, len(s.wl.records))
	for id, r := range s.wl.records {
		v := r.view(id)
		out = append(out, snapWorkload{ID: id, Owner: r.owner, LastSeen: r.lastSeen, Links: v.Links, Failures: v.Failures})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, copyCounts(s.wl.dropped)
}

// restoreWorkloads loads the memory of a state file, within the bounds of
// this run's flags (what they cut is counted as dropped).
func (s *State) restoreWorkloads(ws []snapWorkload, dropped map[string]uint64) {
	s.wl = workloadMemory{records: map[string]*workloadRecord{}, dropped: copyCounts(dropped)}
	// The most recently seen first, so that a smaller cap keeps them.
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].LastSeen.After(ws[j].LastSeen) })
	for _, w := range ws {
		if w.ID == "" {
			continue
		}
		if _, dup := s.wl.records[w.ID]; dup {
			continue
		}
		if len(s.wl.records) >= s.maxWorkloads() {
			s.wl.dropped[WorkloadDroppedCapacity]++
			continue
		}
		rec := &workloadRecord{links: map[shapeKey]*RememberedLinks{}, failures: map[[2]string]*RememberedFailure{}, lastSeen: w.LastSeen, owner: w.Owner}
		for _, l := range w.Links {
			if len(rec.links) < maxShapesPerWorkload {
				rec.links[shapeKey{l.RankSize, l.ServerNum}] = &l
			}
		}
		for _, f := range w.Failures {
			if len(rec.failures) < maxFailuresPerWorkload {
				rec.failures[[2]string{f.Code, f.Resource}] = &f
			}
		}
		s.wl.records[w.ID] = rec
	}
	s.expireWorkloads(s.opts.Now())
}

// Extension is state another package keeps in the state file
// (AttachExtension): the headroom model's learned QP sizes. Generation
// changes whenever there is something new to save.
type Extension interface {
	MarshalJSON() ([]byte, error)
	UnmarshalJSON([]byte) error
	Generation() uint64
}

// Generation changes whenever the workload memory or an extension has
// something new for the state file: the checkpoint writes it even when no
// line was read (a burst is learned a scrape after its lines).
func (s *State) Generation() uint64 {
	s.mu.Lock()
	g := s.wl.gen
	s.mu.Unlock()
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	for _, e := range s.ext.byName {
		g += e.Generation()
	}
	return g
}

type extensions struct {
	mu     sync.Mutex
	byName map[string]Extension
	loaded map[string]json.RawMessage // read before the owner attached
}

// AttachExtension keeps ext in the state file under name: its blob is
// written with every checkpoint and handed back when a state file is read,
// at once if it was read before ext was attached. It is called outside the
// state's lock, so ext may read the state.
func (s *State) AttachExtension(name string, ext Extension) error {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if s.ext.byName == nil {
		s.ext.byName = map[string]Extension{}
	}
	s.ext.byName[name] = ext
	if raw, ok := s.ext.loaded[name]; ok {
		delete(s.ext.loaded, name)
		if err := ext.UnmarshalJSON(raw); err != nil {
			return fmt.Errorf("state file extension %s: %w", name, err)
		}
	}
	return nil
}

func (s *State) marshalExtensions() (map[string]json.RawMessage, error) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	if len(s.ext.byName) == 0 && len(s.ext.loaded) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(s.ext.byName)+len(s.ext.loaded))
	for name, raw := range s.ext.loaded {
		out[name] = raw // kept for an owner this run has not attached
	}
	for name, ext := range s.ext.byName {
		b, err := ext.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encode state file extension %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// restoreExtensions hands each attached extension its blob; a blob that
// does not decode leaves the extension as it was (its owner starts over).
func (s *State) restoreExtensions(blobs map[string]json.RawMessage) {
	s.ext.mu.Lock()
	defer s.ext.mu.Unlock()
	s.ext.loaded = map[string]json.RawMessage{}
	for name, raw := range blobs {
		if ext, ok := s.ext.byName[name]; ok {
			_ = ext.UnmarshalJSON(raw)
			continue
		}
		s.ext.loaded[name] = raw
	}
}
