package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// modeNode is a node for the mode tests: the demo's npu-smi, hccn_tool,
// CANN log root and screen logs copied into a temporary directory.
type modeNode struct {
	dir, npuSMI, hccnTool, logRoot, screen, state string
}

func newModeNode(t *testing.T) *modeNode {
	t.Helper()
	dir := t.TempDir()
	n := &modeNode{
		dir:      dir,
		npuSMI:   filepath.Join(dir, "npu-smi"),
		hccnTool: filepath.Join(dir, "hccn_tool"),
		logRoot:  filepath.Join(dir, "log"),
		screen:   filepath.Join(dir, "screen"),
		state:    filepath.Join(dir, "state", "state.json"),
	}
	demo := filepath.Join("..", "..", "examples", "demo")
	for src, dst := range map[string]string{"npu-smi": n.npuSMI, "hccn_tool": n.hccnTool} {
		b, err := os.ReadFile(filepath.Join(demo, src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(n.logRoot, os.DirFS(filepath.Join(demo, "log"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(n.screen, os.DirFS(filepath.Join(demo, "screen"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(n.state), 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

var successRE = regexp.MustCompile(`(?m)^hccl_exporter_collector_success\{collector="([^"]+)"\} (\S+)$`)

// collectorSuccess scrapes once and returns hccl_exporter_collector_success
// by collector, and the page.
func collectorSuccess(t *testing.T, url string) (map[string]string, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	for _, m := range successRE.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out, string(b)
}

// TestDocumentedModes runs the real exporter in every mode docs/deploy.md
// documents and checks, over several scrapes (the hccn sweep and the log
// follower run in the background), that exactly the enabled collectors
// report and every one of them succeeds: a source that is absent is off or
// reported absent, never a failing collector.
func TestDocumentedModes(t *testing.T) {
	bin := buildExporter(t)
	for _, tc := range []struct {
		name    string
		args    func(n *modeNode) []string
		enabled []string
		// absent series a mode must export to say what is missing
		want []string
	}{
		{
			// docs/deploy.md "Logs only, unprivileged": no npu-smi on the
			// node, no kubelet socket, no hccn_tool.
			name: "logs-only",
			args: func(n *modeNode) []string {
				return []string{"--no-collector.npusmi", "--no-collector.headroom", "--no-collector.hccn", "--no-collector.npuhealth",
					"--npusmi.path=" + filepath.Join(n.dir, "absent", "npu-smi"),
					"--cannlog.root=" + n.logRoot, "--cannlog.screen-log-path=" + filepath.Join(n.screen, "*.log"),
					"--cannlog.state-file=" + n.state, "--path.procfs=",
					"--pods.kubelet-socket=" + filepath.Join(n.dir, "absent", "kubelet.sock")}
			},
			enabled: []string{"cannlog", "pods"},
		},
		{
			// bare metal or systemd: everything but the kubelet.
			name: "no-kubelet",
			args: func(n *modeNode) []string {
				return []string{"--npusmi.path=" + n.npuSMI, "--hccn.path=" + n.hccnTool, "--hccn.interval=1s",
					"--cannlog.root=" + n.logRoot, "--cannlog.state-file=" + n.state,
					"--pods.kubelet-socket=" + filepath.Join(n.dir, "absent", "kubelet.sock"),
					"--pods.kubelet-logs=" + filepath.Join(n.dir, "absent-var-log")}
			},
			enabled: []string{"cannlog", "hccn", "headroom", "npuhealth", "npusmi", "pods"},
		},
		{
			// inference cards without RoCE: no hccn_tool.
			name: "no-hccn_tool",
			args: func(n *modeNode) []string {
				return []string{"--npusmi.path=" + n.npuSMI, "--hccn.path=" + filepath.Join(n.dir, "absent", "hccn_tool"),
					"--cannlog.root=" + n.logRoot, "--cannlog.state-file=" + n.state,
					"--pods.kubelet-socket=" + filepath.Join(n.dir, "absent", "kubelet.sock")}
			},
			enabled: []string{"cannlog", "hccn", "headroom", "npuhealth", "npusmi", "pods"},
			want:    []string{"hccl_exporter_hccn_tool_up 0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newModeNode(t)
			t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
			addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
			args := append([]string{"--web.listen-address=" + addr, "--web.scrape-cache-ttl=0s"}, tc.args(n)...)
			p := testtools.StartProcess(t, n.dir, bin, args...)
			url := "http://" + addr + "/metrics"
			var got map[string]string
			var page string
			waitFor(t, 20*time.Second, func() bool { got, page = collectorSuccess(t, url); return len(got) > 0 },
				func() string { return "exporter never answered: " + page })
			// Three scrapes over a few seconds: background sources settle.
			for i := 0; i < 3; i++ {
				time.Sleep(1500 * time.Millisecond)
				got, page = collectorSuccess(t, url)
				var names []string
				for name, v := range got {
					names = append(names, name)
					if v != "1" {
						t.Errorf("scrape %d: collector %s success %s\nexporter log:\n%s", i, name, v, p.Output(4000))
					}
				}
				sort.Strings(names)
				if strings.Join(names, ",") != strings.Join(tc.enabled, ",") {
					t.Errorf("scrape %d: collectors %v report, want %v", i, names, tc.enabled)
				}
				if t.Failed() {
					return
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(page, w+"\n") {
					t.Errorf("the page lacks %s", w)
				}
			}
		})
	}
}
