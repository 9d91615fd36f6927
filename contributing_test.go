package hcclexporter

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// pathLike matches a backquoted repository path in CONTRIBUTING.md: a file
// or directory with a slash or a known extension. Paths with a placeholder
// (collectors/<name>/) name files a change creates, and commands (`make
// mixin`) are not paths.
var pathLike = regexp.MustCompile("`([A-Za-z0-9_.][A-Za-z0-9_./-]*(?:/|\\.(?:go|md|json|yml|yaml|libsonnet|prom)))`")

// TestContributingPathsExist: every path the recipes of CONTRIBUTING.md name
// exists, so that a file moved or renamed without its recipe fails here;
// each recipe names enough files to be one.
func TestContributingPathsExist(t *testing.T) {
	b, err := os.ReadFile("CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	sections := strings.Split(string(b), "\n## ")
	recipes := 0
	for _, sec := range sections[1:] {
		title, _, _ := strings.Cut(sec, "\n")
		var paths []string
		for _, m := range pathLike.FindAllStringSubmatch(sec, -1) {
			p := m[1]
			if strings.ContainsAny(p, "<>*") {
				continue
			}
			paths = append(paths, p)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("CONTRIBUTING.md, %q: %s does not exist", title, p)
			}
		}
		if len(paths) < 8 {
			t.Errorf("CONTRIBUTING.md, %q names %d paths: %v", title, len(paths), paths)
		}
		recipes++
	}
	if recipes != 3 {
		t.Errorf("CONTRIBUTING.md has %d recipes, want 3 (a fault code, an npu-smi field, a collector)", recipes)
	}
}
