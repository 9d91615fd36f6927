package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// startWithArgs runs the exporter with the given flags and reports whether it
// serves its landing page; a flag the binary does not know makes it exit at
// once with a usage error, which is what this catches.
func startWithArgs(t *testing.T, args []string) {
	t.Helper()
	bin := buildExporter(t)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}()
	var addr string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--web.listen-address="); ok {
			addr = v
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("exporter exited with the deployment's flags: %v\nargs: %q\n%s", err, args, logs.String())
		default:
		}
		resp, err := client.Get("http://" + addr + "/")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("landing page status %d", resp.StatusCode)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not serving with the deployment's flags: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// localize replaces the node paths the exporter writes to or listens on,
// and the mounted fault-code file, by test-local ones; every other flag is
// kept as shipped.
func localize(t *testing.T, args []string) []string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state.json")
	out := []string{"--web.listen-address=" + freeLoopbackPort(t)}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--web.listen-address="):
		case strings.HasPrefix(a, "--cannlog.state-file="):
			out = append(out, "--cannlog.state-file="+state)
		case strings.HasPrefix(a, "--npuhealth.fault-code-file="):
			// The ConfigMap the DaemonSet mounts there holds the chart's
			// file (deploy/helm's equality test): load that one.
			out = append(out, "--npuhealth.fault-code-file="+filepath.Join("..", "..", "deploy", "helm", "hccl-exporter", "files", "faultCode.json"))
		default:
			out = append(out, a)
		}
	}
	return out
}

// TestDaemonSetArgsStartExporter runs the binary with the container args of
// deploy/kubernetes/daemonset.yaml: a renamed or removed flag would
// crash-loop every pod of the DaemonSet.
func TestDaemonSetArgsStartExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kubernetes", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds appsv1.DaemonSet
	// Strictness is deploy/kubernetes's test; here only the args matter.
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatal(err)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	if len(args) == 0 {
		t.Fatal("no container args")
	}
	startWithArgs(t, localize(t, args))
}

// TestSystemdArgsStartExporter does the same for the systemd unit's
// ExecStart flags plus the example ARGS of hccl_exporter.default.
func TestSystemdArgsStartExporter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	dir := filepath.Join("..", "..", "deploy", "systemd")
	unit, err := os.ReadFile(filepath.Join(dir, "hccl_exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=\S+ (.*)\$ARGS$`).FindSubmatch(unit)
	if m == nil {
		t.Fatal("no ExecStart=<binary> … $ARGS line")
	}
	args := strings.Fields(string(m[1]))
	env, err := os.ReadFile(filepath.Join(dir, "hccl_exporter.default"))
	if err != nil {
		t.Fatal(err)
	}
	em := regexp.MustCompile(`(?m)^ARGS="([^"]*)"$`).FindSubmatch(env)
	if em == nil {
		t.Fatal(`hccl_exporter.default has no ARGS="…" line`)
	}
	args = append(args, strings.Fields(string(em[1]))...)
	startWithArgs(t, localize(t, args))
}
