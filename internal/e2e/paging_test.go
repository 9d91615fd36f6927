package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// One page per job, whatever the number of nodes and ranks: 4 nodes, each a
// real exporter reading only logs, one real Prometheus with the shipped
// rules and one real Alertmanager routed as the shipped example.
//
//   - jobA runs 2 ranks on each of the 4 nodes, jobB 1 rank on 2 nodes,
//     jobC 1 rank on 1 node: each fails with EI0011 on every rank, in its
//     plog (HCCP's QP creation failure) and in its screen log ([PID: n]).
//   - jobD runs 1 rank on each node and fails with EI0009 (a peer, every
//     RoCE port up): its owner's warning, and never infra's page
//     HCCLJobFailuresAcrossCluster, which needs two jobs.
//
// On 0.4.0 a bare-metal screen report had no hccl_job (the rules filled in
// node/<instance>): each job paged once more per node, and jobD's 4 nodes
// counted as 4 jobs for HCCLJobFailuresAcrossCluster. Kubernetes screen
// logs are tied to their process through the kubelet's device assignment
// (and, for roots found through /proc, the pod of the process's cgroup).
//
// bare-metal-late replays the timeline seen under load: each node reads its
// jobs' screen reports a poll (here 1.5 s) before the plog lines that name
// the job (the communicator). On 0.5.0 those faults took the fallback
// hccl_job (the rules' node/<instance>) and each job paged once more per
// node; now a fault waits for its process's communicator.
func TestOnePagePerJobEndToEnd(t *testing.T) {
	bin := buildExporter(t)
	for _, mode := range []string{"bare-metal", "kubernetes", "bare-metal-late"} {
		t.Run(mode, func(t *testing.T) { onePagePerJob(t, bin, mode == "kubernetes", mode == "bare-metal-late") })
	}
}

const pagingNodes = 4

// pagingJob is a job of the test: its world communicator, its ranks per
// node (nodes without ranks have none), and its fault code.
type pagingJob struct {
	name, comm, code string
	ranks            [pagingNodes]int
}

var pagingJobs = []pagingJob{
	{name: "joba", comm: "10.0.0.1%enp189s0f0_60000_0_1767685100000001", code: "EI0011", ranks: [pagingNodes]int{2, 2, 2, 2}},
	{name: "jobb", comm: "10.0.0.2%enp189s0f0_60000_0_1767685100000002", code: "EI0011", ranks: [pagingNodes]int{1, 1, 0, 0}},
	{name: "jobc", comm: "10.0.0.3%enp189s0f0_60000_0_1767685100000003", code: "EI0011", ranks: [pagingNodes]int{0, 0, 1, 0}},
	{name: "jobd", comm: "10.0.0.4%enp189s0f0_60000_0_1767685100000004", code: "EI0009", ranks: [pagingNodes]int{1, 1, 1, 1}},
}

// pagingRank is one training process of the test on a node.
type pagingRank struct {
	job    pagingJob
	pid    int // the pid its logs print
	device int // the NPU it drives
	plog   string
	screen string
}

func onePagePerJob(t *testing.T, bin string, k8s, late bool) {
	dir := t.TempDir()
	start := time.Now()
	setup := start.Add(-5 * time.Minute)
	var addrs []string
	nodes := make([][]pagingRank, pagingNodes)
	for n := range pagingNodes {
		nodeDir := filepath.Join(dir, fmt.Sprintf("node%d", n))
		logRoot := filepath.Join(nodeDir, "log")
		device := 0
		var pods []testtools.PodDevice
		roots := []string{logRoot}
		for j, job := range pagingJobs {
			var devices []string
			for r := range job.ranks[n] {
				rk := pagingRank{job: job, device: device}
				root := logRoot
				pod := fmt.Sprintf("%s-%d", job.name, n)
				if k8s {
					// Each pod writes its own log directory (a root of
					// its own), and counts its pids in its own namespace.
					root = filepath.Join(logRoot, pod)
					if r == 0 {
						roots = append(roots, root)
					}
					rk.pid = 100 + r
					rk.screen = filepath.Join(nodeDir, "pods", fmt.Sprintf("team-%s_%s_uid-%s-%d", job.name, pod, job.name, n), "pytorch", "0.log")
				} else {
					// Host pids, unique on the node; torchrun's screen log
					// of the job on this node.
					rk.pid = 10000 + 1000*j + 10*n + r
					rk.screen = filepath.Join(nodeDir, "screen", job.name+".log")
				}
				rk.plog = writeRankPlog(t, root, rk, r, setup, !late)
				touch(t, rk.screen)
				devices = append(devices, fmt.Sprintf("Ascend910-%d", device))
				nodes[n] = append(nodes[n], rk)
				device++
			}
			if len(devices) > 0 {
				pods = append(pods, testtools.PodDevice{Namespace: "team-" + job.name, Pod: fmt.Sprintf("%s-%d", job.name, n), Container: "pytorch",
					Resource: "huawei.com/Ascend910", DeviceIDs: devices})
			}
		}
		addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
		args := []string{"--web.listen-address=" + addr,
			"--no-collector.npusmi", "--no-collector.headroom", "--no-collector.hccn", "--no-collector.npuhealth",
			"--npusmi.path=" + filepath.Join(nodeDir, "absent", "npu-smi"), "--path.procfs=",
			"--cannlog.poll-interval=200ms",
			"--cannlog.state-file=" + filepath.Join(nodeDir, "state.json")}
		if k8s {
			roots = roots[1:] // one root per pod: the DaemonSet mounts each job's log directory
		}
		for _, r := range roots {
			args = append(args, "--cannlog.root="+r)
		}
		if k8s {
			kubelet := testtools.StartFakeKubelet(t, pods...)
			args = append(args, "--cannlog.screen-log-path="+filepath.Join(nodeDir, "pods", "*", "*", "*.log"),
				"--pods.kubelet-socket="+kubelet.Socket, "--pods.kubelet-interval=1s")
		} else {
			args = append(args, "--cannlog.screen-log-path="+filepath.Join(nodeDir, "screen", "*.log"),
				"--pods.kubelet-socket="+filepath.Join(nodeDir, "absent", "kubelet.sock"))
		}
		testtools.StartProcess(t, nodeDir, bin, args...)
		addrs = append(addrs, addr)
	}

	pager, chat, ownerPager, owner := testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t), testtools.NewWebhook(t)
	am := testtools.StartAlertmanager(t, alertmanagerConfig(t, pager.URL, chat.URL, ownerPager.URL, owner.URL))
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	// The cluster rule's `for:` (2m shipped) cut to 3 s: 0.4.0 paged infra
	// 2.5 minutes after one job's EI0009; the test looks well past 3 s.
	if err := os.WriteFile(rules, []byte(rulesWithFor(t, "3s", "HCCLJobFailuresAcrossCluster")), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets:   addrs,
		JobName:         "hccl_exporter",
		Labels:          map[string]string{"cluster": "paging"},
		RuleFiles:       []string{rules},
		AlertmanagerURL: am.URL,
	})
	prom.WaitTargetsUp(t, "hccl_exporter", 60*time.Second)
	// Every node's exporter has read its processes' communicators.
	wantComms := 0
	for _, job := range pagingJobs {
		for _, r := range job.ranks {
			if r > 0 {
				wantComms++
			}
		}
	}
	// At most 90 s: four exporters, Prometheus and Alertmanager share the
	// machine with the other test packages (30 s was once too short under
	// -race on 2 cores); a ready node returns at once.
	if !late {
		prom.WaitQuery(t, `hccl_communicator_info`, 90*time.Second, func(s []testtools.Sample) bool { return len(s) == wantComms })
	} else {
		// Every node has read its processes' settings (no communicator yet).
		prom.WaitQuery(t, `hccl_env_buffsize_bytes`, 90*time.Second, func(s []testtools.Sample) bool { return len(s) == pagingNodes })
	}

	// The jobs fail: every rank prints its fault to its plog and its screen log.
	failed := time.Now()
	if late {
		// The screen reports are read first; the plogs, which name each
		// process's job, a few polls later.
		for n := range pagingNodes {
			for _, rk := range nodes[n] {
				appendLine(t, rk.screen, rankFaultScreen(rk, failed))
			}
		}
		time.Sleep(1500 * time.Millisecond)
		for n := range pagingNodes {
			for i, rk := range nodes[n] {
				appendLine(t, rk.plog, rankCommunicatorLines(rk, i, failed.Add(-time.Second)))
				appendLine(t, rk.plog, rankFaultPlog(rk, failed))
			}
		}
	} else {
		for n := range pagingNodes {
			for _, rk := range nodes[n] {
				appendLine(t, rk.plog, rankFaultPlog(rk, failed))
				appendLine(t, rk.screen, rankFaultScreen(rk, failed))
			}
		}
	}
	// Every rank's faults are in Prometheus (the count of events, whatever
	// the series), each with its job's communicator as hccl_job.
	wantEvents := 0
	for _, job := range pagingJobs {
		for _, r := range job.ranks {
			wantEvents += 2 * r // plog and screen
			if job.code == "EI0009" {
				wantEvents -= r // no plog line
			}
		}
	}
	prom.WaitQuery(t, `sum(hccl_fault_events_total{code=~"EI0011|EI0009"})`, 30*time.Second, func(s []testtools.Sample) bool {
		return len(s) == 1 && s[0].Value == float64(wantEvents)
	})
	samples, err := prom.Query(`hccl_fault_events_total{code=~"EI0011|EI0009"} > 0`)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if !strings.Contains(s.Metric["hccl_job"], "%enp189s0f0_60000_0_") {
			t.Errorf("a fault without its job's communicator: %v", s.Metric)
		}
	}

	// Each EI0011 job pages its owner; jobD's owner hears on the channel.
	for _, job := range pagingJobs {
		rx, alertname := ownerPager, "HCCLQPMemoryAllocationFailed"
		if job.code == "EI0009" {
			rx, alertname = owner, "HCCLTransportInitFailed"
		}
		rx.WaitForAlert(t, 60*time.Second, func(a testtools.WebhookAlert) bool {
			return a.Labels["alertname"] == alertname && a.Labels["hccl_job"] == job.comm
		})
	}
	// Past the cluster rule's `for:` and the group timers: a page for
	// infra, or a second page of a job, would be here by now.
	seen := time.Now()
	waitFor(t, 30*time.Second, func() bool {
		last, err := lastGroupEvaluation(prom, "hccl-exporter-job-failures")
		return err == nil && last.After(seen.Add(6*time.Second))
	}, func() string { return "rule group hccl-exporter-job-failures not evaluated" })
	time.Sleep(3 * time.Second)

	pages := map[string][]string{} // group → the jobs its alerts name
	for _, m := range ownerPager.Messages() {
		key := fmt.Sprint(m.GroupLabels)
		for _, a := range m.Alerts {
			pages[key] = append(pages[key], a.Labels["hccl_job"]+" "+a.Labels["instance"])
		}
	}
	var keys []string
	for k := range pages {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(pages) != 3 {
		t.Errorf("%d pages for 3 failed EI0011 jobs, want one per job:\n%s", len(pages), strings.Join(keys, "\n"))
	}
	for _, k := range keys {
		if strings.Contains(k, "node/") {
			t.Errorf("a page per node: %s (alerts %v)", k, pages[k])
		}
	}
	if n := len(pager.Messages()); n != 0 {
		var what []string
		for _, m := range pager.Messages() {
			what = append(what, fmt.Sprint(m.GroupLabels))
		}
		t.Errorf("infra paged %d times for one job's EI0009 and three jobs' EI0011: %v", n, what)
	}
	if s, err := prom.Query(`ALERTS{alertname="HCCLJobFailuresAcrossCluster"}`); err != nil || len(s) != 0 {
		t.Errorf("HCCLJobFailuresAcrossCluster = %v, %v; want silent for one job's EI0009", s, err)
	}
	t.Logf("%s (late %v): %d pages for 3 failed EI0011 jobs on %d nodes; %s after the faults, no page for infra", map[bool]string{true: "kubernetes", false: "bare metal"}[k8s], late,
		len(pages), pagingNodes, time.Since(failed).Round(time.Second))
}

// writeRankPlog writes a rank's run plog: settings, and with comm its world
// communicator and the NPU it drives, at the time the job started.
func writeRankPlog(t *testing.T, root string, rk pagingRank, rank int, at time.Time, comm bool) string {
	t.Helper()
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := 0
	line := func(format string, args ...any) string {
		n++
		return fmt.Sprintf("[INFO] HCCL(%d,python3):%s [externalinput.cc:%d] [%d]%s\n", rk.pid, cannTime(at.Add(time.Duration(n)*time.Millisecond)), n, rk.pid, fmt.Sprintf(format, args...))
	}
	data := line("[HCCL_ENV] HCCL_CONNECT_TIMEOUT set by environment to [600]s") +
		line("[HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M")
	if comm {
		data += rankCommunicatorLines(rk, rank, at.Add(3*time.Millisecond))
	}
	p := filepath.Join(dir, fmt.Sprintf("plog-%d_%s%03d.log", rk.pid, at.Format("20060102150405"), rank))
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rankCommunicatorLines are the lines of a rank's world communicator and
// the NPU it drives (hccl_communicator_attrs.cc:327 and :330).
func rankCommunicatorLines(rk pagingRank, rank int, at time.Time) string {
	line := func(n int, format string, args ...any) string {
		return fmt.Sprintf("[INFO] HCCL(%d,python3):%s [hccl_communicator_attrs.cc:%d] [%d]%s\n", rk.pid, cannTime(at.Add(time.Duration(n)*time.Millisecond)), 326+n, rk.pid, fmt.Sprintf(format, args...))
	}
	return line(1, "[Communicator Key Info]identifier[%s] rankSize[16] serverNum[4] moduleNum[4] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]", rk.job.comm) +
		line(4, "[LocalRank Key Info]userRank[%d] hostIp[10.0.0.11] devicePhyId[%d] server[10.0.0.11] deviceIp[10.1.0.11] superPodId[0] useSuperPodMode[0] isStandardCard[0]", rank, rk.device)
}

// rankFaultPlog is the plog line of a rank's fault: HCCP's QP creation
// failure (EI0011); EI0009's rank prints its report to the screen only.
func rankFaultPlog(rk pagingRank, at time.Time) string {
	if rk.job.code == "EI0009" {
		return fmt.Sprintf("[INFO] HCCL(%d,python3):%s [x.cc:1] [%d]link setup to rank 0\n", rk.pid, cannTime(at), rk.pid)
	}
	return fmt.Sprintf("[ERROR] HCCP(%d,python3):%s [ra_hdc.c:1] [%d]ra qp create fail, out of memory\n", rk.pid, cannTime(at), rk.pid)
}

// rankFaultScreen is the report torch_npu prints to the screen log
// (internal/cann/logstate/testdata/screen-log/train-ei0011.log and
// train-ei0009.log), as a plain line or a CRI entry.
func rankFaultScreen(rk pagingRank, at time.Time) string {
	var msg string
	if rk.job.code == "EI0009" {
		msg = fmt.Sprintf("[rank1]: EI0009: [PID: %d] %s Transport init error. Reason: [Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[172.16.0.115]",
			rk.pid, cannTime(at))
	} else {
		msg = strings.TrimSuffix(ei0011(rk.pid, at), "\n")
	}
	if strings.Contains(rk.screen, string(filepath.Separator)+"pods"+string(filepath.Separator)) {
		return at.UTC().Format(time.RFC3339Nano) + " stderr F " + msg + "\n"
	}
	return msg + "\n"
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}
