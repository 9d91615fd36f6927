package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/dashboards"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const mib = 1 << 20

// The node the test simulates: an 8-NPU Atlas 800T A2 with one training
// process per chip (pids 210001…210008, as the demo fake npu-smi prints),
// all in one 64-rank communicator over 8 servers. The process on NPU 0 runs
// with HCCL_RDMA_QPS_PER_CONNECTION=16, the others with the default 1: one
// communicator split across two settings sets.
const (
	e2eRankSize  = 64
	e2eServerNum = 8
	e2eBusyQPS   = 16
	e2eBusyPID   = 210001
	// The headroom model (docs/headroom.md) for NPU 0, whose communicator has
	// not run a collective yet: ranks_per_server = 64/8 = 8, peers_high =
	// 64 − 8 = 56, QPs = 56 × (16 + 1) = 952. The demo's fake hccn_tool
	// counts no live QP on the chip (nothing set up yet): 952 QPs are
	// ahead, × 3 MiB (high bound) = 2856 MiB, plus the cclBuffer
	// 2 × 200 + 1 = 401 MiB.
	e2eLiveQPs         = 0
	e2eQPMemoryHighMiB = ((e2eRankSize-e2eRankSize/e2eServerNum)*(e2eBusyQPS+1) - e2eLiveQPs) * 3
	e2eCCLBufferMiB    = 2*200 + 1
	e2eHBMTotalMiB     = 65536
	// NPU 0's HBM use at start (high-bound headroom 4536 − 2856 − 401 = +1279
	// MiB) and after the test fills it (36 − 255 − 401 = −620 MiB expected).
	e2eHBMUsedStartMiB = 61000
	e2eHBMUsedFullMiB  = 65500
)

// npuSMITable is `npu-smi info` of the node with NPU 0 using hbmUsed0 MiB
// of HBM, in the layout of the demo fake (npu-smi 24.1, Ascend 910B3). It
// is written here rather than taken from the demo so the numbers the test
// checks cannot drift with the demo data.
func npuSMITable(hbmUsed0 int) string {
	used := []int{hbmUsed0, 9644, 8620, 10668, 7596, 9132, 8108, 11692}
	bus := []string{"0000:C1:00.0", "0000:01:00.0", "0000:C2:00.0", "0000:02:00.0", "0000:81:00.0", "0000:41:00.0", "0000:82:00.0", "0000:42:00.0"}
	procMem := []int{57344, 6144, 5120, 7168, 4096, 5632, 4608, 8192}
	var chips []testtools.NPUSMIChip
	var procs []testtools.NPUSMIProcess
	for i := range used {
		chips = append(chips, testtools.NPUSMIChip{NPU: i, PowerW: 190.0 + float64(i), TempC: 46 + i%3, BusID: bus[i],
			AICorePct: 40 + i, HBMUsedMiB: used[i], HBMTotalMiB: e2eHBMTotalMiB})
		procs = append(procs, testtools.NPUSMIProcess{NPU: i, PID: e2eBusyPID + i, MemoryMiB: procMem[i]})
	}
	return testtools.NPUSMITable(chips, procs)
}

// demoTool copies the demo's fake vendor tool (examples/demo/<name>:
// npu-smi, hccn_tool) into dir and returns its path.
func demoTool(t *testing.T, dir, name string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("..", "..", "examples", "demo", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, script, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeAtomic replaces path with data so a concurrent reader (the fake
// npu-smi, the log tailer) never sees a half-written file.
func writeAtomic(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// cannTime formats t as CANN prints it: local time, no zone,
// `2006-01-02-15:04:05.mmm.uuu`.
func cannTime(t time.Time) string {
	us := t.Nanosecond() / 1e3
	return fmt.Sprintf("%s.%03d.%03d", t.Format("2006-01-02-15:04:05"), us/1000, us%1000)
}

// writePlogs writes one run/plog file per training process, with the
// [HCCL_ENV] and [Communicator Key Info] lines the exporter reads, in the
// shapes of internal/cann/logstate/testdata.
func writePlogs(t *testing.T, root string, at time.Time) {
	t.Helper()
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		pid := e2eBusyPID + i
		ts := at.Add(time.Duration(i) * time.Millisecond)
		n := 0
		line := func(level, format string, args ...any) string {
			n++
			return fmt.Sprintf("[%s] HCCL(%d,python3):%s [externalinput.cc:%d] [%d]%s\n",
				level, pid, cannTime(ts.Add(time.Duration(n)*time.Microsecond)), 500+n, pid, fmt.Sprintf(format, args...))
		}
		var b strings.Builder
		b.WriteString(line("INFO", "[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by environment to [600]s"))
		b.WriteString(line("INFO", "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [1800.00]s"))
		b.WriteString(line("INFO", "[HCCL_ENV] HCCL_INTRA_PCIE_ENABLE set by default to [1], HCCL_INTRA_ROCE_ENABLE set by default to [0]"))
		b.WriteString(line("INFO", "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M"))
		if pid == e2eBusyPID {
			b.WriteString(line("INFO", "[HCCL_ENV] environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [%d]", e2eBusyQPS))
		} else {
			b.WriteString(line("INFO", "[HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]"))
		}
		b.WriteString(line("INFO", "[Communicator Key Info]identifier[hccl_world_group] rankSize[%d] serverNum[%d] moduleNum[%d] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]",
			e2eRankSize, e2eServerNum, e2eServerNum))
		if pid == e2eBusyPID {
			// One classified HCCL error, so the plog error panels have a series.
			b.WriteString(line("ERROR", "[InitChannelStage][Timeout]errNo[0x0000000005000009] wait socket establish timeout, role[client] rank[0] timeout[600 s]"))
		}
		name := fmt.Sprintf("plog-%d_%s%03d.log", pid, at.Format("20060102150405"), at.Nanosecond()/1e6+i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// A live plog was last modified when its last line was written:
		// --cannlog.timezone=auto infers the writers' zone from that.
		last := ts.Add(time.Duration(n) * time.Microsecond)
		if err := os.Chtimes(filepath.Join(dir, name), last, last); err != nil {
			t.Fatal(err)
		}
	}
}

// ei0006 is the link-setup timeout a peer of a failed rank prints to its
// screen log (internal/cann/logstate/testdata/screen-log/train-ei0006-older-format.log).
func ei0006(pid int, at time.Time) string {
	return fmt.Sprintf("EI0006: [PID: %d] %s Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck\n",
		pid, cannTime(at))
}

// ei0011 is the EI0011 report torch_npu prints to a training job's screen
// log (internal/cann/logstate/testdata/screen-log/train-ei0011.log).
func ei0011(pid int, at time.Time) string {
	return fmt.Sprintf("[PID: %d] %s Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory. Possible Cause: Allocation failure due to insufficient NPU memory. Solution: Stop unnecessary processes and ensure the required memory is available.\n",
		pid, cannTime(at))
}

// alertmanagerConfig derives the test's Alertmanager configuration from the
// shipped example: the same routes (audience first: the job owner's
// critical → their pager and channel, infra critical → infra's pager and
// channel, the rest → the audience's channel, inhibitors → blackhole),
// grouping and inhibition, with every notifying receiver replaced by a
// webhook of the test and the group timers cut to 1s so a notification
// arrives in seconds.
func alertmanagerConfig(t *testing.T, pagerURL, chatURL, ownerPagerURL, ownerURL string) string {
	t.Helper()
	cfg := string(alerts.AlertmanagerExample)
	i := strings.Index(cfg, "\nreceivers:\n")
	if i < 0 {
		t.Fatal("alertmanager.example.yml has no top-level receivers: section")
	}
	cfg = cfg[:i+1]
	timers := regexp.MustCompile(`(?m)^(\s+group_(?:wait|interval)):\s*\S+`)
	if len(timers.FindAllString(cfg, -1)) < 2 {
		t.Fatalf("alertmanager.example.yml: expected group_wait and group_interval in its routes:\n%s", cfg)
	}
	cfg = timers.ReplaceAllString(cfg, "${1}: 1s")
	for _, want := range []string{"receiver: infra-pager", "receiver: infra-chat", "receiver: job-owner-pager", "receiver: job-owner-chat", "receiver: blackhole", "inhibit_rules:"} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("alertmanager.example.yml lacks %q; the e2e test relies on it", want)
		}
	}
	return cfg + fmt.Sprintf(`receivers:
  - name: infra-pager
    webhook_configs:
      - url: %q
        send_resolved: true
  - name: infra-chat
    webhook_configs:
      - url: %q
        send_resolved: true
  - name: job-owner-pager
    webhook_configs:
      - url: %q
        send_resolved: true
  - name: job-owner-chat
    webhook_configs:
      - url: %q
        send_resolved: true
  - name: blackhole
`, pagerURL, chatURL, ownerPagerURL, ownerURL)
}

// e2eHeadroomFor is the `for:` the test gives NPULinkSetupHeadroomLow and
// the RoCE alerts.
const e2eHeadroomFor = "5s"

// e2eShortenedAlerts are the alerts whose `for:` the test cuts to
// e2eHeadroomFor: waiting 2–5 minutes for each would multiply the test's
// runtime. Every expression is the shipped one; promtool tests in alerts/
// cover the `for:`.
var e2eShortenedAlerts = []string{"NPULinkSetupHeadroomLow", "RoCELinkDown", "RoCELinkFlapping", "RoCENetworkUnhealthy",
	"HCCLSettingsInconsistentInCommunicator"}

// rulesForTest returns the shipped rules with the `for:` of
// e2eShortenedAlerts cut to e2eHeadroomFor where it is longer.
func rulesForTest(t *testing.T) string {
	t.Helper()
	return rulesWithFor(t, e2eHeadroomFor, e2eShortenedAlerts...)
}

// rulesWithFor returns the shipped rules with the `for:` of the named
// alerts cut to shortFor where it is longer.
func rulesWithFor(t *testing.T, shortFor string, names ...string) string {
	t.Helper()
	rules := string(alerts.Rules)
	short, _ := time.ParseDuration(shortFor)
	// The rules file is rendered by the mixin (string values quoted).
	forRe := regexp.MustCompile(`(?m)^(\s+for:\s*)"?([^"\s]+)"?`)
	for _, name := range names {
		start := strings.Index(rules, "- alert: "+name+"\n")
		if start < 0 {
			start = strings.Index(rules, "- alert: "+strconv.Quote(name)+"\n")
		}
		if start < 0 {
			t.Fatalf("rules lack %s", name)
		}
		end := strings.Index(rules[start+1:], "- alert: ")
		if end < 0 {
			end = len(rules)
		} else {
			end += start + 1
		}
		block := rules[start:end]
		m := forRe.FindStringSubmatch(block)
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatalf("%s for: %q: %v", name, m[2], err)
		}
		if d <= short {
			continue
		}
		t.Logf("%s: for: %s shortened to %s for this test", name, m[2], shortFor)
		block = forRe.ReplaceAllString(block, "${1}"+shortFor)
		rules = rules[:start] + block + rules[end:]
	}
	return rules
}

// getJSON decodes the JSON answer of a GET.
func getJSON(u string, v any) error {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.300s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return nil
}

// lastGroupEvaluation returns when Prometheus last evaluated rule group name.
func lastGroupEvaluation(prom *testtools.Prometheus, name string) (time.Time, error) {
	var res struct {
		Data struct {
			Groups []struct {
				Name           string    `json:"name"`
				LastEvaluation time.Time `json:"lastEvaluation"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(prom.URL+"/api/v1/rules", &res); err != nil {
		return time.Time{}, err
	}
	for _, g := range res.Data.Groups {
		if g.Name == name {
			return g.LastEvaluation, nil
		}
	}
	return time.Time{}, fmt.Errorf("no rule group %q", name)
}

// amAlert is an alert as Alertmanager's v2 API reports it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State       string   `json:"state"` // active, suppressed, unprocessed
		InhibitedBy []string `json:"inhibitedBy"`
	} `json:"status"`
}

// waitFor polls cond every 100ms until it returns true, failing the test with
// what() after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func isFaultAlert(name string) bool {
	switch name {
	case "HCCLQPMemoryAllocationFailed", "HCCLLinkSetupTimeout", "HCCLPortBindFailed",
		"HCCLParameterInconsistent", "HCCLBufferAllocationFailed",
		"HCCLQPResourceExhausted", "HCCLTransportInitFailed", "HCCLRoCERetransmissionTimeout", "HCCLExecutionTimeout":
		return true
	}
	return false
}

// TestAlertingEndToEnd runs the real exporter on a simulated node, a real
// Prometheus with the shipped rules and a real Alertmanager routed as the
// shipped example, and checks what an operator relies on:
//   - an EI0011 already in the logs when the exporter starts notifies nobody;
//   - a fresh EI0011 in a screen log pages the job owner (severity
//     critical, receiver job-owner-pager) within a minute — the latency is
//     logged — and never infrastructure's pager: one failed job is its
//     owner's;
//   - the EI0006 its peer prints afterwards fires HCCLLinkSetupTimeout in
//     Prometheus, which Alertmanager holds back (HCCLJobFailed inhibits the
//     job's waiting codes);
//   - a chip whose free HBM drops below the QP memory of its processes'
//     next link setup fires NPULinkSetupHeadroomLow with the pod's
//     namespace, delivered to the job owner, not inhibited;
//   - the RoCE NICs (fake hccn_tool): a DOWN link under a process, a flap
//     and an unreachable detect IP fire RoCELinkDown, RoCELinkFlapping and
//     RoCENetworkUnhealthy for their chip only; live QPs, health and error
//     counters of every chip are in Prometheus;
//   - every dashboard panel query returns data.
func TestAlertingEndToEnd(t *testing.T) {
	start := time.Now()
	bin := buildExporter(t)
	dir := t.TempDir()

	// The node: fake npu-smi printing a table the test controls.
	fake := demoTool(t, dir, "npu-smi")
	table := filepath.Join(dir, "npu-smi-info.txt")
	writeAtomic(t, table, npuSMITable(e2eHBMUsedStartMiB))
	t.Setenv("DEMO_NPU_SMI_OUTPUT", table) // the exporter passes its environment to npu-smi

	// The node's RoCE NICs: the demo's fake hccn_tool, with three chips
	// overridden. NPU 3's link is DOWN under its training process, NPU 7
	// cannot reach its detect IP, and NPU 5 flaps later in the test.
	hccnTool := demoTool(t, dir, "hccn_tool")
	hccnDir := filepath.Join(dir, "hccn")
	for _, d := range []string{"3", "5", "7"} {
		if err := os.MkdirAll(filepath.Join(hccnDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeAtomic(t, filepath.Join(hccnDir, "3", "link.txt"), "link status: DOWN\n")
	writeAtomic(t, filepath.Join(hccnDir, "7", "net_health.txt"), "net health status: Fault\n")
	writeAtomic(t, filepath.Join(hccnDir, "5", "link_stat.txt"), linkStat(5, 2, 1))
	t.Setenv("DEMO_HCCN_TOOL_DIR", hccnDir)

	// CANN logs: the training processes started half an hour ago; their
	// screen log already holds an EI0011 report from an hour ago (a past
	// job's failure the exporter must not page for).
	root := filepath.Join(dir, "log")
	writePlogs(t, root, start.Add(-30*time.Minute))
	screenDir := filepath.Join(dir, "screen")
	if err := os.MkdirAll(screenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	screen := filepath.Join(screenDir, "train.log")
	old := start.Add(-time.Hour)
	history := old.Format("2006-01-02 15:04:05") + " | INFO | rank 0 | initialising process group (backend=hccl, world_size=64)\n" +
		ei0011(e2eBusyPID, old) +
		old.Add(time.Second).Format("2006-01-02 15:04:05") + " | ERROR | rank 0 | training aborted at link setup; see the EI0011 report above\n"
	if err := os.WriteFile(screen, []byte(history), 0o644); err != nil {
		t.Fatal(err)
	}

	// The kubelet: one training pod holds all eight NPUs (the Ascend device
	// plugin's ids are their physical ids; on this A2 table the NPU ids).
	var devices []string
	for i := range 8 {
		devices = append(devices, fmt.Sprintf("Ascend910-%d", i))
	}
	kubelet := testtools.StartFakeKubelet(t, testtools.PodDevice{
		Namespace: "train", Pod: "llm-pretrain-0", Container: "pytorch", Resource: "huawei.com/Ascend910", DeviceIDs: devices})

	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	exporter := testtools.StartProcess(t, dir, bin,
		"--web.listen-address="+addr,
		"--npusmi.path="+fake,
		"--npusmi.min-interval=0s",
		"--cannlog.root="+root,
		"--cannlog.screen-log-path="+filepath.Join(screenDir, "*.log"),
		"--cannlog.state-file="+filepath.Join(dir, "cannlog-state.json"),
		"--cannlog.poll-interval=200ms",
		"--hccn.path="+hccnTool,
		"--hccn.interval=1s",
		"--pods.kubelet-socket="+kubelet.Socket,
		"--pods.kubelet-interval=1s",
	)

	pager, chat, ownerPager, owner := testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, alertmanagerConfig(t, pager.URL, chat.URL, ownerPager.URL, owner.URL))
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, []byte(rulesForTest(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets:   []string{addr},
		JobName:         "hccl_exporter",
		Labels:          map[string]string{"cluster": "e2e"},
		RuleFiles:       []string{rules},
		AlertmanagerURL: am.URL,
	})
	if done, err := exporter.Exited(); done {
		t.Fatalf("exporter exited: %v", err)
	}
	prom.WaitTargetsUp(t, "hccl_exporter", 30*time.Second)
	t.Logf("exporter scraped after %s", time.Since(start).Round(time.Millisecond))

	// The exporter has read the logs: settings, communicators and the old
	// EI0011 are in Prometheus.
	// The screen report is its process's ([PID: n]): counted under the
	// job's world communicator, a graph-mode world group's identity of its
	// job (hccl_world_group@<hash of uid, rank table and rank count>).
	prom.WaitQuery(t, `hccl_fault_events_total{code="EI0011",source="screen",hccl_job=~"hccl_world_group@[0-9a-f]{12}"}`, 20*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 1 })
	seenOld := time.Now()
	ts := prom.WaitQuery(t, `hccl_fault_last_event_timestamp_seconds{code="EI0011",source="screen"}`, 10*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 })
	if got, want := ts[0].Value, float64(old.UnixMilli())/1000; got < want-0.002 || got > want+0.002 {
		t.Errorf("hccl_fault_last_event_timestamp_seconds of the old EI0011 = %.3f, want %.3f (the line's local time)", got, want)
	}
	prom.WaitQuery(t, fmt.Sprintf(`hccl_env_rdma_qps_per_connection and on (instance, settings) hccl_process_info{pid="%d"}`, e2eBusyPID), 10*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == e2eBusyQPS })
	headroomQ := `hccl_link_setup_headroom_bytes{npu="0",chip="0"}`
	prom.WaitQuery(t, headroomQ, 10*time.Second, func(s []testtools.Sample) bool {
		// The expected bound (one plane per device index) is below the
		// worst case the constants describe: the headroom lies between.
		return len(s) == 1 && s[0].Value >= float64((e2eHBMTotalMiB-e2eHBMUsedStartMiB-e2eQPMemoryHighMiB-e2eCCLBufferMiB)*mib) &&
			s[0].Value > 0
	})

	// Old history fires nothing: wait until the fault rules have been
	// evaluated twice over data that holds the old EI0011, then look.
	waitFor(t, 20*time.Second, func() bool {
		last, err := lastGroupEvaluation(prom, "hccl-exporter-faults")
		return err == nil && last.After(seenOld.Add(2*time.Second))
	}, func() string { return "rule group hccl-exporter-faults not evaluated" })
	if s, err := prom.Query(`hccl:fault_events:new10m`); err != nil || len(s) != 0 {
		t.Errorf("hccl:fault_events:new10m over old history = %v, %v; want no series", s, err)
	}
	firing, err := prom.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range firing {
		if isFaultAlert(a.Labels["alertname"]) || a.Labels["alertname"] == "NPULinkSetupHeadroomLow" {
			t.Errorf("alert %s %s on the history present at startup: %v", a.Labels["alertname"], a.State, a.Labels)
		}
	}
	for _, hook := range []*testtools.Webhook{pager, chat, ownerPager, owner} {
		for _, m := range hook.Messages() {
			for _, a := range m.Alerts {
				if isFaultAlert(a.Labels["alertname"]) {
					t.Errorf("notification for old history at %s: %+v", a.Receiver, a)
				}
			}
		}
	}

	// A fresh EI0011: the job fails now.
	f, err := os.OpenFile(screen, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	appended := time.Now()
	if _, err := f.WriteString(ei0011(e2eBusyPID, appended)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	isPage := func(a testtools.WebhookAlert) bool {
		// StartsAt is the rule evaluation that first saw the event, which
		// read a scrape taken after the append.
		return a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" && a.Status == "firing" && a.StartsAt.After(appended)
	}
	// For the latency breakdown only: when Prometheus first shows it firing.
	inProm := make(chan time.Duration, 1)
	go func() {
		for time.Since(appended) < 60*time.Second {
			if as, err := prom.Alerts(); err == nil {
				for _, a := range as {
					if a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" && a.State == "firing" {
						inProm <- time.Since(appended)
						return
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	page := ownerPager.WaitForAlert(t, 60*time.Second, isPage)
	latency := time.Since(appended)
	var firingAfter time.Duration
	select {
	case firingAfter = <-inProm:
	case <-time.After(2 * time.Second):
	}
	t.Logf("EI0011 appended → job owner's pager: %s (firing in Prometheus after ≈%s)",
		latency.Round(time.Millisecond), firingAfter.Round(50*time.Millisecond))
	if page.Labels["severity"] != "critical" || page.Labels["audience"] != "job-owner" || page.Receiver != "job-owner-pager" {
		t.Errorf("EI0011: severity %q audience %q via receiver %q, want critical job-owner via job-owner-pager", page.Labels["severity"], page.Labels["audience"], page.Receiver)
	}
	for k, want := range map[string]string{"cluster": "e2e", "instance": addr, "job": "hccl_exporter", "code": "EI0011"} {
		if page.Labels[k] != want {
			t.Errorf("page label %s = %q, want %q (labels %v)", k, page.Labels[k], want, page.Labels)
		}
	}
	if !strings.HasSuffix(page.Annotations["runbook_url"], "#hcclqpmemoryallocationfailed") ||
		!strings.Contains(page.Annotations["description"], "EI0011") {
		t.Errorf("page annotations = %v", page.Annotations)
	}
	// The description queries the node's headroom and QPs per connection.
	if d := page.Annotations["description"]; !strings.Contains(d, "Lowest link-setup headroom") ||
		!strings.Contains(d, fmt.Sprintf("HCCL_RDMA_QPS_PER_CONNECTION: %d", e2eBusyQPS)) {
		t.Errorf("page description lacks the node's numbers: %q", d)
	}

	// The failed rank's peer times out at link setup and prints EI0006: a
	// consequence. Prometheus fires it; Alertmanager holds it back while
	// HCCLJobFailed (the job's root cause, plus its peers' timers) fires.
	f, err = os.OpenFile(screen, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(ei0006(e2eBusyPID+1, time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var timeout amAlert
	waitFor(t, 60*time.Second, func() bool {
		var as []amAlert
		q := url.Values{"filter": {`alertname="HCCLLinkSetupTimeout"`}}
		if err := getJSON(am.URL+"/api/v2/alerts?"+q.Encode(), &as); err != nil || len(as) == 0 {
			return false
		}
		timeout = as[0]
		return as[0].Status.State == "suppressed" && len(as[0].Status.InhibitedBy) > 0
	}, func() string {
		return fmt.Sprintf("HCCLLinkSetupTimeout in Alertmanager = %+v, want suppressed by HCCLJobFailed", timeout)
	})
	if inh := alertsNamed(t, am.URL, "HCCLJobFailed"); len(inh) != 1 || inh[0].Labels["inhibits"] != "job-consequences" || inh[0].Labels["cluster"] != "e2e" {
		t.Errorf("HCCLJobFailed in Alertmanager = %+v, want one for cluster e2e", inh)
	}

	// The communicator whose members run two settings sets (NPU 0's QPS
	// 16 against 1) warns the job owner, once, naming the variable that
	// differs.
	isSplit := func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "HCCLSettingsInconsistentInCommunicator" && a.Status == "firing"
	}
	split := owner.WaitForAlert(t, 60*time.Second, isSplit)
	if split.Labels["severity"] != "warning" || split.Labels["communicator"] == "" ||
		!strings.Contains(split.Annotations["description"], "run 2 different settings sets") ||
		!strings.Contains(split.Annotations["description"], "HCCL_RDMA_QPS_PER_CONNECTION (2 values)") {
		t.Errorf("HCCLSettingsInconsistentInCommunicator: labels %v, description %q", split.Labels, split.Annotations["description"])
	}

	// NPU 0 fills up: 1636 MiB free, less than the 2520 MiB of QPs and the
	// 401 MiB cclBuffer its process may need at its first collective.
	writeAtomic(t, table, npuSMITable(e2eHBMUsedFullMiB))
	filled := time.Now()
	prom.WaitQuery(t, headroomQ, 15*time.Second, func(s []testtools.Sample) bool {
		return len(s) == 1 && s[0].Value < 0
	})
	var low testtools.Alert
	waitFor(t, 40*time.Second, func() bool {
		as, err := prom.Alerts()
		if err != nil {
			return false
		}
		for _, a := range as {
			if a.Labels["alertname"] == "NPULinkSetupHeadroomLow" && a.State == "firing" {
				low = a
				return true
			}
		}
		return false
	}, func() string { return "NPULinkSetupHeadroomLow not firing in Prometheus" })
	t.Logf("HBM filled → NPULinkSetupHeadroomLow firing in Prometheus: %s (for: %s)",
		time.Since(filled).Round(time.Millisecond), e2eHeadroomFor)
	if low.Labels["npu"] != "0" || low.Labels["chip"] != "0" || low.Labels["severity"] != "warning" {
		t.Errorf("NPULinkSetupHeadroomLow labels = %v, want npu 0 chip 0 severity warning", low.Labels)
	}
	// The alert names the pod that holds the chip, for routing.
	if low.Labels["namespace"] != "train" || low.Labels["pod"] != "llm-pretrain-0" ||
		!strings.Contains(low.Annotations["description"], "(pod train/llm-pretrain-0)") {
		t.Errorf("NPULinkSetupHeadroomLow does not name its pod: labels %v, description %q", low.Labels, low.Annotations["description"])
	}
	if d := low.Annotations["description"]; !strings.Contains(d, "Free HBM: 36MiB") {
		t.Errorf("NPULinkSetupHeadroomLow description lacks the chip's free HBM (36 MiB): %q", d)
	}
	all, _ := prom.Alerts()
	for _, a := range all {
		if a.Labels["alertname"] == "NPULinkSetupHeadroomLow" && (a.Labels["npu"] != "0" || a.Labels["chip"] != "0") {
			t.Errorf("NPULinkSetupHeadroomLow for a chip with room: %v", a.Labels)
		}
	}
	// The warning is the job owner's to act on: delivered to them with the
	// pod's namespace, never held back by the node's other alerts.
	warned := owner.WaitForAlert(t, 30*time.Second, func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "NPULinkSetupHeadroomLow" && a.Status == "firing"
	})
	if warned.Labels["namespace"] != "train" || warned.Labels["audience"] != "job-owner" {
		t.Errorf("NPULinkSetupHeadroomLow at the job owner: labels %v, want namespace train, audience job-owner", warned.Labels)
	}
	if as := alertsNamed(t, am.URL, "NPULinkSetupHeadroomLow"); len(as) != 1 || as[0].Status.State != "active" {
		t.Errorf("NPULinkSetupHeadroomLow in Alertmanager = %+v, want one, active", as)
	}

	// The RoCE network: NPU 5's link goes down and up twice more; the
	// three RoCE alerts fire for their chip only.
	prom.WaitQuery(t, `ascend_roce_link_down_events_total{npu="5",chip="0"}`, 15*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == 1 })
	writeAtomic(t, filepath.Join(hccnDir, "5", "link_stat.txt"), linkStat(5, 4, 3))
	flapped := time.Now()
	wantRoCE := map[string]string{"RoCELinkDown": "3", "RoCELinkFlapping": "5", "RoCENetworkUnhealthy": "7"}
	waitFor(t, 40*time.Second, func() bool {
		as, err := prom.Alerts()
		if err != nil {
			return false
		}
		firing := 0
		for _, a := range as {
			if npu, ok := wantRoCE[a.Labels["alertname"]]; ok && a.State == "firing" && a.Labels["npu"] == npu {
				firing++
			}
		}
		return firing == len(wantRoCE)
	}, func() string {
		as, _ := prom.Alerts()
		return fmt.Sprintf("RoCE alerts not all firing for NPUs %v: %v", wantRoCE, as)
	})
	t.Logf("RoCE alerts firing %s after the flap", time.Since(flapped).Round(time.Millisecond))
	all, _ = prom.Alerts()
	for _, a := range all {
		if npu, ok := wantRoCE[a.Labels["alertname"]]; ok && a.Labels["npu"] != npu {
			t.Errorf("%s for a healthy chip: %v", a.Labels["alertname"], a.Labels)
		}
	}
	prom.WaitQuery(t, `ascend_roce_active_queue_pairs{npu="0",chip="0"}`, 10*time.Second,
		func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value == e2eLiveQPs })
	if s, err := prom.Query(`count(ascend_roce_retransmitted_packets_total) == 8 and count(ascend_roce_network_health == 1) == 8`); err != nil || len(s) != 1 {
		t.Errorf("error counters and health of every chip: %v, %v", s, err)
	}

	// Every dashboard panel query returns data.
	qs, err := dashboards.Queries("hccl_exporter", addr)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	for _, q := range qs {
		var n int
		if q.Instant {
			s, err := prom.Query(q.Expr)
			if err != nil {
				t.Errorf("%s / %q %s: %v\n%s", q.Dashboard, q.Panel, q.RefID, err, q.Expr)
				continue
			}
			n = len(s)
		} else {
			s, err := prom.QueryRange(q.Expr, end.Add(-30*time.Second), end, time.Second)
			if err != nil {
				t.Errorf("%s / %q %s: %v\n%s", q.Dashboard, q.Panel, q.RefID, err, q.Expr)
				continue
			}
			n = len(s)
		}
		if n == 0 {
			t.Errorf("%s / %q %s: no data from the real exporter\n%s", q.Dashboard, q.Panel, q.RefID, q.Expr)
		}
	}
	// The split communicator notified exactly once (one label set), the
	// job owner only: a warning of theirs.
	if sets := firingSets(owner)["HCCLSettingsInconsistentInCommunicator"]; len(sets) != 1 {
		t.Errorf("HCCLSettingsInconsistentInCommunicator reached the job owner with %d label sets, want exactly 1: %v", len(sets), sets)
	}
	if sets := firingSets(chat)["HCCLSettingsInconsistentInCommunicator"]; len(sets) != 0 {
		t.Errorf("HCCLSettingsInconsistentInCommunicator reached the infrastructure chat: %v", sets)
	}
	if sets := firingSets(pager)["HCCLSettingsInconsistentInCommunicator"]; len(sets) != 0 {
		t.Errorf("HCCLSettingsInconsistentInCommunicator paged: %v", sets)
	}
	if done, err := exporter.Exited(); done {
		t.Errorf("exporter exited during the test: %v", err)
	}
	// One job failing on one node paged its owner only: infrastructure's
	// pager got infrastructure's pages (the DOWN link under a process) and
	// nothing of the job's; the owner's pager nothing of infrastructure's;
	// and the job owner got no consequence.
	for _, m := range pager.Messages() {
		for _, a := range m.Alerts {
			if a.Labels["audience"] != "infra" || a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" {
				t.Errorf("infrastructure's pager got %s: %v", a.Labels["alertname"], a.Labels)
			}
		}
	}
	for _, m := range ownerPager.Messages() {
		for _, a := range m.Alerts {
			if a.Labels["audience"] != "job-owner" || a.Labels["severity"] != "critical" {
				t.Errorf("the job owner's pager got %s: %v", a.Labels["alertname"], a.Labels)
			}
		}
	}
	for _, m := range owner.Messages() {
		for _, a := range m.Alerts {
			if a.Labels["alertname"] == "HCCLLinkSetupTimeout" {
				t.Errorf("the held-back EI0006 reached the job owner: %v", a.Labels)
			}
		}
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// alertsNamed returns Alertmanager's alerts of one name.
func alertsNamed(t *testing.T, amURL, name string) []amAlert {
	t.Helper()
	var as []amAlert
	q := url.Values{"filter": {fmt.Sprintf("alertname=%q", name)}}
	if err := getJSON(amURL+"/api/v2/alerts?"+q.Encode(), &as); err != nil {
		t.Errorf("alerts %s: %v", name, err)
	}
	return as
}

// linkStat is `hccn_tool -i <phy> -link_stat -g` with the given counts, in
// the 2025 driver's form.
func linkStat(phy, up, down int) string {
	p := fmt.Sprintf("[devid %d]", phy)
	return p + "current time        : Tue Jan  6 16:10:00 2026\n" +
		fmt.Sprintf("%slink up count       : %d\n", p, up) +
		fmt.Sprintf("%slink down count     : %d\n", p, down) +
		p + "link change records :\n" +
		p + "    Tue Jan  6 16:09:58 2026    LINK UP\n" +
		p + "    Tue Jan  6 16:09:57 2026    LINK DOWN\n"
}
