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
	"HCCLEnvInconsistentAcrossNodes",
	"NPUHealthDegraded",
	"RoCELinkDown",
	"RoCELinkFlapping",
	"RoCENetworkUnhealthy",
	"CANNLogTimezoneMismatch",
	"HCCLExporterCollectorFailing",
	"HCCLQPResourceExhausted",
	"HCCLTransportInitFailed",
	"HCCLRoCERetransmissionTimeout",
	"HCCLExecutionTimeout",
	"HCCLTLSInconsistent",
	"NPUMemoryHeldWithoutProcess",
}

// crossNodeAlerts compare nodes: they carry the cluster label, no instance.
var crossNodeAlerts = []string{"HCCLEnvInconsistentAcrossNodes", "HCCLTLSInconsistent"}

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
	for severity, receivers := range map[string]string{
		"critical": "pager,chat",
		"warning":  "chat",
		"info":     "chat",
	} {
		run(t, amtool, "config", "routes", "test", "--config.file=alertmanager.example.yml",
			"--verify.receivers="+receivers, "severity="+severity, "alertname=X", "instance=node-1:9842")
	}
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
		if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
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
		if !strings.Contains(r.Annotations["description"], "$labels.instance") && !slices.Contains(crossNodeAlerts, r.Alert) {
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
					if ea.ExpLabels["instance"] == "" && !slices.Contains(crossNodeAlerts, at.Alertname) {
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
// Alertmanager (receivers pointed at a local webhook) and checks that a
// critical alert inhibits the warnings of its node only, and that pages and
// warnings reach their receivers.
func TestAlertmanagerExampleInhibits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Alertmanager")
	}
	hook := testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, exampleWithWebhook(t, hook.URL))

	now := time.Now().UTC()
	alert := func(name, severity, instance string) map[string]any {
		return map[string]any{
			"labels":   map[string]string{"alertname": name, "severity": severity, "instance": instance, "cluster": "llm"},
			"startsAt": now.Format(time.RFC3339),
		}
	}
	body, _ := json.Marshal([]map[string]any{
		alert("HCCLQPMemoryAllocationFailed", "critical", "node-1:9842"),
		alert("HCCLLinkSetupTimeout", "warning", "node-1:9842"),
		alert("HCCLLinkSetupTimeout", "warning", "node-2:9842"),
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
		{"pager", "HCCLQPMemoryAllocationFailed", "node-1:9842"},
		{"chat", "HCCLQPMemoryAllocationFailed", "node-1:9842"},
		{"chat", "HCCLLinkSetupTimeout", "node-2:9842"},
	} {
		hook.WaitForAlert(t, 30*time.Second, func(a testtools.WebhookAlert) bool {
			return a.Receiver == want.receiver && a.Labels["alertname"] == want.alert && a.Labels["instance"] == want.instance
		})
	}

	var got map[string][]string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = inhibitedBy(t, am.URL)
		if len(got["HCCLLinkSetupTimeout/node-1:9842"]) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got["HCCLLinkSetupTimeout/node-1:9842"]) == 0 {
		t.Errorf("warning on node-1 not inhibited by its critical alert: %v", got)
	}
	if len(got["HCCLLinkSetupTimeout/node-2:9842"]) != 0 {
		t.Errorf("warning on node-2 inhibited by another node's critical alert: %v", got)
	}
	for _, m := range hook.Messages() {
		for _, a := range m.Alerts {
			if a.Labels["alertname"] == "HCCLLinkSetupTimeout" && a.Labels["instance"] == "node-1:9842" {
				t.Errorf("inhibited warning was delivered to %s", m.Receiver)
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
