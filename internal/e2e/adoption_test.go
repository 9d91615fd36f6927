package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// What a newcomer copies from the repository must work as written: the
// landing page's links, every flag the docs name, and one version
// everywhere. Each test runs the binary built by a plain `go build`, as
// `go install` users get it.

var repoRoot = filepath.Join("..", "..")

// TestLandingPageLinksAnswer200 follows every link and resource of the
// landing page (the exporter-toolkit once linked pprof handlers this
// exporter does not serve) and wants 200 from each.
func TestLandingPageLinksAnswer200(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	bin := buildExporter(t)
	addr := freeLoopbackPort(t)
	logs := &lockedBuffer{}
	cmd := exec.Command(bin, "--web.listen-address="+addr, "--no-collector.npusmi", "--no-collector.hccn",
		"--no-collector.pods", "--cannlog.root="+t.TempDir())
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	base, err := url.Parse("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var page string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(base.String())
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("landing page: status %d", resp.StatusCode)
			}
			page = string(body)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not serving: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	links := regexp.MustCompile(`(?i)\b(?:href|src|action)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(links) == 0 {
		t.Fatalf("landing page has no links:\n%s", page)
	}
	for _, m := range links {
		ref, err := base.Parse(m[1])
		if err != nil {
			t.Errorf("link %q: %v", m[1], err)
			continue
		}
		if ref.Host != base.Host {
			// No network in tests: an outside link must at least be https
			// to a documented place; none is expected today.
			t.Errorf("link %q leaves the exporter; check it answers 200 and allow it here", m[1])
			continue
		}
		resp, err := client.Get(ref.String())
		if err != nil {
			t.Errorf("link %q: %v", m[1], err)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("link %q: status %d, want 200", m[1], resp.StatusCode)
		}
	}
}

// helpFlags runs the binary with args and returns the long flags its help
// lists ("--[no-]x" gives x and no-x).
func helpFlags(t *testing.T, bin string, args ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--(\[no-\])?([a-z][a-z0-9.-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[2]] = true
		if m[1] != "" {
			flags["no-"+m[2]] = true
		}
	}
	if len(flags) == 0 {
		t.Fatalf("%s %s lists no flags:\n%s", bin, strings.Join(args, " "), out)
	}
	return flags
}

// expandBraces turns "cannlog.max-{pids,codes}" into its alternatives.
func expandBraces(s string) []string {
	i := strings.IndexByte(s, '{')
	j := strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[i+1:j], ",") {
		out = append(out, expandBraces(s[:i]+alt+s[j+1:])...)
	}
	return out
}

// documentedFlagFiles are the texts users copy flags from.
func documentedFlagFiles(t *testing.T) []string {
	t.Helper()
	files := []string{
		"README.md",
		"deploy/helm/hccl-exporter/values.yaml",
		"deploy/kubernetes/daemonset.yaml",
		"deploy/systemd/hccl_exporter.default",
		"deploy/systemd/README.md",
		"mixin/README.md",
		"dashboards/README.md",
		"alerts/hccl_exporter.rules.yml",
	}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(repoRoot, d)
		files = append(files, rel)
	}
	return files
}

// foreignFlags are flags of other programs (Prometheus, vmalert, kubelet)
// that the docs name and that share a prefix with ours.
var foreignFlags = map[string]string{
	"web.enable-lifecycle":                "prometheus",
	"web.enable-remote-write-receiver":    "prometheus",
	"web.enable-admin-api":                "prometheus",
	"web.external-url":                    "prometheus, alertmanager",
	"web.listen-address=:9093":            "alertmanager",
	"web.route-prefix":                    "prometheus",
	"web.config.file=/etc/prometheus/web": "prometheus",
}

// TestDocumentedFlagsExist: every flag of ours that README.md, docs/,
// runbooks, values.yaml comments and the shipped manifests name is in
// `hccl_exporter --help` (or diagnose's). Copying a flag that does not
// exist crash-loops the DaemonSet.
func TestDocumentedFlagsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	bin := buildExporter(t)
	server := helpFlags(t, bin, "--help")
	known := map[string]bool{}
	prefixes := map[string]bool{}
	for f := range server {
		known[f] = true
		if i := strings.IndexByte(f, '.'); i > 0 {
			prefixes[strings.TrimPrefix(f[:i], "no-")] = true
		}
	}
	for _, args := range [][]string{{"diagnose", "--help"}, {"diagnose", "buffsize", "--help"}} {
		for f := range helpFlags(t, bin, args...) {
			known[f] = true
		}
	}
	flagRE := regexp.MustCompile(`--(\[no-\])?([a-z][a-z0-9-]*(?:\.[a-z0-9{},-]*[a-z0-9}])+)`)
	checked := 0
	for _, rel := range documentedFlagFiles(t) {
		data, err := os.ReadFile(filepath.Join(repoRoot, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		var missing []string
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
				name := m[2]
				prefix := strings.TrimPrefix(name[:strings.IndexByte(name, '.')], "no-")
				if !prefixes[prefix] {
					continue // another program's flag (--storage.tsdb.path, --query.lookback-delta)
				}
				if _, ok := foreignFlags[name]; ok {
					continue
				}
				for _, f := range expandBraces(name) {
					checked++
					if !known[f] {
						missing = append(missing, fmt.Sprintf("line %d: --%s", i+1, f))
					}
				}
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s names flags hccl_exporter --help does not list:\n  %s", rel, strings.Join(missing, "\n  "))
		}
	}
	if checked < 20 {
		t.Errorf("only %d flag mentions checked: the scan is broken", checked)
	}
}

// TestVersionsAgree: the binary of a plain `go build`, the Helm chart, the
// kustomize image tag, the image and release names the Makefile builds, and
// the changelog all carry the VERSION file's release.
func TestVersionsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the exporter binary")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`).MatchString(want) {
		t.Fatalf("VERSION %q is not a semantic version without a leading v", want)
	}

	out, err := exec.Command(buildExporter(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "version "+want+" ") {
		t.Errorf("a plain go build reports %q, want version %s", strings.SplitN(string(out), "\n", 2)[0], want)
	}

	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, "deploy/helm/hccl-exporter/Chart.yaml", &chart)
	if chart.Version != want || chart.AppVersion != want {
		t.Errorf("Chart.yaml version %q appVersion %q, want %s", chart.Version, chart.AppVersion, want)
	}
	var values struct {
		Image struct {
			Tag string `json:"tag"`
		} `json:"image"`
	}
	readYAML(t, "deploy/helm/hccl-exporter/values.yaml", &values)
	if values.Image.Tag != "" && values.Image.Tag != want {
		t.Errorf("values.yaml image.tag %q: leave it empty (appVersion) or %s", values.Image.Tag, want)
	}
	var kust struct {
		Images []struct {
			Name   string `json:"name"`
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	readYAML(t, "deploy/kubernetes/kustomization.yaml", &kust)
	if len(kust.Images) != 1 || kust.Images[0].NewTag != want {
		t.Errorf("kustomization.yaml images %+v, want one with newTag %s", kust.Images, want)
	}
	ds, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kubernetes", "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if img := regexp.MustCompile(`(?m)^\s+image: (\S+)$`).FindSubmatch(ds); img == nil || string(img[1]) != "hccl_exporter:"+want {
		t.Errorf("daemonset.yaml image %q, want hccl_exporter:%s", img, want)
	}

	if make, err := exec.LookPath("make"); err != nil {
		t.Log("make not installed: the Makefile's image tag and release names are not checked")
	} else {
		for target, wantIn := range map[string]string{
			"image":   "-t hccl_exporter:" + want + " ",
			"release": "hccl_exporter-" + want + ".",
		} {
			cmd := exec.Command(make, "-n", target)
			cmd.Dir = repoRoot
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("make -n %s: %v\n%s", target, err, out)
				continue
			}
			if !strings.Contains(string(out), wantIn) {
				t.Errorf("make -n %s does not build %q:\n%s", target, wantIn, out)
			}
		}
	}

	changelog, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(want) + `\] - \d{4}-\d{2}-\d{2}$`).Match(changelog) {
		t.Errorf("CHANGELOG.md has no \"## [%s] - YYYY-MM-DD\" section", want)
	}
}

func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// TestScriptsStopNoService: installing test or benchmark dependencies must
// never stop (or start) a service of the host, such as its own Prometheus.
func TestScriptsStopNoService(t *testing.T) {
	var scripts []string
	for _, glob := range []string{"scripts/*", "bench/*.sh", "bench/*.mk", "Makefile", "deploy/deploy.mk", ".ci/*"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, glob))
		if err != nil {
			t.Fatal(err)
		}
		scripts = append(scripts, m...)
	}
	sort.Strings(scripts)
	if len(scripts) < 4 {
		t.Fatalf("found only %v", scripts)
	}
	stop := regexp.MustCompile(`\bsystemctl\s+(?:--\S+\s+)*(?:stop|start|restart|disable|kill)\b|\bservice\s+\S+\s+(?:stop|start|restart)\b|invoke-rc\.d\s+\S+\s+(?:stop|start|restart)`)
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if stop.MatchString(line) {
				t.Errorf("%s:%d starts or stops a host service: %s", s, i+1, strings.TrimSpace(line))
			}
		}
	}
}
