package exporter

import (
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// textEncoder writes the Prometheus text format 0.0.4 byte for byte as
// expfmt does, for counters, gauges and untyped metrics whose metric and
// label names need no quoting: nearly every series of the exporter. It
// appends to one buffer instead of going through expfmt's per-family
// escaping copy and per-call writer checks, which made text encoding the
// largest cost of a scrape. Other families go through expfmt.
type textEncoder struct {
	w        io.Writer
	buf      []byte
	fallback expfmt.Encoder
}

func newTextEncoder(w io.Writer, format expfmt.Format) *textEncoder {
	return &textEncoder{w: w, buf: make([]byte, 0, 64<<10), fallback: expfmt.NewEncoder(w, format)}
}

// Encode writes one family.
func (e *textEncoder) Encode(mf *dto.MetricFamily) error {
	if !simpleFamily(mf) {
		if err := e.flush(); err != nil {
			return err
		}
		return e.fallback.Encode(mf)
	}
	name := mf.GetName()
	b := e.buf
	if mf.Help != nil {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = appendEscaped(b, mf.GetHelp(), false)
		b = append(b, '\n')
	}
	b = append(b, "# TYPE "...)
	b = append(b, name...)
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		b = append(b, " counter\n"...)
	case dto.MetricType_GAUGE:
		b = append(b, " gauge\n"...)
	default:
		b = append(b, " untyped\n"...)
	}
	for _, m := range mf.Metric {
		b = append(b, name...)
		for i, lp := range m.Label {
			if i == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = append(b, lp.GetName()...)
			b = append(b, '=', '"')
			b = appendEscaped(b, lp.GetValue(), true)
			b = append(b, '"')
		}
		if len(m.Label) > 0 {
			b = append(b, '}')
		}
		b = append(b, ' ')
		var v float64
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			v = m.Counter.GetValue()
		case dto.MetricType_GAUGE:
			v = m.Gauge.GetValue()
		default:
			v = m.Untyped.GetValue()
		}
		b = appendFloat(b, v)
		if m.TimestampMs != nil {
			b = append(b, ' ')
			b = strconv.AppendInt(b, m.GetTimestampMs(), 10)
		}
		b = append(b, '\n')
		if len(b) >= 32<<10 {
			// Keep the buffer from growing with large families.
			e.buf = b
			if err := e.flush(); err != nil {
				return err
			}
			b = e.buf
		}
	}
	e.buf = b
	return nil
}

// Close writes what is buffered.
func (e *textEncoder) Close() error { return e.flush() }

func (e *textEncoder) flush() error {
	if len(e.buf) == 0 {
		return nil
	}
	_, err := e.w.Write(e.buf)
	e.buf = e.buf[:0]
	return err
}

// simpleFamily reports whether the fast path writes mf exactly as expfmt:
// a counter, gauge or untyped family with metrics, each of its type, whose
// metric and label names are legacy names (no quoting, no escaping).
func simpleFamily(mf *dto.MetricFamily) bool {
	if len(mf.Metric) == 0 || !model.LegacyValidation.IsValidMetricName(mf.GetName()) {
		return false
	}
	t := mf.GetType()
	for _, m := range mf.Metric {
		switch {
		case t == dto.MetricType_COUNTER && m.Counter != nil:
		case t == dto.MetricType_GAUGE && m.Gauge != nil:
		case t == dto.MetricType_UNTYPED && m.Untyped != nil:
		default:
			return false
		}
		for _, lp := range m.Label {
			if !model.LegacyValidation.IsValidMetricName(lp.GetName()) {
				return false
			}
		}
	}
	return true
}

// appendEscaped escapes backslash and newline, and double quotes when
// quoted, as expfmt does.
func appendEscaped(b []byte, s string, quoted bool) []byte {
	special := "\\\n"
	if quoted {
		special = "\\\n\""
	}
	if !strings.ContainsAny(s, special) {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quoted:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat formats v as expfmt does.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, '-', '1')
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
