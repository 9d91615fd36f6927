package model

import (
	"fmt"
	"strconv"
	"strings"
)

// Parts of an event in its incident.
const (
	PartRoot        = "root"
	PartConsequence = "consequence"
	PartConcurrent  = "concurrent"
	// PartWaiting marks the events of an incident whose root is not in
	// the bundle.
	PartWaiting = "waiting"
	// PartSame marks the root's failure printed again by the same
	// process (its screen report and its plog line).
	PartSame = "same"
)

// Confidence levels.
const (
	ConfidenceHigh   = "high"
	ConfidenceMedium = "medium"
	ConfidenceLow    = "low"
)

// Event is one fault event of the bundle.
type Event struct {
	Node string `json:"node"`
	PID  int    `json:"pid"`
	// Rank is the process's rank in its largest communicator, from its
	// communicator lines (or the screen line's own [rankN]); -1 unknown.
	Rank     int `json:"rank"`
	RankSize int `json:"rank_size"`
	// Device is the NPU: the physical id where the logs print one
	// (DevicePhysical), else the logical id; -1 unknown.
	Device         int    `json:"device"`
	DevicePhysical bool   `json:"device_physical"`
	Code           string `json:"code"`
	Stage          string `json:"stage"`
	Role           string `json:"role"`
	Source         string `json:"source"`
	// Time is as the node printed it, in the node's zone.
	Time Timestamp `json:"time"`
	// TimeFromLine is, for an event whose own line printed no time, the
	// line of the same file whose time Time is (the nearest line that
	// printed a date and time); 0 when the event's line printed its own.
	TimeFromLine int64 `json:"time_from_line,omitempty"`
	// TimeFromFile: no line of the event's file printed a date and time,
	// and Time is the file's modification time (its file system's or its
	// archive entry's).
	TimeFromFile bool `json:"time_from_file,omitempty"`
	// Aligned is the time on the reference node's clock (Time corrected by
	// the node's measured offset), in the report's zone.
	Aligned Timestamp `json:"aligned_time"`
	File    string    `json:"file"`
	Line    int64     `json:"line"`
	Text    string    `json:"text"`
	Part    string    `json:"part"`
	// AfterSeconds is the time since the incident's first event.
	AfterSeconds float64 `json:"after_seconds"`
	// TimerSeconds is how long the timer behind a waiting code ran for
	// this process, and TimerBasis where that came from.
	TimerSeconds float64 `json:"timer_seconds,omitempty"`
	TimerBasis   string  `json:"timer_basis,omitempty"`
	// Peers are the ranks or addresses the line says it waited for.
	Peers []string `json:"peers,omitempty"`
}

// Incident is one failure and its consequences.
type Incident struct {
	ID    int       `json:"id"`
	Start Timestamp `json:"start"`
	End   Timestamp `json:"end"`
	// RootInBundle is false when only consequences were found: the rank
	// that failed first left no log in the bundle.
	RootInBundle bool   `json:"root_in_bundle"`
	Root         *Event `json:"root"`
	Summary      string `json:"summary"`
	Confidence   string `json:"confidence"`
	// Reasons say why the root was chosen and how sure that is.
	Reasons []string `json:"reasons"`
	// Alternatives are events of other processes that could have come
	// first within the clocks' tolerance.
	Alternatives []Event `json:"alternatives"`
	// Groups count the other events by part and code.
	Groups []EventGroup `json:"groups"`
	// SuspectedPeers are the ranks or addresses the waiting events point
	// at, most named first.
	SuspectedPeers []PeerCount `json:"suspected_peers"`
	// FailingPair is the first failing link HCCL named during the
	// incident, both ends resolved against the bundle's ranks; null when
	// HCCL named none.
	FailingPair *FailingPair `json:"failing_pair"`
	// SilentRanks are the peers the consequences name whose own logs are
	// in the bundle and show no failure, most likely first: the likely
	// root cause of an incident whose root is not in the bundle.
	SilentRanks []SilentRank `json:"silent_ranks"`
	// LinkFailures are the failing links HCCL named during the incident
	// (detector results first).
	LinkFailures []LinkFailure `json:"link_failures"`
	Nodes        []string      `json:"nodes"`
	// Remedy is what to do, starting from the root cause.
	Remedy []Remedy `json:"remedy"`
	// Events lists the incident's events in time order (at most 4096;
	// Groups count them all).
	Events []Event `json:"events"`
}

// EventGroup is the events of one part and code of an incident.
type EventGroup struct {
	Part      string   `json:"part"`
	Code      string   `json:"code"`
	Stage     string   `json:"stage"`
	Events    int      `json:"events"`
	Processes int      `json:"processes"`
	Nodes     []string `json:"nodes"`
	// Timer is the setting whose expiry produces the code ("" for none)
	// and TimerSeconds its longest value among the processes.
	Timer             string  `json:"timer"`
	TimerSeconds      float64 `json:"timer_seconds"`
	FirstAfterSeconds float64 `json:"first_after_seconds"`
	LastAfterSeconds  float64 `json:"last_after_seconds"`
}

// PeerCount is a rank or address named by waiting events.
type PeerCount struct {
	Peer   string `json:"peer"`
	Events int    `json:"events"`
	// InBundle is true when a process of the bundle has that rank.
	InBundle bool `json:"in_bundle"`
	// Links counts the failing links HCCL named with that rank as their
	// dstRank.
	Links int `json:"links"`
}

// PairEnd is one end of a failing link. Rank, Server and Device come from
// HCCL's line or, where it did not print them, from the bundle's rank of
// that server and device (or of that rank); Node and PID name the
// process of the bundle that has that rank (empty and 0 when none has).
type PairEnd struct {
	Rank     int    `json:"rank"`
	Server   string `json:"server"`
	Device   int    `json:"device"`
	Node     string `json:"node"`
	PID      int    `json:"pid"`
	InBundle bool   `json:"in_bundle"`
}

// FailingPair is the link an incident's HCCL lines name, both ends
// resolved.
type FailingPair struct {
	// Source is the line the pair came from: "detector" or "transport".
	Source   string  `json:"source"`
	Src      PairEnd `json:"src"`
	Dst      PairEnd `json:"dst"`
	LinkType string  `json:"link_type"`
}

// String renders the pair for text and HTML: "rank 3 on 10.20.1.11
// (device 3, node-1 pid 670011) → rank 11 on 10.20.1.12 (device 3, node-2
// pid 670003)".
func (p FailingPair) String() string {
	s := p.Src.String() + " → " + p.Dst.String()
	if p.LinkType != "" {
		s += " (" + p.LinkType + ")"
	}
	return s
}

// String renders one end.
func (e PairEnd) String() string {
	var s string
	switch {
	case e.Rank >= 0 && e.Server != "":
		s = fmt.Sprintf("rank %d on %s", e.Rank, e.Server)
	case e.Rank >= 0:
		s = fmt.Sprintf("rank %d", e.Rank)
	case e.Server != "":
		s = "server " + e.Server
	default:
		s = "?"
	}
	var more []string
	if e.Device >= 0 {
		more = append(more, "device "+strconv.Itoa(e.Device))
	}
	switch {
	case e.Node != "":
		more = append(more, fmt.Sprintf("%s pid %d", e.Node, e.PID))
	case e.Rank >= 0 || e.Server != "":
		more = append(more, "not in the bundle")
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

// SilentRank is a peer the incident's consequences name whose own logs are
// in the bundle and show no failure: the likely root cause.
type SilentRank struct {
	Rank   int    `json:"rank"`
	Node   string `json:"node"`
	PID    int    `json:"pid"`
	Server string `json:"server"`
	Device int    `json:"device"`
	// LastLog is the time of the process's last log line (its zone as
	// printed, in the report's zone); LastLogAligned on the common clock.
	LastLog        Timestamp `json:"last_log"`
	LastLogAligned Timestamp `json:"last_log_aligned"`
	// SilentSeconds is how long before the incident's first event its
	// logs stopped (negative: it kept printing after the incident began).
	SilentSeconds float64 `json:"silent_seconds"`
	// NamedBy says which lines named it.
	NamedBy    string   `json:"named_by"`
	Confidence string   `json:"confidence"`
	Reason     string   `json:"reason"`
	Collect    []string `json:"collect"`
}

// LinkFailure is one failing link HCCL named.
type LinkFailure struct {
	Node string `json:"node"`
	PID  int    `json:"pid"`
	// Source is "detector" (the connection-anomaly detector) or
	// "transport" (the createLink parameters of a failed link).
	Source string `json:"source"`
	// SrcRank and DstRank are the user ranks (-1 when not printed: the
	// detector names servers and devices only).
	SrcRank int `json:"src_rank"`
	DstRank int `json:"dst_rank"`
	// SrcServer, DstServer: server id or IP as printed; SrcAddr/DstAddr
	// the full address field of a createLink line (IP or serverId/phy).
	SrcServer string `json:"src_server"`
	DstServer string `json:"dst_server"`
	// SrcDevice and DstDevices are device ids (-1 / empty when not
	// printed).
	SrcDevice  int   `json:"src_device"`
	DstDevices []int `json:"dst_devices"`
	// LinkType is "RoCE" (isUsedRdma[1]), "HCCS/PCIe" (isUsedRdma[0]) or
	// "" when the line does not say.
	LinkType string    `json:"link_type"`
	Time     Timestamp `json:"time"`
	Aligned  Timestamp `json:"aligned_time"`
	File     string    `json:"file"`
	Line     int64     `json:"line"`
	// Count is how often the same process named the same pair.
	Count int `json:"count"`
}

// Pair says which link failed, for text and HTML.
func (l LinkFailure) Pair() string {
	side := func(rank int, server string, devs []int) string {
		var parts []string
		if rank >= 0 {
			parts = append(parts, "rank "+strconv.Itoa(rank))
		}
		if server != "" {
			parts = append(parts, "server "+server)
		}
		if len(devs) == 1 {
			parts = append(parts, "device "+strconv.Itoa(devs[0]))
		} else if len(devs) > 1 {
			s := make([]string, len(devs))
			for i, d := range devs {
				s[i] = strconv.Itoa(d)
			}
			parts = append(parts, "devices "+strings.Join(s, ","))
		}
		if len(parts) == 0 {
			return "?"
		}
		return strings.Join(parts, ", ")
	}
	var src []int
	if l.SrcDevice >= 0 {
		src = []int{l.SrcDevice}
	}
	s := side(l.SrcRank, l.SrcServer, src) + " → " + side(l.DstRank, l.DstServer, l.DstDevices)
	if l.LinkType != "" {
		s += " (" + l.LinkType + ")"
	}
	return s
}

const (
	LinkSourceDetector  = "detector"
	LinkSourceTransport = "transport"
	LinkTypeRoCE        = "RoCE"
	LinkTypeHCCS        = "HCCS/PCIe"
)

// Roles of a fault code in an incident.
const (
	// RoleLocal codes are raised by a rank about itself (its memory,
	// port, settings, ranktable): they can start an incident.
	RoleLocal = "local"
	// RoleWaiting codes are raised by a rank whose peer did not answer in
	// time: they are consequences.
	RoleWaiting = "waiting"
	// RoleEither codes are raised both by a rank that fails on its own and
	// by the peers of a failed rank (a transport that cannot be set up, an
	// error CQE after the peer is gone, an inner error, codes outside the
	// catalog): a consequence when an earlier failure explains them, a
	// cause otherwise.
	RoleEither = "either"
)

// CodeHeartbeat is the code diagnose gives a heartbeat report: HCCL prints
// no fault code when a rank's heartbeat is lost or stuck, only a run/plog
// line (`[TaskExecStage][HeartbeatAbnormal]local rank [10.0.0.1/1]: crimer
// rank [10.0.0.2/2] status[LOST] by informer rank [10.0.0.3/3]`), which
// names the rank that stopped: a consequence that points at its cause.
const CodeHeartbeat = "HEARTBEAT"
