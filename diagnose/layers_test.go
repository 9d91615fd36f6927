package diagnose

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDiagnoseLayers checks the direction of diagnose's own packages on
// what each links (go list -deps, without tests): model links nothing of
// the project; bundle and render link model and nothing else of it (render
// never the analysis nor the bundle reader: the Report is all it sees);
// analyse links model, bundle and the domain below (never render). Only
// the facade, package diagnose, links them all.
func TestDiagnoseLayers(t *testing.T) {
	const mod = "github.com/hccl-exporter/hccl_exporter/"
	allowed := map[string][]string{
		"diagnose/model":   {},
		"diagnose/bundle":  {"diagnose/model"},
		"diagnose/render":  {"diagnose/model"},
		"diagnose/analyse": {"diagnose/model", "diagnose/bundle", "internal/", "collector"},
		"diagnose":         {"diagnose/", "internal/", "collector"},
	}
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], mod)
		if !ok {
			continue
		}
		allow, ok := allowed[pkg]
		if !ok {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			rel, ours := strings.CutPrefix(dep, mod)
			if !ours || rel == pkg {
				continue
			}
			ok := false
			for _, a := range allow {
				if rel == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a)) || strings.HasPrefix(rel, a+"/") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s links %s (allowed: %v)", pkg, rel, allow)
			}
		}
	}
	if checked != len(allowed) {
		t.Fatalf("checked %d of the %d packages: the check is broken", checked, len(allowed))
	}
}
