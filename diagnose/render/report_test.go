package render_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/diagnose/render"
)

// TestTimelineSubSecondTicks: an incident whose events all fall within
// 100 ms gets an axis whose ticks each read a different offset (0.4.0
// labelled every tick of a 20 ms step "+0.0 s").
func TestTimelineSubSecondTicks(t *testing.T) {
	r := runIncidents(t, "only-consequences")
	in := r.Incidents[0]
	in.End = model.Timestamp{Time: in.Start.Add(100 * time.Millisecond)}
	for i := range in.Events {
		in.Events[i].Aligned = model.Timestamp{Time: in.Start.Add(time.Duration(i%5) * 25 * time.Millisecond)}
	}
	svg := string(render.TimelineSVG(in))
	var offsets []string
	for _, m := range regexp.MustCompile(`text-anchor="middle">\+([^<]*)<`).FindAllStringSubmatch(svg, -1) {
		offsets = append(offsets, m[1])
	}
	if len(offsets) < 3 {
		t.Fatalf("ticks %v", offsets)
	}
	seen := map[string]bool{}
	for _, o := range offsets {
		if seen[o] {
			t.Errorf("two ticks read +%s: %v", o, offsets)
		}
		seen[o] = true
	}
	if offsets[1] != "20 ms" {
		t.Errorf("second tick +%s, want +20 ms (ticks %v)", offsets[1], offsets)
	}
}

// TestTextLinesBounded: no line of the text report of any incident bundle
// is longer than the wrap width (plus a multi-byte margin), except quoted
// log lines, which stay whole to be searched for.
func TestTextLinesBounded(t *testing.T) {
	for _, name := range []string{"ei0011", "portdown", "two-incidents", "skew", "only-consequences"} {
		var text bytes.Buffer
		if err := render.WriteText(&text, runIncidents(t, name)); err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(text.String(), "\n") {
			if strings.HasPrefix(strings.TrimLeft(l, " "), "line: ") {
				continue
			}
			if n := len([]rune(l)); n > render.TextWidth {
				t.Errorf("%s line %d: %d characters (at most %d): %.120s…", name, i+1, n, render.TextWidth, l)
			}
		}
	}
}

// TestTimelineTicksDistinct: the consequences of an incident arrive within
// half a second; the timeline's wall-clock ticks still read different
// times.
func TestTimelineTicksDistinct(t *testing.T) {
	r := runIncidents(t, "only-consequences")
	if len(r.Incidents) == 0 {
		t.Fatal("no incident")
	}
	svg := string(render.TimelineSVG(r.Incidents[0]))
	labels := regexp.MustCompile(`<text class="axis" x="[0-9.]+" y="\d+" text-anchor="middle">(\d\d:\d\d:\d\d[^<]*)</text>`).FindAllStringSubmatch(svg, -1)
	if len(labels) < 3 {
		t.Fatalf("%d wall-clock ticks in %s", len(labels), svg)
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if seen[l[1]] {
			t.Errorf("tick %s appears twice: %v", l[1], labels)
		}
		seen[l[1]] = true
	}
}

// runIncidents runs diagnose over one of the incident bundles (see
// diagnose/testdata/README.md), in UTC.
func runIncidents(t *testing.T, name string) *model.Report {
	t.Helper()
	dir := filepath.Join("..", "testdata", "incidents", name)
	r, err := diagnose.Run([]string{dir}, diagnose.Options{Location: time.UTC, Workers: 2})
	if err != nil {
		t.Fatalf("Run(%s): %v", dir, err)
	}
	return r
}
