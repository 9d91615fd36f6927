package alerts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/npufault"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// shippedFaultCodes is the classification the Helm chart and
// deploy/kubernetes mount as --npuhealth.fault-code-file.
const shippedFaultCodes = "../deploy/helm/hccl-exporter/files/faultCode.json"

// TestShippedFaultCodePagesInfra: every code of the shipped classification
// whose class needs a reset or isolation makes NPUHardwareFault critical
// for infrastructure, and the example Alertmanager configuration pages
// infrastructure's pager with it; the other classes stay warnings in
// infrastructure's channel. (0.4.0 shipped no classification: every code was
// class="unknown", a warning, and nothing paged.) Real promtool over the
// shipped rules, real amtool over the shipped routes.
func TestShippedFaultCodePagesInfra(t *testing.T) {
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	amtool := testtools.EnsureTool(t, "amtool", "prometheus-alertmanager")
	data, err := os.ReadFile(shippedFaultCodes)
	if err != nil {
		t.Fatalf("no shipped fault-code classification: %v", err)
	}
	codes, err := npufault.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	// MindCluster's levels that stop the chip (reset it or take it out of
	// scheduling): docs/runbooks.md#npuhardwarefault.
	pages := map[string]bool{"ManuallySeparateNPU": true, "SeparateNPU": true, "PreSeparateNPU": true, "RestartNPU": true, "FreeRestartNPU": true}
	var list []string
	for code := range codes {
		list = append(list, code)
	}
	sort.Strings(list)
	var critical int
	routed := map[string]bool{}
	// The firing alerts as the rule manager writes them (ALERTS), labels
	// only: the descriptions are TestPromtoolTestRules' concern.
	type sample struct {
		Labels string  `yaml:"labels"`
		Value  float64 `yaml:"value"`
	}
	type exprTest struct {
		Expr       string   `yaml:"expr"`
		EvalTime   string   `yaml:"eval_time"`
		ExpSamples []sample `yaml:"exp_samples"`
	}
	type series struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	type unitTest struct {
		Interval       string     `yaml:"interval"`
		InputSeries    []series   `yaml:"input_series"`
		PromQLExprTest []exprTest `yaml:"promql_expr_test"`
	}
	var ut unitTest
	ut.Interval = "1m"
	var exp []sample
	for i, code := range list {
		class := codes.Class(code)
		severity := "warning"
		if pages[class] {
			severity = "critical"
			critical++
		}
		npu := fmt.Sprint(i)
		ut.InputSeries = append(ut.InputSeries, series{
			Series: fmt.Sprintf(`ascend_npu_error_code{instance="node-1:9842",job="hccl_exporter",npu=%q,chip="0",code=%q,class=%q}`, npu, code, class),
			Values: "1x10",
		})
		labels := map[string]string{"severity": severity, "audience": "infra", "instance": "node-1:9842", "job": "hccl_exporter",
			"npu": npu, "chip": "0", "code": code, "class": class}
		// The warning of a chip that also pages is inhibited in
		// Alertmanager, not in the rules: both fire here.
		var ls []string
		for k, v := range labels {
			ls = append(ls, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(ls)
		exp = append(exp, sample{Labels: `ALERTS{alertname="NPUHardwareFault",alertstate="firing",` + strings.Join(ls, ",") + "}", Value: 1})
		receivers := "infra-chat"
		if severity == "critical" {
			receivers = "infra-pager,infra-chat"
		}
		// The route depends on the labels, not on the code: amtool once
		// per class (a table of many codes has few classes: MindCluster's
		// default has about 800 codes in 8).
		if routed[class] {
			continue
		}
		routed[class] = true
		args := []string{"config", "routes", "test", "--config.file=alertmanager.example.yml", "--verify.receivers=" + receivers}
		for k, v := range labels {
			args = append(args, k+"="+v)
		}
		run(t, amtool, append(args, "alertname=NPUHardwareFault")...)
	}
	if critical == 0 {
		t.Fatal("the shipped classification has no code that pages: NPUHardwareFault can never be critical")
	}
	ut.PromQLExprTest = []exprTest{{Expr: `ALERTS{alertname="NPUHardwareFault",alertstate="firing"}`, EvalTime: "6m", ExpSamples: exp}}
	file := map[string]any{"rule_files": []string{filepath.Join(mustAbs(t, "."), rulesFile)}, "tests": []unitTest{ut}}
	out, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "faultcodes.yml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, promtool, "test", "rules", path)
	t.Logf("%d shipped codes, %d page infrastructure; %d classes routed", len(list), critical, len(routed))
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// routingKeys are the labels a job owner's Alertmanager route can match
// on: the namespace of the training pods, or hccl_job (the communicator,
// else <namespace>/<pod>, else node/<instance>).
var routingKeys = []string{"namespace", "hccl_job"}

// TestJobOwnerAlertsCarryRoutingLabels lists each job-owner alert's routing
// labels as its promtool tests expect them: every expected job-owner alert
// carries namespace or hccl_job (0.4.0's
// HCCLSettingsInconsistentInCommunicator carried only communicator, so no
// route by team reached it), and docs/runbooks.md's table "Routing labels"
// says the same, alert by alert.
func TestJobOwnerAlertsCarryRoutingLabels(t *testing.T) {
	jobOwner := map[string]bool{}
	for _, r := range loadRules(t) {
		if r.Alert != "" && r.Labels["audience"] == "job-owner" {
			jobOwner[r.Alert] = true
		}
	}
	seen := map[string]map[string]bool{}
	for _, f := range testFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tf testFile
		if err := yaml.Unmarshal(data, &tf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range tf.Tests {
			for _, art := range tc.AlertRuleTest {
				for _, a := range art.ExpAlerts {
					if a.ExpLabels["audience"] != "job-owner" {
						continue
					}
					keys := seen[art.Alertname]
					if keys == nil {
						keys = map[string]bool{}
						seen[art.Alertname] = keys
					}
					var has []string
					for _, k := range routingKeys {
						if a.ExpLabels[k] != "" {
							has = append(has, k)
							keys[k] = true
						}
					}
					if len(has) == 0 {
						t.Errorf("%s (%s, %q at %s) reaches a job owner with neither namespace nor hccl_job: %v",
							art.Alertname, f, tc.Name, art.EvalTime, a.ExpLabels)
					}
				}
			}
		}
	}
	for a := range jobOwner {
		if seen[a] == nil {
			t.Errorf("job-owner alert %s has no promtool test expecting it: its routing labels are unchecked", a)
		}
	}
	md, err := os.ReadFile(filepath.Join("..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| \[([A-Za-z0-9]+)\]\(#[a-z0-9]+\) \| ([^|]*) \|$`)
	documented := map[string]string{}
	sec := string(md)
	if i := strings.Index(sec, "\n### Routing labels\n"); i >= 0 {
		sec = sec[i:]
		if j := strings.Index(sec[5:], "\n#"); j > 0 {
			sec = sec[:j+5]
		}
		for _, m := range row.FindAllStringSubmatch(sec, -1) {
			documented[m[1]] = strings.TrimSpace(m[2])
		}
	}
	var names []string
	for a := range jobOwner {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		var keys []string
		for _, k := range routingKeys {
			if seen[a][k] {
				keys = append(keys, "`"+k+"`")
			}
		}
		want := strings.Join(keys, ", ")
		if got, ok := documented[a]; !ok || got != want {
			t.Errorf("docs/runbooks.md, Routing labels: want the row | [%s](#%s) | %s |, have %q", a, strings.ToLower(a), want, got)
		}
	}
	for a := range documented {
		if !jobOwner[a] {
			t.Errorf("docs/runbooks.md, Routing labels lists %s, which is no job-owner alert", a)
		}
	}
}

// TestScaleDocForDurations: docs/scale.md's "Alert `for:` durations"
// names each alert with the for: of its rules ("N m (`A`, `B`)"), and the
// group it calls the shortest waits is every alert with that for: (0.4.0
// said 2 m for NPULinkSetupHeadroomLow, whose rule has none).
func TestScaleDocForDurations(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(md)
	i := strings.Index(doc, "- **Alert `for:` durations.**")
	if i < 0 {
		t.Fatal("docs/scale.md has no bullet \"Alert `for:` durations\"")
	}
	bullet := doc[i:]
	if j := strings.Index(bullet[2:], "\n- "); j > 0 {
		bullet = bullet[:j+2]
	}
	fors := map[string][]string{}
	for _, r := range loadRules(t) {
		if r.Alert == "" {
			continue
		}
		f := r.For
		if f == "" {
			f = "0m"
		}
		fors[r.Alert] = append(fors[r.Alert], f)
	}
	group := regexp.MustCompile(`(\d+) m\s+\(([^)]*)\)`)
	name := regexp.MustCompile("`([A-Z][A-Za-z]+)`")
	checked := 0
	for _, g := range group.FindAllStringSubmatch(bullet, -1) {
		want := g[1] + "m"
		var listed []string
		for _, n := range name.FindAllStringSubmatch(g[2], -1) {
			listed = append(listed, n[1])
			checked++
			if !slices.Contains(fors[n[1]], want) {
				t.Errorf("docs/scale.md says %s waits %s; its rules' for: %v", n[1], want, fors[n[1]])
			}
		}
		if strings.Contains(bullet[:strings.Index(bullet, g[0])], "shortest") && want != "0m" {
			var all []string
			for a, fs := range fors {
				if slices.Contains(fs, want) {
					all = append(all, a)
				}
			}
			sort.Strings(all)
			sort.Strings(listed)
			if !slices.Equal(all, listed) {
				t.Errorf("docs/scale.md lists %v as the shortest waits (%s); the rules with that for: are %v", listed, want, all)
			}
			for a, fs := range fors {
				for _, f := range fs {
					if f != "0m" && mustDuration(t, f) < mustDuration(t, want) {
						t.Errorf("%s waits %s, shorter than the %s docs/scale.md calls the shortest", a, f, want)
					}
				}
			}
		}
	}
	if checked < 4 {
		t.Fatalf("read %d alerts from the bullet: the check looks at nothing\n%s", checked, bullet)
	}
}

// TestTeamAlertmanagerConfigOnNamespace: under the Prometheus Operator's
// default matcher strategy (OnNamespace, the namespace matcher injected as
// the operator does) the team's resource pages and notifies that team for
// its job-owner alerts and receives nothing else: another team's alerts and
// infrastructure's (no namespace) fall to the root. The platform's
// resource in the monitoring namespace receives nothing under the same
// strategy; it is meant as the Alertmanager's global configuration
// (alertmanagerConfiguration.name: no namespace matcher, as rendered by
// TestAlertmanagerConfigRoutes). Both decode strictly (unknown fields
// fail) in the rendering.
func TestTeamAlertmanagerConfigOnNamespace(t *testing.T) {
	amtool := testtools.EnsureTool(t, "amtool", "prometheus-alertmanager")
	team, err := os.ReadFile("alertmanagerconfig.team.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(data []byte) string {
		f := filepath.Join(t.TempDir(), "alertmanager.yml")
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, amtool, "check-config", f)
		return f
	}
	rendered, prefix := renderAlertmanagerConfigStrategy(t, team, "OnNamespace")
	file := write(rendered)
	for _, c := range []struct{ labels, receivers string }{
		{"alertname=HCCLQPMemoryAllocationFailed severity=critical audience=job-owner code=EI0011 namespace=team-a hccl_job=commT", prefix + "team-pager," + prefix + "team-chat"},
		{"alertname=HCCLSettingsInconsistentInCommunicator severity=warning audience=job-owner namespace=team-a hccl_job=c1", prefix + "team-chat"},
		{"alertname=HCCLQPMemoryAllocationFailed severity=critical audience=job-owner code=EI0011 namespace=team-b hccl_job=commT", "null"},
		{"alertname=RoCELinkDown severity=critical audience=infra npu=0 chip=0", "null"},
		{"alertname=NPULinkSetupHeadroomLow severity=warning audience=job-owner hccl_job=node/npu-node-1", "null"},
	} {
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=" + file,
			"--verify.receivers=" + c.receivers, "instance=npu-node-1"}, strings.Fields(c.labels)...)...)
	}
	// The platform's resource under OnNamespace: nothing carries
	// namespace="monitoring", so nothing reaches it.
	rendered, _ = renderAlertmanagerConfigStrategy(t, AlertmanagerConfigExample, "OnNamespace")
	file = write(rendered)
	for _, c := range routeCases {
		run(t, amtool, append([]string{"config", "routes", "test", "--config.file=" + file,
			"--verify.receivers=null", "instance=npu-node-1"}, strings.Fields(c.labels)...)...)
	}
}
