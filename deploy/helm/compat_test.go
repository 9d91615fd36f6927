package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"go.yaml.in/yaml/v2"
)

// TestNPUExporterCompatRule: prometheusRule.npuExporterCompat renders a
// second PrometheusRule with exactly the records of
// alerts/npu_exporter_compat.rules.yml; off (the default), or with the
// rules off, it renders none.
func TestNPUExporterCompatRule(t *testing.T) {
	compat := func(set ...string) []*monitoringv1.PrometheusRule {
		var out []*monitoringv1.PrometheusRule
		for _, d := range render(t, set...) {
			if pr, ok := d.Obj.(*monitoringv1.PrometheusRule); ok && strings.HasSuffix(pr.Name, "-npu-exporter-compat") {
				out = append(out, pr)
			}
		}
		return out
	}
	if got := compat(); len(got) != 0 {
		t.Errorf("default values render %d npu-exporter compatibility rules, want none", len(got))
	}
	if got := compat("--set", "prometheusRule.enabled=false,prometheusRule.npuExporterCompat=true"); len(got) != 0 {
		t.Errorf("prometheusRule.enabled=false renders the compatibility rules, which read its recordings")
	}
	got := compat("--set", "prometheusRule.npuExporterCompat=true")
	if len(got) != 1 {
		t.Fatalf("prometheusRule.npuExporterCompat=true renders %d compatibility PrometheusRules, want 1", len(got))
	}
	var records []string
	for _, g := range got[0].Spec.Groups {
		for _, r := range g.Rules {
			records = append(records, r.Record)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "alerts", "npu_exporter_compat.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Record string }
		}
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			want = append(want, r.Record)
		}
	}
	if len(want) < 20 || !slices.Equal(records, want) {
		t.Errorf("the chart records %v, alerts/npu_exporter_compat.rules.yml %v", records, want)
	}
}
