package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The floors of docs/architecture.md, checked on what each package links
// (go list -deps: its imports, transitively, without tests).
//
//   - The pure domain (the CANN log grammar, the follower, process
//     discovery, the headroom model, the chip identity, HCCL's settings)
//     links no net/http and no client_golang at all: it is data and
//     functions over data.
//   - The log state, the joins, the collector contract and diagnose link
//     client_golang's prometheus package (the log state owns its series; the
//     contract names prometheus.Metric), and through it net/http, which that
//     package imports for its own HTTP helpers. What they do not link is
//     what serves or configures: promhttp, the exporter-toolkit web server,
//     the kingpin flag parser, package exporter (serving) and any collector.
//     diagnose reads bundles on a laptop with none of them.
//   - Nothing below the collectors (internal/..., collector, diagnose)
//     links a collector, package exporter or cmd: the floors point down.
func TestFloorsLinkOnlyDownward(t *testing.T) {
	const mod = "github.com/hccl-exporter/hccl_exporter/"
	serving := []string{"github.com/prometheus/client_golang/prometheus/promhttp", "github.com/prometheus/exporter-toolkit",
		"github.com/alecthomas/kingpin", mod + "exporter", mod + "collectors/", mod + "cmd/"}
	floors := []struct {
		pkgs   []string
		banned []string
	}{
		{[]string{"internal/cann/parse", "internal/cann/tail", "internal/cann/discover", "internal/headroom", "internal/ascend",
			"internal/hcclenv"}, append([]string{"net/http", "github.com/prometheus/client_golang"}, serving...)},
		{[]string{"internal/cann/logstate", "internal/join", "collector", "diagnose"}, serving},
		{[]string{"internal/...", "diagnose/...", "collector"}, []string{mod + "exporter", mod + "collectors/", mod + "cmd/"}},
	}
	for _, f := range floors {
		args := []string{"list", "-deps"}
		for _, p := range f.pkgs {
			args = append(args, "../../"+p)
		}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %v: %v\n%s", f.pkgs, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < len(f.pkgs) {
			t.Fatalf("go list -deps %v listed %d packages: the check is broken", f.pkgs, len(deps))
		}
		for _, dep := range deps {
			for _, banned := range f.banned {
				// A prefix match at a path boundary: "net/http" bans
				// net/http and net/http/..., not net/httpfoo.
				if dep == banned || strings.HasPrefix(dep, strings.TrimSuffix(banned, "/")+"/") {
					t.Errorf("one of %v links %s", f.pkgs, dep)
				}
			}
		}
	}
}
