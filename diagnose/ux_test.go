package diagnose

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// What a newcomer reads first: bounded lines, an example process that is
// the root cause's, a zone that names itself, and a timeline whose ticks
// tell times apart.

// TestEI0011ExampleIsTheReporter: the bundle-wide EI0011 section cites the
// process that reported EI0011 (node-3 pid 2103004, the root cause), not
// the first process of the bundle with the same settings (node-1's).
func TestEI0011ExampleIsTheReporter(t *testing.T) {
	r := runIncidents(t, "ei0011")
	if r.EI0011 == nil || len(r.EI0011.Remedies) == 0 {
		t.Fatal("no EI0011 section")
	}
	f := r.EI0011.Remedies[0].Findings
	if len(f) < 2 || !strings.Contains(f[0], "in one process: node-3 pid 2103004,") || !strings.Contains(f[1], "(node-3 pid 2103004:") {
		t.Errorf("EI0011 findings cite another process than the reporter:\n%s", strings.Join(f, "\n"))
	}
}

// TestLocalZoneNamed: a report read in the machine's zone (nothing
// inferred) says which zone that is, never just "Local".
func TestLocalZoneNamed(t *testing.T) {
	opts := testOptions()
	opts.Location, opts.InferZones = time.Local, false
	r, err := Run([]string{filepath.Join("testdata", "bundle")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(text.String(), "\n", 3)[1]
	if strings.Contains(head, "in Local") || !regexp.MustCompile(`local zone \(UTC[+-]\d\d:\d\d\)`).MatchString(head) {
		t.Errorf("zone line %q does not name the zone", head)
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "Times are in Local") || !regexp.MustCompile(`Times are in this machine&#39;s local zone \(UTC(&#43;|-)\d\d:\d\d\)`).MatchString(page.String()) {
		t.Errorf("HTML report does not name the local zone")
	}
}
