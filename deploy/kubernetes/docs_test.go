package kubernetes

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hccl-exporter/hccl_exporter/deploy/internal/manifest"
)

// runbookInstanceExample is the instance value docs/runbooks.md tells
// readers to put for NODE.
func runbookInstanceExample(t *testing.T) string {
	t.Helper()
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("by the alert's `instance` label \\(the node's name under the shipped ServiceMonitor, e\\.g\\.\\s+`([^`]+)`").FindSubmatch(md)
	if m == nil {
		t.Fatal("docs/runbooks.md no longer says which instance to put for NODE")
	}
	return string(m[1])
}

// TestDocsDescribeTheDaemonSet: no document says the shipped DaemonSets
// run privileged or mount /dev unless they do (0.4.0's runbooks said both,
// of a DaemonSet that does neither).
func TestDocsDescribeTheDaemonSet(t *testing.T) {
	m, _ := loadAll(t)
	privileged, devMounted := false, false
	for _, ds := range m.daemonSets {
		c := ds.Spec.Template.Spec.Containers[0]
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			privileged = true
		}
		if vm := manifest.MountFor(c.VolumeMounts, "/dev/davinci0"); vm != nil {
			devMounted = true
		}
		for _, v := range ds.Spec.Template.Spec.Volumes {
			if v.HostPath != nil && (v.HostPath.Path == "/dev" || (v.HostPath.Type != nil && *v.HostPath.Type == corev1.HostPathCharDev)) {
				devMounted = true
			}
		}
	}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join("..", "..", "README.md"))
	claims := []struct {
		re   *regexp.Regexp
		true bool
		what string
	}{
		{regexp.MustCompile(`(?is)DaemonSet\s+(?:mounts|mounting)\s+` + "`?/dev`?" + `[\s,)]`), devMounted, "mounts /dev"},
		{regexp.MustCompile(`(?is)DaemonSet[^.]{0,80}\bruns\s+privileged`), privileged, "runs privileged"},
	}
	checked := 0
	for _, f := range docs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(data)), " ")
		checked++
		for _, c := range claims {
			if loc := c.re.FindStringIndex(text); loc != nil && !c.true {
				t.Errorf("%s says the DaemonSet %s (%q); the shipped DaemonSets do not", f, c.what, text[loc[0]:loc[1]])
			}
		}
	}
	if checked < 5 {
		t.Fatalf("read %d documents", checked)
	}
}
