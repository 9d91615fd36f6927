package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/strictyaml"
	"github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// The repository files the committed manifest is generated from and into,
// relative to this package, and the name the generator prints in its header
// when run by `make deploy-manifests` from the repository root.
const (
	repoRules     = "../../../../alerts/hccl_exporter.rules.yml"
	repoManifest  = "../../prometheusrule.yaml"
	rulesInHeader = "alerts/hccl_exporter.rules.yml"
)

// TestCommittedPrometheusRuleUpToDate fails when deploy/kubernetes/
// prometheusrule.yaml no longer matches the rules file it is generated from.
func TestCommittedPrometheusRuleUpToDate(t *testing.T) {
	rules, err := readRules(repoRules)
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(rules, rulesInHeader)
	if err != nil {
		t.Fatalf("the rules file does not convert: %v", err)
	}
	got, err := os.ReadFile(repoManifest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("deploy/kubernetes/prometheusrule.yaml drifted from %s: run `make deploy-manifests` and commit the result.\n%s",
			rulesInHeader, firstDifference(got, want))
	}
}

func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "first difference at line " + strconv.Itoa(i+1) + ":\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return ""
}

func TestRenderGolden(t *testing.T) {
	rules, err := os.ReadFile("testdata/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(rules, "testdata/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, filepath.Join("testdata", "prometheusrule.golden.yaml"), got)
}

// TestRenderKeepsEveryRule decodes the generated object strictly, as the
// manifest tests do, and checks that no group, rule, label or annotation was
// lost or changed on the way.
func TestRenderKeepsEveryRule(t *testing.T) {
	rules, err := os.ReadFile("testdata/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var in rulesFile
	if err := strictyaml.Unmarshal(rules, &in); err != nil {
		t.Fatal(err)
	}
	out, err := render(rules, "testdata/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var pr monitoringv1.PrometheusRule
	if err := strictyaml.Unmarshal(out, &pr); err != nil {
		t.Fatalf("generated PrometheusRule does not decode strictly: %v", err)
	}
	if pr.Kind != "PrometheusRule" || pr.APIVersion != "monitoring.coreos.com/v1" {
		t.Errorf("kind/apiVersion = %s/%s", pr.Kind, pr.APIVersion)
	}
	if pr.Name != ruleName || pr.Namespace != ruleNamespace {
		t.Errorf("name/namespace = %s/%s", pr.Name, pr.Namespace)
	}
	if !reflect.DeepEqual(pr.Spec.Groups, in.Groups) {
		t.Errorf("groups changed:\n got %+v\nwant %+v", pr.Spec.Groups, in.Groups)
	}
	if n := len(pr.Spec.Groups); n != 2 || len(pr.Spec.Groups[0].Rules) != 1 || len(pr.Spec.Groups[1].Rules) != 2 {
		t.Errorf("unexpected shape: %d groups", n)
	}
}

func TestRenderRejects(t *testing.T) {
	for _, tc := range []struct {
		name, rules, wantErr string
	}{
		{"unknown rule field", "groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up\n    anotations: {}\n", "unknown field"},
		{"unknown group field", "groups:\n- name: g\n  evaluation: 1m\n  rules: []\n", "unknown field"},
		{"unknown top-level field", "grups: []\n", "unknown field"},
		{"group without name", "groups:\n- rules:\n  - alert: A\n    expr: up\n", "has no name"},
		{"duplicate group", "groups:\n- name: g\n- name: g\n", "appears twice"},
		{"alert and record", "groups:\n- name: g\n  rules:\n  - alert: A\n    record: r\n    expr: up\n", "exactly one of alert and record"},
		{"neither alert nor record", "groups:\n- name: g\n  rules:\n  - expr: up\n", "exactly one of alert and record"},
		{"no expr", "groups:\n- name: g\n  rules:\n  - alert: A\n", "has no expr"},
		{"not yaml", "groups: [\n", "decode rules file"},
		{"duplicate key", "groups: []\ngroups: []\n", "decode rules file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render([]byte(tc.rules), "x.yml")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("render error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadRulesMissingFile(t *testing.T) {
	data, err := readRules(filepath.Join(t.TempDir(), "absent.yml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(data, "absent.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "spec: {}") {
		t.Errorf("missing rules file should give a PrometheusRule without groups:\n%s", out)
	}
}
