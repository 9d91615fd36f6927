package parse

import (
	"testing"
)

// Identifiers as HCCL prints them (sample plogs; op_base.cc rootinfo and
// comm-config names).
const (
	idRoot  = "127.0.0.1%enp_60000_0_1765367607599032"
	idGroup = "group_name_3"
	idWorld = "hccl_world_group"
)

// TestParseTag reads tags built as HCOMM builds them (tag.go cites each
// format), with and without the process's identifiers.
func TestParseTag(t *testing.T) {
	ids := []string{idRoot, idGroup, idWorld, "group_name_31"}
	tests := []struct {
		name, tag string
		ids       []string
		want      OpTag
	}{
		{"allreduce mesh NHR", "AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, IdentifierKnown: true, Level1: "NHR", Executor: "AllReduceMeshExecutor", Unfold: "host"}},
		{"allreduce mesh NHR unknown id", "AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host", nil,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, Level1: "NHR", Executor: "AllReduceMeshExecutor", Unfold: "host"}},
		{"small count H-D", "AllReduce_" + idGroup + "H-DAllReduceMeshOpbaseSmallCountDeterministicExecutor_host", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idGroup, IdentifierKnown: true, Level1: "H-D", Executor: "AllReduceMeshOpbaseSmallCountDeterministicExecutor", Unfold: "host"}},
		{"longest identifier wins", "AllReduce_group_name_31ringAllReduceMeshExecutor_host", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: "group_name_31", IdentifierKnown: true, Level1: "ring", Executor: "AllReduceMeshExecutor", Unfold: "host"}},
		{"pipeline unknown id", "AllReduce_" + idWorld + "pipelineAllReduceMeshOpbasePipelineExecutor_host", nil,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idWorld, Level1: "pipeline", Executor: "AllReduceMeshOpbasePipelineExecutor", Unfold: "host"}},
		{"NHR_V1 unknown id", "ReduceScatter_" + idRoot + "NHR_V1ReduceScatterMeshExecutor_host", nil,
			OpTag{Kind: TagOpBase, Op: "reducescatter", Identifier: idRoot, Level1: "NHR_V1", Executor: "ReduceScatterMeshExecutor", Unfold: "host"}},
		{"ARS ring size, device", "AllReduce_" + idRoot + "NHRAllReduceARSFor91093Executor4_device", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, IdentifierKnown: true, Level1: "NHR", Executor: "AllReduceARSFor91093Executor", RingSize: 4, Unfold: "device"}},
		{"no inline", "AllReduce_" + idRoot + "ringAllReduceMixExecutor_no_inline_host", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, IdentifierKnown: true, Level1: "ring", Executor: "AllReduceMixExecutor", NoInline: true, Unfold: "host"}},
		{"alltoall copy mode", "ALLTOALLV_" + idRoot + "RunAlltoAllVStagedBCopy_host", ids,
			OpTag{Kind: TagOpBase, Op: "alltoallv", Identifier: idRoot, IdentifierKnown: true, Executor: "RunAlltoAllVStaged", CopyMode: "BCopy", Unfold: "host"}},
		{"capture", "AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host_Capture", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, IdentifierKnown: true, Level1: "NHR", Executor: "AllReduceMeshExecutor", Unfold: "host", Capture: true}},
		{"capture counter", "AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host_Capture12", ids,
			OpTag{Kind: TagOpBase, Op: "allreduce", Identifier: idRoot, IdentifierKnown: true, Level1: "NHR", Executor: "AllReduceMeshExecutor", Unfold: "host", Capture: true, CaptureN: 12}},
		{"send", "worldCommSendRecv_0_8_" + idRoot + "SendExecutor_host", ids,
			OpTag{Kind: TagSendRecv, Op: "send", Identifier: idRoot, IdentifierKnown: true, Executor: "SendExecutor", Unfold: "host", SrcRank: 0, DstRank: 8}},
		{"recv unknown id", "worldCommSendRecv_8_0_" + idRoot + "ReceiveExecutor_host", nil,
			OpTag{Kind: TagSendRecv, Op: "recv", Identifier: idRoot, Executor: "ReceiveExecutor", Unfold: "host", SrcRank: 8, DstRank: 0}},
		{"batch send recv", "worldBatchSendRecv_" + idGroup + "_host", ids,
			OpTag{Kind: TagBatchSendRecv, Op: "batchsendrecv", Identifier: idGroup, IdentifierKnown: true, Unfold: "host"}},
		{"mc2", idRoot + "8_mc2", ids,
			OpTag{Kind: TagMC2, Op: "mc2", Identifier: idRoot, IdentifierKnown: true, MC2OpType: 8}},
		{"mc2 multi-server", idRoot + "8_mc2_MC2MultiServer", ids,
			OpTag{Kind: TagMC2, Op: "mc2", Identifier: idRoot, IdentifierKnown: true, MC2OpType: 8}},
		// A real capture (logstate testdata/cann-log plog-17528: `[AllocAlgResource]Alloc
		// transports failed, tag[HcomAllReduce_6629421139219749105_0_device]`).
		{"graph", "HcomAllReduce_6629421139219749105_0", ids,
			OpTag{Kind: TagGraph, Op: "allreduce"}},
		{"graph, device", "HcomAllReduce_6629421139219749105_0_device", ids,
			OpTag{Kind: TagGraph, Op: "allreduce", Unfold: "device"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseTag(tc.tag, tc.ids)
			if !ok {
				t.Fatalf("ParseTag(%q) not ok", tc.tag)
			}
			w := tc.want
			if w.Kind != TagSendRecv {
				w.SrcRank, w.DstRank = -1, -1
			}
			if w.Kind != TagMC2 {
				w.MC2OpType = -1
			}
			if got != w {
				t.Errorf("ParseTag(%q)\n got %+v\nwant %+v", tc.tag, got, w)
			}
		})
	}
}

func TestParseTagRejects(t *testing.T) {
	for _, tag := range []string{"", "_host", "12_x", "worldCommSendRecv_a_b_x", string(make([]byte, 2000))} {
		if got, ok := ParseTag(tag, nil); ok {
			t.Errorf("ParseTag(%q) = %+v, want not ok", tag, got)
		}
	}
}

// FuzzParseTag: never panics; an identifier it reports as known is one
// given, and a tag that names one at its place is attributed to it.
func FuzzParseTag(f *testing.F) {
	for _, s := range []string{
		"AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host",
		"AllReduce_" + idRoot + "NHRAllReduceMeshExecutor_host_Capture3",
		"ReduceScatter_" + idRoot + "NHR_V1ReduceScatterMeshExecutor_no_inline_host",
		"ALLTOALL_" + idGroup + "RunAlltoAllDirectFullmeshZCopy_device",
		"worldCommSendRecv_0_8_" + idRoot + "SendExecutor_host",
		"worldBatchSendRecv_" + idGroup + "_host",
		idRoot + "8_mc2",
		"HcomAllReduce_1_0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		ids := []string{idRoot, idGroup}
		got, ok := ParseTag(tag, ids)
		if !ok {
			return
		}
		if got.IdentifierKnown && got.Identifier != idRoot && got.Identifier != idGroup {
			t.Fatalf("ParseTag(%q) known identifier %q not given", tag, got.Identifier)
		}
	})
}
