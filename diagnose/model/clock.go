package model

// Why a node's times were read in its zone.
const (
	ZoneBasisFlag       = "--timezone"
	ZoneBasisNode       = "--node-timezone"
	ZoneBasisNoEvidence = "--timezone auto found no communicator identifier with a time: read in the default zone"
	ZoneBasisAssumed    = "no communicator identifier with a time: assumed to be the zone the other nodes showed"
)

// ClockReport says how the nodes' clocks compare.
type ClockReport struct {
	// Reference is the node whose clock the others are measured against
	// ("" when no two nodes share a communicator).
	Reference string `json:"reference"`
	// SkewDetected is true when a node's clock is off by more than the
	// jitter (the times of the incidents are then corrected).
	SkewDetected bool        `json:"skew_detected"`
	Nodes        []NodeClock `json:"nodes"`
	Notes        []string    `json:"notes"`
}

// NodeClock is one node's clock.
type NodeClock struct {
	Node string `json:"node"`
	// Zone is the zone its times were read in, and ZoneBasis why: the
	// --timezone flag, --node-timezone, or inferred from its communicator
	// identifiers (--timezone auto).
	Zone      string `json:"zone"`
	ZoneBasis string `json:"zone_basis"`
	// OffsetSeconds is how far its clock is ahead of the reference's
	// (negative: behind); null when it shares no communicator with a
	// measured node.
	OffsetSeconds *float64 `json:"offset_seconds"`
	// UncertaintySeconds bounds the error of the offset (and of this
	// node's aligned times against the reference).
	UncertaintySeconds float64 `json:"uncertainty_seconds"`
	// Communicators is how many communicators the offset was measured
	// over.
	Communicators int `json:"communicators"`
	// Corrected is true when the incident times subtract the offset.
	Corrected bool `json:"corrected"`
}
