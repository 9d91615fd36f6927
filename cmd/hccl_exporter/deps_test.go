package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The floors of docs/architecture.md, checked on what each package links
// (go list -deps: its imports, transitively, without tests).
//
//   - The pure domain (the CANN log grammar, the follower, process
//     discovery, what a communicator is, the headroom model, the chip
//     identity, HCCL's settings) links no net/http and no client_golang at
//     all: it is data and functions over data. So do diagnose's report model, its bundle
//     reader and its renderers (diagnose/{model,bundle,render}); only its
//     analysis links the log state.
//   - The log state and its follower, the shared npu-smi run, the joins,
//     the collector contract and diagnose link
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
		{[]string{"internal/cann/parse", "internal/cann/tail", "internal/cann/discover", "internal/cann/comm", "internal/headroom", "internal/ascend", "internal/npufault",
			"internal/hcclenv", "diagnose/model", "diagnose/bundle", "diagnose/render"}, append([]string{"net/http", "github.com/prometheus/client_golang"}, serving...)},
		{[]string{"internal/cann/logstate", "internal/cann/follow", "internal/npusmi", "internal/join", "collector", "diagnose"}, serving},
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

// TestCollectorsLinkNoOtherCollector: a collector links the domain and the
// contract, never another collector's package: main joins what they see
// and hands each the views it needs through its own small interfaces.
func TestCollectorsLinkNoOtherCollector(t *testing.T) {
	const prefix = "github.com/hccl-exporter/hccl_exporter/collectors/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "../../collectors/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 6 {
		t.Fatalf("go list listed %d collectors: the check is broken", len(lines))
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, prefix) {
				t.Errorf("%s links %s", strings.TrimPrefix(fields[0], prefix), strings.TrimPrefix(dep, prefix))
			}
		}
	}
}

// TestArchitectureNamesEveryPackage: docs/architecture.md has a row for
// every package of the module (a row may name several, or a tree with
// "/..."), so a package added without a line there fails.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/hccl-exporter/hccl_exporter"
	var named []string
	for _, m := range regexp.MustCompile("`([a-z0-9_./]+)`").FindAllStringSubmatch(string(doc), -1) {
		named = append(named, m[1])
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 30 {
		t.Fatalf("go list listed %d packages: the check is broken", len(pkgs))
	}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p, mod+"/")
		if !ok {
			continue // the module root: the version
		}
		found := false
		for _, n := range named {
			tree, isTree := strings.CutSuffix(n, "...")
			if n == rel || (isTree && strings.HasPrefix(rel+"/", tree)) || braced(n, rel) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/architecture.md has no line for %s", rel)
		}
	}
}

// braced reports whether a name such as internal/cann/{parse,tail} names
// pkg.
func braced(name, pkg string) bool {
	prefix, rest, ok := strings.Cut(name, "{")
	if !ok {
		return false
	}
	list, _, _ := strings.Cut(rest, "}")
	for _, e := range strings.Split(list, ",") {
		if prefix+e == pkg {
			return true
		}
	}
	return false
}

// TestHeadroomWalk computes the packages npu-smi's output crosses to the
// headroom gauge: from the exec (internal/vendorcli) up every import path
// to the view main hands the headroom collector (internal/join's
// Headroom), then the model it feeds (internal/headroom), the collector
// and the serving package. Before the domain owned its inputs the walk went
// through main's adapters and three other collectors (13 packages); it
// must stay within 6, with no collector and no cmd on it but the headroom
// collector, and that collector must not reach npu-smi but through the view.
func TestHeadroomWalk(t *testing.T) {
	const mod = "github.com/hccl-exporter/hccl_exporter/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../../internal/join").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	// reaches memoises whether p reaches the exec through its imports.
	memo := map[string]bool{}
	var reaches func(p string) bool
	reaches = func(p string) bool {
		if v, ok := memo[p]; ok {
			return v
		}
		memo[p] = p == mod+"internal/vendorcli"
		for _, q := range imports[p] {
			if strings.HasPrefix(q, mod) && reaches(q) {
				memo[p] = true
			}
		}
		return memo[p]
	}
	if !reaches(mod + "internal/join") {
		t.Fatal("internal/join does not reach npu-smi's exec: the check is broken")
	}
	var walk []string
	for p := range imports {
		if strings.HasPrefix(p, mod) && reaches(p) {
			walk = append(walk, strings.TrimPrefix(p, mod))
		}
	}
	sort.Strings(walk)
	walk = append(walk, "internal/headroom", "collectors/headroom", "exporter")
	t.Logf("npu-smi → headroom gauge crosses %d packages: %v", len(walk), walk)
	if len(walk) > 6 {
		t.Errorf("npu-smi → headroom gauge crosses %d packages, want at most 6: %v", len(walk), walk)
	}
	for _, p := range walk[:len(walk)-3] {
		if strings.HasPrefix(p, "collectors/") || strings.HasPrefix(p, "cmd/") {
			t.Errorf("the view's path to npu-smi passes %s", p)
		}
	}
	out, err = exec.Command("go", "list", "-deps", "../../collectors/headroom").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == mod+"internal/npusmi" || dep == mod+"internal/vendorcli" {
			t.Errorf("collectors/headroom links %s: it reads npu-smi only through the view", dep)
		}
	}
}

// TestMainExportsNothing: package main wires; everything it could export
// belongs to a package that owns it. It stays under 800 lines.
func TestMainExportsNothing(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	lines, parsed := 0, 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed++
		lines += fset.File(f.Pos()).LineCount()
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				// A method may need its name for an interface (io.Closer).
				if d.Recv == nil && d.Name.IsExported() {
					t.Errorf("%s exports func %s", name, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							t.Errorf("%s exports type %s", name, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								t.Errorf("%s exports %s", name, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if parsed == 0 {
		t.Fatal("no file of package main parsed: the check is broken")
	}
	if lines >= 800 {
		t.Errorf("package main is %d lines (without tests), want under 800", lines)
	}
}
