// Package manifest decodes a stream of Kubernetes manifests (kustomize files,
// `helm template` output) strictly into the real API types the project ships:
// core, apps and networking objects and the prometheus-operator ServiceMonitor and
// PrometheusRule. Tests of deploy/kubernetes and deploy/helm use it to check
// what a cluster would only reveal at apply time, and to compare the two.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/strictyaml"
)

// kinds maps apiVersion/kind to a constructor of the typed object: the kinds
// the project ships, and nothing else.
var kinds = map[string]func() metav1.Object{
	"v1/Namespace":                            func() metav1.Object { return &corev1.Namespace{} },
	"v1/ServiceAccount":                       func() metav1.Object { return &corev1.ServiceAccount{} },
	"v1/Service":                              func() metav1.Object { return &corev1.Service{} },
	"v1/Secret":                               func() metav1.Object { return &corev1.Secret{} },
	"v1/ConfigMap":                            func() metav1.Object { return &corev1.ConfigMap{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() metav1.Object { return &networkingv1.NetworkPolicy{} },
	"apps/v1/DaemonSet":                       func() metav1.Object { return &appsv1.DaemonSet{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() metav1.Object { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() metav1.Object { return &monitoringv1.PrometheusRule{} },
}

// Decoded is one decoded document.
type Decoded struct {
	Kind string // apiVersion/kind, e.g. "apps/v1/DaemonSet"
	Obj  metav1.Object
}

// Key names the object: kind, namespace and name.
func (d Decoded) Key() string {
	return d.Kind + " " + d.Obj.GetNamespace() + "/" + d.Obj.GetName()
}

// SplitDocs splits a YAML stream on document separators and drops documents
// holding only comments (helm template prints one per disabled template).
func SplitDocs(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(d []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(d, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// Decode decodes every document of data strictly into its API type. An
// unknown kind, an unknown or duplicate field or a mis-cased field name is an
// error naming the document.
func Decode(data []byte) ([]Decoded, error) {
	var (
		out  []Decoded
		errs []error
	)
	for i, doc := range SplitDocs(data) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		kind := tm.APIVersion + "/" + tm.Kind
		newObj, ok := kinds[kind]
		if !ok {
			errs = append(errs, fmt.Errorf("document %d: unexpected apiVersion/kind %s", i, kind))
			continue
		}
		obj := newObj()
		if err := strictyaml.Unmarshal(doc, obj); err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s): %w", i, tm.Kind, err))
			continue
		}
		out = append(out, Decoded{Kind: kind, Obj: obj})
	}
	return out, errors.Join(errs...)
}

// MountFor returns the mount of mounts that holds p (a path or a glob: the
// part before the first wildcard counts), the deepest one where several do;
// nil when none does.
func MountFor(mounts []corev1.VolumeMount, p string) *corev1.VolumeMount {
	if i := strings.IndexAny(p, "*?["); i >= 0 {
		p = path.Dir(p[:i] + "x")
	}
	var best *corev1.VolumeMount
	for i, vm := range mounts {
		if p == vm.MountPath || strings.HasPrefix(p, strings.TrimSuffix(vm.MountPath, "/")+"/") {
			if best == nil || len(vm.MountPath) > len(best.MountPath) {
				best = &mounts[i]
			}
		}
	}
	return best
}
