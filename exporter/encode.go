package exporter

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Encoding is the other per-series part of an uncached scrape (about 1 µs a
// series, after the gather's 1.8; docs/benchmarks.md). expfmt encodes family by
// family, so an answer is the concatenation of its families' encodings:
// encodeAnswer encodes contiguous runs of families on the node's cores and
// writes them in order, with the format negotiated and the headers set as
// promhttp sets them. The answer is the same, byte for byte (encode_test.go).

// seriesIn counts the series of mfs.
func seriesIn(mfs []*dto.MetricFamily) int {
	n := 0
	for _, mf := range mfs {
		n += len(mf.Metric)
	}
	return n
}

// encodeBufs keeps the buffers the later parts of an answer are encoded into.
var encodeBufs sync.Pool

// keptWriter is a writer that takes kept encodings whole (the recorded
// answer: it reuses their deflated form).
type keptWriter interface {
	WriteKept(k *keptEncoding)
}

// piece is a part of an encoded run: bytes of its buffer, or a kept
// encoding.
type piece struct {
	from, to int
	kept     *keptEncoding
}

// encodeAnswer writes mfs to w in the format req negotiates among the
// formats promhttp offers with OpenMetrics enabled, encoded in parts
// goroutines, and sets the Content-Type and Vary headers promhttp sets. The
// families of stable sets are written as kept encoded in cache (nil keeps
// none), or encoded and kept there. A family that fails to encode is logged,
// counted in errs (as promhttp counts cause="encoding") and skipped, as
// promhttp.ContinueOnError does; what it wrote before failing stays, as
// with promhttp.
func encodeAnswer(w http.ResponseWriter, req *http.Request, mfs []*dto.MetricFamily, parts int,
	cache *stableCache, errs *prometheus.CounterVec, logError func(error)) {
	format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
	w.Header().Add("Vary", "Accept")
	w.Header().Set("Content-Type", string(format))
	fail := func(err error) {
		errs.WithLabelValues("encoding").Inc()
		logError(err)
	}

	kept := make([]*keptEncoding, len(mfs))
	keepable := make([]bool, len(mfs))
	for i, mf := range mfs {
		kept[i], keepable[i] = cache.encoding(mf, format)
	}
	bounds := cutFamilies(mfs, max(parts, 1), func(i int) bool { return kept[i] != nil })
	type run struct {
		buf    *bytes.Buffer
		pieces []piece
	}
	encodeRun := func(from, to int) run {
		buf, _ := encodeBufs.Get().(*bytes.Buffer)
		if buf == nil {
			buf = &bytes.Buffer{}
		}
		buf.Reset()
		r := run{buf: buf}
		start := 0
		cut := func() {
			if buf.Len() > start {
				r.pieces = append(r.pieces, piece{from: start, to: buf.Len()})
			}
			start = buf.Len()
		}
		enc := expfmt.NewEncoder(buf, format)
		var one *bytes.Buffer // a family to keep, encoded alone
		var oneEnc expfmt.Encoder
		for i := from; i < to; i++ {
			mf := mfs[i]
			switch {
			case kept[i] != nil:
				cut()
				r.pieces = append(r.pieces, piece{kept: kept[i]})
			case keepable[i]:
				if one == nil {
					one = &bytes.Buffer{}
					oneEnc = expfmt.NewEncoder(one, format)
				}
				one.Reset()
				err := oneEnc.Encode(mf)
				if err != nil {
					fail(fmt.Errorf("error encoding and sending metric family %q: %w", mf.GetName(), err))
				}
				if k := cache.keepEncoding(mf, format, bytes.Clone(one.Bytes())); k != nil && err == nil {
					cut()
					r.pieces = append(r.pieces, piece{kept: k})
				} else {
					buf.Write(one.Bytes())
				}
			default:
				if err := enc.Encode(mf); err != nil {
					fail(fmt.Errorf("error encoding and sending metric family %q: %w", mf.GetName(), err))
				}
			}
		}
		cut()
		return r
	}
	runs := make([]run, len(bounds)-1)
	var wg sync.WaitGroup
	for i := 1; i < len(runs); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = encodeRun(bounds[i], bounds[i+1])
		}()
	}
	runs[0] = encodeRun(bounds[0], bounds[1])
	wg.Wait()
	kw, _ := w.(keptWriter)
	for _, r := range runs {
		for _, p := range r.pieces {
			switch {
			case p.kept == nil:
				_, _ = w.Write(r.buf.Bytes()[p.from:p.to])
			case kw != nil:
				kw.WriteKept(p.kept)
			default:
				_, _ = w.Write(p.kept.plain)
			}
		}
		encodeBufs.Put(r.buf)
	}
	// OpenMetrics' # EOF, written by an encoder that encoded nothing.
	if c, ok := expfmt.NewEncoder(w, format).(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			fail(fmt.Errorf("error closing the metrics answer: %w", err))
		}
	}
}

// cutFamilies cuts mfs into parts contiguous runs of about equal encoding
// cost and returns their bounds: run i is mfs[b[i]:b[i+1]]. A series costs
// about one unit plus one per label; a family kept encoded, one unit per 16
// series (it is copied).
func cutFamilies(mfs []*dto.MetricFamily, parts int, isKept func(i int) bool) []int {
	cost := make([]int, len(mfs))
	total := 0
	for i, mf := range mfs {
		c := 1
		if isKept != nil && isKept(i) {
			c += len(mf.Metric) / 16
		} else {
			for _, m := range mf.Metric {
				c += 1 + len(m.Label)
			}
		}
		cost[i] = c
		total += c
	}
	bounds := make([]int, 1, parts+1)
	acc := 0
	for i, c := range cost {
		if len(bounds) == parts {
			break
		}
		acc += c
		// Cut after this family once the run reaches its share, or
		// before it when it overshoots by more than it would undershoot.
		if want := total * len(bounds) / parts; acc >= want {
			if acc-want > c/2 && i > bounds[len(bounds)-1] {
				bounds = append(bounds, i)
			} else {
				bounds = append(bounds, i+1)
			}
		}
	}
	for len(bounds) < parts+1 {
		bounds = append(bounds, len(mfs))
	}
	return bounds
}
