package helm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// kpsValues are the values README.md's five steps give; TestREADMEValues
// checks the README quotes this file.
const kpsValues = "testdata/kube-prometheus-stack-values.yaml"

// kubePrometheusStack is how kube-prometheus-stack selects, with its
// chart's defaults: its Prometheus picks ServiceMonitors and PrometheusRules
// labelled release=<its release> in every namespace, and its Grafana
// sidecar loads ConfigMaps labelled grafana_dashboard=1.
var kubePrometheusStack = struct {
	serviceMonitors, rules, dashboards labels.Selector
}{
	serviceMonitors: labels.SelectorFromSet(labels.Set{"release": "kube-prometheus-stack"}),
	rules:           labels.SelectorFromSet(labels.Set{"release": "kube-prometheus-stack"}),
	dashboards:      labels.SelectorFromSet(labels.Set{"grafana_dashboard": "1"}),
}

// TestKubePrometheusStack renders the chart with the README's values and
// selects its objects as the Prometheus Operator and the Grafana sidecar of
// kube-prometheus-stack do: the ServiceMonitor selects the exporter's
// Service and port, the PrometheusRule carries every alert with the
// runbook base of the values, every dashboard is a labelled ConfigMap, the
// DaemonSet is not privileged and creates no input path on a node, and the
// NetworkPolicy admits Prometheus only.
func TestKubePrometheusStack(t *testing.T) {
	objs := render(t, "--values", kpsValues)
	var (
		sms        []*monitoringv1.ServiceMonitor
		rules      []*monitoringv1.PrometheusRule
		dashboards []*corev1.ConfigMap
		svc        *corev1.Service
		ds         *appsv1.DaemonSet
		np         *networkingv1.NetworkPolicy
	)
	for _, d := range objs {
		switch o := d.Obj.(type) {
		case *monitoringv1.ServiceMonitor:
			if kubePrometheusStack.serviceMonitors.Matches(labels.Set(o.Labels)) {
				sms = append(sms, o)
			}
		case *monitoringv1.PrometheusRule:
			if kubePrometheusStack.rules.Matches(labels.Set(o.Labels)) {
				rules = append(rules, o)
			}
		case *corev1.ConfigMap:
			if kubePrometheusStack.dashboards.Matches(labels.Set(o.Labels)) {
				dashboards = append(dashboards, o)
			}
		case *corev1.Service:
			svc = o
		case *appsv1.DaemonSet:
			ds = o
		case *networkingv1.NetworkPolicy:
			np = o
		}
	}
	if len(sms) != 1 || svc == nil {
		t.Fatalf("kube-prometheus-stack selects %d ServiceMonitors (want 1); Service rendered: %v", len(sms), svc != nil)
	}
	sel, err := metav1.LabelSelectorAsSelector(&sms[0].Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(svc.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service %v", sms[0].Spec.Selector, svc.Labels)
	}
	if sms[0].Spec.Endpoints[0].Port != svc.Spec.Ports[0].Name {
		t.Errorf("endpoint port %q, Service port %q", sms[0].Spec.Endpoints[0].Port, svc.Spec.Ports[0].Name)
	}
	if len(rules) != 1 {
		t.Fatalf("kube-prometheus-stack selects %d PrometheusRules, want 1", len(rules))
	}
	alerts := 0
	for _, g := range rules[0].Spec.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr.String(), "@@") {
				t.Errorf("%s%s: placeholder left in %s", r.Alert, r.Record, r.Expr.String())
			}
			if r.Alert == "" {
				continue
			}
			alerts++
			if u := r.Annotations["runbook_url"]; !strings.HasPrefix(u, "https://wiki.example.com/hccl-exporter/runbooks.md#") {
				t.Errorf("%s runbook_url %q: not the values' base", r.Alert, u)
			}
		}
	}
	if alerts < 20 {
		t.Errorf("only %d alerts in the PrometheusRule", alerts)
	}
	files, _ := filepath.Glob(filepath.Join(chartDir, "files", "dashboards", "*.json"))
	if len(dashboards) == 0 || len(dashboards) != len(files) {
		t.Errorf("%d dashboard ConfigMaps for %d dashboards", len(dashboards), len(files))
	}
	for _, cm := range dashboards {
		for name, data := range cm.Data {
			if !strings.HasSuffix(name, ".json") || !strings.Contains(data, `"panels"`) {
				t.Errorf("ConfigMap %s key %s is not a dashboard", cm.Name, name)
			}
		}
	}
	checkLeastPrivilege(t, ds)
	if np == nil || len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) == 0 ||
		np.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "prometheus" {
		t.Errorf("NetworkPolicy does not admit only Prometheus: %+v", np)
	}
}

// TestREADMEValues: README's kube-prometheus-stack steps quote the values
// file this test renders, line for line (indented as a list item).
func TestREADMEValues(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(kpsValues)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(values), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !regexp.MustCompile(`(?m)^(?:   )?` + regexp.QuoteMeta(l) + `$`).Match(readme) {
			t.Errorf("README.md's values lack the line %q of %s", l, kpsValues)
		}
	}
}

// checkLeastPrivilege: not privileged, no privilege escalation, only the
// capabilities procfs discovery needs, and no input host path created.
func checkLeastPrivilege(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	c := ds.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged {
		t.Error("the DaemonSet is privileged by default")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 2 {
		t.Errorf("securityContext %+v", sc)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if hp := v.HostPath; hp != nil && hp.Type != nil && *hp.Type == corev1.HostPathDirectoryOrCreate &&
			v.Name != "state" && v.Name != "hccn-tool-log" {
			t.Errorf("input host path %s (%s) is DirectoryOrCreate", hp.Path, v.Name)
		}
	}
}

// TestPrivilegedVariant: npuAccess.mode=privileged is the only way to
// privileged, and it drops the Ascend runtime's variables.
func TestPrivilegedVariant(t *testing.T) {
	ds := daemonSet(t, render(t, "--set", "npuAccess.mode=privileged"))
	c := ds.Spec.Template.Spec.Containers[0]
	if c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged || c.SecurityContext.Capabilities != nil {
		t.Errorf("securityContext %+v", c.SecurityContext)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "ASCEND_") {
			t.Errorf("privileged mode still sets %s", e.Name)
		}
	}
	if _, err := helm(t, "template", release, chartDir, "--set", "npuAccess.mode=host"); err == nil || !strings.Contains(err.Error(), "ascendRuntime") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// TestAlertOverrides: thresholds reach the expressions and the text, an
// alert can be dropped or get another for: and severity, and unknown names
// fail.
func TestAlertOverrides(t *testing.T) {
	objs := render(t, "--set", "prometheusRule.thresholds.qpsPerConnectionLimit=16",
		"--set", "prometheusRule.alerts.RoCELinkFlapping.enabled=false",
		"--set", "prometheusRule.alerts.HCCLExporterCollectorFailing.for=30m",
		"--set", "prometheusRule.alerts.HCCLExporterCollectorFailing.labels.severity=info")
	found := map[string]monitoringv1.Rule{}
	for _, d := range objs {
		if pr, ok := d.Obj.(*monitoringv1.PrometheusRule); ok {
			for _, g := range pr.Spec.Groups {
				for _, r := range g.Rules {
					found[r.Alert] = r
				}
			}
		}
	}
	if _, ok := found["RoCELinkFlapping"]; ok {
		t.Error("RoCELinkFlapping still rendered")
	}
	if r := found["HCCLExporterCollectorFailing"]; r.For == nil || *r.For != "30m" || r.Labels["severity"] != "info" {
		t.Errorf("HCCLExporterCollectorFailing: for %v labels %v", r.For, r.Labels)
	}
	q := found["HCCLQPsPerConnectionAboveRecommended"]
	if !strings.Contains(q.Expr.String(), "> 16") || strings.Contains(q.Expr.String(), "> 8") || !strings.Contains(q.Annotations["summary"], "16") {
		t.Errorf("threshold not applied: %s / %s", q.Expr.String(), q.Annotations["summary"])
	}
	for _, bad := range []string{"prometheusRule.alerts.NoSuchAlert.enabled=false", "prometheusRule.thresholds.noSuch=1"} {
		if _, err := helm(t, "template", release, chartDir, "--set", bad); err == nil || !strings.Contains(err.Error(), "no such") {
			t.Errorf("--set %s: %v", bad, err)
		}
	}
}

// TestChartFilesUpToDate: files/ holds what `make mixin` renders from the
// mixin now, as real files (no link out of the chart).
func TestChartFilesUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the pinned jsonnet: skipped under -short")
	}
	out := t.TempDir()
	// jsonnet -m writes files but creates no directories: make mixin
	// renders into the repository, where they exist.
	if err := os.MkdirAll(filepath.Join(out, "deploy", "helm", "hccl-exporter", "files", "dashboards"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "github.com/google/go-jsonnet/cmd/jsonnet@v0.22.0", "-S", "-m", out,
		filepath.Join("internal", "chartfiles.jsonnet"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		testtools.Unavailable(t, "jsonnet: %v\n%s", err, stderr.String())
	}
	base := filepath.Join(out, "deploy", "helm")
	var rendered []string
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rendered = append(rendered, p)
		}
		return err
	})
	if len(rendered) < 2 {
		t.Fatalf("jsonnet rendered %v", rendered)
	}
	for _, f := range rendered {
		rel, _ := filepath.Rel(base, f)
		want, _ := os.ReadFile(f)
		fi, err := os.Lstat(rel)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s: missing or a link (%v): run `make mixin`", rel, err)
			continue
		}
		if got, _ := os.ReadFile(rel); !bytes.Equal(got, want) {
			t.Errorf("%s differs from the mixin's rendering: run `make mixin`", rel)
		}
	}
}

// TestNotes: the release notes say how to check the targets are up, with
// the pool name the Prometheus Operator gives the ServiceMonitor, and warn
// when the ServiceMonitor carries no label a Prometheus could select.
func TestNotes(t *testing.T) {
	notes := func(args ...string) string {
		out, err := helm(t, append([]string{"install", release, chartDir, "--namespace", namespace, "--dry-run=client"}, args...)...)
		if err != nil {
			t.Fatalf("helm install --dry-run: %v", err)
		}
		_, n, ok := strings.Cut(string(out), "\nNOTES:\n")
		if !ok {
			t.Fatalf("no NOTES in:\n%s", out)
		}
		return n
	}
	n := notes("--values", kpsValues)
	for _, want := range []string{
		"serviceMonitor/" + namespace + "/" + release + "/0",
		`up{job="hccl-exporter"} == 1`,
		"hccl_exporter_collector_success",
		"app.kubernetes.io/component=dashboard",
	} {
		if !strings.Contains(n, want) {
			t.Errorf("NOTES lack %q:\n%s", want, n)
		}
	}
	if strings.Contains(n, "WARNING") {
		t.Errorf("NOTES warn with the README's values:\n%s", n)
	}
	if n := notes(); !strings.Contains(n, "WARNING: serviceMonitor.labels is empty") {
		t.Errorf("NOTES do not warn about a ServiceMonitor no kube-prometheus-stack selects:\n%s", n)
	}
}
