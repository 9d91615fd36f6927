package analyse

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// An incident whose waiting ranks (or HCCL's link-failure lines) point at a
// peer is read from that peer's side: the failing pair is resolved against
// the ranks of the bundle (the detector names servers and devices only, the
// createLink line ranks and addresses), and a named peer whose own logs are
// in the bundle but show no failure is the likely root cause. HCCL's own
// guidance for a dstRank that reports no error is that "the service process
// is suspended or exits in advance" (HCCL troubleshooting, link setup
// timeouts): its logs stop, its peers time out waiting for it.

// bundleProc is a process of the bundle with its rank in its largest
// communicator.
type bundleProc struct {
	node   *nodeData
	proc   *procData
	pid    int
	rank   int
	device int
	server string
}

// rankIndex finds the bundle's processes by rank and by server and device.
type rankIndex struct {
	byRank   map[int][]bundleProc
	byDevice map[string][]bundleProc // server + "/" + device
	// failed holds node/pid of every process that printed a fault event.
	failed map[string]bool
}

func procKey(node string, pid int) string { return node + "/" + strconv.Itoa(pid) }

func newRankIndex(nodes []*nodeData) *rankIndex {
	ix := &rankIndex{byRank: map[int][]bundleProc{}, byDevice: map[string][]bundleProc{}, failed: map[string]bool{}}
	for _, n := range nodes {
		for _, e := range n.events {
			ix.failed[procKey(n.name, e.pid)] = true
		}
		for _, pid := range sortedKeys(n.ranks) {
			ri, ok := identity(n.ranks[pid])
			if !ok {
				continue
			}
			bp := bundleProc{node: n, proc: n.procs[pid], pid: pid, rank: ri.rank, device: ri.device, server: ri.server}
			ix.byRank[ri.rank] = append(ix.byRank[ri.rank], bp)
			if ri.server != "" && ri.device >= 0 && ri.physical {
				k := ri.server + "/" + strconv.Itoa(ri.device)
				ix.byDevice[k] = append(ix.byDevice[k], bp)
			}
		}
	}
	return ix
}

// one returns the only process of a list: a rank or device that two
// processes of the bundle claim (two jobs in one bundle) is not resolved.
func one(ps []bundleProc) (bundleProc, bool) {
	if len(ps) != 1 {
		return bundleProc{}, false
	}
	return ps[0], true
}

// resolve completes an end from the bundle.
func (ix *rankIndex) resolve(e model.PairEnd) model.PairEnd {
	var bp bundleProc
	ok := false
	if e.Server != "" && e.Device >= 0 {
		bp, ok = one(ix.byDevice[e.Server+"/"+strconv.Itoa(e.Device)])
	}
	if !ok && e.Rank >= 0 {
		bp, ok = one(ix.byRank[e.Rank])
		// A rank of another communicator numbering: the bundle's rank
		// must sit where HCCL said it does.
		if ok && ((e.Server != "" && bp.server != "" && bp.server != e.Server) || (e.Device >= 0 && bp.device >= 0 && bp.device != e.Device)) {
			ok = false
		}
	}
	if !ok {
		return e
	}
	if e.Rank < 0 {
		e.Rank = bp.rank
	}
	if e.Server == "" {
		e.Server = bp.server
	}
	if e.Device < 0 {
		e.Device = bp.device
	}
	e.Node, e.PID, e.InBundle = bp.node.name, bp.pid, true
	return e
}

// failingPair resolves the incident's first failing link (detector first)
// and fills in from the others what it did not print: the detector gives
// no ranks, a createLink line of the same pair does.
func failingPair(ls []model.LinkFailure, ix *rankIndex) *model.FailingPair {
	if len(ls) == 0 {
		return nil
	}
	end := func(rank int, server string, devs []int) model.PairEnd {
		d := -1
		if len(devs) == 1 {
			d = devs[0]
		}
		return model.PairEnd{Rank: rank, Server: server, Device: d}
	}
	l := ls[0]
	src := l.SrcDevice
	p := &model.FailingPair{Source: l.Source, LinkType: l.LinkType,
		Src: model.PairEnd{Rank: l.SrcRank, Server: l.SrcServer, Device: src},
		Dst: end(l.DstRank, l.DstServer, l.DstDevices)}
	same := func(a model.PairEnd, b model.PairEnd) bool {
		return a.Server == b.Server && (a.Device < 0 || b.Device < 0 || a.Device == b.Device)
	}
	for _, o := range ls[1:] {
		os, od := model.PairEnd{Rank: o.SrcRank, Server: o.SrcServer, Device: o.SrcDevice}, end(o.DstRank, o.DstServer, o.DstDevices)
		if !same(p.Src, os) || !same(p.Dst, od) {
			continue
		}
		if p.Src.Rank < 0 {
			p.Src.Rank = os.Rank
		}
		if p.Dst.Rank < 0 {
			p.Dst.Rank = od.Rank
		}
		if p.Src.Device < 0 {
			p.Src.Device = os.Device
		}
		if p.Dst.Device < 0 {
			p.Dst.Device = od.Device
		}
		if p.LinkType == "" {
			p.LinkType = o.LinkType
		}
	}
	p.Src, p.Dst = ix.resolve(p.Src), ix.resolve(p.Dst)
	return p
}

// silentRanks returns the peers named by the failing pair's dst end and by
// the waiting events whose processes are in the bundle without a fault
// event of their own, most likely first.
func silentRanks(in *model.Incident, ix *rankIndex, cm *clockModel, start time.Time, opts Options) []model.SilentRank {
	type cand struct {
		bp      bundleProc
		namedBy []string
	}
	var order []int
	cands := map[int]*cand{}
	add := func(bp bundleProc, why string) {
		if ix.failed[procKey(bp.node.name, bp.pid)] {
			return
		}
		c := cands[bp.rank]
		if c == nil {
			c = &cand{bp: bp}
			cands[bp.rank] = c
			order = append(order, bp.rank)
		}
		if !slices.Contains(c.namedBy, why) {
			c.namedBy = append(c.namedBy, why)
		}
	}
	if p := in.FailingPair; p != nil && p.Dst.InBundle {
		if bp, ok := one(ix.byRank[p.Dst.Rank]); ok && bp.node.name == p.Dst.Node && bp.pid == p.Dst.PID {
			add(bp, fmt.Sprintf("the failing link's dstRank (HCCL's %s line on %s)", p.Source, in.LinkFailures[0].Node))
		}
	}
	for _, sp := range in.SuspectedPeers {
		r, ok := strings.CutPrefix(sp.Peer, "rank ")
		if !ok || sp.Events == 0 {
			continue
		}
		n, err := strconv.Atoi(r)
		if err != nil {
			continue
		}
		if bp, ok := one(ix.byRank[n]); ok {
			add(bp, fmt.Sprintf("%d waiting event(s) as the peer they waited for", sp.Events))
		}
	}
	out := []model.SilentRank{}
	for _, rank := range order {
		out = append(out, silentRank(rank, cands[rank].bp, cands[rank].namedBy, cm, start, opts))
	}
	slices.SortStableFunc(out, func(a, b model.SilentRank) int {
		return confidenceRank(a.Confidence) - confidenceRank(b.Confidence)
	})
	return out
}

// silentRank describes one named peer whose logs show no failure: when its
// logs stop against the incident's start, how sure that makes it the root,
// and what to collect next.
func silentRank(rank int, bp bundleProc, namedBy []string, cm *clockModel, start time.Time, opts Options) model.SilentRank {
	s := model.SilentRank{Rank: rank, Node: bp.node.name, PID: bp.pid, Server: bp.server, Device: bp.device,
		NamedBy: strings.Join(namedBy, "; ")}
	var last time.Time
	if bp.proc != nil {
		last = bp.proc.lastWrite
	}
	s.Collect = []string{
		fmt.Sprintf("the training screen log of %s pid %d (rank %d): its last lines say whether it exited, was killed or hung", bp.node.name, bp.pid, rank),
		fmt.Sprintf("dmesg -T on %s around the time its logs stop: the OOM killer (\"Out of memory: Killed process %d\"), segfaults, NPU driver errors", bp.node.name, bp.pid),
		fmt.Sprintf("the job scheduler's and container's exit record of pid %d (exit code, signal, OOMKilled)", bp.pid),
	}
	if last.IsZero() {
		s.Confidence = model.ConfidenceLow
		s.Reason = fmt.Sprintf("Rank %d's process (%s pid %d) is in the bundle but printed no time: whether it stopped before its peers failed cannot be told.", rank, bp.node.name, bp.pid)
		return s
	}
	s.LastLog = stamp(last, opts)
	at := cm.align(bp.node.name, last)
	s.LastLogAligned = model.Timestamp{Time: at.In(opts.Location)}
	s.SilentSeconds = round3(start.Sub(at).Seconds())
	if at.Before(start) {
		s.Confidence = model.ConfidenceMedium
		s.Reason = fmt.Sprintf("Rank %d's own logs are in the bundle (%s pid %d) and show no failure: they stop at %s, %s "+
			"before its peers' first failure. HCCL's guidance for a peer that reports no error: its process was suspended "+
			"or exited early. Medium, not high: a process killed outright may also lose its last, buffered log lines.",
			rank, bp.node.name, bp.pid, s.LastLog.Format(model.TextTime), model.FmtSeconds(s.SilentSeconds))
	} else {
		s.Confidence = model.ConfidenceLow
		s.Reason = fmt.Sprintf("Rank %d's own logs are in the bundle (%s pid %d) and show no failure, but it printed until %s, "+
			"after its peers began to fail: it was alive, possibly stuck in other work (a different collective, a hang in "+
			"the framework) rather than exited.",
			rank, bp.node.name, bp.pid, s.LastLog.Format(model.TextTime))
	}
	return s
}

func confidenceRank(c string) int {
	switch c {
	case model.ConfidenceHigh:
		return 0
	case model.ConfidenceMedium:
		return 1
	}
	return 2
}

// silentHead is the summary's sentence naming a silent rank.
func silentHead(s model.SilentRank) string {
	where := fmt.Sprintf("%s pid %d", s.Node, s.PID)
	if s.Server != "" {
		where += ", server " + s.Server
	}
	if s.Device >= 0 {
		where += fmt.Sprintf(", device %d", s.Device)
	}
	last := "printed no time"
	if !s.LastLog.IsZero() {
		last = "stop at " + s.LastLog.Format(model.TextTime)
	}
	return fmt.Sprintf("Likely root cause: rank %d (%s), suspended or exited early: its logs %s without an error (confidence %s).", s.Rank, where, last, s.Confidence)
}
