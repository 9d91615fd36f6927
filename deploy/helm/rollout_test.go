package helm

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/manifest"
	"github.com/hccl-exporter/hccl_exporter/internal/npufault"
)

// hostPathPolicy is every host path the chart may mount with a type that
// makes the kubelet check it (a missing one keeps the pod in
// ContainerCreating, and with maxUnavailable 1 stalls the rollout), and
// why that cannot happen on a node the DaemonSet selects. docs/deploy.md's
// "Host paths" table says the same per path (TestDeployDocListsHostPaths).
var hostPathPolicy = map[string]string{
	// The driver install: what makes a node an Ascend node. The products'
	// node affinity selects by the device plugin's label, which the plugin
	// only sets where the driver runs.
	"/usr/local/sbin/npu-smi":        "driver",
	"/usr/local/Ascend/driver":       "driver",
	"/usr/local/dcmi":                "driver",
	"/etc/ascend_install.info":       "driver",
	"/dev/davinci_manager":           "driver",
	"/dev/devmm_svm":                 "driver",
	"/dev/hisi_hdc":                  "driver",
	"/proc":                          "every node",
	"/var/log":                       "every node",
	"/var/lib/kubelet/pod-resources": "kubelet", // the kubelet creates it at start (--root-dir default)
}

// outputs may be created on the host: the exporter's own state and
// hccn_tool's call log.
var outputs = map[string]bool{"state": true, "hccn-tool-log": true}

func daemonSets(objs []manifest.Decoded) []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	for _, d := range objs {
		if ds, ok := d.Obj.(*appsv1.DaemonSet); ok {
			out = append(out, ds)
		}
	}
	return out
}

// checkHostPaths: no read-only input is created on the host or left
// unchecked (type "" lets containerd and CRI-O create a missing source as an
// empty directory), no checked input is outside hostPathPolicy, and every
// path a flag reads lies under a mount of a policy path.
func checkHostPaths(t *testing.T, name string, ds *appsv1.DaemonSet) {
	t.Helper()
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		hp := vols[vm.Name].HostPath
		if hp == nil {
			continue
		}
		typ := corev1.HostPathUnset
		if hp.Type != nil {
			typ = *hp.Type
		}
		if outputs[vm.Name] {
			if typ != corev1.HostPathDirectoryOrCreate || vm.ReadOnly {
				t.Errorf("%s: output %s is %q readOnly=%v", name, hp.Path, typ, vm.ReadOnly)
			}
			continue
		}
		switch typ {
		case corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathFileOrCreate:
			t.Errorf("%s: input %s has hostPath type %q: a node without it gets it created", name, hp.Path, typ)
		}
		if _, ok := hostPathPolicy[hp.Path]; !ok {
			t.Errorf("%s: input %s (type %s) is not one every selected node has: a node without it keeps the pod in ContainerCreating and stalls the rollout; read it through /var/log or /proc", name, hp.Path, typ)
		}
	}
	flags := map[string][]string{}
	for _, a := range c.Args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[k] = append(flags[k], v)
	}
	var paths []string
	paths = append(paths, flags["cannlog.root"]...)
	paths = append(paths, flags["cannlog.screen-log-path"]...)
	for _, r := range flags["pods.kubelet-logs"] {
		paths = append(paths, r+"/pods", r+"/containers")
	}
	for _, p := range paths {
		vm := manifest.MountFor(c.VolumeMounts, p)
		if vm == nil {
			t.Errorf("%s: %s is under no mount", name, p)
			continue
		}
		if vm.MountPath == p || vm.MountPath+"/*" == p {
			t.Errorf("%s: optional input %s is a mount of its own (%s): a node without it cannot start the pod", name, p, vm.MountPath)
		}
	}
}

// TestInputHostPathsCannotBlock renders the chart as an SRE would roll it
// out and checks every input host path's type (0.4.0 mounted
// /root/ascend/log and /var/log/npu as type Directory: a node without them
// stalled the rollout).
func TestInputHostPathsCannotBlock(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"--set", "npuAccess.mode=privileged"},
		{"--set", "procfs.enabled=false,podResources.enabled=false"},
		{"--set", "products.ascend310p.enabled=true,products.ascend310p.visibleDevices=0-3"},
	} {
		for _, ds := range daemonSets(render(t, set...)) {
			checkHostPaths(t, strings.Join(set, " ")+" "+ds.Name, ds)
		}
	}
}

// TestDeployDocListsHostPaths: docs/deploy.md's "Host paths" table has a
// row per host path the default rendering mounts, saying what happens when
// it is absent.
func TestDeployDocListsHostPaths(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := string(doc)
	i := strings.Index(sec, "\n### Host paths\n")
	if i < 0 {
		t.Fatal(`docs/deploy.md has no "### Host paths" section`)
	}
	sec = sec[i+1:]
	if j := strings.Index(sec[4:], "\n#"); j > 0 {
		sec = sec[:j+4]
	}
	for _, ds := range daemonSets(render(t, "--set", "npuAccess.mode=privileged")) {
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.HostPath == nil || v.HostPath.Type == nil {
				if v.HostPath != nil {
					t.Errorf("host path %s has no type", v.HostPath.Path)
				}
				continue
			}
			row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(v.HostPath.Path) + "` \\| `" + string(*v.HostPath.Type) + "` \\| .+ \\|$")
			if !row.MatchString(sec) {
				t.Errorf("docs/deploy.md, Host paths: no row | `%s` | `%s` | when absent | for the volume %s", v.HostPath.Path, *v.HostPath.Type, v.Name)
			}
		}
	}
}

// nodeMatches reports whether a node with these labels is one the
// DaemonSet schedules on (nodeSelector and required node affinity).
func nodeMatches(t *testing.T, ds *appsv1.DaemonSet, node map[string]string) bool {
	t.Helper()
	pod := ds.Spec.Template.Spec
	if !labels.SelectorFromSet(pod.NodeSelector).Matches(labels.Set(node)) {
		return false
	}
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		ls := &metav1.LabelSelector{}
		for _, e := range term.MatchExpressions {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
				Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatalf("%s: node affinity %+v: %v", ds.Name, term, err)
		}
		if sel.Matches(labels.Set(node)) {
			return true // terms are ORed
		}
	}
	return false
}

func visibleDevices(ds *appsv1.DaemonSet) string {
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "ASCEND_VISIBLE_DEVICES" {
			return e.Value
		}
	}
	return ""
}

// TestProducts: each node gets exactly one exporter, with all its chips:
// A2 and 910 nodes 0-7, A3 nodes (same accelerator label, 16 dies) 0-15,
// 300I nodes none until their product is enabled with their chips (0.4.0
// gave A3 nodes 0-7: half their dies).
func TestProducts(t *testing.T) {
	nodes := []struct {
		name   string
		labels map[string]string
		want   string // ASCEND_VISIBLE_DEVICES, "" for no exporter
	}{
		{"A2 (MindCluster labels)", map[string]string{"accelerator": "huawei-Ascend910", "accelerator-type": "module-910b-8"}, "0-7"},
		{"910 (device plugin only)", map[string]string{"accelerator": "huawei-Ascend910"}, "0-7"},
		{"A3", map[string]string{"accelerator": "huawei-Ascend910", "accelerator-type": "module-a3-16"}, "0-15"},
		{"A3 super pod", map[string]string{"accelerator": "huawei-Ascend910", "accelerator-type": "module-a3-16-super-pod"}, "0-15"},
		{"300I", map[string]string{"accelerator": "huawei-Ascend310P"}, ""},
		{"CPU node", map[string]string{}, ""},
	}
	check := func(t *testing.T, dss []*appsv1.DaemonSet, override map[string]string) {
		for _, n := range nodes {
			want := n.want
			if w, ok := override[n.name]; ok {
				want = w
			}
			node := map[string]string{"kubernetes.io/os": "linux"}
			for k, v := range n.labels {
				node[k] = v
			}
			var got []string
			for _, ds := range dss {
				if nodeMatches(t, ds, node) {
					got = append(got, ds.Name+"="+visibleDevices(ds))
				}
			}
			switch {
			case want == "" && len(got) != 0:
				t.Errorf("%s node gets %v, want no exporter", n.name, got)
			case want != "" && (len(got) != 1 || !strings.HasSuffix(got[0], "="+want)):
				t.Errorf("%s node gets %v, want one exporter with ASCEND_VISIBLE_DEVICES=%s", n.name, got, want)
			}
		}
	}
	t.Run("default", func(t *testing.T) {
		dss := daemonSets(render(t))
		check(t, dss, nil)
		var names []string
		for _, ds := range dss {
			names = append(names, ds.Name)
		}
		// The 8-chip DaemonSet keeps 0.4.0's name: an upgrade replaces it.
		if !slices.Contains(names, release) {
			t.Errorf("DaemonSets %v: none keeps the name %s", names, release)
		}
	})
	t.Run("300I enabled", func(t *testing.T) {
		check(t, daemonSets(render(t, "--set", "products.ascend310p.enabled=true,products.ascend310p.visibleDevices=0-3")),
			map[string]string{"300I": "0-3"})
	})
	t.Run("300I without its chips", func(t *testing.T) {
		_, err := helm(t, "template", release, chartDir, "--set", "products.ascend310p.enabled=true")
		if err == nil || !strings.Contains(err.Error(), "products.ascend310p.visibleDevices is empty") {
			t.Errorf("enabling 300I without visibleDevices: %v, want an error naming the value", err)
		}
	})
	t.Run("a nodeAffinity of its own", func(t *testing.T) {
		_, err := helm(t, "template", release, chartDir, "--set", "affinity.nodeAffinity.x=1")
		if err == nil || !strings.Contains(err.Error(), "products.<name>.matchExpressions") {
			t.Errorf("affinity.nodeAffinity: %v, want an error instead of a dropped value", err)
		}
	})
	t.Run("the old value", func(t *testing.T) {
		_, err := helm(t, "template", release, chartDir, "--set", "npuAccess.visibleDevices=0-15")
		if err == nil || !strings.Contains(err.Error(), "products.<product>.visibleDevices") {
			t.Errorf("npuAccess.visibleDevices: %v, want an error saying where it moved", err)
		}
	})
}

// TestCapabilitiesFollowValues: SYS_PTRACE only with procfs discovery,
// DAC_READ_SEARCH only for jobs that do not run as root (their logs are
// not root's), nothing else (docs/security.md).
func TestCapabilitiesFollowValues(t *testing.T) {
	for _, c := range []struct {
		set  string
		want []corev1.Capability
	}{
		{"", []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}},
		{"jobsRunAsNonRoot=false", []corev1.Capability{"SYS_PTRACE"}},
		{"procfs.enabled=false", []corev1.Capability{"DAC_READ_SEARCH"}},
		{"procfs.enabled=false,jobsRunAsNonRoot=false", nil},
	} {
		var args []string
		if c.set != "" {
			args = []string{"--set", c.set}
		}
		for _, ds := range daemonSets(render(t, args...)) {
			sc := ds.Spec.Template.Spec.Containers[0].SecurityContext
			if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, c.want) ||
				!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				t.Errorf("--set %q: %s capabilities %+v, want add %v drop [ALL]", c.set, ds.Name, sc.Capabilities, c.want)
			}
		}
	}
}

// TestFaultCodesMounted: the chart mounts the shipped classification and
// names it with --npuhealth.fault-code-file; it loads, and a documented
// critical code (8C03A000, RestartNPU) is in a class NPUHardwareFault pages
// for (the paging itself: alerts' TestShippedFaultCodePagesInfra).
func TestFaultCodesMounted(t *testing.T) {
	objs := render(t)
	var cm *corev1.ConfigMap
	for _, d := range objs {
		if o, ok := d.Obj.(*corev1.ConfigMap); ok && strings.HasSuffix(o.Name, "-fault-codes") {
			cm = o
		}
	}
	if cm == nil {
		t.Fatal("no fault-code ConfigMap rendered")
	}
	codes, err := npufault.Parse([]byte(cm.Data["faultCode.json"]))
	if err != nil {
		t.Fatalf("the shipped faultCode.json does not load: %v", err)
	}
	if got := codes.Class("8C03A000"); got != "RestartNPU" {
		t.Errorf("8C03A000 is %s, want RestartNPU", got)
	}
	// The chart's file is the table built into the binary, so that a
	// systemd install and the chart classify alike.
	if cm.Data["faultCode.json"] != string(npufault.Builtin()) {
		t.Error("files/faultCode.json differs from internal/npufault/faultCode.json (the built-in table): copy it")
	}
	for _, ds := range daemonSets(objs) {
		c := ds.Spec.Template.Spec.Containers[0]
		var file string
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--npuhealth.fault-code-file="); ok {
				file = v
			}
		}
		vm := manifest.MountFor(c.VolumeMounts, file)
		if file == "" || vm == nil || filepath.Join(vm.MountPath, "faultCode.json") != file {
			t.Errorf("%s: --npuhealth.fault-code-file=%q is not the mounted ConfigMap (%+v)", ds.Name, file, vm)
			continue
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && (v.ConfigMap == nil || v.ConfigMap.Name != cm.Name) {
				t.Errorf("%s: volume %s is not the ConfigMap %s", ds.Name, v.Name, cm.Name)
			}
		}
	}
	// faultCodes.override replaces the whole table.
	override := filepath.Join(t.TempDir(), "faultCode.json")
	if err := os.WriteFile(override, []byte(`{"SeparateNPUCodes": ["8C03A000"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range render(t, "--set-file", "faultCodes.override="+override) {
		if o, ok := d.Obj.(*corev1.ConfigMap); ok && strings.HasSuffix(o.Name, "-fault-codes") {
			codes, err := npufault.Parse([]byte(o.Data["faultCode.json"]))
			if err != nil || codes.Class("8C03A000") != "SeparateNPU" {
				t.Errorf("override: %v %v", codes, err)
			}
		}
	}
}
