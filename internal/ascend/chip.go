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
