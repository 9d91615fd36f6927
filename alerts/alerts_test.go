package alerts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const rulesFile = "hccl_exporter.rules.yml"

// contractAlerts are the alert names DESIGN.md promises; users' routes and
// silences depend on them.
var contractAlerts = []string{
	"HCCLQPMemoryAllocationFailed",
	"HCCLLinkSetupTimeout",
	"HCCLPortBindFailed",
	"HCCLParameterInconsistent",
	"HCCLBufferAllocationFailed",
	"NPULinkSetupHeadroomLow",
	"HCCLQPsPerConnectionAboveRecommended",
	"HCCLSettingsInconsistentInCommunicator",
	"NPUHealthDegraded",
	"RoCELinkDown",
	"RoCELinkFlapping",
	"RoCENetworkUnhealthy",
	"CANNLogTimezoneMismatch",
	"HCCLLogsNotVisible",
	"HCCLExporterCollectorFailing",
	"HCCLJobFailed",
	"HCCLJobFailuresAcrossCluster",
	"HCCLExporterDown",
	"HCCLExporterLabelValuesDropped",
	"HCCLExporterStateFileWriteErrors",
	"HCCLQPResourceExhausted",
	"HCCLTransportInitFailed",
	"HCCLRoCERetransmissionTimeout",
	"HCCLExecutionTimeout",
	"HCCLTLSInconsistent",
	"NPUMemoryHeldWithoutProcess",
	"HCCLExporterDownAcrossFleet",
}

// clusterAlerts describe a cluster or a job, not one node.
var clusterAlerts = []string{"HCCLSettingsInconsistentInCommunicator", "HCCLJobFailed", "HCCLJobFailuresAcrossCluster", "HCCLTLSInconsistent", "HCCLExporterDownAcrossFleet"}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type testFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func loadRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(Rules, &f); err != nil {
		t.Fatalf("parse %s: %v", rulesFile, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

func testFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("tests", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no promtool test files in tests/: %v", err)
	}
	return files
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	out := run(t, promtool, "check", "rules", rulesFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules:\n%s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	run(t, promtool, append([]string{"test", "rules"}, testFiles(t)...)...)
}

func TestAmtoolCheckConfig(t *testing.T) {
	amtool := testtools.EnsureTool(t, "amtool", "prometheus-alertmanager")
	run(t, amtool, "check-config", "alertmanager.example.yml")
	// The policy by label (docs/runbooks.md): only the infrastructure's
	// critical alerts page; the job owner's never do, whatever severity.
	for _, c := range []struct{ labels, receivers string }{
		{"severity=critical audience=infra", "pager,chat"},
		{"severity=warning audience=infra", "chat"},
		{"severity=info audience=infra", "chat"},
		{"severity=critical audience=job-owner", "job-owner"},
		{"severity=warning audience=job-owner namespace=train", "job-owner"},
		{"severity=none audience=none", "blackhole"},
		{"severity=critical", "pager,chat"}, // an alert without audience is triaged by infra
	} {
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=alertmanager.example.yml",
			"--verify.receivers=" + c.receivers, "alertname=X", "instance=node-1:9842"}, strings.Fields(c.labels)...)...)
	}
	// A job's QPS warnings (one per node) have their own grouping route,
	// still to chat (internal/e2e TestJobSettingsWarningsNotifyOnce shows
	// they arrive as one notification).
	run(t, amtool, "config", "routes", "test", "--config.file=alertmanager.example.yml",
		"--verify.receivers=chat", "severity=warning", "alertname=HCCLQPsPerConnectionAboveRecommended", "instance=node-1:9842", "settings=5e771a6d")
}

// TestAlertContract checks the names, labels and annotations users rely on.
func TestAlertContract(t *testing.T) {
	runbook, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatalf("read runbooks: %v", err)
	}
	anchors := markdownAnchors(string(runbook))

	seen := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			if !regexp.MustCompile(`^[a-z_]+:[a-z_0-9]+:[a-z_0-9]+$`).MatchString(r.Record) {
				t.Errorf("recording rule %q does not follow level:metric:operations", r.Record)
			}
			continue
		}
		seen[r.Alert] = true
		if !slices.Contains(contractAlerts, r.Alert) {
			t.Errorf("alert %s is not in the design's contract", r.Alert)
		}
		switch a, s := r.Labels["audience"], r.Labels["severity"]; {
		case a == "none" && s == "none" && r.Labels["inhibits"] != "":
		case (a == "job-owner" || a == "infra") && (s == "critical" || s == "warning" || s == "info"):
		default:
			t.Errorf("%s: audience %q severity %q, want job-owner or infra with critical, warning or info (or an inhibitor: none, none)", r.Alert, a, s)
		}
		for _, a := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: annotation %s missing", r.Alert, a)
			}
		}
		anchor := strings.ToLower(r.Alert)
		if want := RunbookBase + "#" + anchor; r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
		if !anchors[anchor] {
			t.Errorf("%s: docs/runbooks.md has no section with anchor #%s", r.Alert, anchor)
		}
		if !strings.Contains(r.Annotations["description"], "$labels.instance") && !slices.Contains(clusterAlerts, r.Alert) {
			t.Errorf("%s: description does not name the node ($labels.instance)", r.Alert)
		}
	}
	for _, name := range contractAlerts {
		if !seen[name] {
			t.Errorf("contract alert %s is missing from %s", name, rulesFile)
		}
	}
}

// TestEveryAlertTestedBothSides requires, for every alerting rule (name and
// severity), a promtool test group that expects it absent at one time and
// firing at a later one, with every label and annotation spelled out.
func TestEveryAlertTestedBothSides(t *testing.T) {
	type key struct{ alert, severity string }
	rules := map[key]rule{}
	for _, r := range loadRules(t) {
		if r.Alert != "" {
			rules[key{r.Alert, r.Labels["severity"]}] = r
		}
	}
	covered := map[key]bool{}
	for _, file := range testFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var tf testFile
		if err := yaml.UnmarshalStrict(data, &tf); err != nil {
			// promql_expr_test and input_series are not modelled here.
			if err := yaml.Unmarshal(data, &tf); err != nil {
				t.Fatalf("parse %s: %v", file, err)
			}
		}
		if !slices.Contains(tf.RuleFiles, "../"+rulesFile) {
			t.Errorf("%s does not load ../%s", file, rulesFile)
		}
		for _, tg := range tf.Tests {
			// Earliest time each alert is expected absent in this group.
			absent := map[string]time.Duration{}
			for _, at := range tg.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					d := mustDuration(t, at.EvalTime)
					if old, ok := absent[at.Alertname]; !ok || d < old {
						absent[at.Alertname] = d
					}
				}
			}
			for _, at := range tg.AlertRuleTest {
				for _, ea := range at.ExpAlerts {
					k := key{at.Alertname, ea.ExpLabels["severity"]}
					r, ok := rules[k]
					if !ok {
						t.Errorf("%s %q: expects %v, which no rule defines", file, tg.Name, k)
						continue
					}
					for a := range r.Annotations {
						if ea.ExpAnnotations[a] == "" {
							t.Errorf("%s %q: %s at %s does not spell out annotation %s", file, tg.Name, at.Alertname, at.EvalTime, a)
						}
					}
					if ea.ExpLabels["instance"] == "" && !slices.Contains(clusterAlerts, at.Alertname) {
						t.Errorf("%s %q: %s at %s expects no instance label", file, tg.Name, at.Alertname, at.EvalTime)
					}
					if d, ok := absent[at.Alertname]; ok && d < mustDuration(t, at.EvalTime) {
						covered[k] = true
					}
				}
			}
		}
	}
	for k := range rules {
		if !covered[k] {
			t.Errorf("alert %s (severity %s) has no promtool test that expects it absent and later firing", k.alert, k.severity)
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("eval_time %q: %v", s, err)
	}
	return d
}

// markdownAnchors returns the GitHub anchors of the headings in md.
func markdownAnchors(md string) map[string]bool {
	anchors := map[string]bool{}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		anchors[b.String()] = true
	}
	return anchors
}

// TestAlertmanagerExampleInhibits runs the example configuration in a real
// Alertmanager (receivers pointed at a local webhook) and checks the policy:
// a failed job's inhibitor holds back the waiting codes of that job (same
// cluster and namespace) on every node and no other job's; the job owner's
// alerts reach the job-owner receiver and never the pager, even critical
// and even while the node has a critical infrastructure alert; that one
// pages and holds back the node's other infrastructure warnings.
func TestAlertmanagerExampleInhibits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	hook := testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, exampleWithWebhook(t, hook.URL))

	now := time.Now().UTC()
	alert := func(name string, labels ...string) map[string]any {
		l := map[string]string{"alertname": name, "cluster": "llm"}
		for i := 0; i+1 < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return map[string]any{"labels": l, "startsAt": now.Format(time.RFC3339)}
	}
	body, _ := json.Marshal([]map[string]any{
		alert("HCCLJobFailed", "severity", "none", "audience", "none", "inhibits", "job-consequences", "namespace", "train"),
		alert("HCCLQPMemoryAllocationFailed", "severity", "critical", "audience", "job-owner", "code", "EI0011", "instance", "node-3:9842", "namespace", "train"),
		// Peers of the failed job on other nodes: held back.
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-1:9842", "namespace", "train"),
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-2:9842", "namespace", "train"),
		// Another job's timeout is its own.
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-4:9842", "namespace", "other"),
		// A chip in Critical health on node-5: pages, holds back the node's
		// RoCE warning, not the job owner's headroom warning.
		alert("NPUHealthDegraded", "severity", "critical", "audience", "infra", "instance", "node-5:9842", "npu", "0", "chip", "0"),
		alert("RoCELinkDown", "severity", "warning", "audience", "infra", "instance", "node-5:9842", "npu", "0", "chip", "0"),
		alert("NPULinkSetupHeadroomLow", "severity", "warning", "audience", "job-owner", "instance", "node-5:9842", "npu", "1", "chip", "0", "namespace", "train"),
	})
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("post alerts: %s", resp.Status)
	}

	for _, want := range []struct{ receiver, alert, instance string }{
		{"job-owner", "HCCLQPMemoryAllocationFailed", "node-3:9842"},
		{"job-owner", "HCCLLinkSetupTimeout", "node-4:9842"},
		{"job-owner", "NPULinkSetupHeadroomLow", "node-5:9842"},
		{"pager", "NPUHealthDegraded", "node-5:9842"},
		{"chat", "NPUHealthDegraded", "node-5:9842"},
		{"blackhole", "HCCLJobFailed", ""},
	} {
		hook.WaitForAlert(t, 30*time.Second, func(a testtools.WebhookAlert) bool {
			return a.Receiver == want.receiver && a.Labels["alertname"] == want.alert && a.Labels["instance"] == want.instance
		})
	}

	held := []string{"HCCLLinkSetupTimeout/node-1:9842", "HCCLLinkSetupTimeout/node-2:9842", "RoCELinkDown/node-5:9842"}
	var got map[string][]string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = inhibitedBy(t, am.URL)
		all := true
		for _, k := range held {
			all = all && len(got[k]) > 0
		}
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, k := range held {
		if len(got[k]) == 0 {
			t.Errorf("%s not inhibited: %v", k, got)
		}
	}
	for _, k := range []string{"HCCLLinkSetupTimeout/node-4:9842", "NPULinkSetupHeadroomLow/node-5:9842", "HCCLQPMemoryAllocationFailed/node-3:9842"} {
		if len(got[k]) != 0 {
			t.Errorf("%s inhibited: %v", k, got)
		}
	}
	for _, m := range hook.Messages() {
		for _, a := range m.Alerts {
			k := a.Labels["alertname"] + "/" + a.Labels["instance"]
			if slices.Contains(held, k) {
				t.Errorf("inhibited %s was delivered to %s", k, m.Receiver)
			}
			if m.Receiver == "pager" && a.Labels["audience"] != "infra" {
				t.Errorf("the pager got %s (audience %q)", k, a.Labels["audience"])
			}
		}
	}
}

// exampleWithWebhook returns the example configuration with every receiver
// replaced by a webhook to url (notifications name their receiver), and
// short group timings.
func exampleWithWebhook(t *testing.T, url string) string {
	t.Helper()
	var cfg map[string]any
	if err := yaml.Unmarshal(AlertmanagerExample, &cfg); err != nil {
		t.Fatal(err)
	}
	var receivers []map[string]any
	for _, r := range cfg["receivers"].([]any) {
		name := r.(map[any]any)["name"].(string)
		receivers = append(receivers, map[string]any{
			"name":            name,
			"webhook_configs": []map[string]any{{"url": url}},
		})
	}
	cfg["receivers"] = receivers
	route := cfg["route"].(map[any]any)
	route["group_wait"], route["group_interval"] = "1s", "1s"
	for _, r := range route["routes"].([]any) {
		sub := r.(map[any]any)
		if _, ok := sub["group_wait"]; ok {
			sub["group_wait"] = "1s"
		}
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// inhibitedBy returns, per "alertname/instance", the fingerprints of the
// alerts inhibiting it.
func inhibitedBy(t *testing.T, amURL string) map[string][]string {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			InhibitedBy []string `json:"inhibitedBy"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, a := range alerts {
		k := fmt.Sprintf("%s/%s", a.Labels["alertname"], a.Labels["instance"])
		out[k] = append(out[k], a.Status.InhibitedBy...)
		sort.Strings(out[k])
	}
	return out
}
