// Package ascend owns the identities every source uses for the node's
// Ascend hardware: one chip is one ChipID, the npu and chip ids npu-smi
// prints (`npu-smi info -t … -i <npu> -c <chip>`). The collectors and joins
// that meet on a chip (npu-smi, the kubelet's assignments, npu-smi's detail
// sweep, hccn_tool) share this one type, so a chip one of them finds is a
// map key for the others without conversion.
package ascend

import (
	"sync/atomic"
	"time"
)

// ChipID is one chip: npu-smi's NPU id and the chip's index on it, as
// printed.
type ChipID struct{ NPU, Chip string }

// Chip is a chip as npu-smi's table lists it: its ChipID and the physical
// id it prints (Phy-ID on A3 and 950; "" on tables without one, where the
// NPU id is the physical id when the NPU has one chip).
type Chip struct {
	ChipID
	PhyID string
}

// Identity is what names a chip beyond `npu-smi info`'s table, from
// `npu-smi info -t board`: its VDie ID (chip level) and its board's serial
// number and product name (card level). "" where unknown.
type Identity struct{ VDieID, SerialNumber, ProductName string }

// Identities holds the latest Identity of every chip: written by the one
// source that reads them (the npuhealth sweep, Publish) and read by those
// that label with them (npusmi's ascend_npu_info, Of). It lets the two
// collectors share the data without knowing each other. Safe for
// concurrent use; a nil or zero Identities knows no chip.
type Identities struct {
	m atomic.Pointer[map[ChipID]Identity]
}

// Publish replaces every chip's identity with m (which is not copied: the
// caller must not change it afterwards).
func (s *Identities) Publish(m map[ChipID]Identity) { s.m.Store(&m) }

// Of returns the chip's identity, the zero Identity when unknown.
func (s *Identities) Of(id ChipID) Identity {
	if s == nil {
		return Identity{}
	}
	if p := s.m.Load(); p != nil {
		return (*p)[id]
	}
	return Identity{}
}

// Value is one number a vendor tool printed, or none: OK is false for a
// placeholder (`NA`, `-`, a `0 / 0` pair) or a value that failed
// validation, and no sample is exported then. It is the one optional
// number of every source (npu-smi's table and detail queries alike).
type Value struct {
	V  float64
	OK bool
}

// Process is one row of npu-smi's process table: a host pid on a chip.
// PID is the host pid npu-smi prints; ContainerPID is the extra `Process
// id in container` column where present (`NA` on the host, kept as
// printed). It is the one process row every consumer of the table reads
// (the joins, log discovery, the pods of processes, the headroom model).
type Process struct {
	ChipID
	PID          int
	Name         string
	MemoryBytes  Value
	ContainerPID string
}

// QPReading is the RoCE queue pairs live on a chip's port, as the latest
// hccn_tool sweep read them: every QP, HCCL's and others'.
type QPReading struct {
	ChipID
	PhyID     int
	ActiveQPs int
	// QPNs are their qpns, in hccn_tool's order (the headroom model tells
	// HCCL's own from other RDMA users' by them).
	QPNs []uint32
	// At is when the sweep that read it finished.
	At time.Time
	// Fresh: that sweep finished within its freshness bound of now. A
	// stale reading is still returned, so a consumer can say why it
	// ignores it.
	Fresh bool
}

// PhysicalIDs returns the physical device id (/dev/davinciN, hccn_tool's
// -i, npu-exporter's `id` label) of each of chips, by its ChipID, where it
// is known:
//
//  1. npu-smi prints the chip's Phy-ID (Atlas A3 / 910_93, Ascend 950): it.
//  2. An NPU with a single chip (910, 910B: one die per card): the NPU ID
//     npu-smi prints, which is the card's physical device id (npu-exporter
//     labels the chip with the same number).
//  3. A chip of a multi-chip NPU without a Phy-ID (300I Duo): unknown, no
//     entry.
func PhysicalIDs(chips []Chip) map[ChipID]string {
	perNPU := make(map[string]int, len(chips))
	for _, c := range chips {
		perNPU[c.NPU]++
	}
	out := make(map[ChipID]string, len(chips))
	for _, c := range chips {
		switch {
		case c.PhyID != "":
			out[c.ChipID] = c.PhyID
		case perNPU[c.NPU] == 1:
			out[c.ChipID] = c.NPU
		}
	}
	return out
}
