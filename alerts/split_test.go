package alerts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

type groupsOnly struct {
	Groups []map[string]any `yaml:"groups"`
}

func parseGroups(t testing.TB, name string, data []byte) []map[string]any {
	t.Helper()
	var g groupsOnly
	if err := yaml.UnmarshalStrict(data, &g); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return g.Groups
}

// TestShardedRulesUpToDate: alerts/sharded/ is what SplitRules makes of the
// rules file, and the two halves hold exactly the rules file's groups.
func TestShardedRulesUpToDate(t *testing.T) {
	node, cluster, err := SplitRules(Rules)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{NodeRulesFile: node, ClusterRulesFile: cluster} {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not up to date with %s: run `make deploy-manifests`", name, rulesFile)
		}
	}
	all := parseGroups(t, rulesFile, Rules)
	nodeGroups := parseGroups(t, NodeRulesFile, node)
	clusterGroups := parseGroups(t, ClusterRulesFile, cluster)
	var names []string
	for _, g := range clusterGroups {
		names = append(names, g["name"].(string))
	}
	if !slices.Equal(names, ClusterGroups) {
		t.Errorf("cluster half has groups %v, want %v", names, ClusterGroups)
	}
	var union []map[string]any
	for _, g := range all {
		if slices.Contains(ClusterGroups, g["name"].(string)) {
			continue
		}
		union = append(union, g)
	}
	if !reflect.DeepEqual(union, nodeGroups) {
		t.Error("the node half is not the rules file's other groups, in order")
	}
	if len(nodeGroups)+len(clusterGroups) != len(all) {
		t.Errorf("%d + %d groups in the halves, %d in the rules file", len(nodeGroups), len(clusterGroups), len(all))
	}
}

// TestClusterGroupsHoldCrossNodeRules pins which rules need every node: the
// ones that compare the members of a communicator across instances. A per-node rule in the
// cluster half would page from the global ruler too (twice), a cross-node rule
// in the node half would never see the disagreement on a shard.
func TestClusterGroupsHoldCrossNodeRules(t *testing.T) {
	_, cluster, err := SplitRules(Rules)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(cluster, &f); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			got = append(got, r.Alert+r.Record)
		}
	}
	want := []string{"communicator:hccl_settings_sets:count", "HCCLSettingsInconsistentInCommunicator", "HCCLTLSInconsistent", "hccl_job:hccl_fault_last_event_timestamp_seconds:max", "HCCLJobFailed", "HCCLJobFailuresAcrossCluster"}
	if !slices.Equal(got, want) {
		t.Errorf("cluster rules %v, want %v", got, want)
	}
}

func TestSplitRulesErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no groups line":       "rules: []\n",
		"no group":             "# x\ngroups:\n",
		"no cluster group":     "# x\ngroups:\n  - name: a\n    rules: []\n",
		"text before a group":  "# x\ngroups:\n    junk: 1\n  - name: hccl-exporter-cluster\n    rules: []\n",
		"other layout (flush)": "# x\ngroups:\n- name: hccl-exporter-cluster\n  rules: []\n",
	} {
		if _, _, err := SplitRules([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "split rules: ") {
			t.Errorf("%s: error %q lacks context", name, err)
		}
	}
}

// FuzzSplitRules: SplitRules never panics, and whatever it accepts comes
// out with the cluster groups in the cluster half and nothing invented.
func FuzzSplitRules(f *testing.F) {
	f.Add(Rules)
	f.Add([]byte("# x\ngroups:\n  - name: a\n    rules: []\n  # c\n  - name: hccl-exporter-cluster\n    rules: []\n"))
	f.Add([]byte("\ngroups:\n  - name: hccl-exporter-cluster\n"))
	f.Add([]byte("\ngroups:\n  - name: \"a\"\n  - name: \"hccl-exporter-cluster\"\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		node, cluster, err := SplitRules(in)
		if err != nil {
			return
		}
		names := func(b []byte) []string {
			var out []string
			for _, m := range groupStart.FindAllSubmatch(b, -1) {
				out = append(out, string(m[1]))
			}
			return out
		}
		for _, g := range ClusterGroups {
			if !slices.Contains(names(cluster), g) {
				t.Fatalf("cluster half lacks %s", g)
			}
			if slices.Contains(names(node), g) {
				t.Fatalf("node half holds %s", g)
			}
		}
		if len(node)+len(cluster) > len(in)+2*len(splitHeader)+2048 {
			t.Fatalf("halves (%d + %d bytes) much larger than the input (%d)", len(node), len(cluster), len(in))
		}
	})
}

// TestRuleFilesLoadInVMAlert: every shipped rule file parses in vmalert
// (MetricsQL, its template functions), so the global path of docs/scale.md
// can load what it needs and users of VictoriaMetrics can load all of it.
func TestRuleFilesLoadInVMAlert(t *testing.T) {
	vmalert := testtools.EnsureTool(t, "vmalert", "victoria-metrics")
	promtool := testtools.EnsureTool(t, "promtool", "prometheus")
	for _, f := range []string{rulesFile, NodeRulesFile, ClusterRulesFile, CompatRulesFile} {
		abs, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(vmalert, "-dryRun", "-rule="+abs, "-loggerLevel=ERROR").CombinedOutput()
		if err != nil {
			t.Errorf("vmalert -dryRun -rule=%s: %v\n%s", f, err, out)
		}
		out, err = exec.Command(promtool, "check", "rules", abs).CombinedOutput()
		if err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
		}
	}
	// The check itself must be able to fail.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	if err := os.WriteFile(bad, []byte("groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: rate(up[5m]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(vmalert, "-dryRun", "-rule="+bad, "-loggerLevel=ERROR").CombinedOutput(); err == nil {
		t.Errorf("vmalert -dryRun accepted a broken expression:\n%s", out)
	}
}
