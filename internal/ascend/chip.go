// Package ascend owns the identities every source uses for the node's
// Ascend hardware: one chip is one ChipID, the npu and chip ids npu-smi
// prints (`npu-smi info -t … -i <npu> -c <chip>`). The collectors and joins
// that meet on a chip (npu-smi, the kubelet's assignments, npu-smi's detail
// sweep, hccn_tool) share this one type, so a chip one of them finds is a
// map key for the others without conversion.
package ascend

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
