// Package helm holds only tests of the Helm chart in hccl-exporter/: helm
// lint, helm template with several value sets, every rendered document
// decoded strictly into its Kubernetes or prometheus-operator type, and the
// default rendering compared object by object with deploy/kubernetes, so the
// two ways of installing cannot drift apart.
package helm

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/manifest"
)

// helmModule is the pinned Helm release the chart is tested with (and the
// one docs/deploy.md tells users to run the same way).
const helmModule = "helm.sh/helm/v4/cmd/helm@v4.3.2"

const (
	chartDir  = "hccl-exporter"
	release   = "hccl-exporter"
	namespace = "hccl-exporter"
)

// noRegistry among helm's args renders without testdata/registry-values.yaml.
const noRegistry = "<no registry>"

// helm runs the pinned helm with args and returns its standard output.
// When the module cannot be fetched (no network, no module cache) the test
// is skipped, or failed under CI so a CI run never silently loses coverage.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the pinned helm (end-to-end over the chart): skipped under -short")
	}
	touchChart(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		testtools.Unavailable(t, "go not in PATH: %v", err)
	}
	if len(args) > 0 && slices.Contains([]string{"template", "install", "lint"}, args[0]) && !slices.Contains(args, noRegistry) {
		// First, so that a later --values overrides it (the chart refuses
		// an image that would resolve to docker.io: TestImageRegistry).
		args = append([]string{args[0], "--values", "testdata/registry-values.yaml"}, args[1:]...)
	}
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == noRegistry })
	cmd := exec.Command(goBin, append([]string{"run", helmModule}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err != nil && strings.Contains(stderr.String(), "go: ") && !strings.Contains(stderr.String(), "Error:") {
		testtools.Unavailable(t, "go run %s: %v\n%s", helmModule, err, stderr.String())
	}
	if err != nil {
		return stdout.Bytes(), &helmError{err: err, stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + e.stderr }

// touchChart reads every file of the chart (the rules file through its
// link too), so that go test's cache, which sees only the files the test
// process opens, reruns the tests when the chart changes.
func touchChart(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(chartDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// render runs helm template with the given --set/--values arguments and
// decodes the output strictly.
func render(t *testing.T, extra ...string) []manifest.Decoded {
	t.Helper()
	args := append([]string{"template", release, chartDir, "--namespace", namespace}, extra...)
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	objs, err := manifest.Decode(out)
	if err != nil {
		t.Fatalf("helm template output does not decode strictly: %v\n%s", err, out)
	}
	return objs
}

func TestHelmLint(t *testing.T) {
	for _, set := range [][]string{
		nil,
		{"--set", "namespace.create=true,serviceMonitor.enabled=false,prometheusRule.enabled=false,service.enabled=false"},
		{"--values", "testdata/tls-values.yaml"},
		{"--set", "products.ascend310p.enabled=true,products.ascend310p.visibleDevices=0-3,jobsRunAsNonRoot=false,faultCodes.enabled=false"},
	} {
		out, err := helm(t, append([]string{"lint", "--strict", chartDir, "--namespace", namespace}, set...)...)
		if err != nil {
			t.Errorf("helm lint --strict %v: %v\n%s", set, err, out)
		}
	}
}

// helmOnlyLabels are the labels the chart adds to what deploy/kubernetes
// sets: Helm's bookkeeping, and the release in the selectors so two releases
// never select each other's pods.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version", "app.kubernetes.io/instance"}

func stripHelmLabels(m map[string]string) map[string]string {
	for _, k := range helmOnlyLabels {
		delete(m, k)
	}
	return m
}

// normalise removes helmOnlyLabels from every label map and selector, and
// the test's registry from the image (deploy/kubernetes names none:
// kustomize's images set it).
func normalise(o metav1.Object) {
	o.SetLabels(stripHelmLabels(o.GetLabels()))
	switch v := o.(type) {
	case *appsv1.DaemonSet:
		stripHelmLabels(v.Spec.Selector.MatchLabels)
		stripHelmLabels(v.Spec.Template.Labels)
		for i := range v.Spec.Template.Spec.Containers {
			c := &v.Spec.Template.Spec.Containers[i]
			c.Image = strings.TrimPrefix(c.Image, "registry.example.com/")
		}
	case *corev1.Service:
		stripHelmLabels(v.Spec.Selector)
	case *monitoringv1.ServiceMonitor:
		stripHelmLabels(v.Spec.Selector.MatchLabels)
	}
}

// kustomizeObjects decodes the manifests of deploy/kubernetes.
func kustomizeObjects(t *testing.T) []manifest.Decoded {
	t.Helper()
	files, err := filepath.Glob("../kubernetes/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var all []manifest.Decoded
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifest.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, objs...)
	}
	return all
}

// TestDefaultsRenderDeployKubernetes: with default values (and the
// Namespace, which Helm users usually leave to --create-namespace) the chart
// renders exactly the objects of deploy/kubernetes, up to Helm's own labels.
func TestDefaultsRenderDeployKubernetes(t *testing.T) {
	chart := map[string]metav1.Object{}
	for _, d := range render(t, "--set", "namespace.create=true") {
		normalise(d.Obj)
		chart[d.Key()] = d.Obj
	}
	kust := map[string]metav1.Object{}
	for _, d := range kustomizeObjects(t) {
		kust[d.Key()] = d.Obj
	}
	for key, want := range kust {
		got, ok := chart[key]
		if !ok {
			t.Errorf("deploy/kubernetes has %s; the chart does not render it", key)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", "  ")
			w, _ := json.MarshalIndent(want, "", "  ")
			t.Errorf("%s differs between the chart and deploy/kubernetes:\n%s", key, lineDiff(string(w), string(g)))
		}
	}
	for key := range chart {
		if _, ok := kust[key]; !ok {
			t.Errorf("the chart renders %s, which deploy/kubernetes lacks", key)
		}
	}
}

// lineDiff lists the lines only in a (-) or only in b (+): enough to see
// which field differs.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- deploy/kubernetes: "+l)
		}
	}
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ chart:             "+l)
		}
	}
	return strings.Join(out, "\n")
}

func kinds(objs []manifest.Decoded) []string {
	var out []string
	for _, d := range objs {
		out = append(out, d.Kind)
	}
	slices.Sort(out)
	return out
}

// TestOptionalObjects: Service, ServiceMonitor, PrometheusRule and Namespace
// are each optional; the DaemonSets (8-chip and A3), the fault-code
// ConfigMap and the ServiceAccount render by default.
func TestOptionalObjects(t *testing.T) {
	cases := []struct {
		set  string
		want []string
	}{
		{"", []string{"apps/v1/DaemonSet", "apps/v1/DaemonSet", "monitoring.coreos.com/v1/PrometheusRule", "monitoring.coreos.com/v1/ServiceMonitor", "v1/ConfigMap", "v1/Service", "v1/ServiceAccount"}},
		{"serviceMonitor.enabled=false,service.enabled=false,prometheusRule.enabled=false", []string{"apps/v1/DaemonSet", "apps/v1/DaemonSet", "v1/ConfigMap", "v1/ServiceAccount"}},
		{"serviceMonitor.enabled=false", []string{"apps/v1/DaemonSet", "apps/v1/DaemonSet", "monitoring.coreos.com/v1/PrometheusRule", "v1/ConfigMap", "v1/Service", "v1/ServiceAccount"}},
		{"prometheusRule.enabled=false,serviceAccount.create=false,namespace.create=true", []string{"apps/v1/DaemonSet", "apps/v1/DaemonSet", "monitoring.coreos.com/v1/ServiceMonitor", "v1/ConfigMap", "v1/Namespace", "v1/Service"}},
	}
	for _, c := range cases {
		var args []string
		if c.set != "" {
			args = []string{"--set", c.set}
		}
		if got := kinds(render(t, args...)); !slices.Equal(got, c.want) {
			t.Errorf("--set %q renders %v, want %v", c.set, got, c.want)
		}
	}
	// A ServiceMonitor without its Service would select nothing.
	if out, err := helm(t, "template", release, chartDir, "--set", "service.enabled=false"); err == nil {
		t.Errorf("service.enabled=false with the ServiceMonitor on rendered:\n%s", out)
	} else if !strings.Contains(err.Error(), "serviceMonitor.enabled needs service.enabled") {
		t.Errorf("error does not say what to do: %v", err)
	}
}

func daemonSet(t *testing.T, objs []manifest.Decoded) *appsv1.DaemonSet {
	t.Helper()
	for _, d := range objs {
		if ds, ok := d.Obj.(*appsv1.DaemonSet); ok {
			return ds
		}
	}
	t.Fatal("no DaemonSet rendered")
	return nil
}

// TestValues: image, node selector, log roots, screen-log globs, state
// directory and resources from values reach the right fields, and every path
// a flag names is mounted read-only from the host at the same path.
func TestValues(t *testing.T) {
	objs := render(t, "--values", "testdata/custom-values.yaml")
	ds := daemonSet(t, objs)
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "registry.example.com/ai/hccl_exporter:v1.2.3" {
		t.Errorf("image %q", c.Image)
	}
	// Only the enabled product renders, on its nodes with its chips.
	if n := len(daemonSets(objs)); n != 1 || ds.Name != "hccl-exporter-310p" || visibleDevices(ds) != "0-1" ||
		!nodeMatches(t, ds, map[string]string{"kubernetes.io/os": "linux", "accelerator": "huawei-Ascend310P"}) {
		t.Errorf("%d DaemonSets; %s ASCEND_VISIBLE_DEVICES=%s affinity %+v", n, ds.Name, visibleDevices(ds), pod.Affinity)
	}
	if got := c.Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("memory limit %s, want 512Mi", got)
	}
	wantArgs := []string{
		"--cannlog.root=/data/ascend/log",
		"--cannlog.screen-log-path=/data/jobs/*/stdout.log",
		"--cannlog.screen-log-path=/var/log/pods/*/*/*.log",
		"--cannlog.state-file=/var/lib/hccl/state.json",
		"--web.disable-exporter-metrics",
	}
	for _, a := range wantArgs {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %v lack %s", c.Args, a)
		}
	}
	if !slices.Contains(c.Args, "--pods.kubelet-socket=/var/lib/kubelet/pod-resources/kubelet.sock") {
		t.Errorf("args %v lack the PodResources socket", c.Args)
	} else if vm := manifest.MountFor(c.VolumeMounts, "/var/lib/kubelet/pod-resources/kubelet.sock"); vm == nil || !vm.ReadOnly {
		t.Errorf("the PodResources socket is not mounted read-only: %+v", vm)
	}
	if slices.Contains(c.Args, "--cannlog.root=/root/ascend/log") {
		t.Error("a replaced default log root is still passed")
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	for _, a := range c.Args {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if name != "cannlog.root" && name != "cannlog.screen-log-path" && name != "cannlog.state-file" {
			continue
		}
		vm := manifest.MountFor(c.VolumeMounts, value)
		if vm == nil {
			t.Errorf("%s: %s is not under any mount", name, value)
			continue
		}
		hp := vols[vm.Name].HostPath
		if hp == nil || hp.Path != vm.MountPath {
			t.Errorf("%s: mount %s is not the host path at the same place", name, vm.MountPath)
		}
		if writable := name == "cannlog.state-file"; vm.ReadOnly == writable {
			t.Errorf("%s: mount %s readOnly=%v", name, vm.MountPath, vm.ReadOnly)
		}
	}
	for _, d := range objs {
		if sm, ok := d.Obj.(*monitoringv1.ServiceMonitor); ok && sm.Labels["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor labels %v lack serviceMonitor.labels", sm.Labels)
		}
		if pr, ok := d.Obj.(*monitoringv1.PrometheusRule); ok && pr.Labels["release"] != "kube-prometheus-stack" {
			t.Errorf("PrometheusRule labels %v lack prometheusRule.labels", pr.Labels)
		}
	}
}

// TestTLSWebConfig: a web config becomes a Secret passed as
// --web.config.file, the probes stop speaking plain HTTP, the certificate
// Secret is mounted where the config says, and the ServiceMonitor scrapes
// over HTTPS.
func TestTLSWebConfig(t *testing.T) {
	objs := render(t, "--values", "testdata/tls-values.yaml")
	ds := daemonSet(t, objs)
	c := ds.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--web.config.file=/etc/hccl_exporter/web-config.yml") {
		t.Errorf("args %v lack --web.config.file", c.Args)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet != nil || p.TCPSocket == nil {
			t.Errorf("%s probe %+v: with TLS it must be tcpSocket", name, p)
		}
	}
	var secret *corev1.Secret
	var sm *monitoringv1.ServiceMonitor
	for _, d := range objs {
		switch o := d.Obj.(type) {
		case *corev1.Secret:
			secret = o
		case *monitoringv1.ServiceMonitor:
			sm = o
		}
	}
	if secret == nil {
		t.Fatal("no web-config Secret")
	}
	cfg := secret.StringData["web-config.yml"]
	if !strings.Contains(cfg, "cert_file: /etc/hccl_exporter/tls/tls.crt") {
		t.Errorf("web-config.yml:\n%s", cfg)
	}
	if ds.Spec.Template.Annotations["checksum/web-config"] == "" {
		t.Error("no checksum annotation: pods would not roll when the web config changes")
	}
	for _, p := range []string{"/etc/hccl_exporter/web-config.yml", "/etc/hccl_exporter/tls/tls.crt"} {
		vm := manifest.MountFor(c.VolumeMounts, p)
		if vm == nil || !vm.ReadOnly {
			t.Errorf("%s is not mounted read-only (%+v)", p, vm)
		}
	}
	if sm == nil || sm.Spec.Endpoints[0].Scheme == nil || *sm.Spec.Endpoints[0].Scheme != "https" || sm.Spec.Endpoints[0].TLSConfig == nil {
		t.Errorf("ServiceMonitor endpoint does not scrape over HTTPS: %+v", sm)
	}
}

// TestProcfs: by default the host's /proc is mounted read-only at
// /host/proc and passed as --path.procfs, and the ServiceMonitor honours the
// exporter's pod labels; procfs.enabled=false drops the mount and turns
// discovery off explicitly (the binary's default would read the
// container's own /proc).
func TestProcfs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		on   bool
	}{
		{"default", nil, true},
		{"disabled", []string{"--set", "procfs.enabled=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.args...)
			pod := daemonSet(t, objs).Spec.Template.Spec
			c := pod.Containers[0]
			want := "--path.procfs="
			if tc.on {
				want += "/host/proc"
			}
			if !slices.Contains(c.Args, want) {
				t.Errorf("args %v lack %s", c.Args, want)
			}
			vm := manifest.MountFor(c.VolumeMounts, "/host/proc")
			var hostProc *corev1.Volume
			for i, v := range pod.Volumes {
				if v.HostPath != nil && v.HostPath.Path == "/proc" {
					hostProc = &pod.Volumes[i]
				}
			}
			if tc.on && (vm == nil || !vm.ReadOnly || hostProc == nil || vm.Name != hostProc.Name) {
				t.Errorf("the host's /proc is not mounted read-only at /host/proc: %+v %+v", vm, hostProc)
			}
			if !tc.on && (vm != nil || hostProc != nil) {
				t.Errorf("procfs.enabled=false still mounts the host's /proc: %+v %+v", vm, hostProc)
			}
			for _, d := range objs {
				if sm, ok := d.Obj.(*monitoringv1.ServiceMonitor); ok && !sm.Spec.Endpoints[0].HonorLabels {
					t.Error("ServiceMonitor without honorLabels: the training pod's labels would become exported_*")
				}
			}
		})
	}
}

// TestImageRegistry: without a registry (in image.registry or in the
// repository) the image would resolve to docker.io, where it is not
// published: the chart refuses to render instead of deploying pods that
// never pull.
func TestImageRegistry(t *testing.T) {
	_, err := helm(t, "template", release, chartDir, noRegistry)
	if err == nil || !strings.Contains(err.Error(), "image.registry is empty") {
		t.Errorf("no registry: err %v, want the image.registry failure", err)
	}
	for _, set := range []string{"image.repository=registry.example.com/ai/hccl_exporter", "image.repository=localhost/hccl_exporter", "image.registry=docker.io/myorg"} {
		if _, err := helm(t, "template", release, chartDir, noRegistry, "--set", set); err != nil {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}

// TestLeastPrivilege: every product's DaemonSet selects only its own pods
// (the 910B selector matched A3 pods), the host's /var/log is read-only
// recursively by default, the RuntimeClass reaches the pods, and values
// that cannot work fail the rendering.
func TestLeastPrivilege(t *testing.T) {
	dss := daemonSets(render(t, "--set", "products.ascend310p.enabled=true,products.ascend310p.visibleDevices=0-3"))
	if len(dss) != 3 {
		t.Fatalf("%d DaemonSets, want 3", len(dss))
	}
	for _, a := range dss {
		for _, b := range dss {
			sel, err := metav1.LabelSelectorAsSelector(a.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			if matches := sel.Matches(labels.Set(b.Spec.Template.Labels)); matches != (a.Name == b.Name) {
				t.Errorf("selector of %s matches the pods of %s: %v", a.Name, b.Name, matches)
			}
		}
		c := a.Spec.Template.Spec.Containers[0]
		vm := manifest.MountFor(c.VolumeMounts, "/var/log")
		if vm == nil || !vm.ReadOnly || vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyIfPossible {
			t.Errorf("%s: /var/log mount %+v, want read-only recursively (IfPossible)", a.Name, vm)
		}
		if a.Spec.Template.Spec.RuntimeClassName != nil {
			t.Errorf("%s: runtimeClassName %q by default", a.Name, *a.Spec.Template.Spec.RuntimeClassName)
		}
	}
	ds := daemonSet(t, render(t, "--set", "npuAccess.runtimeClassName=ascend,hostLogs.recursiveReadOnly=Enabled"))
	if rc := ds.Spec.Template.Spec.RuntimeClassName; rc == nil || *rc != "ascend" {
		t.Errorf("runtimeClassName %v, want ascend", rc)
	}
	if vm := manifest.MountFor(ds.Spec.Template.Spec.Containers[0].VolumeMounts, "/var/log"); vm == nil || vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly != corev1.RecursiveReadOnlyEnabled {
		t.Errorf("/var/log mount %+v, want recursiveReadOnly Enabled", vm)
	}
	// The fallback for clusters before Kubernetes 1.30: no field at all.
	ds = daemonSet(t, render(t, "--set", "hostLogs.recursiveReadOnly="))
	if vm := manifest.MountFor(ds.Spec.Template.Spec.Containers[0].VolumeMounts, "/var/log"); vm == nil || !vm.ReadOnly || vm.RecursiveReadOnly != nil {
		t.Errorf("/var/log mount %+v, want read-only without recursiveReadOnly", vm)
	}
	for set, want := range map[string]string{
		"hostLogs.recursiveReadOnly=Yes":                              "hostLogs.recursiveReadOnly",
		"npuAccess.mode=privileged,npuAccess.runtimeClassName=ascend": "npuAccess.runtimeClassName",
	} {
		if _, err := helm(t, "template", release, chartDir, "--set", set); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: err %v, want a failure naming %s", set, err, want)
		}
	}
}
