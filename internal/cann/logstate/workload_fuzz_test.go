package logstate

import (
	"strings"
	"testing"
)

// FuzzWorkloadOfPod: any pod name gives an identity of its namespace whose
// owner is a non-empty prefix of the name.
func FuzzWorkloadOfPod(f *testing.F) {
	for _, s := range []string{"vllm-ds-7d9f8b6c5-x2k4q", "llama-worker-3", "web-0", "bare", "x2k4q", "-bcdfg", "a--0", "-master-0", ""} {
		f.Add("ns", s)
	}
	f.Fuzz(func(t *testing.T, ns, pod string) {
		id := WorkloadOfPod(ns, pod)
		if pod == "" {
			if id != "" {
				t.Fatalf("empty pod gave %q", id)
			}
			return
		}
		owner, ok := strings.CutPrefix(id, "k8s/"+ns+"/")
		if !ok || owner == "" || !strings.HasPrefix(pod, owner) {
			t.Fatalf("WorkloadOfPod(%q, %q) = %q: want k8s/<ns>/<non-empty prefix of the pod>", ns, pod, id)
		}
	})
}
