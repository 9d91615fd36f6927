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
	"NPUQueuePairSlotsExhausted",
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
	"NPUChipMissing",
	"NPUHardwareFault",
	"NPUHBMUncorrectableECC",
	"NPUHBMPagesPendingIsolation",
	"NPUInterconnectErrors",
	"NPUHardwareProbeFailing",
	"NPUMemoryHeldWithoutProcess",
	"HCCLExporterDownAcrossFleet",
	// 0.5.0: npu-smi pids of another pid namespace (issue 40).
	"HCCLExporterNPUSMIForeignPIDNamespace",
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

// TestPromtoolTestRules runs promtool once per test file, in parallel
// subtests: promtool evaluates its files one after the other on one core
// (13 files, 9 s of CPU), and a failure is then named by its file. The
// largest files start first, so that the longest run is not the last.
func TestPromtoolTestRules(t *testing.T) {
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	files := testFiles(t)
	size := func(f string) int64 {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	sort.SliceStable(files, func(i, j int) bool { return size(files[i]) > size(files[j]) })
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			run(t, promtool, "test", "rules", f)
		})
	}
}

// routeCases are the policy of docs/runbooks.md by label, with the
// receivers each shipped configuration must reach (exactly: amtool's
// --verify.receivers compares the whole list): EI0011 pages the job's
// owner and never infrastructure; HCCLJobFailuresAcrossCluster pages
// infrastructure and never a job owner.
var routeCases = []struct{ labels, receivers string }{
	{"alertname=HCCLQPMemoryAllocationFailed severity=critical audience=job-owner code=EI0011 namespace=train hccl_job=commT", "job-owner-pager,job-owner-chat"},
	{"alertname=HCCLQPResourceExhausted severity=critical audience=job-owner code=EI0007 resource=qp hccl_job=node/node-1:9842", "job-owner-pager,job-owner-chat"},
	{"alertname=HCCLJobFailuresAcrossCluster severity=critical audience=infra cluster=c1", "infra-pager,infra-chat"},
	{"alertname=RoCELinkDown severity=critical audience=infra npu=0 chip=0", "infra-pager,infra-chat"},
	{"alertname=RoCELinkDown severity=warning audience=infra npu=0 chip=0", "infra-chat"},
	{"alertname=HCCLLinkSetupTimeout severity=warning audience=job-owner namespace=train", "job-owner-chat"},
	{"alertname=HCCLQPsPerConnectionAboveRecommended severity=info audience=job-owner settings=5e771a6d", "job-owner-chat"},
	{"alertname=X severity=info audience=infra", "infra-chat"},
	{"alertname=HCCLJobFailed severity=none audience=none hccl_job=commT", "blackhole"},
	// An alert without audience is infrastructure's to triage; it pages
	// no one, whatever its severity.
	{"alertname=X severity=critical", "infra-chat"},
}

func TestAmtoolCheckConfig(t *testing.T) {
	amtool := testtools.EnsureTool(t, "amtool", "prometheus-alertmanager")
	run(t, amtool, "check-config", "alertmanager.example.yml")
	for _, c := range routeCases {
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=alertmanager.example.yml",
			"--verify.receivers=" + c.receivers, "instance=node-1:9842"}, strings.Fields(c.labels)...)...)
	}
}

// TestAlertmanagerConfigRoutes renders alertmanagerconfig.example.yaml as
// the Prometheus Operator does (alertmanagerConfigMatcherStrategy None:
// receivers named <namespace>/<name>/<receiver>, the resource's route below
// the root) and runs the same route tests on it.
func TestAlertmanagerConfigRoutes(t *testing.T) {
	amtool := testtools.EnsureTool(t, "amtool", "prometheus-alertmanager")
	rendered, prefix := renderAlertmanagerConfig(t, AlertmanagerConfigExample)
	file := filepath.Join(t.TempDir(), "alertmanager.yml")
	if err := os.WriteFile(file, rendered, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, amtool, "check-config", file)
	for _, c := range routeCases {
		var want []string
		for _, r := range strings.Split(c.receivers, ",") {
			want = append(want, prefix+r)
		}
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=" + file,
			"--verify.receivers=" + strings.Join(want, ","), "instance=node-1:9842"}, strings.Fields(c.labels)...)...)
	}
}

type amcMatcher struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	MatchType string `yaml:"matchType"`
}

type amcRoute struct {
	Receiver       string       `yaml:"receiver"`
	GroupBy        []string     `yaml:"groupBy"`
	GroupWait      string       `yaml:"groupWait"`
	GroupInterval  string       `yaml:"groupInterval"`
	RepeatInterval string       `yaml:"repeatInterval"`
	Matchers       []amcMatcher `yaml:"matchers"`
	Continue       bool         `yaml:"continue"`
	Routes         []amcRoute   `yaml:"routes"`
}

type alertmanagerConfig struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Route        amcRoute `yaml:"route"`
		InhibitRules []struct {
			SourceMatch []amcMatcher `yaml:"sourceMatch"`
			TargetMatch []amcMatcher `yaml:"targetMatch"`
			Equal       []string     `yaml:"equal"`
		} `yaml:"inhibitRules"`
		Receivers []struct {
			Name             string `yaml:"name"`
			PagerdutyConfigs []struct {
				RoutingKey struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"routingKey"`
			} `yaml:"pagerdutyConfigs"`
			WebhookConfigs []struct {
				URL          string `yaml:"url"`
				SendResolved bool   `yaml:"sendResolved"`
			} `yaml:"webhookConfigs"`
		} `yaml:"receivers"`
	} `yaml:"spec"`
}

// renderAlertmanagerConfig returns the Alertmanager configuration the
// operator generates from an AlertmanagerConfig resource, and the prefix
// of its receivers' names.
func renderAlertmanagerConfig(t *testing.T, data []byte) ([]byte, string) {
	t.Helper()
	return renderAlertmanagerConfigStrategy(t, data, "None")
}

// renderAlertmanagerConfigStrategy renders as the operator does under the
// Alertmanager's alertmanagerConfigMatcherStrategy: with OnNamespace (its
// default) it adds namespace="<the resource's namespace>" to the matchers
// of the resource's top route and of each inhibit rule's source and
// target, as prometheus-operator's enforcer does.
func renderAlertmanagerConfigStrategy(t *testing.T, data []byte, strategy string) ([]byte, string) {
	t.Helper()
	var amc alertmanagerConfig
	if err := yaml.UnmarshalStrict(data, &amc); err != nil {
		t.Fatalf("parse alertmanagerconfig.example.yaml: %v", err)
	}
	if amc.Kind != "AlertmanagerConfig" || amc.APIVersion != "monitoring.coreos.com/v1alpha1" {
		t.Fatalf("kind %s %s", amc.APIVersion, amc.Kind)
	}
	prefix := amc.Metadata.Namespace + "/" + amc.Metadata.Name + "/"
	matchers := func(ms []amcMatcher) []string {
		var out []string
		for _, m := range ms {
			op := m.MatchType
			if op == "" {
				op = "="
			}
			out = append(out, fmt.Sprintf("%s%s%q", m.Name, op, m.Value))
		}
		return out
	}
	var route func(r amcRoute) map[string]any
	route = func(r amcRoute) map[string]any {
		out := map[string]any{}
		if r.Receiver != "" {
			out["receiver"] = prefix + r.Receiver
		}
		for k, v := range map[string]string{"group_wait": r.GroupWait, "group_interval": r.GroupInterval, "repeat_interval": r.RepeatInterval} {
			if v != "" {
				out[k] = v
			}
		}
		if len(r.GroupBy) > 0 {
			out["group_by"] = r.GroupBy
		}
		if len(r.Matchers) > 0 {
			out["matchers"] = matchers(r.Matchers)
		}
		if r.Continue {
			out["continue"] = true
		}
		var subs []map[string]any
		for _, s := range r.Routes {
			subs = append(subs, route(s))
		}
		if len(subs) > 0 {
			out["routes"] = subs
		}
		return out
	}
	nsMatcher := amcMatcher{Name: "namespace", Value: amc.Metadata.Namespace, MatchType: "="}
	switch strategy {
	case "None":
	case "OnNamespace":
		amc.Spec.Route.Matchers = append([]amcMatcher{nsMatcher}, amc.Spec.Route.Matchers...)
		for i := range amc.Spec.InhibitRules {
			ir := &amc.Spec.InhibitRules[i]
			ir.SourceMatch = append([]amcMatcher{nsMatcher}, ir.SourceMatch...)
			ir.TargetMatch = append([]amcMatcher{nsMatcher}, ir.TargetMatch...)
		}
	default:
		t.Fatalf("matcher strategy %q", strategy)
	}
	top := route(amc.Spec.Route)
	// The operator puts each resource's route below the root, with
	// continue so that other resources see the alert too.
	top["continue"] = true
	receivers := []map[string]any{{"name": "null"}}
	for _, r := range amc.Spec.Receivers {
		rc := map[string]any{"name": prefix + r.Name}
		var pd []map[string]any
		for range r.PagerdutyConfigs {
			pd = append(pd, map[string]any{"routing_key": "from-secret"})
		}
		if len(pd) > 0 {
			rc["pagerduty_configs"] = pd
		}
		var wh []map[string]any
		for _, w := range r.WebhookConfigs {
			wh = append(wh, map[string]any{"url": w.URL, "send_resolved": w.SendResolved})
		}
		if len(wh) > 0 {
			rc["webhook_configs"] = wh
		}
		receivers = append(receivers, rc)
	}
	var inhibit []map[string]any
	for _, ir := range amc.Spec.InhibitRules {
		inhibit = append(inhibit, map[string]any{
			"source_matchers": matchers(ir.SourceMatch),
			"target_matchers": matchers(ir.TargetMatch),
			"equal":           ir.Equal,
		})
	}
	out, err := yaml.Marshal(map[string]any{
		"route":         map[string]any{"receiver": "null", "routes": []map[string]any{top}},
		"receivers":     receivers,
		"inhibit_rules": inhibit,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, prefix
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
// cluster and hccl_job) on every node and no other job's, and nothing where
// the job is missing; EI0011 reaches the job owner's pager, never
// infrastructure's, even while the node has a critical infrastructure
// alert; that one pages infrastructure and holds back the node's other
// infrastructure warnings.
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
		alert("HCCLJobFailed", "severity", "none", "audience", "none", "inhibits", "job-consequences", "hccl_job", "commT"),
		alert("HCCLQPMemoryAllocationFailed", "severity", "critical", "audience", "job-owner", "code", "EI0011", "instance", "node-3:9842", "namespace", "train", "hccl_job", "commT"),
		// Peers of the failed job on other nodes: held back.
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-1:9842", "namespace", "train", "hccl_job", "commT"),
		alert("HCCLRoCERetransmissionTimeout", "severity", "warning", "audience", "infra", "code", "EI0013", "instance", "node-2:9842", "hccl_job", "commT"),
		// An either code (a peer failed, or the port): held back too.
		alert("HCCLTransportInitFailed", "severity", "warning", "audience", "job-owner", "code", "EI0009", "instance", "node-7:9842", "namespace", "train", "hccl_job", "commT"),
		// Another job's timeout, in the same namespace, is its own.
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-4:9842", "namespace", "train", "hccl_job", "commO"),
		// An inhibitor and a timeout both without a job (rules before
		// hccl_job): missing labels compare equal, so the rule must not
		// match them at all.
		alert("HCCLJobFailed", "severity", "none", "audience", "none", "inhibits", "job-consequences", "namespace", "x"),
		alert("HCCLLinkSetupTimeout", "severity", "warning", "audience", "job-owner", "code", "EI0006", "instance", "node-6:9842"),
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
		{"job-owner-pager", "HCCLQPMemoryAllocationFailed", "node-3:9842"},
		{"job-owner-chat", "HCCLQPMemoryAllocationFailed", "node-3:9842"},
		{"job-owner-chat", "HCCLLinkSetupTimeout", "node-4:9842"},
		{"job-owner-chat", "HCCLLinkSetupTimeout", "node-6:9842"},
		{"job-owner-chat", "NPULinkSetupHeadroomLow", "node-5:9842"},
		{"infra-pager", "NPUHealthDegraded", "node-5:9842"},
		{"infra-chat", "NPUHealthDegraded", "node-5:9842"},
		{"blackhole", "HCCLJobFailed", ""},
	} {
		hook.WaitForAlert(t, 30*time.Second, func(a testtools.WebhookAlert) bool {
			return a.Receiver == want.receiver && a.Labels["alertname"] == want.alert && a.Labels["instance"] == want.instance
		})
	}

	held := []string{"HCCLLinkSetupTimeout/node-1:9842", "HCCLRoCERetransmissionTimeout/node-2:9842", "HCCLTransportInitFailed/node-7:9842", "RoCELinkDown/node-5:9842"}
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
	for _, k := range []string{"HCCLLinkSetupTimeout/node-4:9842", "HCCLLinkSetupTimeout/node-6:9842", "NPULinkSetupHeadroomLow/node-5:9842", "HCCLQPMemoryAllocationFailed/node-3:9842"} {
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
			if m.Receiver == "infra-pager" && a.Labels["audience"] != "infra" {
				t.Errorf("infrastructure's pager got %s (audience %q)", k, a.Labels["audience"])
			}
			if m.Receiver == "job-owner-pager" && a.Labels["audience"] != "job-owner" {
				t.Errorf("the job owner's pager got %s (audience %q)", k, a.Labels["audience"])
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

// targetLabels are what the Prometheus Operator's ServiceMonitor attaches
// to every series of the exporter target (mixin config targetLabels).
var targetLabels = "namespace, pod, container, service, endpoint"

// TestNoAlertCarriesTheExportersPod: every alert with a fallback branch
// (`or ignoring (namespace, pod)`, where no pod holds the chip) drops the
// exporter target's labels in both branches, every other alert drops them
// or reads series that cannot carry them (the fault recording rules, which
// drop them, and aggregations by named labels). tests/audience.yml shows it
// under the operator's target labels for a per-chip fallback and for
// faults with and without a training pod.
func TestNoAlertCarriesTheExportersPod(t *testing.T) {
	fallbacks := 0
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		expr := strings.Join(strings.Fields(r.Expr), " ")
		switch {
		case strings.Contains(expr, "or ignoring (namespace, pod)"), strings.Contains(expr, "or ignoring (namespace, pod, hccl_job)"):
			fallbacks++
			if n := strings.Count(expr, "max without ("+targetLabels+")"); n < 2 {
				t.Errorf("%s: fallback alert drops the target labels in %d branch(es), want both:\n%s", r.Alert, n, r.Expr)
			}
		case strings.Contains(expr, "max without ("+targetLabels),
			strings.Contains(expr, "hccl:fault_events:new10m"),
			strings.Contains(expr, "hccl_job:hccl_fault_last_event_timestamp_seconds:max"),
			regexp.MustCompile(`^(min|max|count|sum) by \(`).MatchString(expr) || strings.HasPrefix(expr, "communicator:"),
			// the settings alert: a count by communicator, joined to the
			// training pods' namespace (hccl:settings_pod:unique).
			strings.HasPrefix(expr, "label_replace( (communicator:hccl_settings_sets:count > 1) * on (communicator) group_left (namespace)"):
		default:
			t.Errorf("%s: keeps the exporter target's labels:\n%s", r.Alert, r.Expr)
		}
	}
	if fallbacks < 8 {
		t.Errorf("only %d alerts with a fallback branch: the check looks at nothing", fallbacks)
	}
}

// TestRunbookPolicyTable: docs/runbooks.md's policy table (alert →
// audience → severity → who is woken) names every alert with the audience
// and severity its rules carry, and no pair the rules do not have.
func TestRunbookPolicyTable(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	type pair struct{ alert, audience, severity string }
	documented := map[pair]bool{}
	link := regexp.MustCompile(`\[([A-Za-z0-9]+)\]\(#[a-z0-9]+\)`)
	for _, line := range strings.Split(string(md), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 6 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "[") {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(cols[1], -1) {
			documented[pair{m[1], strings.TrimSpace(cols[2]), strings.TrimSpace(cols[3])}] = true
		}
	}
	if len(documented) < 20 {
		t.Fatalf("policy table: %d rows read; the check looks at nothing", len(documented))
	}
	ruled := map[pair]bool{}
	for _, r := range loadRules(t) {
		if r.Alert != "" {
			ruled[pair{r.Alert, r.Labels["audience"], r.Labels["severity"]}] = true
		}
	}
	for p := range ruled {
		if !documented[p] {
			t.Errorf("docs/runbooks.md policy table lacks %s → %s → %s", p.alert, p.audience, p.severity)
		}
	}
	for p := range documented {
		if !ruled[p] {
			t.Errorf("docs/runbooks.md policy table says %s → %s → %s, which no rule has", p.alert, p.audience, p.severity)
		}
	}
}
