package analyse

import (
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

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
	if got := pointedAt([]model.PeerCount{{Peer: "rank 3", Events: 5}, {Peer: "rank 4", Events: 2}}); got != "rank 3" {
		t.Errorf("pointedAt = %q", got)
	}
	ps := []model.PeerCount{}
	for _, p := range []string{"rank 10", "rank 9", "rank 2", "rank 11", "rank 3", "rank 4", "rank 5", "rank 6", "rank 7", "rank 8"} {
		ps = append(ps, model.PeerCount{Peer: p, Events: 1})
	}
	if got := pointedAt(ps); got != "10 peers equally (1 waiting event(s) each): rank 2, rank 3, rank 4, rank 5, rank 6, rank 7, rank 8, rank 9 and 2 more" {
		t.Errorf("pointedAt = %q", got)
	}
}
