package parse

import "bytes"

// Lines HCCL prints about what it selected and allocated, when present
// (HCOMM src/legacy/ascend910):
//
//	[HCCL_TRACE][CreateCommAIVbuffer] OpbaseMode|OffloadMode
//	    ccl_buffer_manager.cc:140,150 (RUN_INFO): the AIV buffers of one mode
//	    (AIV_DATA_SIZE 36 MiB + AIV_FLAG_SIZE 4 MiB, each a CreateCCLbuffer
//	    line before it) were allocated for the communicator.
//	[HCCL_TRACE][ReleaseCCLbuffer]Release cclBuffer|incclBuffer|outcclBuffer|expcclBuffer. buffer ptr[%p], size[%llu]
//	    ccl_buffer_manager.cc:174-195 (RUN_INFO): a cclBuffer freed.
//	[SelectAlg] newTag[%s] algName[%s] userRank[%u] topoType[%d] algType[%s] userRankSize[%u] level0Size[%u] moduleNum_[%u] level2Size[%u]
//	[SelectAlg] newTag[%s] opExpansionMode[%s] isZeroCopy[%u] retryEnable[%u] isOpBase[%u] isCapture[%u] aivCoreLimit[%u] %s.
//	    coll_alg_operator.cc:192-203 (HCCL_CONFIG_INFO: `[HCCL_ALG]: ` before
//	    it with HCCL_DEBUG_CONFIG=ALG, plain INFO otherwise).
//	[ConstructQpAttrs][attr]sendCqDepth[%d], recvCqDepth[%d], max_send_wr[%u], max_recv_wr[%u]
//	    adapter_hccp.cc:2460 (INFO): the depths of the QP about to be created.

var (
	markAIVBuffer   = []byte("[CreateCommAIVbuffer] ")
	markReleaseCCL  = []byte("[ReleaseCCLbuffer]Release ")
	tagSelectAlg    = []byte("[SelectAlg] newTag[")
	tagHCCLAlg      = []byte("[HCCL_ALG]: ")
	tagQPAttrs      = []byte("[ConstructQpAttrs][attr]")
	markOpbaseMode  = []byte("OpbaseMode")
	markOffloadMode = []byte("OffloadMode")
)

// AIV buffer modes of a `[CreateCommAIVbuffer]` line.
const (
	AIVModeOpBase  = "op_base"
	AIVModeOffload = "offload"
)

// ParseAIVBuffer reads the mode of a `[HCCL_TRACE][CreateCommAIVbuffer]
// OpbaseMode|OffloadMode` line.
func ParseAIVBuffer(msg []byte) (string, bool) {
	if !bytes.HasPrefix(msg, tagHCCLTrace) {
		return "", false
	}
	rest := msg[len(tagHCCLTrace):]
	if !bytes.HasPrefix(rest, markAIVBuffer) {
		return "", false
	}
	rest = bytes.TrimSpace(rest[len(markAIVBuffer):])
	switch {
	case bytes.Equal(rest, markOpbaseMode):
		return AIVModeOpBase, true
	case bytes.Equal(rest, markOffloadMode):
		return AIVModeOffload, true
	}
	return "", false
}

// ParseCCLRelease reads the size of a `[HCCL_TRACE][ReleaseCCLbuffer]Release
// …Buffer. buffer ptr[…], size[N]` line (the summary lines without a size
// are not releases of their own).
func ParseCCLRelease(msg []byte) (uint64, bool) {
	if !bytes.HasPrefix(msg, tagHCCLTrace) || !bytes.HasPrefix(msg[len(tagHCCLTrace):], markReleaseCCL) {
		return 0, false
	}
	v, ok := BracketField(msg, "size")
	if !ok {
		return 0, false
	}
	return parseUint(v)
}

// SelectAlg is what a `[SelectAlg]` line says: the link set's tag
// (newTag), the executor, the level-1 plane size (moduleNum_) and, on the
// second line, the expansion mode the operator runs in.
type SelectAlg struct {
	NewTag    string
	AlgName   string
	ModuleNum int // -1 when not printed
	// ExpansionMode is opExpansionMode as GetOpExpansionStr prints it
	// (AIV, AI_CPU, HOST, HOST_TS), "" on the first line.
	ExpansionMode string
	Capture       bool
}

// selectAlgMsg strips HCCL_CONFIG_INFO's `[HCCL_ALG]: ` from msg.
func selectAlgMsg(msg []byte) []byte {
	return bytes.TrimPrefix(bytes.TrimLeft(msg, " "), tagHCCLAlg)
}

// ParseSelectAlg reads either `[SelectAlg]` line.
func ParseSelectAlg(msg []byte) (SelectAlg, bool) {
	m := selectAlgMsg(msg)
	if !bytes.HasPrefix(m, tagSelectAlg) {
		return SelectAlg{}, false
	}
	tag, ok := BracketField(m, "newTag")
	if !ok || len(tag) == 0 || len(tag) > maxTagLen || bytes.ContainsAny(tag, "[ ") {
		return SelectAlg{}, false
	}
	s := SelectAlg{NewTag: string(tag), ModuleNum: -1}
	if a, ok := BracketField(m, "algName"); ok {
		if len(a) == 0 || len(a) > 128 || !printableASCII(a) {
			return SelectAlg{}, false
		}
		s.AlgName = string(a)
		if n, ok := BracketInt(m, "moduleNum_"); ok {
			s.ModuleNum = n
		}
		return s, true
	}
	e, ok := BracketField(m, "opExpansionMode")
	if !ok || len(e) == 0 || len(e) > 16 || !printableASCII(e) {
		return SelectAlg{}, false
	}
	s.ExpansionMode = string(e)
	if n, ok := BracketInt(m, "isCapture"); ok {
		s.Capture = n == 1
	}
	return s, true
}

// QPAttrs are the depths of a `[ConstructQpAttrs][attr]` line.
type QPAttrs struct {
	SendCQDepth, RecvCQDepth, MaxSendWR, MaxRecvWR int
}

// ParseQPAttrs reads a `[ConstructQpAttrs][attr]sendCqDepth[…], recvCqDepth[…],
// max_send_wr[…], max_recv_wr[…]` line.
func ParseQPAttrs(msg []byte) (QPAttrs, bool) {
	if !bytes.HasPrefix(msg, tagQPAttrs) {
		return QPAttrs{}, false
	}
	var a QPAttrs
	var ok1, ok2, ok3, ok4 bool
	a.SendCQDepth, ok1 = BracketInt(msg, "sendCqDepth")
	a.RecvCQDepth, ok2 = BracketInt(msg, "recvCqDepth")
	a.MaxSendWR, ok3 = BracketInt(msg, "max_send_wr")
	a.MaxRecvWR, ok4 = BracketInt(msg, "max_recv_wr")
	if !ok1 || !ok2 || !ok3 || !ok4 || a.SendCQDepth <= 0 || a.MaxSendWR <= 0 || a.SendCQDepth > 1<<20 || a.MaxSendWR > 1<<20 {
		return QPAttrs{}, false
	}
	return a, true
}
