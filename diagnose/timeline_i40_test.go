package diagnose

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTimelineSubSecondTicks: an incident whose events all fall within
// 100 ms gets an axis whose ticks each read a different offset (0.4.0
// labelled every tick of a 20 ms step "+0.0 s").
func TestTimelineSubSecondTicks(t *testing.T) {
	r := runIncidents(t, "only-consequences")
	in := r.Incidents[0]
	in.End = Timestamp{Time: in.Start.Add(100 * time.Millisecond)}
	for i := range in.Events {
		in.Events[i].Aligned = Timestamp{Time: in.Start.Add(time.Duration(i%5) * 25 * time.Millisecond)}
	}
	svg := string(timelineSVG(in))
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

func TestFmtTick(t *testing.T) {
	for _, c := range []struct {
		s, step float64
		want    string
	}{
		{0, 0.02, "0 ms"},
		{0.04, 0.02, "40 ms"},
		{0.0015, 0.0005, "1.5 ms"},
		{0.2, 0.1, "200 ms"},
		{2, 1, "2 s"},
		{90, 30, "90 s"},
	} {
		if got := fmtTick(c.s, c.step); got != c.want {
			t.Errorf("fmtTick(%g, %g) = %q, want %q", c.s, c.step, got, c.want)
		}
	}
}

// TestConsequencesHeadlineNamesTiedPeers: when the waiting ranks name 8
// peers equally, the headline says so and names them all, instead of the
// first in sort order (0.4.0: "point at rank 24").
func TestConsequencesHeadlineNamesTiedPeers(t *testing.T) {
	r := runIncidents(t, "only-consequences")
	s := r.Incidents[0].Summary
	if !strings.Contains(s, "The waiting ranks point at 8 peers equally (") ||
		!strings.Contains(s, "rank 24, rank 25, rank 26, rank 27, rank 28, rank 29, rank 30, rank 31.") {
		t.Errorf("summary %q: want the 8 tied ranks", s)
	}
	// One clear suspect is still named alone.
	if got := pointedAt([]PeerCount{{Peer: "rank 3", Events: 5}, {Peer: "rank 4", Events: 2}}); got != "rank 3" {
		t.Errorf("pointedAt = %q", got)
	}
	ps := []PeerCount{}
	for _, p := range []string{"rank 10", "rank 9", "rank 2", "rank 11", "rank 3", "rank 4", "rank 5", "rank 6", "rank 7", "rank 8"} {
		ps = append(ps, PeerCount{Peer: p, Events: 1})
	}
	if got := pointedAt(ps); got != "10 peers equally (1 waiting event(s) each): rank 2, rank 3, rank 4, rank 5, rank 6, rank 7, rank 8, rank 9 and 2 more" {
		t.Errorf("pointedAt = %q", got)
	}
}
