package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// oneChipNPUSMI is an npu-smi table of one 910B3 chip running pid.
func oneChipNPUSMI(pid int) string {
	return testtools.NPUSMITable(
		[]testtools.NPUSMIChip{{NPU: 0, PowerW: 95, TempC: 40, BusID: "0000:C1:00.0", HBMUsedMiB: 30000}},
		[]testtools.NPUSMIProcess{{NPU: 0, PID: pid, MemoryMiB: 27000}})
}

// The capabilities of the chart's and deploy/kubernetes' default
// securityContext (capabilities.drop [ALL], add [SYS_PTRACE,
// DAC_READ_SEARCH]): the bits of CapEff in /proc/<pid>/status.
const (
	capDACReadSearch = 2
	capSysPtrace     = 19
)

// TestDefaultCapabilitiesReadNamespacedLogs runs the real exporter as uid
// 0 with only the default securityContext's capabilities (setpriv drops
// every other one from the bounding set, as the runtime does for
// capabilities.drop: [ALL]) against a training process that runs as uid
// 1000 in its own pid and mount namespaces and writes its CANN logs, mode
// 0640 in a 0750 directory of its own, to a tmpfs only its namespace sees.
// The exporter must find and read them through --path.procfs. Without
// DAC_READ_SEARCH the same setup reports them missing: the capability is
// needed, not decoration.
func TestDefaultCapabilitiesReadNamespacedLogs(t *testing.T) {
	bin := buildExporter(t)
	if os.Geteuid() != 0 {
		testtools.NeedsKernel(t, "skipped: needs root to create namespaces and drop capabilities (CI runs as root)")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			testtools.Unavailable(t, "skipped: %s not found (util-linux)", tool)
		}
	}
	if out, err := exec.Command("unshare", "--pid", "--fork", "--mount", "sh", "-c", "mount -t tmpfs tmpfs '"+t.TempDir()+"'").CombinedOutput(); err != nil {
		testtools.NeedsKernel(t, "skipped: unshare with a tmpfs is not permitted here: %v %s", err, out)
	}
	for _, tc := range []struct {
		name  string
		caps  string
		found bool
		root  bool // the training process runs as root, its logs root's
	}{
		{"default securityContext", "+sys_ptrace,+dac_read_search", true, false},
		{"without DAC_READ_SEARCH", "+sys_ptrace", false, false},
		// docs/security.md, "Capabilities": a root job's logs are root's,
		// which uid 0 owns: SYS_PTRACE alone reads them (Helm
		// jobsRunAsNonRoot=false), and without it nothing is read.
		{"root job, SYS_PTRACE only", "+sys_ptrace", true, true},
		{"root job, no capability", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			logRoot := filepath.Join(dir, "job", "ascend-logs")
			if err := os.MkdirAll(logRoot, 0o755); err != nil {
				t.Fatal(err)
			}
			ready := filepath.Join(dir, "ready")
			const line = "[ERROR] HCCP(1,python3):2026-01-07-10:00:59.000.000 [ra_host.c:1] tid:1,ra_qp_create(1): ra qp create fail, reason: out of memory"
			owner, run := "1000:1000", "setpriv --reuid=1000 --regid=1000 --clear-groups sleep 600"
			if tc.root {
				owner, run = "0:0", "sleep 600"
			}
			// secret: a file of another user, mode 0600, in the job's own
			// mount namespace (docs/security.md: with these capabilities
			// the exporter's process could read it).
			script := `set -e
mount -t tmpfs -o mode=0755 tmpfs "$ASCEND_PROCESS_LOG_PATH"
mkdir -p "$ASCEND_PROCESS_LOG_PATH/debug/plog"
echo '` + line + `' > "$ASCEND_PROCESS_LOG_PATH/debug/plog/plog-$$_20260107100000000.log"
echo top-secret > "$ASCEND_PROCESS_LOG_PATH/secret"
chown 65534:65534 "$ASCEND_PROCESS_LOG_PATH/secret"
chmod 0600 "$ASCEND_PROCESS_LOG_PATH/secret"
chown ` + owner + ` "$ASCEND_PROCESS_LOG_PATH" "$ASCEND_PROCESS_LOG_PATH/debug" "$ASCEND_PROCESS_LOG_PATH/debug/plog" "$ASCEND_PROCESS_LOG_PATH/debug/plog/"*
chmod 0750 "$ASCEND_PROCESS_LOG_PATH" "$ASCEND_PROCESS_LOG_PATH/debug" "$ASCEND_PROCESS_LOG_PATH/debug/plog"
chmod 0640 "$ASCEND_PROCESS_LOG_PATH/debug/plog/"*
touch '` + ready + `'
exec ` + run + `
`
			hostPID := namespacedJob(t, script, ready, "ASCEND_PROCESS_LOG_PATH="+logRoot)
			if entries, _ := os.ReadDir(logRoot); len(entries) != 0 {
				t.Fatalf("the logs are visible at the host path %v: the tmpfs is not private", entries)
			}

			// What the capabilities allow any code in the exporter's
			// process: the default set reads another user's 0600 file
			// in another mount namespace through /proc/<pid>/root.
			secret := fmt.Sprintf("/proc/%d/root%s/secret", hostPID, logRoot)
			out, err := exec.Command("setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set="+bounding(tc.caps), "--", "cat", secret).CombinedOutput()
			if canRead := err == nil && strings.Contains(string(out), "top-secret"); canRead != (tc.caps == "+sys_ptrace,+dac_read_search") {
				t.Errorf("with capabilities %q reading another user's 0600 file through %s: %v %s", tc.caps, secret, err, out)
			}

			capture := filepath.Join(dir, "npu-smi.txt")
			npuSMI := filepath.Join(dir, "npu-smi")
			if err := os.WriteFile(capture, []byte(oneChipNPUSMI(hostPID)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
			p := testtools.StartProcess(t, dir, "setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set="+bounding(tc.caps), "--",
				bin, "--web.listen-address="+addr, "--npusmi.path="+npuSMI, "--path.procfs=/proc",
				"--cannlog.root="+filepath.Join(dir, "none"), "--cannlog.poll-interval=50ms",
				"--no-collector.hccn", "--no-collector.pods", "--web.scrape-cache-ttl=0s")
			url := "http://" + addr + "/metrics"
			var page string
			waitFor(t, 20*time.Second, func() bool { _, page = collectorSuccess(t, url); return strings.Contains(page, "ascend_npu_processes") },
				func() string { return "exporter never served npu-smi's processes:\n" + page + p.Output(3000) })

			// The exporter runs with exactly the capabilities given
			// (setpriv execs it: same pid).
			exporterPID := p.Pid()
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", exporterPID))
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^CapEff:\s+([0-9a-f]+)$`).FindSubmatch(status)
			if m == nil {
				t.Fatalf("no CapEff in %s", status)
			}
			eff, _ := strconv.ParseUint(string(m[1]), 16, 64)
			var want uint64
			if strings.Contains(tc.caps, "sys_ptrace") {
				want |= 1 << capSysPtrace
			}
			if strings.Contains(tc.caps, "dac_read_search") {
				want |= 1 << capDACReadSearch
			}
			if eff != want {
				t.Fatalf("exporter CapEff %x, want %x", eff, want)
			}

			found := regexp.MustCompile(`(?m)^ascend_npu_processes\{cann_logs="found",chip="0",npu="0"\} 1$`)
			missing := regexp.MustCompile(`(?m)^ascend_npu_processes\{cann_logs="missing",chip="0",npu="0"\} 1$`)
			fault := regexp.MustCompile(`(?m)^hccl_fault_events_total\{[^}]*code="EI0011"[^}]*source="plog"[^}]*\} 1$`)
			if tc.found {
				waitFor(t, 15*time.Second, func() bool {
					_, page = collectorSuccess(t, url)
					return found.MatchString(page) && fault.MatchString(page)
				}, func() string { return "the namespaced process's logs were not read:\n" + page + p.Output(3000) })
				return
			}
			time.Sleep(2 * time.Second)
			_, page = collectorSuccess(t, url)
			if !missing.MatchString(page) || fault.MatchString(page) {
				t.Errorf("%s: the 0640 logs were read, or not reported missing:\n%s", tc.name, page)
			}
		})
	}
}

// bounding is setpriv's --bounding-set for capabilities caps ("" none).
func bounding(caps string) string {
	if caps == "" {
		return "-all"
	}
	return "-all," + caps
}
