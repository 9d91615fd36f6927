package bundle

import (
	"bytes"
	"errors"
	"io"
)

// readBufferSize is the per-worker read buffer. It is also the longest line
// handed to the parsers: a longer line is cut (its start, which carries the
// time, level and fault code, is kept) and the rest is skipped, as the
// collector's tailer does with its own cap.
const readBufferSize = 1 << 20

// lineStats counts what a scan read.
type lineStats struct {
	lines, bytes int64
}

// scanLines calls fn for every line of r (without its newline) using buf,
// which it reuses: it allocates nothing per line, and the slice handed to fn
// is only valid during the call. A last line without a newline is still
// delivered. It returns the first read error other than io.EOF.
func scanLines(r io.Reader, buf []byte, fn func(line []byte)) (lineStats, error) {
	var st lineStats
	start, end := 0, 0
	skipping := false // inside a line longer than buf, after its first part
	for {
		n, err := r.Read(buf[end:])
		end += n
		st.bytes += int64(n)
		for start < end {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			if !skipping {
				fn(buf[start : start+i])
				st.lines++
			}
			skipping = false
			start += i + 1
		}
		if err != nil {
			if start < end && !skipping {
				fn(buf[start:end])
				st.lines++
			}
			if errors.Is(err, io.EOF) {
				return st, nil
			}
			return st, err
		}
		switch {
		case start == 0 && end == len(buf):
			// No newline in a full buffer: hand over the line's start,
			// then skip to its end.
			if !skipping {
				fn(buf[:end])
				st.lines++
			}
			skipping = true
			end = 0
		case start > 0:
			end = copy(buf, buf[start:end])
			start = 0
		}
	}
}
