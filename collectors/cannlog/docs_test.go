package cannlog

import (
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// TestDocsCoverCatalogAndFlags keeps docs/cannlog.md in step with the
// catalog and the flags.
func TestDocsCoverCatalogAndFlags(t *testing.T) {
	b, err := os.ReadFile("../../docs/cannlog.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range logstate.Codes() {
		code := c.Code
		stage, title, _, _ := logstate.CodeInfo(code)
		if !strings.Contains(doc, "| "+code+" | "+stage+" | "+title) {
			t.Errorf("docs/cannlog.md lacks the catalog row of %s (%s, %s)", code, stage, title)
		}
	}
	for _, f := range logstate.Catalog() {
		for _, p := range f.Fingerprint {
			if !strings.Contains(doc, "`"+p+"`") {
				t.Errorf("docs/cannlog.md lacks fingerprint %q of %s", p, f.Code)
			}
		}
	}
	for _, w := range parse.Wordings {
		row := "| " + w.Kind.String() + " | " + w.Era + " | `" + w.Prefix + "` |"
		if !strings.Contains(doc, row) {
			t.Errorf("docs/cannlog.md lacks the wording row %q", row)
		}
	}
	app := kingpin.New("x", "")
	builtin := map[string]bool{}
	for _, fl := range app.Model().Flags {
		builtin[fl.Name] = true
	}
	AddFlags(app, nil)
	for _, fl := range app.Model().Flags {
		if !builtin[fl.Name] && !strings.Contains(doc, "`--"+fl.Name+"`") {
			t.Errorf("docs/cannlog.md lacks flag --%s", fl.Name)
		}
	}
}
