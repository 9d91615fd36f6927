// Package mixin holds only tests of the monitoring mixin in this directory:
// rendered with the default configuration it must give exactly the shipped
// alerts/hccl_exporter.rules.yml and dashboards/*.json (one source of truth;
// `make mixin` regenerates them), and rendered with another configuration its
// rules must load in promtool and vmalert and pass their own promtool tests.
package mixin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// jsonnetModule is the pinned go-jsonnet (the Makefile's JSONNET).
const jsonnetModule = "github.com/google/go-jsonnet/cmd/jsonnet@v0.22.0"

// jsonnetfmtModule formats the sources (`make mixin` runs it first).
const jsonnetfmtModule = "github.com/google/go-jsonnet/cmd/jsonnetfmt@v0.22.0"

// TestSourcesFormatted: every jsonnet source is as jsonnetfmt writes it, so
// diffs show changes, not layout.
func TestSourcesFormatted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pinned jsonnetfmt on every source: skipped under -short")
	}
	touchSources(t)
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (filepath.Ext(path) == ".libsonnet" || filepath.Ext(path) == ".jsonnet") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 5 {
		t.Fatalf("jsonnet sources %v (%v)", files, err)
	}
	for _, f := range files {
		out, err := exec.Command("go", "run", jsonnetfmtModule, "--test", f).CombinedOutput()
		if err != nil {
			t.Errorf("%s is not formatted (run `make mixin`): %v\n%s", f, err, out)
		}
	}
}

// secondConfig is a site that selects its exporters by job, groups nodes by
// training_job and pages above 4 QPs per connection.
const secondConfig = `{hcclSelector: 'job="npu-exporter"', clusterLabel: 'training_job', qpsPerConnectionLimit: 4, npuExporterCompat: true}`

// touchSources reads every file jsonnet reads, so that go test's cache
// (which sees only the files the test process itself opens) reruns the tests
// when a source changes.
func touchSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext == ".libsonnet" || ext == ".jsonnet" || ext == ".json" {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// render runs lib/render.jsonnet (with tlaConfig as its config, if any) and
// returns the directory holding alerts/ and dashboards/.
func render(t *testing.T, tlaConfig string) string {
	t.Helper()
	touchSources(t)
	out := t.TempDir()
	for _, d := range []string{"alerts", "dashboards"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"run", jsonnetModule, "-S", "-m", out}
	if tlaConfig != "" {
		args = append(args, "--tla-code", "config="+tlaConfig)
	}
	args = append(args, filepath.Join("lib", "render.jsonnet"))
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "go: ") && !strings.Contains(stderr.String(), "RUNTIME ERROR") {
			testtools.Unavailable(t, "go run %s: %v\n%s", jsonnetModule, err, stderr.String())
		}
		t.Fatalf("jsonnet %s: %v\n%s", strings.Join(args[2:], " "), err, stderr.String())
	}
	return out
}

// TestDefaultRenderingIsShipped: the shipped files are the mixin's default
// rendering, byte for byte, and no shipped dashboard lacks a source.
func TestDefaultRenderingIsShipped(t *testing.T) {
	t.Parallel() // a second of jsonnet, as TestSecondConfiguration's
	out := render(t, "")
	rendered, err := filepath.Glob(filepath.Join(out, "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range rendered {
		rel, _ := filepath.Rel(out, f)
		names = append(names, rel)
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			t.Errorf("%s: %v (run `make mixin`)", rel, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the mixin's rendering: edit mixin/ and run `make mixin` (mixin/README.md)", rel)
		}
	}
	shipped, err := filepath.Glob(filepath.Join("..", "dashboards", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range shipped {
		rel := filepath.Join("dashboards", filepath.Base(f))
		if !slices.Contains(names, rel) {
			t.Errorf("%s is not rendered by the mixin: add its source to mixin/dashboards/", rel)
		}
	}
	if !slices.Contains(names, filepath.Join("alerts", "hccl_exporter.rules.yml")) {
		t.Error("the mixin renders no alerts/hccl_exporter.rules.yml")
	}
}

// rawMetric matches an exporter metric name in an expression (recorded
// series have colons and are not the exporter's).
var rawMetric = regexp.MustCompile(`(^|[^:a-z0-9_])((?:hccl|ascend)_[a-z0-9_]+)([^:a-z0-9_]|$)`)

// TestSecondConfiguration renders the mixin for another site and checks the
// configuration reached every rule and dashboard, the rules load in promtool
// and vmalert, and their promtool tests (testdata/) pass.
func TestSecondConfiguration(t *testing.T) {
	t.Parallel()
	out := render(t, secondConfig)
	rulesPath := filepath.Join(out, "alerts", "hccl_exporter.rules.yml")
	data, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Record      string            `yaml:"record"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalStrict(data, &rf); err != nil {
		t.Fatalf("rendered rules: %v", err)
	}
	selected := 0
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			name := r.Alert + r.Record
			for _, m := range rawMetric.FindAllStringSubmatchIndex(r.Expr, -1) {
				// Label names, not metrics: the job label, and any
				// name in quotes (label_replace and label_join arguments).
				if r.Expr[m[4]:m[5]] == "hccl_job" || m[4] > 0 && r.Expr[m[4]-1] == '"' {
					continue
				}
				rest := r.Expr[m[5]:]
				if !strings.HasPrefix(rest, `{job="npu-exporter"`) {
					t.Errorf("%s: %s is not selected by the configured selector: %s", name, r.Expr[m[4]:m[5]], r.Expr)
				}
				selected++
			}
			if regexp.MustCompile(`\bcluster\b`).MatchString(r.Expr) {
				t.Errorf("%s still groups by cluster: %s", name, r.Expr)
			}
			for k, v := range r.Annotations {
				if strings.Contains(v, "$labels.cluster") || strings.Contains(v, "{cluster=") {
					t.Errorf("%s annotation %s still uses the cluster label: %s", name, k, v)
				}
			}
		}
	}
	// npuExporterCompat: true puts npu-exporter's names into the rules
	// (the default rendering leaves them to their own file).
	compat := false
	for _, g := range rf.Groups {
		compat = compat || g.Name == "npu-exporter-compat" && len(g.Rules) > 20
	}
	if !compat {
		t.Error("npuExporterCompat: true renders no npu-exporter-compat group into the rules")
	}
	if selected < 10 {
		t.Errorf("only %d metric selectors found in the rendered rules; the check looks at nothing", selected)
	}

	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	vmalert := testtools.EnsureTool(t, "vmalert", "victoria-metrics")
	if b, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, b)
	}
	if b, err := exec.Command(vmalert, "-dryRun", "-rule="+rulesPath, "-loggerLevel=ERROR").CombinedOutput(); err != nil {
		t.Errorf("vmalert -dryRun: %v\n%s", err, b)
	}
	dir := t.TempDir()
	tests, err := os.ReadFile(filepath.Join("testdata", "second-config.test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"rules.yml": data, "second-config.test.yml": tests} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "test", "rules", "second-config.test.yml")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules (second configuration): %v\n%s", err, b)
	}

	// Dashboards: the cluster variable lists the configured label, the job
	// variable only the selected jobs of the chosen clusters.
	dashboards, err := filepath.Glob(filepath.Join(out, "dashboards", "*.json"))
	if err != nil || len(dashboards) == 0 {
		t.Fatalf("no rendered dashboards (%v)", err)
	}
	for _, f := range dashboards {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`label_values(hccl_exporter_build_info{job=\"npu-exporter\", training_job=~\"$cluster\"}, job)`)) {
			t.Errorf("%s: the job variable does not use the configured selector and cluster label", filepath.Base(f))
		}
		if !bytes.Contains(b, []byte(`label_values(hccl_exporter_build_info{job=\"npu-exporter\"}, training_job)`)) {
			t.Errorf("%s: the cluster variable does not list the configured cluster label", filepath.Base(f))
		}
	}
}

// TestConsistentVariablesMatchTheExporter: the variables the rules and
// dashboards name as the settings set are the ones the exporter hashes into
// the settings label (internal/hcclenv), or the alert's description and the
// dashboard's settings table would show other variables than those that
// made the sets differ.
func TestConsistentVariablesMatchTheExporter(t *testing.T) {
	b, err := os.ReadFile("config.libsonnet")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)consistentVariables:\s*\[(.*?)\]`).FindSubmatch(b)
	if m == nil {
		t.Fatal("config.libsonnet has no consistentVariables list")
	}
	var got []string
	for _, q := range regexp.MustCompile(`'([A-Z0-9_]+)'`).FindAllSubmatch(m[1], -1) {
		got = append(got, string(q[1]))
	}
	var want []string
	for _, c := range hcclenv.Consistent() {
		want = append(want, c.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("mixin consistentVariables %v, internal/hcclenv Consistent %v", got, want)
	}
	// The settings dashboard's table of sets uses the same list.
	dash, err := os.ReadFile(filepath.Join("dashboards", "hccl-settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(dash, []byte(`variable=~\"`+strings.Join(want, "|")+`\"`)) {
		t.Errorf("dashboards/hccl-settings.json does not query the settings set's variables %v", want)
	}
}

// TestFaultTableCurrent: lib/faultcodes.json, from which config.libsonnet
// derives the policy's code lists, is the fault-code table as
// internal/cann/logstate has it (`make mixin` regenerates it).
func TestFaultTableCurrent(t *testing.T) {
	want, err := logstate.FaultTableJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("lib", "faultcodes.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("mixin/lib/faultcodes.json differs from the fault-code table (internal/cann/logstate/codes.go): run `make mixin`")
	}
}
