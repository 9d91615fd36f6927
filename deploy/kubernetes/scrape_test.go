package kubernetes

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/yaml"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// The target as Kubernetes service discovery finds it: the exporter's own
// pod on node npu-node-1. prometheus-operator turns these into the target
// labels namespace, pod, container, service, job, endpoint.
var discovered = map[string]string{
	"__meta_kubernetes_namespace":                                   "hccl-exporter",
	"__meta_kubernetes_service_name":                                "hccl-exporter",
	"__meta_kubernetes_service_label_app_kubernetes_io_name":        "hccl-exporter",
	"__meta_kubernetes_pod_name":                                    "hccl-exporter-x7k2p",
	"__meta_kubernetes_pod_container_name":                          "hccl-exporter",
	"__meta_kubernetes_pod_node_name":                               "npu-node-1",
	"__meta_kubernetes_endpoint_port_name":                          "metrics",
	"__meta_kubernetes_endpoint_address_target_kind":                "Pod",
	"__meta_kubernetes_endpoint_address_target_name":                "hccl-exporter-x7k2p",
	"__meta_kubernetes_service_label_app_kubernetes_io_component":   "exporter",
	"__meta_kubernetes_service_labelpresent_app_kubernetes_io_name": "true",
}

var nonLabelChars = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// operatorScrapeConfig renders the scrape config prometheus-operator
// generates for endpoint 0 of sm (pkg/prometheus/promcfg.go,
// generateServiceMonitorConfig), limited to what decides the labels a
// series carries: honor_labels, the target labels set from service
// discovery, the jobLabel, and the endpoint's own relabelings. The target is
// given statically with the labels Kubernetes discovery would give it.
// forceNoHonor renders a second job over the same target with honor_labels
// false, to show what the setting changes.
func operatorScrapeConfig(t *testing.T, sm *monitoringv1.ServiceMonitor, target string, forceNoHonor bool) string {
	t.Helper()
	ep := sm.Spec.Endpoints[0]
	honor := ep.HonorLabels && !forceNoHonor
	type relabel struct {
		SourceLabels []string `json:"source_labels,omitempty"`
		Separator    string   `json:"separator,omitempty"`
		Regex        string   `json:"regex,omitempty"`
		TargetLabel  string   `json:"target_label,omitempty"`
		Replacement  *string  `json:"replacement,omitempty"`
		Action       string   `json:"action,omitempty"`
	}
	str := func(s string) *string { return &s }
	rcs := []relabel{
		{SourceLabels: []string{"__meta_kubernetes_endpoint_port_name"}, Regex: ep.Port, Action: "keep"},
		{SourceLabels: []string{"__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"},
			Separator: ";", Regex: "Pod;(.*)", Replacement: str("${1}"), TargetLabel: "pod"},
		{SourceLabels: []string{"__meta_kubernetes_namespace"}, TargetLabel: "namespace"},
		{SourceLabels: []string{"__meta_kubernetes_service_name"}, TargetLabel: "service"},
		{SourceLabels: []string{"__meta_kubernetes_pod_name"}, TargetLabel: "pod"},
		{SourceLabels: []string{"__meta_kubernetes_pod_container_name"}, TargetLabel: "container"},
		{SourceLabels: []string{"__meta_kubernetes_service_name"}, TargetLabel: "job", Replacement: str("${1}")},
	}
	if sm.Spec.JobLabel != "" {
		rcs = append(rcs, relabel{SourceLabels: []string{"__meta_kubernetes_service_label_" + nonLabelChars.ReplaceAllString(sm.Spec.JobLabel, "_")},
			TargetLabel: "job", Regex: "(.+)", Replacement: str("${1}")})
	}
	rcs = append(rcs, relabel{TargetLabel: "endpoint", Replacement: str(ep.Port)})
	for _, r := range ep.RelabelConfigs {
		rc := relabel{TargetLabel: r.TargetLabel, Regex: r.Regex, Action: strings.ToLower(r.Action)}
		for _, l := range r.SourceLabels {
			rc.SourceLabels = append(rc.SourceLabels, string(l))
		}
		if r.Replacement != nil {
			rc.Replacement = r.Replacement
		}
		rcs = append(rcs, rc)
	}
	jobName := fmt.Sprintf("serviceMonitor/%s/%s/0", sm.Namespace, sm.Name)
	if forceNoHonor {
		jobName += "/no-honor"
		rcs = append(rcs, relabel{TargetLabel: "job", Replacement: str("no-honor")})
	}
	cfg := map[string]any{
		"job_name":        jobName,
		"honor_labels":    honor,
		"metrics_path":    ep.Path,
		"static_configs":  []map[string]any{{"targets": []string{target}, "labels": discovered}},
		"relabel_configs": rcs,
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exposition is what the exporter serves for a chip held by pod
// train/job-a-worker-0 whose process's logs it cannot read, and a fault
// that pod's screen log printed.
const exposition = `# TYPE ascend_npu_pod_info gauge
ascend_npu_pod_info{npu="0",chip="0",namespace="train",pod="job-a-worker-0",container="main"} 1
# TYPE ascend_npu_processes gauge
ascend_npu_processes{npu="0",chip="0",cann_logs="found"} 0
ascend_npu_processes{npu="0",chip="0",cann_logs="missing"} 1
# TYPE hccl_fault_events_total counter
hccl_fault_events_total{code="EI0011",stage="link_setup",source="screen",namespace="train",pod="job-a-worker-0",container="main"} 1
`

// TestScrapeKeepsTrainingPodLabels renders the ServiceMonitor into the scrape
// config prometheus-operator makes of it, scrapes a target serving the
// exporter's pod-labelled series with a real Prometheus evaluating the
// shipped rules, and checks the labels an alert carries: the training pod's
// namespace and pod, the node as instance. Without honorLabels the same
// series name the exporter's pod and keep the training pod only as
// exported_*.
func TestScrapeKeepsTrainingPodLabels(t *testing.T) {
	if testing.Short() {
		// 6 s, 5 of them Prometheus's discovery sending its first targets.
		t.Skip("starts Prometheus")
	}
	m, _ := loadAll(t)
	if len(m.serviceMonitors) != 1 {
		t.Fatal("no ServiceMonitor")
	}
	sm := m.serviceMonitors[0]

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(exposition))
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	rules, err := filepath.Abs(filepath.Join("..", "..", "alerts", "hccl_exporter.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	honored := operatorScrapeConfig(t, sm, ln.Addr().String(), false)
	plain := operatorScrapeConfig(t, sm, ln.Addr().String(), true)
	indent := func(s string) string { return "  - " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ") + "\n" }
	config := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n" +
		"rule_files:\n  - " + strconv.Quote(rules) + "\nscrape_configs:\n" + indent(honored) + indent(plain)
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{Config: config})

	// The alert's own expression (its for: aside), from the shipped rules.
	expr := alertExpr(t, rules, "HCCLLogsNotVisible")
	// Until the recording rule hccl:npu_pod:unique has been evaluated, the
	// alert's fallback branch answers with the target's own labels; wait
	// for the join (or time out and show what the alert would carry).
	var alert []testtools.Sample
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := prom.Query(expr)
		if err != nil {
			t.Fatal(err)
		}
		alert = alert[:0]
		for _, x := range s {
			if x.Metric["job"] == "hccl-exporter" {
				alert = append(alert, x)
			}
		}
		if (len(alert) == 1 && alert[0].Metric["pod"] == "job-a-worker-0") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(alert) != 1 {
		t.Fatalf("HCCLLogsNotVisible's expression gives %v", alert)
	}
	want := map[string]string{"namespace": "train", "pod": "job-a-worker-0", "instance": "npu-node-1", "node": "npu-node-1",
		"npu": "0", "chip": "0", "job": "hccl-exporter"}
	for k, v := range want {
		if alert[0].Metric[k] != v {
			t.Errorf("HCCLLogsNotVisible would carry %s=%q, want %q (labels %v)", k, alert[0].Metric[k], v, alert[0].Metric)
		}
	}
	// docs/runbooks.md tells what to put for NODE: the instance an alert
	// really carries (0.4.0 said node-1:9842, a static target's).
	if ex := runbookInstanceExample(t); ex != alert[0].Metric["instance"] {
		t.Errorf("docs/runbooks.md's instance example %q; the shipped ServiceMonitor gives alerts instance=%q", ex, alert[0].Metric["instance"])
	}
	fault := prom.WaitQuery(t, `hccl_fault_events_total{job="hccl-exporter"}`, 10*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 })
	for k, v := range map[string]string{"namespace": "train", "pod": "job-a-worker-0", "container": "main"} {
		if fault[0].Metric[k] != v {
			t.Errorf("fault series %s=%q, want %q (labels %v)", k, fault[0].Metric[k], v, fault[0].Metric)
		}
	}
	if _, ok := fault[0].Metric["exported_namespace"]; ok {
		t.Errorf("fault series renamed the training pod's labels: %v", fault[0].Metric)
	}

	// What honorLabels prevents: the exporter's pod wins, the training pod
	// is only exported_*.
	other := prom.WaitQuery(t, `hccl_fault_events_total{job="no-honor"}`, 10*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 })
	if other[0].Metric["pod"] != "hccl-exporter-x7k2p" || other[0].Metric["exported_pod"] != "job-a-worker-0" {
		t.Errorf("without honor_labels the labels are %v: the test no longer shows what honorLabels changes", other[0].Metric)
	}
}

// alertExpr returns the expression of the first alert named name in the
// rules file.
func alertExpr(t *testing.T, rulesFile, name string) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r.Expr
			}
		}
	}
	t.Fatalf("no alert %s in %s", name, rulesFile)
	return ""
}
