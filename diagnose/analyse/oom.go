package analyse

import (
	"bytes"
	"strconv"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// The troubleshooting guide keeps two out-of-memory failures apart: EI0011,
// HCCL's own report that the RoCE QPs of link setup did not fit (remedy:
// fewer QPs and links, free memory), and an out-of-memory that the driver
// (drv, L codes) reports while HCCL allocates its cclBuffer (remedy:
// HCCL_BUFFSIZE). The second is recognised by an EL0004 report whose
// traceback names HCCL, e.g.
//
//	EL0004: [PID: 316198] 2025-09-28-07:22:29.827.496 Failed to allocate memory.
//	        TraceBack (most recent call last):
//	        Failed to allocate resource[DeviceMemory] with info [size:2147483648]. …
//	        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module.
//
// or by HCCL's own plog line "[DeviceMem][Alloc]rt_malloc error", which the
// fault catalog maps to EL0004 (source plog).

var (
	markEL0004 = []byte("EL0004")
	sizeMark   = []byte("[size:")
)

// hcclMarkers are substrings of a traceback line that put HCCL in the stack.
var hcclMarkers = [][]byte{[]byte("Hccl"), []byte("HCCL"), []byte("hccl"), []byte("cclBuffer"), []byte("ccl buffer")}

// oomTracebackLines is how many lines after an EL0004 report belong to its
// traceback.
const oomTracebackLines = 12

// maxEvidencePerFile caps the EL0004 reports kept per file.
const maxEvidencePerFile = 16

// maxExcerpt caps the log text quoted in a report.
const maxExcerpt = 240

// oomWatch follows one screen log for EL0004 reports.
type oomWatch struct {
	file  string
	line  int64
	left  int // traceback lines still to look at
	cur   model.OOMEvidence
	found []model.OOMEvidence
}

func (w *oomWatch) observe(line []byte) {
	w.line++
	if a, ok := parse.ParseEI0011Allocation(line); ok {
		w.flush()
		if len(w.found) < maxEvidencePerFile {
			w.found = append(w.found, model.OOMEvidence{Code: model.CodeEI0011, File: w.file, Line: w.line, Text: excerpt(line),
				SizeBytes: a.SizeBytes, QPRange: a.QPRange})
		}
		return
	}
	if bytes.Contains(line, markEL0004) {
		w.flush()
		w.cur = model.OOMEvidence{Code: model.CodeEL0004, File: w.file, Line: w.line, Text: excerpt(line)}
		w.left = oomTracebackLines
		w.look(line)
		return
	}
	if w.left == 0 {
		return
	}
	w.left--
	w.look(line)
	if w.left == 0 {
		w.flush()
	}
}

func (w *oomWatch) look(line []byte) {
	if !w.cur.HCCL {
		for _, m := range hcclMarkers {
			if bytes.Contains(line, m) {
				w.cur.HCCL, w.cur.HCCLFrame = true, excerpt(line)
				break
			}
		}
	}
	if w.cur.SizeBytes == 0 {
		if i := bytes.Index(line, sizeMark); i >= 0 {
			rest := line[i+len(sizeMark):]
			j := bytes.IndexByte(rest, ']')
			if j > 0 {
				if n, err := strconv.ParseInt(string(bytes.TrimSpace(rest[:j])), 10, 64); err == nil && n > 0 {
					w.cur.SizeBytes = n
				}
			}
		}
	}
}

// flush ends the current report, if any.
func (w *oomWatch) flush() {
	if w.cur.Line == 0 {
		return
	}
	if len(w.found) < maxEvidencePerFile {
		w.found = append(w.found, w.cur)
	}
	w.cur = model.OOMEvidence{}
	w.left = 0
}

// excerpt quotes a log line: trimmed, valid UTF-8, at most maxExcerpt bytes.
func excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxExcerpt {
		b = b[:maxExcerpt] // a rune cut here becomes U+FFFD below
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
