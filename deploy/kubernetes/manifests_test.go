// Package kubernetes holds only tests of the manifests in this directory:
// each document is decoded strictly (unknown or duplicate fields fail) into
// its real API type, and the objects are checked against each other (labels,
// ports, volumes, flags) the way a cluster would only reveal at apply or run
// time.
package kubernetes

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/manifest"
	"github.com/hccl-exporter/hccl_exporter/deploy/internal/strictyaml"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const namespace = "hccl-exporter"

// kinds maps apiVersion/kind to a constructor of the typed object.
var kinds = map[string]func() any{
	"v1/Namespace":      func() any { return &corev1.Namespace{} },
	"v1/ServiceAccount": func() any { return &corev1.ServiceAccount{} },
	"v1/Service":        func() any { return &corev1.Service{} },
	"apps/v1/DaemonSet": func() any { return &appsv1.DaemonSet{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
	"v1/ConfigMap": func() any { return &corev1.ConfigMap{} },
}

type manifests struct {
	namespaces      []*corev1.Namespace
	serviceAccounts []*corev1.ServiceAccount
	services        []*corev1.Service
	daemonSets      []*appsv1.DaemonSet
	serviceMonitors []*monitoringv1.ServiceMonitor
	prometheusRules []*monitoringv1.PrometheusRule
	metas           []metav1.Object
}

// decode decodes every document strictly into its API type.
func decode(t *testing.T, name string, data []byte, m *manifests) {
	t.Helper()
	for i, doc := range manifest.SplitDocs(data) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Errorf("%s doc %d: %v", name, i, err)
			continue
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			t.Errorf("%s doc %d: unexpected apiVersion/kind %s/%s", name, i, tm.APIVersion, tm.Kind)
			continue
		}
		obj := newObj()
		if err := strictyaml.Unmarshal(doc, obj); err != nil {
			t.Errorf("%s doc %d (%s): strict decode: %v", name, i, tm.Kind, err)
			continue
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			m.namespaces = append(m.namespaces, o)
		case *corev1.ServiceAccount:
			m.serviceAccounts = append(m.serviceAccounts, o)
		case *corev1.Service:
			m.services = append(m.services, o)
		case *appsv1.DaemonSet:
			m.daemonSets = append(m.daemonSets, o)
		case *monitoringv1.ServiceMonitor:
			m.serviceMonitors = append(m.serviceMonitors, o)
		case *monitoringv1.PrometheusRule:
			m.prometheusRules = append(m.prometheusRules, o)
		}
		m.metas = append(m.metas, obj.(metav1.Object))
	}
}

// kustomization is the subset of kustomize's Kustomization this directory
// uses, decoded strictly so that a field kustomize would reject (or that we
// would silently not check) fails here. kustomize's own API module is far
// larger than this struct is worth.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images"`
}

func loadAll(t *testing.T) (*manifests, kustomization) {
	t.Helper()
	var k kustomization
	data, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := strictyaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	listed := slices.Clone(k.Resources)
	sort.Strings(listed)
	sort.Strings(files)
	if !slices.Equal(listed, files) {
		t.Errorf("kustomization resources %v != manifests in the directory %v", listed, files)
	}
	m := &manifests{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, f, data, m)
	}
	return m, k
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m, k := loadAll(t)
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" || k.Namespace != namespace {
		t.Errorf("kustomization header: %s %s namespace %q", k.APIVersion, k.Kind, k.Namespace)
	}
	counts := map[string]int{
		"Namespace": len(m.namespaces), "ServiceAccount": len(m.serviceAccounts), "Service": len(m.services),
		"DaemonSet": len(m.daemonSets), "ServiceMonitor": len(m.serviceMonitors), "PrometheusRule": len(m.prometheusRules),
	}
	for kind, n := range counts {
		// Two DaemonSets: 8-chip nodes and A3 (16 dies).
		if want := map[string]int{"DaemonSet": 2}[kind]; n != max(want, 1) {
			t.Errorf("%d %s objects, want %d", n, kind, max(want, 1))
		}
	}
	for _, o := range m.metas {
		if _, isNS := o.(*corev1.Namespace); isNS {
			if o.GetName() != namespace {
				t.Errorf("Namespace %q, want %q", o.GetName(), namespace)
			}
			continue
		}
		if o.GetNamespace() != namespace {
			t.Errorf("%s is in namespace %q, want %q (plain `kubectl apply -f` must work too)", o.GetName(), o.GetNamespace(), namespace)
		}
		if o.GetLabels()["app.kubernetes.io/name"] != "hccl-exporter" {
			t.Errorf("%s lacks label app.kubernetes.io/name=hccl-exporter", o.GetName())
		}
	}
}

// TestStrictDecodingCatchesTypos keeps the strictness itself honest.
func TestStrictDecodingCatchesTypos(t *testing.T) {
	data, err := os.ReadFile("daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, mutate := range []struct{ from, to string }{
		{"readOnlyRootFilesystem:", "readonlyRootFilesystem:"},
		{"      nodeSelector:", "      nodeSelecter:"},
		{"    type: RollingUpdate", "    type: RollingUpdate\n    type: OnDelete"},
	} {
		bad := strings.Replace(string(data), mutate.from, mutate.to, 1)
		if bad == string(data) {
			t.Fatalf("mutation %q not applied", mutate.from)
		}
		var ds appsv1.DaemonSet
		if err := strictyaml.Unmarshal([]byte(bad), &ds); err == nil {
			t.Errorf("strict decode accepted %q", mutate.to)
		}
	}
}

func flagArgs(t *testing.T, args []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok && !strings.HasPrefix(name, "collector.") && !strings.HasPrefix(name, "no-collector.") {
			t.Errorf("argument %q is not --flag=value", a)
			continue
		}
		out[name] = append(out[name], value)
	}
	return out
}

func TestDaemonSet(t *testing.T) {
	m, _ := loadAll(t)
	if len(m.daemonSets) != 2 {
		t.Fatalf("%d DaemonSets, want 2 (8-chip nodes, A3)", len(m.daemonSets))
	}
	for _, ds := range m.daemonSets {
		t.Run(ds.Name, func(t *testing.T) { checkDaemonSet(t, m, ds) })
	}
}

func checkDaemonSet(t *testing.T, m *manifests, ds *appsv1.DaemonSet) {
	pod := ds.Spec.Template.Spec
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labelSet(ds.Spec.Template.Labels)) {
		t.Error("DaemonSet selector does not match its pod template labels")
	}
	if len(m.serviceAccounts) == 1 && pod.ServiceAccountName != m.serviceAccounts[0].Name {
		t.Errorf("serviceAccountName %q is not the ServiceAccount %q", pod.ServiceAccountName, m.serviceAccounts[0].Name)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the service account token should not be mounted: the exporter calls no API")
	}
	if pod.HostPID || pod.HostNetwork || pod.HostIPC {
		t.Error("host namespaces are not needed (see the hostPID comment)")
	}
	if a := pod.Affinity; a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		!strings.Contains(fmt.Sprint(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution), "accelerator") {
		t.Error("node affinity should pick Ascend nodes by their accelerator label")
	}
	if len(pod.Tolerations) == 0 {
		t.Error("no tolerations: tainted NPU nodes would get no exporter")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Ports and probes.
	if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || c.Ports[0].ContainerPort != 9842 {
		t.Errorf("container ports %+v, want metrics:9842", c.Ports)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil {
			t.Errorf("no %s probe", name)
			continue
		}
		if p.HTTPGet == nil || p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe should GET the named port metrics", name)
		} else if strings.HasPrefix(p.HTTPGet.Path, "/metrics") {
			t.Errorf("%s probe hits /metrics, which runs npu-smi", name)
		}
	}

	// Resources.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("%s needs both a request and a limit", r)
		} else if req.Cmp(lim) > 0 {
			t.Errorf("%s request %s above limit %s", r, req.String(), lim.String())
		}
	}

	// Security context: what the comments promise.
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error("readOnlyRootFilesystem must be true")
	}
	// Not privileged (the Ascend Docker Runtime brings the devices), and
	// exactly the capabilities procfs discovery needs.
	if sc == nil || sc.Privileged == nil || *sc.Privileged {
		t.Error("the default must not be privileged (docs/deploy.md, \"Least privilege\")")
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation must be false")
	}
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}) {
		t.Errorf("capabilities %+v, want drop [ALL] add [SYS_PTRACE DAC_READ_SEARCH]", sc.Capabilities)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["ASCEND_VISIBLE_DEVICES"] == "" || env["ASCEND_RUNTIME_OPTIONS"] != "NODRV" {
		t.Errorf("env %v: the Ascend Docker Runtime needs ASCEND_VISIBLE_DEVICES and NODRV (the driver is mounted read-only)", env)
	}

	// Volumes: every mount has a volume, every volume is mounted, host
	// paths are read-only except the state directory and device nodes.
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounted := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			t.Errorf("volumeMount %s has no volume", vm.Name)
			continue
		}
		mounted[vm.Name] = vm
		if hp := v.HostPath; hp != nil {
			// Inputs must exist: only the exporter's own outputs may be created.
			if hp.Type != nil && *hp.Type == corev1.HostPathDirectoryOrCreate && vm.Name != "state" && vm.Name != "hccn-tool-log" {
				t.Errorf("input host path %s is DirectoryOrCreate: it would be created on nodes that lack it; use Directory", hp.Path)
			}
			isDevice := hp.Type != nil && *hp.Type == corev1.HostPathCharDev
			// hccn_tool writes its own call log; nothing else may write.
			if vm.Name != "state" && vm.Name != "hccn-tool-log" && !isDevice && !vm.ReadOnly {
				t.Errorf("host path %s is mounted writable; only the state directory and hccn_tool's log may be", hp.Path)
			}
			// The host's /proc cannot sit on the container's own /proc.
			if hp.Path != vm.MountPath && hp.Path != "/proc" {
				t.Errorf("host path %s mounted at %s: keep host paths (labels and npu-smi expect them)", hp.Path, vm.MountPath)
			}
		}
	}
	for name := range vols {
		if _, ok := mounted[name]; !ok {
			t.Errorf("volume %s is not mounted", name)
		}
	}
	for _, need := range []string{"/usr/local/Ascend/driver", "/usr/local/sbin/npu-smi", "/usr/local/dcmi", "/etc/ascend_install.info",
		"/var/log/pods", "/var/log/containers", "/var/log/npu"} {
		if manifest.MountFor(c.VolumeMounts, need) == nil {
			t.Errorf("nothing is mounted at %s", need)
		}
	}

	// Flags: every path they name is mounted. Whether the binary accepts
	// them is checked by internal/e2e, which starts it with these args.
	flags := flagArgs(t, c.Args)
	if got := flags["web.listen-address"]; len(got) != 1 || got[0] != ":9842" {
		t.Errorf("--web.listen-address %v, want :9842", got)
	}
	state := flags["cannlog.state-file"]
	if len(state) != 1 {
		t.Fatalf("--cannlog.state-file %v", state)
	}
	if vm := manifest.MountFor(c.VolumeMounts, state[0]); vm == nil || vm.Name != "state" || vm.ReadOnly {
		t.Errorf("the state file %s is not on the writable state volume", state[0])
	} else if v := vols["state"]; v.HostPath == nil || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
		t.Error("the state volume should be a hostPath DirectoryOrCreate (it must outlive the pod)")
	}
	var paths []string
	paths = append(paths, flags["cannlog.root"]...)
	paths = append(paths, flags["cannlog.screen-log-path"]...)
	paths = append(paths, flags["npusmi.path"]...)
	paths = append(paths, flags["hccn.path"]...)
	// The kubelet's PodResources socket, whose directory must be mounted
	// (read-only) for ascend_npu_pod_info.
	paths = append(paths, flags["pods.kubelet-socket"]...)
	if len(flags["pods.kubelet-socket"]) != 1 {
		t.Errorf("--pods.kubelet-socket %v: name the kubelet's socket so chips are attributed to pods", flags["pods.kubelet-socket"])
	}
	if len(flags["hccn.path"]) != 1 {
		t.Errorf("--hccn.path %v: name the driver's hccn_tool so the RoCE collector finds it", flags["hccn.path"])
	}
	if len(flags["cannlog.root"]) == 0 || len(flags["cannlog.screen-log-path"]) == 0 {
		t.Error("no --cannlog.root or --cannlog.screen-log-path: the cannlog collector would read nothing")
	}
	for _, p := range paths {
		if vm := manifest.MountFor(c.VolumeMounts, p); vm == nil {
			t.Errorf("%s is not under any volume mount", p)
		} else if !vm.ReadOnly {
			t.Errorf("%s is under the writable mount %s; logs and binaries are read-only", p, vm.MountPath)
		}
	}
	// Discovery: the host's /proc, read-only, is what --path.procfs names
	// (the container's own /proc shows its own pid namespace only).
	if procfs := flags["path.procfs"]; len(procfs) != 1 {
		t.Errorf("--path.procfs %v: name the host's /proc so every NPU process's logs are found", procfs)
	} else if vm := manifest.MountFor(c.VolumeMounts, procfs[0]); vm == nil || vm.MountPath != procfs[0] || !vm.ReadOnly ||
		vols[vm.Name].HostPath == nil || vols[vm.Name].HostPath.Path != "/proc" {
		t.Errorf("--path.procfs=%s is not the host's /proc mounted read-only there", procfs[0])
	}
	for _, d := range append(flags["npusmi.timeout"], append(flags["hccn.timeout"], flags["hccn.interval"]...)...) {
		if _, err := time.ParseDuration(d); err != nil {
			t.Errorf("duration flag %q: %v", d, err)
		}
	}
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

func TestServiceAndServiceMonitor(t *testing.T) {
	m, _ := loadAll(t)
	if len(m.services) != 1 || len(m.serviceMonitors) != 1 || len(m.daemonSets) == 0 {
		t.Fatal("missing objects")
	}
	svc, sm, ds := m.services[0], m.serviceMonitors[0], m.daemonSets[0]
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP %q, want None (headless)", svc.Spec.ClusterIP)
	}
	podLabels := labelSet(ds.Spec.Template.Labels)
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("Service selector %s=%s does not match the DaemonSet pods", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("Service ports %+v, want one named metrics targeting metrics", svc.Spec.Ports)
	}
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || !sel.Matches(labelSet(svc.Labels)) {
		t.Error("ServiceMonitor selector does not select the Service")
	}
	if sm.Namespace != svc.Namespace && !slices.Contains(sm.Spec.NamespaceSelector.MatchNames, svc.Namespace) {
		t.Error("ServiceMonitor does not look in the Service's namespace")
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("%d endpoints", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != "metrics" {
		t.Errorf("endpoint port %q, want metrics", ep.Port)
	}
	if !ep.HonorLabels {
		t.Error("honorLabels must be true: the training pod's namespace/pod/container labels would become exported_* (TestScrapeKeepsTrainingPodLabels)")
	}
	interval, err1 := time.ParseDuration(string(ep.Interval))
	timeout, err2 := time.ParseDuration(string(ep.ScrapeTimeout))
	if err1 != nil || err2 != nil {
		t.Fatalf("interval %q / scrapeTimeout %q: %v %v", ep.Interval, ep.ScrapeTimeout, err1, err2)
	}
	if timeout > interval || timeout <= 10*time.Second {
		t.Errorf("scrapeTimeout %v must exceed the npu-smi timeout (10s) and not the interval %v", timeout, interval)
	}
	var instanceFromNode bool
	for _, r := range ep.RelabelConfigs {
		if r.TargetLabel == "instance" && slices.Contains(r.SourceLabels, "__meta_kubernetes_pod_node_name") {
			instanceFromNode = true
		}
	}
	if !instanceFromNode {
		t.Error("instance should be the node name (alerts and runbooks name nodes by $labels.instance)")
	}
}

// TestKustomizeBuild renders the directory with kubectl's built-in kustomize
// (offline) and decodes the result strictly again: namespace and image
// transformations must leave valid objects.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		testtools.Unavailable(t, "kubectl not installed: kustomize build not checked (the strict decoding tests still ran)")
	}
	out, err := exec.Command(kubectl, "kustomize", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	m := &manifests{}
	decode(t, "kustomize output", out, m)
	if len(m.metas) != 8 {
		t.Errorf("kustomize produced %d objects, want 8", len(m.metas))
	}
	for _, ds := range m.daemonSets {
		if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "hccl_exporter:") {
			t.Errorf("image %q after kustomize", img)
		}
	}
}
