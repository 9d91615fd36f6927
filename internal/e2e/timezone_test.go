package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestTimezoneUTCPodOnUTC8Node: the exporter runs in the node's zone,
// UTC+8; a training pod runs in UTC and prints its CANN log and screen log
// times in UTC. Read in the node's zone, a fresh EI0011 would be 8 hours
// old and page no one. With --cannlog.timezone=auto (the default) the pod's
// log root is read in UTC (inferred from its files' modification times) and
// its CRI screen log in the zone its time stamps agree with: the fresh
// EI0011 pages through the real Prometheus and Alertmanager.
func TestTimezoneUTCPodOnUTC8Node(t *testing.T) {
	bin := buildExporter(t)
	dir := t.TempDir()
	start := time.Now()

	// The pod's CANN log root: its process printed its settings a minute
	// ago, in UTC, and the file was last written then.
	root := filepath.Join(dir, "pods-logs", "job-a-0")
	plogDir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(plogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	plog := filepath.Join(plogDir, "plog-156_"+start.UTC().Format("20060102150405")+"000.log")
	written := start.Add(-time.Minute)
	plogLine := func(level, module string, at time.Time, msg string) string {
		return fmt.Sprintf("[%s] %s(156,python3):%s [x.cc:1] [156]%s\n", level, module, cannTime(at.UTC()), msg)
	}
	if err := os.WriteFile(plog, []byte(plogLine("INFO", "HCCL", written, "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(plog, written, written); err != nil {
		t.Fatal(err)
	}
	// Its screen log as the kubelet keeps it (CRI), times in UTC too.
	screenDir := filepath.Join(dir, "pods", "train_job-a-0_0f1e2d3c", "pytorch")
	if err := os.MkdirAll(screenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	screen := filepath.Join(screenDir, "0.log")
	cri := func(at time.Time, msg string) string {
		return at.UTC().Format(time.RFC3339Nano) + " stderr F " + msg
	}
	if err := os.WriteFile(screen, []byte(cri(written, "epoch 1 step 10 loss 2.31\n")), 0o644); err != nil {
		t.Fatal(err)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
	// The node's zone, which the exporter runs in (it embeds the zone
	// database, so this holds on machines without tzdata).
	t.Setenv("TZ", "Asia/Shanghai")
	exporter := testtools.StartProcess(t, dir, bin,
		"--web.listen-address="+addr,
		"--no-collector.npusmi", "--no-collector.headroom", "--no-collector.hccn", "--no-collector.pods",
		"--cannlog.root="+root,
		"--cannlog.screen-log-path="+filepath.Join(dir, "pods", "*", "*", "*.log"),
		"--cannlog.poll-interval=200ms",
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
		RuleFiles:       []string{rules},
		AlertmanagerURL: am.URL,
	})
	if done, err := exporter.Exited(); done {
		t.Fatalf("exporter exited: %v", err)
	}
	prom.WaitTargetsUp(t, "hccl_exporter", 30*time.Second)

	// The pod's root is inferred to be UTC and read so, although the
	// exporter's own zone is UTC+8.
	rootQ := fmt.Sprintf(`{__name__=~"hccl_exporter_log_timezone_(applied_)?offset_seconds",root=%q}`, root)
	prom.WaitQuery(t, rootQ, 20*time.Second, func(s []testtools.Sample) bool {
		return len(s) == 2 && s[0].Value == 0 && s[1].Value == 0
	})

	// The job fails now: EI0011 in its plog (HCCP's QP creation error) and
	// in its screen log, both printed in UTC.
	appended := time.Now()
	appendTo := func(path, text string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(plog, plogLine("ERROR", "HCCP", appended, "ra qp create fail, out of memory"))
	appendTo(screen, cri(appended, fmt.Sprintf("[PID: 156] %s Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n",
		cannTime(appended.UTC()))))

	// Both events are dated now, not 8 hours ago.
	for _, src := range []string{"plog", "screen"} {
		q := fmt.Sprintf(`max(hccl_fault_last_event_timestamp_seconds{code="EI0011",source=%q})`, src)
		s := prom.WaitQuery(t, q, 20*time.Second, func(s []testtools.Sample) bool { return len(s) == 1 && s[0].Value > 0 })
		if d := s[0].Value - float64(appended.UnixMilli())/1000; d < -0.01 || d > 0.01 {
			t.Errorf("EI0011 from %s dated %.3f s from the moment it was written, want 0 (read in the wrong zone?)", src, d)
		}
	}
	// The job owner is paged (their pager, never infrastructure's:
	// docs/runbooks.md).
	page := ownerPager.WaitForAlert(t, 60*time.Second, func(a testtools.WebhookAlert) bool {
		return a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" && a.Status == "firing" && a.StartsAt.After(appended)
	})
	t.Logf("job owner paged %s after the EI0011 was written: %v", time.Since(appended).Round(time.Millisecond), page.Labels)
	for _, m := range pager.Messages() {
		for _, a := range m.Alerts {
			if a.Labels["alertname"] == "HCCLQPMemoryAllocationFailed" {
				t.Errorf("infrastructure's pager got the job's EI0011: %v", a.Labels)
			}
		}
	}
	_ = owner

	// And the zone check is quiet: writers and reader agree.
	for _, a := range mustAlerts(t, prom) {
		if a == "CANNLogTimezoneMismatch" {
			t.Error("CANNLogTimezoneMismatch is pending or firing although the root is read in its writers' zone")
		}
	}
}

// mustAlerts returns the names of the alerts Prometheus has pending or firing.
func mustAlerts(t *testing.T, prom *testtools.Prometheus) []string {
	t.Helper()
	as, err := prom.Alerts()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range as {
		out = append(out, a.Labels["alertname"])
	}
	return out
}
