package parse

import (
	"strconv"
	"strings"
)

// Operator tags: the `communicator[…]` of a `create hccl transport:` line
// is the tag of the link set (HCCL's resMap_ key, hccl_communicator_host.cc
// ExecOp), built as HCOMM (src/legacy/ascend910) builds it:
//
//	op base:   <Op>_<identifier> + level-1 name + algName [+ "_no_inline"] [+ ring size] [+ copy mode] + "_host"|"_device"
//	           (all_reduce_operator.cc:141-169, reduce_scatter_operator.cc:72-96,
//	           all_gather_operator.cc:61-77, broadcast_operator.cc:60-95,
//	           alltoall_operator.cc:353-363, send_operator.cc:27-31, receive_operator.cc:27-31,
//	           batchsendrecv_operator.cc:32-33; <Op> from op_base.cc / op_base_host.cc)
//	capture:   the op-base tag + "_Capture" [+ counter] (hccl_communicator_host.cc:4657,4679)
//	send/recv: worldCommSendRecv_<src>_<dst>_<identifier> + algName + "_host" (op_base.cc:3320,3424)
//	batch:     worldBatchSendRecv_<identifier> + "_host" (op_base.cc:5235; …Group_ at :5133)
//	MC2:       <identifier><opType>_mc2 (op_base_mc2.cc:69,105) [+ "_MC2MultiServer"];
//	           device side <tag>_mc2<algName>_device (aicpu_kfc_process.cc:1018)
//	graph:     Hcom<Op>_… (graph mode: no identifier)
//
// The level-1 names are HCCL_ALGO_LEVEL1_NAME_MAP's (algorithm/pub_inc/
// common.h:226-232). The identifier and what follows it are not separated
// ("…_1765367607599032NHRAllReduceMeshExecutor_host"), so ParseTag splits
// them at the longest known communicator identifier when given, and
// otherwise at the algorithm name's first capital.

// TagKind says which of HCCL's tag families a tag is.
type TagKind string

// The tag families.
const (
	TagOpBase        TagKind = "op_base"
	TagGraph         TagKind = "graph"
	TagSendRecv      TagKind = "send_recv"
	TagBatchSendRecv TagKind = "batch_send_recv"
	TagMC2           TagKind = "mc2"
)

// OpTag is what an operator tag says.
type OpTag struct {
	Kind TagKind
	// Op is the operator in lower case ("allreduce", "alltoallv",
	// "send", "recv", "sendrecv" where the tag does not say which,
	// "batchsendrecv", "mc2"), without graph mode's "hcom".
	Op string
	// Identifier is the communicator the tag names ("" for graph tags);
	// IdentifierKnown says it matched one of the identifiers given.
	Identifier      string
	IdentifierKnown bool
	// Level1 is the HCCL_ALGO_LEVEL1_NAME_MAP name in the tag ("ring",
	// "H-D", "NHR", "NHR_V1", "pipeline", "NB", "AHC", "AHC_BROKE",
	// "null"), "" where the tag has none.
	Level1 string
	// Executor is the algName (the executor HCCL selected), "" where the
	// tag carries none.
	Executor string
	NoInline bool
	// RingSize is the ARS executor's intra-ring size, 0 when absent.
	RingSize int
	// CopyMode is AlltoAll's "ZCopy" or "BCopy", "" when absent.
	CopyMode string
	// Unfold is "host" or "device" (aicpuUnfoldMode), "" when absent.
	Unfold string
	// Capture: the set of an ACL graph capture; CaptureN its counter (0
	// for the first capture of the tag, which carries none).
	Capture  bool
	CaptureN int
	// SrcRank and DstRank are send/recv's ranks, -1 otherwise.
	SrcRank, DstRank int
	// MC2OpType is MC2's operator type number, -1 otherwise.
	MC2OpType int
}

// Level-1 names, longest first where one is a prefix of another.
var level1Names = []string{"AHC_BROKE", "NHR_V1", "pipeline", "null", "ring", "H-D", "NHR", "AHC", "NB"}

const (
	prefixSendRecv       = "worldCommSendRecv_"
	prefixBatchSendRecv  = "worldBatchSendRecv_"
	prefixBatchSendGroup = "worldBatchSendRecvGroup_"
	suffixCapture        = "_Capture"
	suffixMC2            = "_mc2"
	suffixNoInline       = "_no_inline"
	maxTagLen            = 1024
)

// ParseTag reads an operator tag. ids are the identifiers of the
// process's communicators: the longest that the tag names at the
// identifier's place is the tag's Identifier. ok is false for a tag no
// family of HCCL's produces (empty, too long, no operator).
func ParseTag(tag string, ids []string) (OpTag, bool) {
	t := OpTag{SrcRank: -1, DstRank: -1, MC2OpType: -1}
	if tag == "" || len(tag) > maxTagLen {
		return OpTag{}, false
	}
	rest := tag
	// Suffixes from the right, in the reverse of the order HCCL appends
	// them: capture counter, "_Capture", then "_host"/"_device".
	if i := strings.LastIndex(rest, suffixCapture); i > 0 {
		if n, ok := digitsOrEmpty(rest[i+len(suffixCapture):]); ok {
			t.Capture, t.CaptureN = true, n
			rest = rest[:i]
		}
	}
	switch {
	case strings.HasSuffix(rest, "_host"):
		t.Unfold, rest = "host", strings.TrimSuffix(rest, "_host")
	case strings.HasSuffix(rest, "_device"):
		t.Unfold, rest = "device", strings.TrimSuffix(rest, "_device")
	}
	switch {
	case strings.HasPrefix(rest, "Hcom"):
		t.Kind = TagGraph
		op, _, _ := strings.Cut(rest[len("Hcom"):], "_")
		if !alpha(op) {
			return OpTag{}, false
		}
		t.Op = strings.ToLower(op)
		return t, true
	case strings.HasPrefix(rest, prefixSendRecv):
		t.Kind, t.Op = TagSendRecv, "sendrecv"
		r := rest[len(prefixSendRecv):]
		src, r, ok1 := cutInt(r)
		dst, r, ok2 := cutInt(r)
		if !ok1 || !ok2 {
			return OpTag{}, false
		}
		t.SrcRank, t.DstRank = src, dst
		t.splitIdentifier(r, ids)
		switch t.Executor {
		case "SendExecutor":
			t.Op = "send"
		case "ReceiveExecutor":
			t.Op = "recv"
		}
		return t, t.Identifier != ""
	case strings.HasPrefix(rest, prefixBatchSendGroup), strings.HasPrefix(rest, prefixBatchSendRecv):
		t.Kind, t.Op = TagBatchSendRecv, "batchsendrecv"
		r := strings.TrimPrefix(strings.TrimPrefix(rest, prefixBatchSendGroup), prefixBatchSendRecv)
		// The batch operator's newTag is the tag itself (no algName).
		t.Identifier = r
		t.IdentifierKnown = contains(ids, r)
		return t, r != ""
	}
	// A2 multi-server MC2 tags end with HCCL_MC2_MULTISERVER_SUFFIX
	// (common.h:215; hccl_communicator_host.cc:7337 CreateCommResource).
	rest = strings.TrimSuffix(rest, "_MC2MultiServer")
	if i := strings.LastIndex(rest, suffixMC2); i > 0 && !strings.Contains(rest[i+len(suffixMC2):], "_") {
		// <identifier><opType>_mc2 (op_base_mc2.cc), or the device side's
		// <tag>_mc2<algName> (aicpu_kfc_process.cc:1018).
		t.Kind, t.Op = TagMC2, "mc2"
		r := rest[:i]
		if id := longestPrefix(r, ids); id != "" {
			t.Identifier, t.IdentifierKnown = id, true
			if n, err := strconv.Atoi(r[len(id):]); err == nil {
				t.MC2OpType = n
			}
			return t, true
		}
		j := len(r)
		for j > 0 && r[j-1] >= '0' && r[j-1] <= '9' {
			j--
		}
		if n, err := strconv.Atoi(r[j:]); err == nil && j > 0 {
			// HcclCMDType numbers are small: the identifier keeps
			// digits beyond the last two.
			if j < len(r)-2 {
				j = len(r) - 2
				n, _ = strconv.Atoi(r[j:])
			}
			t.MC2OpType = n
		}
		t.Identifier = r[:j]
		return t, t.Identifier != ""
	}
	op, r, found := strings.Cut(rest, "_")
	if !found || !alpha(op) {
		return OpTag{}, false
	}
	t.Kind, t.Op = TagOpBase, strings.ToLower(op)
	t.splitIdentifier(r, ids)
	return t, t.Identifier != ""
}

// splitIdentifier splits "<identifier><level1><algName>…" into its parts.
func (t *OpTag) splitIdentifier(r string, ids []string) {
	if id := longestPrefix(r, ids); id != "" {
		t.Identifier, t.IdentifierKnown = id, true
		t.parseAlg(r[len(id):])
		return
	}
	// No known identifier: the algorithm part starts at the leftmost
	// capital that begins a group of capitals in the run of letters,
	// digits and '-' reaching the end, or at the level-1 name before it
	// (lower-case "ring", "pipeline"; "NHR_V1" and "AHC_BROKE" contain
	// '_', which ends the run).
	body, _ := cutAlgSuffixes(r)
	start := -1
	for i := len(body) - 1; i >= 0; i-- {
		c := body[i]
		if !isAlnum(c) && c != '-' {
			break
		}
		if c >= 'A' && c <= 'Z' && (i == 0 || !(body[i-1] >= 'A' && body[i-1] <= 'Z')) {
			start = i
		}
	}
	if start > 0 {
		for _, l := range level1Names {
			if k := strings.IndexByte(l, '_'); k >= 0 {
				if strings.HasSuffix(body[:start], l[:k+1]) && strings.HasPrefix(body[start:], l[k+1:]) {
					start -= k + 1
					break
				}
				continue
			}
			if start >= len(l) && body[start-len(l):start] == l {
				start -= len(l)
				break
			}
		}
	}
	if start <= 0 {
		t.Identifier = r
		return
	}
	t.Identifier = r[:start]
	t.parseAlg(r[start:])
}

// parseAlg reads "<level1><algName>[_no_inline][ringSize][copyMode]".
func (t *OpTag) parseAlg(s string) {
	body, _ := cutAlgSuffixes(s)
	if strings.HasSuffix(s, suffixNoInline) || strings.Contains(s, suffixNoInline) {
		t.NoInline = true
	}
	for _, m := range []string{"ZCopy", "BCopy"} {
		if strings.HasSuffix(s, m) {
			t.CopyMode = m
		}
	}
	// A ring size follows the ARS executor's name.
	j := len(body)
	for j > 0 && body[j-1] >= '0' && body[j-1] <= '9' {
		j--
	}
	if j < len(body) && j > 0 && strings.HasSuffix(body[:j], "Executor") {
		t.RingSize, _ = strconv.Atoi(body[j:])
		body = body[:j]
	}
	for _, l := range level1Names {
		if strings.HasPrefix(body, l) && (len(body) == len(l) || body[len(l)] >= 'A' && body[len(l)] <= 'Z') {
			t.Level1, body = l, body[len(l):]
			break
		}
	}
	t.Executor = body
}

// cutAlgSuffixes takes "_no_inline" and a copy mode off the end of s.
func cutAlgSuffixes(s string) (body, suffix string) {
	body = s
	for _, m := range []string{"ZCopy", "BCopy"} {
		body = strings.TrimSuffix(body, m)
	}
	if i := strings.Index(body, suffixNoInline); i >= 0 {
		body = body[:i] + body[i+len(suffixNoInline):]
	}
	return body, s[len(body):]
}

func longestPrefix(s string, ids []string) string {
	best := ""
	for _, id := range ids {
		if len(id) > len(best) && strings.HasPrefix(s, id) {
			best = id
		}
	}
	return best
}

func contains(ids []string, s string) bool {
	for _, id := range ids {
		if id == s {
			return true
		}
	}
	return false
}

func cutInt(s string) (int, string, bool) {
	v, rest, ok := strings.Cut(s, "_")
	if !ok || v == "" || len(v) > 9 {
		return 0, s, false
	}
	n, ok := digitsOrEmpty(v)
	return n, rest, ok
}

func digitsOrEmpty(s string) (int, bool) {
	if s == "" {
		return 0, true
	}
	if len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func alpha(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
