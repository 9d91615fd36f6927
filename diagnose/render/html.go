package render

import (
	_ "embed"
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// The HTML report is one self-contained file: inline CSS and inline SVG, no
// script, no font, no image, no link to anything, so that it opens the same
// on an air-gapped cluster and in a ticket. It renders the same Report as
// the text and JSON forms: the incidents on top, a timeline per incident
// (one row per node, one mark per event, coloured by stage, the root ringed
// in red), then the text report's tables.

//go:embed report.html.tmpl
var reportTemplate string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"stamp": textStamp,
	"bytes": func(v any) string {
		switch n := v.(type) {
		case int64:
			return model.FmtBytes(float64(n))
		case float64:
			return model.FmtBytes(n)
		}
		return fmt.Sprint(v)
	},
	"num":            model.FmtNum,
	"seconds":        model.FmtSeconds,
	"who":            model.Who,
	"peerNamedBy":    model.PeerNamedBy,
	"fewNodes":       fewNodes,
	"remedyIncident": remedyIncident,
	"join":           strings.Join,
	"joinAnd":        model.JoinAnd,
	"pids":           model.PIDList,
	"zoneName":       zoneName,
	"where":          model.Where,
	"timeline":       timelineSVG,
	"processGroups":  ProcessGroups,
	"zonesDiffer":    zonesDiffer,
	"stageColor": func(stage string) template.CSS {
		return template.CSS(stageColors[stage])
	},
	"deref":      func(f *float64) float64 { return *f },
	"stageOrder": func() []string { return stageOrder },
	"add":        func(a, b int) int { return a + b },
	"files":      func(n model.Node) int { return n.Files.Plog + n.Files.Device + n.Files.Screen },
}).Parse(reportTemplate))

// stageColors colour the marks of the timeline and the stage badges.
var stageColors = map[string]string{
	"init":       "#2f6fdb",
	"link_setup": "#e07b00",
	"execution":  "#8a3ffc",
	"unknown":    "#6f6f6f",
}

// stageOrder is the legend's order.
var stageOrder = []string{"init", "link_setup", "execution", "unknown"}

// WriteHTML writes the report as one self-contained HTML page.
func WriteHTML(w io.Writer, r *model.Report) error {
	if err := htmlTemplate.Execute(w, r); err != nil {
		return fmt.Errorf("render HTML report: %w", err)
	}
	return nil
}

// Timeline geometry, in SVG user units (CSS pixels at 100%).
const (
	tlLeft      = 150 // node names
	tlWidth     = 1000
	tlRight     = 30
	tlRowHeight = 34
	// tlFullRows is the most nodes drawn at full height; more are drawn
	// tlThinRowHeight high.
	tlFullRows      = 16
	tlThinRowHeight = 12
	tlTop           = 34 // axis labels
	tlBottom        = 26
	tlMaxTicks      = 6
)

// timelineSVG draws one incident: a row per node (the root's node first),
// the events as marks at their aligned time.
func timelineSVG(in model.Incident) template.HTML {
	if len(in.Events) == 0 {
		return ""
	}
	tl := newTimeline(in)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="timeline" role="img" aria-label="timeline of incident %d" viewBox="0 0 %d %d" width="%d" height="%d">`, in.ID, tl.w, tl.h, tl.w, tl.h)
	fmt.Fprintf(&b, `<title>Incident %d: events per node over time</title>`, in.ID)
	tl.rows(&b, in)
	tl.axis(&b)
	tl.marks(&b, in)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// timeline is the geometry of one incident's drawing.
type timeline struct {
	start       time.Time
	span        float64 // seconds from the first event to the last (at least 1)
	x0          time.Time
	total       float64 // seconds across the drawing, span and padding
	nodes       []string
	row         map[string]int
	rowH, lanes int
	label       string
	labelDY     int
	w, h        int
}

func newTimeline(in model.Incident) *timeline {
	tl := &timeline{start: in.Start.Time, row: map[string]int{}}
	tl.span = in.End.Time.Sub(tl.start).Seconds()
	if tl.span <= 0 {
		tl.span = 1
	}
	pad := tl.span * 0.04
	tl.x0 = tl.start.Add(-time.Duration(pad * float64(time.Second)))
	tl.total = tl.span + 2*pad

	seen := map[string]bool{}
	if in.Root != nil {
		tl.nodes = append(tl.nodes, in.Root.Node)
		seen[in.Root.Node] = true
	}
	rest := append([]string(nil), in.Nodes...)
	sort.Slice(rest, func(i, j int) bool { return model.NaturalLess(rest[i], rest[j]) })
	for _, n := range rest {
		if !seen[n] {
			tl.nodes = append(tl.nodes, n)
			seen[n] = true
		}
	}
	for i, n := range tl.nodes {
		tl.row[n] = i
	}
	// Many nodes: thin rows, one lane, small labels, so that 128 nodes
	// fit a screen.
	tl.rowH, tl.lanes, tl.label, tl.labelDY = tlRowHeight, 5, "node", 5
	if len(tl.nodes) > tlFullRows {
		tl.rowH, tl.lanes, tl.label, tl.labelDY = tlThinRowHeight, 1, "node thin", 3
	}
	tl.h = tlTop + len(tl.nodes)*tl.rowH + tlBottom
	tl.w = tlLeft + tlWidth + tlRight
	return tl
}

// xOf is the horizontal position of a time.
func (tl *timeline) xOf(t time.Time) float64 {
	return tlLeft + t.Sub(tl.x0).Seconds()/tl.total*tlWidth
}

// rows draws a row per node with its name, the root's node marked.
func (tl *timeline) rows(b *strings.Builder, in model.Incident) {
	for i, n := range tl.nodes {
		y := tlTop + i*tl.rowH
		cls := "row"
		if in.Root != nil && n == in.Root.Node {
			cls = "row rootrow"
		}
		fmt.Fprintf(b, `<rect class="%s" x="0" y="%d" width="%d" height="%d"/>`, cls, y, tl.w, tl.rowH)
		fmt.Fprintf(b, `<text class="%s" x="8" y="%d">%s</text>`, tl.label, y+tl.rowH/2+tl.labelDY, html.EscapeString(n))
	}
}

// axis draws ticks at round steps, labelled by seconds after the first
// event and by wall-clock time.
func (tl *timeline) axis(b *strings.Builder) {
	step := niceStep(tl.span / tlMaxTicks)
	// Sub-second steps (consequences that all arrive within a second)
	// need milliseconds in the wall-clock label, or every tick reads the
	// same time.
	clock := "15:04:05"
	if step < 1 {
		clock = "15:04:05.000"
	}
	for s := 0.0; s <= tl.span+1e-9; s += step {
		x := tl.xOf(tl.start.Add(time.Duration(s * float64(time.Second))))
		fmt.Fprintf(b, `<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x, tlTop-4, x, tl.h-tlBottom)
		fmt.Fprintf(b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">+%s</text>`, x, tlTop-18, html.EscapeString(fmtTick(s, step)))
		fmt.Fprintf(b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, tl.h-8, tl.start.Add(time.Duration(s*float64(time.Second))).Format(clock))
	}
}

// marks draws the events: consequences first, the root last (on top).
func (tl *timeline) marks(b *strings.Builder, in model.Incident) {
	evs := append([]model.Event(nil), in.Events...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Part != model.PartRoot && evs[j].Part == model.PartRoot })
	lane := map[string]int{}
	for _, e := range evs {
		x := tl.xOf(e.Aligned.Time)
		// Spread the processes of a node over five lanes so that
		// simultaneous marks stay visible.
		key := fmt.Sprintf("%s/%d", e.Node, e.PID)
		l, ok := lane[key]
		if !ok {
			l = len(lane) % tl.lanes
			lane[key] = l
		}
		top := float64(tlTop + tl.row[e.Node]*tl.rowH)
		y := top + 7 + float64(l)*5
		if tl.lanes == 1 {
			y = top + float64(tl.rowH)/2
		}
		tip := fmt.Sprintf("%s %s (%s) on %s at %s, %s", e.Part, e.Code, e.Stage, model.Who(e), e.Time.Format(model.TextTime), e.Text)
		color := stageColors[e.Stage]
		if color == "" {
			color = stageColors["unknown"]
		}
		if e.Part == model.PartRoot {
			rootMark(b, x, top+float64(tl.rowH)/2, color, tip, e.Code)
			continue
		}
		shape := fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s" fill-opacity="0.85">`, x, y, color)
		if e.Role == model.RoleLocal {
			// A rank's own failure: a square, so it reads apart from
			// the waiting peers.
			shape = fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s">`, x-4, y-4, color)
		}
		b.WriteString(shape)
		fmt.Fprintf(b, `<title>%s</title>`, html.EscapeString(tip))
		if e.Role == model.RoleLocal {
			b.WriteString(`</rect>`)
		} else {
			b.WriteString(`</circle>`)
		}
	}
}

// rootMark draws the root: ringed in red, labelled with its code.
func rootMark(b *strings.Builder, x, y float64, color, tip, code string) {
	fmt.Fprintf(b, `<g class="root-mark"><circle cx="%.1f" cy="%.1f" r="11" fill="none" stroke="#d10000" stroke-width="3"/><circle cx="%.1f" cy="%.1f" r="6" fill="%s"><title>%s</title></circle>`,
		x, y, x, y, color, html.EscapeString(tip))
	label := fmt.Sprintf("root %s", code)
	anchor, lx := "start", x+15
	if x > tlLeft+tlWidth*0.75 {
		anchor, lx = "end", x-15
	}
	fmt.Fprintf(b, `<text class="rootlabel" x="%.1f" y="%.1f" text-anchor="%s">%s</text></g>`, lx, y+4, anchor, html.EscapeString(label))
}

// fmtTick labels a tick s seconds after the first event on an axis of
// step seconds: model.FmtSeconds for steps of a second or more, milliseconds with
// as many decimals as the step needs below that ("+20 ms", "+0.5 ms"), so
// that no two ticks read the same ("+0.0 s" for every tick of a 20 ms step
// before).
func fmtTick(s, step float64) string {
	if step >= 1 {
		return model.FmtSeconds(s)
	}
	ms, stepMS := s*1000, step*1000
	dec := 0
	if stepMS < 1 {
		dec = int(math.Ceil(-math.Log10(stepMS)))
	}
	return strconv.FormatFloat(ms, 'f', dec, 64) + " ms"
}

// niceStep rounds a tick interval up to 1, 2 or 5 × 10^n seconds.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
