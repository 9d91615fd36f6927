package e2e

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/bench/gen/nodegen"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// The scale-out topology of docs/scale.md, on loopback:
//
//	exporters ──scrape (hashmod on __address__)──▶ Prometheus shard 0 ─┐ per-node rules → Alertmanager
//	                                           └─▶ Prometheus shard 1 ─┤ remote write
//	                                                                   ▼
//	                                  VictoriaMetrics ◀── vmalert (cross-node rules) → Alertmanager
const (
	scaleShards     = 2
	scaleNodes      = 4
	scaleCluster    = "scale"
	scaleBuffsizeMB = 200
	// The one node whose processes run another HCCL_BUFFSIZE.
	scaleOddBuffsizeMB = 300
	// The cross-node alert's `for:` in this test (5m shipped).
	scaleInconsistentFor = "3s"
)

// hashmodShard is Prometheus's relabel action hashmod: the MD5 of the source
// label value, its last 8 bytes as a big-endian integer, modulo modulus.
func hashmodShard(value string, modulus uint64) uint64 {
	sum := md5.Sum([]byte(value))
	return binary.BigEndian.Uint64(sum[8:]) % modulus
}

// pickAddresses hands out loopback addresses for the exporters such that
// shard 0 scrapes exactly one node (the odd one, index 0) and shard 1 all
// the others: then no shard holds two settings sets of the job's communicator.
func pickAddresses(t *testing.T) []string {
	t.Helper()
	var inShard [scaleShards][]string
	for tries := 0; len(inShard[0]) < 1 || len(inShard[1]) < scaleNodes-1; tries++ {
		if tries > 1000 {
			t.Fatal("could not find free ports for the shard split")
		}
		addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
		s := hashmodShard(addr, scaleShards)
		if slices.Contains(inShard[0], addr) || slices.Contains(inShard[1], addr) {
			continue
		}
		if (s == 0 && len(inShard[0]) < 1) || (s == 1 && len(inShard[1]) < scaleNodes-1) {
			inShard[s] = append(inShard[s], addr)
		}
	}
	return append(inShard[0], inShard[1]...)
}

// shardConfig is one Prometheus shard: it scrapes the targets that hashmod
// gives it, evaluates the per-node rules, alerts Alertmanager and
// remote-writes everything to VictoriaMetrics.
func shardConfig(shard int, targets []string, rules, amURL, writeURL string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  external_labels:
    shard: "%d"
rule_files:
  - %q
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
remote_write:
  - url: %q
    queue_config:
      batch_send_deadline: 500ms
      min_backoff: 100ms
scrape_configs:
  - job_name: hccl_exporter
    static_configs:
      - labels: {cluster: %q}
        targets:
`, shard, rules, strings.TrimPrefix(amURL, "http://"), writeURL, scaleCluster)
	for _, tg := range targets {
		fmt.Fprintf(&b, "          - %q\n", tg)
	}
	fmt.Fprintf(&b, `    relabel_configs:
      - source_labels: [__address__]
        modulus: %d
        target_label: __tmp_hash
        action: hashmod
      - source_labels: [__tmp_hash]
        regex: "%d"
        action: keep
`, scaleShards, shard)
	return b.String()
}

// shortenFor rewrites every `for:` of a rules file to d (logged): the test
// checks where each rule is evaluated, not how long it waits; promtool tests
// in alerts/ cover the durations.
func shortenFor(t *testing.T, rules []byte, d string) []byte {
	t.Helper()
	re := regexp.MustCompile(`(?m)^(\s+for:\s*)"?([^"\s]+)"?`)
	for _, m := range re.FindAllSubmatch(rules, -1) {
		t.Logf("for: %s shortened to %s for this test", m[2], d)
	}
	return re.ReplaceAll(rules, []byte("${1}"+d))
}

// writeScaleNode generates node i with nodegen (8 NPUs, 8 processes, one
// communicator each) and an empty training screen log.
func writeScaleNode(t *testing.T, dir string, i, buffsizeMB int, start time.Time) *nodegen.Tree {
	t.Helper()
	n, err := nodegen.New(nodegen.Spec{
		NPUs: 8, ChipsPerNPU: 1, Processes: 8, Communicators: 1, Servers: scaleNodes,
		BuffsizeMB: buffsizeMB, PIDBase: 400001 + 100*i, Start: start, Seed: uint64(i + 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	tree, err := n.WriteTree(filepath.Join(dir, fmt.Sprintf("node-%d", i)))
	if err != nil {
		t.Fatal(err)
	}
	tree.ScreenLog = filepath.Join(tree.Dir, "screen", "train.log")
	if err := os.MkdirAll(filepath.Dir(tree.ScreenLog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tree.ScreenLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return tree
}

// firingSets returns, per alert name, the distinct label sets that reached
// the webhook as firing.
func firingSets(hook *testtools.Webhook) map[string][]string {
	sets := map[string]map[string]bool{}
	for _, m := range hook.Messages() {
		for _, a := range m.Alerts {
			if a.Status != "firing" {
				continue
			}
			name := a.Labels["alertname"]
			if sets[name] == nil {
				sets[name] = map[string]bool{}
			}
			sets[name][labelString(a.Labels)] = true
		}
	}
	out := map[string][]string{}
	for name, s := range sets {
		for k := range s {
			out[name] = append(out[name], k)
		}
		sort.Strings(out[name])
	}
	return out
}

func labelString(l map[string]string) string {
	var kv []string
	for k, v := range l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// crossNodeQuery is the cross-node recording rule's question: how many
// settings sets the evaluator sees among the members of each communicator.
const crossNodeQuery = `count by (communicator) (count by (communicator, settings) (hccl_communicator_info{settings!=""}))`

// TestScaleOutEndToEnd runs the tested topology of docs/scale.md: four
// exporters on generated nodes (one with another HCCL_BUFFSIZE), two
// Prometheus shards split by hashmod evaluating the per-node rules
// (alerts/sharded/hccl_exporter.node.rules.yml) and remote-writing to
// VictoriaMetrics, and vmalert evaluating the cross-node rules
// (alerts/sharded/hccl_exporter.cluster.rules.yml) on VictoriaMetrics, all
// notifying one Alertmanager. It shows:
//   - the job's communicator (its identifier the same on every node) runs two
//     settings sets; neither shard sees both, VictoriaMetrics does, and
//     HCCLSettingsInconsistentInCommunicator pages exactly once, from vmalert;
//   - an EI0011 on one node pages exactly once, from the shard that scrapes
//     the node, and not again through the global path; the failed
//     job's inhibitor HCCLJobFailed comes from vmalert, once.
func TestScaleOutEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 exporters, 2 Prometheus, VictoriaMetrics, vmalert and Alertmanager")
	}
	begin := time.Now()
	bin := buildExporter(t)
	dir := t.TempDir()

	// Global side first, so the shards can write and alert from their first
	// evaluation.
	hook := testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, testtools.WebhookConfig(hook.URL))
	vm := testtools.StartVictoriaMetrics(t)
	clusterRules := filepath.Join(dir, "cluster.rules.yml")
	nodeRules := filepath.Join(dir, "node.rules.yml")
	for path, src := range map[string]string{clusterRules: alerts.ClusterRulesFile, nodeRules: alerts.NodeRulesFile} {
		data, err := os.ReadFile(filepath.Join("..", "..", "alerts", src))
		if err != nil {
			t.Fatal(err)
		}
		if path == clusterRules {
			data = shortenFor(t, data, scaleInconsistentFor)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vmalert := testtools.StartVMAlert(t, testtools.VMAlertConfig{
		RuleFiles:       []string{clusterRules},
		DatasourceURL:   vm.URL,
		RemoteWriteURL:  vm.URL,
		AlertmanagerURL: am.URL,
		ExternalLabels:  map[string]string{"evaluator": "global"},
	})

	// The nodes: node 0 (alone in shard 0) runs HCCL_BUFFSIZE=300, the
	// others 200.
	addrs := pickAddresses(t)
	trees := make([]*nodegen.Tree, scaleNodes)
	for i := range scaleNodes {
		buff := scaleBuffsizeMB
		if i == 0 {
			buff = scaleOddBuffsizeMB
		}
		trees[i] = writeScaleNode(t, dir, i, buff, begin.Add(-5*time.Minute))
		testtools.StartProcess(t, trees[i].Dir, bin,
			"--web.listen-address="+addrs[i],
			"--npusmi.path="+trees[i].NPUSMI,
			"--cannlog.root="+trees[i].LogRoot,
			"--cannlog.screen-log-path="+filepath.Join(filepath.Dir(trees[i].ScreenLog), "*.log"),
			"--cannlog.state-file="+filepath.Join(trees[i].Dir, "state.json"),
			"--cannlog.poll-interval=200ms",
		)
	}
	shards := make([]*testtools.Prometheus, scaleShards)
	for s := range scaleShards {
		shards[s] = testtools.StartPrometheus(t, testtools.PrometheusConfig{
			Config: shardConfig(s, addrs, nodeRules, am.URL, vm.URL+"/api/v1/write"),
		})
	}
	started := time.Since(begin)

	// Each shard scrapes exactly its hashmod share, and all of it is up.
	wantTargets := map[int][]string{0: addrs[:1], 1: addrs[1:]}
	for s, prom := range shards {
		got := prom.WaitQuery(t, `up{job="hccl_exporter"} == 1`, 60*time.Second, func(r []testtools.Sample) bool {
			return len(r) == len(wantTargets[s])
		})
		var inst []string
		for _, x := range got {
			inst = append(inst, x.Metric["instance"])
		}
		sort.Strings(inst)
		want := slices.Clone(wantTargets[s])
		sort.Strings(want)
		if !slices.Equal(inst, want) {
			t.Fatalf("shard %d scrapes %v, want %v (hashmod as computed here)", s, inst, want)
		}
	}
	// VictoriaMetrics holds every node's communicator, from both shards.
	vm.WaitQuery(t, `count(count by (instance) (hccl_communicator_info))`, 60*time.Second,
		func(r []testtools.Sample) bool { return len(r) == 1 && r[0].Value == scaleNodes })
	t.Logf("stack up and every node in VictoriaMetrics after %s (processes started in %s)", time.Since(begin).Round(time.Millisecond), started.Round(time.Millisecond))

	// The disagreement pages once, through the global path.
	inconsistent := hook.WaitForAlert(t, 90*time.Second, func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "HCCLSettingsInconsistentInCommunicator" && a.Status == "firing"
	})
	t.Logf("HCCLSettingsInconsistentInCommunicator paged %s after start: %s", time.Since(begin).Round(time.Millisecond), inconsistent.Annotations["description"])
	if inconsistent.Labels["evaluator"] != "global" || inconsistent.Labels["shard"] != "" ||
		inconsistent.Labels["communicator"] == "" || inconsistent.Labels["instance"] != "" {
		t.Errorf("inconsistency alert labels %v: want the communicator, from vmalert (evaluator=global, no shard, no instance)", inconsistent.Labels)
	}
	for _, want := range []string{"run 2 different settings sets", "on 3 node(s)]", "on 1 node(s)]", "They differ in: HCCL_BUFFSIZE (2 values);"} {
		if !strings.Contains(inconsistent.Annotations["description"], want) {
			t.Errorf("description lacks %q (the annotation's query must run on VictoriaMetrics): %s", want, inconsistent.Annotations["description"])
		}
	}
	// Neither shard alone sees it: one value each.
	for s, prom := range shards {
		r, err := prom.Query(crossNodeQuery)
		if err != nil {
			t.Fatal(err)
		}
		if len(r) != 1 || r[0].Value != 1 {
			t.Errorf("shard %d sees %v settings sets in the communicator, want exactly 1", s, r)
		}
	}
	if r, err := vm.Query(crossNodeQuery); err != nil || len(r) != 1 || r[0].Value != 2 {
		t.Errorf("VictoriaMetrics sees %v settings sets in the communicator (%v), want 2", r, err)
	}

	// An EI0011 on node 2 (shard 1) pages once, from shard 1.
	const faultNode = 2
	f, err := os.OpenFile(trees[faultNode].ScreenLog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	if _, err := f.WriteString(ei0011(400001+100*faultNode, faultAt)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	page := hook.WaitForAlert(t, 90*time.Second, func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" && a.Status == "firing"
	})
	t.Logf("EI0011 written → HCCLQPMemoryAllocationFailed at Alertmanager's webhook in %s", time.Since(faultAt).Round(time.Millisecond))
	if page.Labels["instance"] != addrs[faultNode] || page.Labels["shard"] != "1" || page.Labels["evaluator"] != "" {
		t.Errorf("EI0011 page labels %v: want instance %s from shard 1 only", page.Labels, addrs[faultNode])
	}

	// HCCLJobFailed, the inhibitor of the failed job's consequences, is
	// a cross-node rule: it comes from vmalert, once. It goes through remote
	// write and vmalert's evaluation before Alertmanager, later than the
	// shard's page on a loaded machine: wait for it (at most a minute),
	// then let both paths run a while longer (several evaluations of every
	// rule, remote write flushes and Alertmanager group intervals) so that
	// a second label set of any alert would show.
	expected := []string{"HCCLQPMemoryAllocationFailed", "HCCLSettingsInconsistentInCommunicator", "HCCLJobFailed"}
	hook.WaitForAlert(t, 60*time.Second, func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "HCCLJobFailed" && a.Status == "firing"
	})
	t.Logf("EI0011 written → HCCLJobFailed (vmalert) at Alertmanager's webhook in %s", time.Since(faultAt).Round(time.Millisecond))
	time.Sleep(6 * time.Second)
	sets := firingSets(hook)
	for _, name := range expected {
		if len(sets[name]) != 1 {
			t.Errorf("%s reached Alertmanager with %d label sets, want exactly 1: %v", name, len(sets[name]), sets[name])
		}
	}
	for name, s := range sets {
		if !slices.Contains(expected, name) {
			t.Errorf("unexpected alert %s: %v", name, s)
		}
	}
	// And where each alert lives: vmalert has only the cross-node alerts,
	// shard 1 only the EI0011, shard 0 nothing.
	alertNames := func(p *testtools.Prometheus) []string {
		as, err := p.Alerts()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range as {
			if a.State == "firing" {
				names = append(names, a.Labels["alertname"])
			}
		}
		sort.Strings(names)
		return names
	}
	for who, c := range map[string]struct {
		p    *testtools.Prometheus
		want []string
	}{
		"vmalert": {vmalert, []string{"HCCLJobFailed", "HCCLSettingsInconsistentInCommunicator"}},
		"shard 0": {shards[0], nil},
		"shard 1": {shards[1], []string{"HCCLQPMemoryAllocationFailed"}},
	} {
		if got := alertNames(c.p); !slices.Equal(got, c.want) {
			t.Errorf("%s fires %v, want %v", who, got, c.want)
		}
	}
	t.Logf("scale-out test done in %s", time.Since(begin).Round(time.Millisecond))
}
