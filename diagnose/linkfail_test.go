package diagnose

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// TestLinkFailuresInEveryFormat: the sample bundle's EI0006 incident (its
// root not in the bundle) names the failing pair HCCL's detector printed,
// in the JSON model, the text and the HTML, and its remedy checks the link.
func TestLinkFailuresInEveryFormat(t *testing.T) {
	r := run(t, "testdata/bundle")
	const pair = "server 192.168.200.100, device 1 → server 192.168.200.100, device 0"
	var in *model.Incident
	for i := range r.Incidents {
		if len(r.Incidents[i].LinkFailures) > 0 {
			in = &r.Incidents[i]
		}
	}
	if in == nil || in.LinkFailures[0].Pair() != pair || in.LinkFailures[0].Source != model.LinkSourceDetector || len(r.LinkFailures) != 2 {
		t.Fatalf("incident link failures: %+v", in)
	}
	// The detector names servers and devices; the createLink line of the
	// same pair adds the ranks.
	const resolved = "rank 1 on 192.168.200.100 (device 1, not in the bundle) → rank 0 on 192.168.200.100 (device 0, not in the bundle) (HCCS/PCIe)"
	if in.FailingPair == nil || in.FailingPair.String() != resolved {
		t.Fatalf("failing pair %+v, want %s", in.FailingPair, resolved)
	}
	if !strings.Contains(in.Summary, resolved) {
		t.Errorf("summary %q does not name the pair", in.Summary)
	}
	hasRemedy := false
	for _, rem := range in.Remedy {
		hasRemedy = hasRemedy || rem.ID == model.RemedyCheckLink
	}
	if !hasRemedy {
		t.Errorf("remedy %+v lacks %s", in.Remedy, model.RemedyCheckLink)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "failing link (detector, node-a pid 17528, ×1): "+pair) {
		t.Errorf("text lacks the failing link")
	}
	if page := htmlOf(t, r); !strings.Contains(page, "Failing links HCCL named") || !strings.Contains(page, html.EscapeString(pair)) {
		t.Errorf("HTML lacks the failing link")
	}
}
