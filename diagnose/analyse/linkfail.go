package analyse

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// HCCL names the pair of ranks whose link failed in two places, and neither
// carries a fault code of its own:
//
//   - its connection-anomaly detector, after a link-setup socket timeout
//     (EI0006), prints under `CONNECT TIMEOUT DETECT RESULT`:
//     `This node (server S, device ID D) detects that srcRank (server S1,
//     device ID D1) fails to connect to dstRank (server S2, device ID
//     [D2,…]). Continue to analyze the fault based on the logs of srcRank
//     and dstRank.` (HCOMM-HEAD detect_connect_anomalies.cc:161, :616; one
//     device or a list);
//   - the transport manager, when a link fails, prints `Transport init
//     error! createLink para:rank[R]-localUserrank[U]-localIpAddr[A],
//     remoteRank[R2]-remoteUserrank[U2]-remoteIpAddr[B], machineType[…],
//     linkMode[…], isUsedRdma[0|1], tag[…]` (transport_manager.cc:1432;
//     addresses `serverId/devicePhyId`), older builds `…, dst_rank[R2]-
//     remoteUserrank[U2]-remote_ip_addr[B]` and, in EI0007 tracebacks,
//     `creakLink para:` (vllm-ascend #2754, #3162).
//
// Diagnose reads both into LinkFailure and hands them to the incident
// whose events surround them.

var (
	markLinkPara    = []byte("Link para:")
	markFailsToConn = []byte(") fails to connect to dstRank (server ")
	markSrcRank     = []byte("detects that srcRank (server ")
	markErrorLevel  = []byte("[ERROR]")
	markDeviceID    = ", device ID "
)

// maxLinkFailures caps the distinct link failures kept per group.
const maxLinkFailures = 1024

// maxDstDevices caps the device list read from one detector line.
const maxDstDevices = 64

// isLinkFailureLine is the cheap pre-check: plog ERROR lines and screen
// lines that may name a failing link.
func isLinkFailureLine(line []byte, screen bool) bool {
	if !screen && !bytes.HasPrefix(line, markErrorLevel) {
		return false
	}
	return bytes.Contains(line, markLinkPara) || bytes.Contains(line, markFailsToConn)
}

// parseLinkFailure reads the pair a detector or createLink line names.
func parseLinkFailure(line []byte) (model.LinkFailure, bool) {
	if i := bytes.Index(line, markSrcRank); i >= 0 {
		return parseDetectLine(string(line[i+len(markSrcRank):]))
	}
	if i := bytes.Index(line, markLinkPara); i >= 0 {
		return parseCreateLink(string(line[i+len(markLinkPara):]))
	}
	return model.LinkFailure{}, false
}

// parseDetectLine reads `S1, device ID D1) fails to connect to dstRank
// (server S2, device ID [D2,…])` (or a single D2).
func parseDetectLine(s string) (model.LinkFailure, bool) {
	l := model.LinkFailure{Source: model.LinkSourceDetector, SrcRank: -1, DstRank: -1, SrcDevice: -1, DstDevices: []int{}}
	i := strings.Index(s, markDeviceID)
	if i <= 0 {
		return model.LinkFailure{}, false
	}
	l.SrcServer = s[:i]
	s = s[i+len(markDeviceID):]
	n, w := leadingInt([]byte(s))
	if w == 0 {
		return model.LinkFailure{}, false
	}
	l.SrcDevice = n
	s = s[w:]
	fail := string(markFailsToConn)
	if !strings.HasPrefix(s, fail) {
		return model.LinkFailure{}, false
	}
	s = s[len(fail):]
	i = strings.Index(s, markDeviceID)
	if i <= 0 {
		return model.LinkFailure{}, false
	}
	l.DstServer = s[:i]
	s = s[i+len(markDeviceID):]
	end := strings.IndexByte(s, ')')
	if end < 0 {
		return model.LinkFailure{}, false
	}
	for _, f := range strings.Split(strings.Trim(s[:end], "[]"), ",") {
		f = strings.TrimSpace(f)
		if d, w := leadingInt([]byte(f)); w > 0 && w == len(f) && len(l.DstDevices) < maxDstDevices {
			l.DstDevices = append(l.DstDevices, d)
		}
	}
	if len(l.DstDevices) == 0 || !plausibleServer(l.SrcServer) || !plausibleServer(l.DstServer) {
		return model.LinkFailure{}, false
	}
	return l, true
}

// parseCreateLink reads `rank[R]-localUserrank[U]-localIpAddr[A],
// remoteRank[R2]-remoteUserrank[U2]-remoteIpAddr[B], …, isUsedRdma[1]` and
// the older `dst_rank[R2]-…-remote_ip_addr[B]`.
func parseCreateLink(s string) (model.LinkFailure, bool) {
	l := model.LinkFailure{Source: model.LinkSourceTransport, SrcRank: -1, DstRank: -1, SrcDevice: -1, DstDevices: []int{}}
	b := []byte(s)
	field := func(name string) (string, bool) {
		v, ok := parse.BracketField(b, name)
		return string(v), ok && len(v) > 0 && len(v) <= 64
	}
	num := func(name string) int {
		if v, ok := field(name); ok {
			if n, w := leadingInt([]byte(v)); w == len(v) {
				return n
			}
		}
		return -1
	}
	l.SrcRank = num("localUserrank")
	l.DstRank = num("remoteUserrank")
	if l.SrcRank < 0 {
		l.SrcRank = num("rank")
	}
	if l.DstRank < 0 {
		l.DstRank = max(num("remoteRank"), num("dst_rank"))
	}
	src, ok1 := field("localIpAddr")
	dst, ok2 := field("remoteIpAddr")
	if !ok2 {
		dst, ok2 = field("remote_ip_addr")
	}
	if !ok1 || !ok2 || l.SrcRank < 0 || l.DstRank < 0 {
		return model.LinkFailure{}, false
	}
	l.SrcServer, l.SrcDevice = splitAddr(src)
	var dd int
	l.DstServer, dd = splitAddr(dst)
	if dd >= 0 {
		l.DstDevices = []int{dd}
	}
	if !plausibleServer(l.SrcServer) || !plausibleServer(l.DstServer) {
		return model.LinkFailure{}, false
	}
	switch v, _ := field("isUsedRdma"); v {
	case "1":
		l.LinkType = model.LinkTypeRoCE
	case "0":
		l.LinkType = model.LinkTypeHCCS
	}
	return l, true
}

// splitAddr splits HEAD's `serverId/devicePhyId`; an address without '/'
// has no device.
func splitAddr(a string) (string, int) {
	if i := strings.LastIndexByte(a, '/'); i > 0 {
		if n, w := leadingInt([]byte(a[i+1:])); w > 0 && w == len(a)-i-1 {
			return a[:i], n
		}
	}
	return a, -1
}

// plausibleServer rejects what cannot be a server id or address printed
// by HCCL: empty, long, or with spaces or brackets.
func plausibleServer(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsAny(s, " []()")
}

// linkKey is one process's report of one pair from one source.
type linkKey struct {
	pid          int
	source, pair string // Pair() holds the ranks, servers, devices and link type
}

// observeLink keeps the first report of each pair per process and counts
// the repeats.
func (w *eventWatch) observeLink(line []byte, screen bool) {
	if !isLinkFailureLine(line, screen) {
		return
	}
	l, ok := parseLinkFailure(line)
	if !ok {
		return
	}
	var t time.Time
	if screen {
		l.PID = parse.ScreenPID(line)
		if raw := parse.FindPlogTime(line); raw != nil {
			t, _ = parse.ParsePlogTime(raw, w.loc)
		}
	} else {
		var p parse.PlogLine
		if parse.ParsePlog(line, &p) {
			l.PID = p.PID
			t, _ = parse.ParsePlogTime(p.Time, w.loc)
		}
	}
	k := linkKey{pid: l.PID, source: l.Source, pair: l.Pair()}
	if i, seen := w.linkIndex[k]; seen {
		w.links[i].Count++
		return
	}
	if len(w.links) >= maxLinkFailures {
		return
	}
	if w.linkIndex == nil {
		w.linkIndex = map[linkKey]int{}
	}
	l.Time, l.File, l.Line, l.Count = model.Timestamp{Time: t}, w.file, w.lineNo, 1
	w.linkIndex[k] = len(w.links)
	w.links = append(w.links, l)
}

// alignLinks sets each link failure's node and aligned time and sorts them.
func alignLinks(nodes []*nodeData, cm *clockModel, loc *time.Location) []model.LinkFailure {
	out := []model.LinkFailure{}
	for _, n := range nodes {
		for _, l := range n.links {
			l.Node = n.name
			if !l.Time.IsZero() {
				l.Aligned = model.Timestamp{Time: cm.align(n.name, l.Time.Time).In(loc)}
			}
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b model.LinkFailure) int {
		return cmp.Or(a.Aligned.Compare(b.Aligned.Time), cmp.Compare(a.Node, b.Node), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// linkSlack is how far outside an incident's events a link failure may
// lie and still belong to it: the detector prints its result after the
// link-setup timeout, the transport line right after the failure.
const linkSlack = 60 * time.Second

// linksDuring returns the link failures between from and to (± linkSlack),
// detector results first.
func linksDuring(all []model.LinkFailure, from, to time.Time) []model.LinkFailure {
	var out []model.LinkFailure
	for _, l := range all {
		if l.Aligned.IsZero() || l.Aligned.Before(from.Add(-linkSlack)) || l.Aligned.After(to.Add(linkSlack)) {
			continue
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b model.LinkFailure) int {
		return cmp.Compare(sourceOrder(a.Source), sourceOrder(b.Source))
	})
	return out
}

func sourceOrder(s string) int {
	if s == model.LinkSourceDetector {
		return 0
	}
	return 1
}

// linkReason says what the link failures of an incident name.
func linkReason(ls []model.LinkFailure) string {
	var named []string
	for i, l := range ls {
		if i == 3 {
			named = append(named, fmt.Sprintf("and %d more", len(ls)-3))
			break
		}
		who := "HCCL's link-failure detector"
		if l.Source == model.LinkSourceTransport {
			who = "a failed link's createLink parameters"
		}
		named = append(named, fmt.Sprintf("%s on %s (pid %d): %s", who, l.Node, l.PID, l.Pair()))
	}
	check := "the link itself"
	if ls[0].LinkType == model.LinkTypeRoCE || ls[0].LinkType == "" && ls[0].SrcServer != ls[0].DstServer {
		check = "the RoCE link itself (link state, optics, TLS and speed on both NICs)"
	}
	return "HCCL names the failing link: " + strings.Join(named, "; ") + ". Continue with the logs of both ends of that link, then check " + check + "."
}

// linksToRoot says what the failing links HCCL named mean when a rank's
// own failure is the root: links to the root's rank are its consequence.
func linksToRoot(ls []model.LinkFailure, rootRank int) string {
	toRoot := 0
	for _, l := range ls {
		if rootRank >= 0 && l.DstRank == rootRank {
			toRoot++
		}
	}
	if toRoot == len(ls) {
		return fmt.Sprintf("HCCL names %d failing link(s), all to the root's rank %d (e.g. %s): a consequence of the root, not a fault of the links.", len(ls), rootRank, ls[0].Pair())
	}
	return fmt.Sprintf("HCCL names %d failing link(s), %d of them to the root's rank: %s. Links not to the root may be a fault of their own; check them after the root.",
		len(ls), toRoot, ls[0].Pair())
}
