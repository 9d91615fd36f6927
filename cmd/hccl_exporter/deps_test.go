package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The log state and the offline diagnose command link nothing of the HTTP
// stack or the flag parser: diagnose reads bundles on a laptop, and the
// state "does no I/O".
func TestOfflinePackagesLinkNoHTTPStack(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../internal/cann/logstate", "../../diagnose").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/prometheus/client_golang/prometheus/promhttp",
			"github.com/prometheus/exporter-toolkit", "github.com/alecthomas/kingpin"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("logstate or diagnose links %s", dep)
			}
		}
	}
}
