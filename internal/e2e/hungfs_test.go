package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// twoProcessNPUSMI is an npu-smi table of one 910B3 chip running two pids.
func twoProcessNPUSMI(a, b int) string {
	t := oneChipNPUSMI(a)
	row := fmt.Sprintf("| 0       0                 | %-13d | python3                  | 27000                   |\n", a)
	return strings.Replace(t, row, row+fmt.Sprintf("| 0       0                 | %-13d | python3                  | 1000                    |\n", b), 1)
}

// namespacedJob starts `sh -c script` in its own pid and mount namespaces
// (unshare) with env, waits until the script has touched ready, and returns
// the host pid of the namespace's first process (the job).
func namespacedJob(t *testing.T, script, ready string, env ...string) int {
	t.Helper()
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount", "sh", "-c", script)
	cmd.Env = append([]string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent"}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hostPID := 0
	t.Cleanup(func() {
		if hostPID > 0 {
			_ = syscall.Kill(hostPID, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
		if f := strings.Fields(string(b)); len(f) == 1 {
			hostPID, _ = strconv.Atoi(f[0])
		}
		_, err := os.Stat(ready)
		return err == nil && hostPID > 0
	}, func() string { return "job not ready: " + out.String() })
	return hostPID
}

// TestHungFilesystemDelaysNobody (attack B4, on the real binary): one job's
// CANN log root is a FUSE mount whose daemon never answers (every call on it
// blocks: a hung dataset mount or NFS server), in that job's own mount
// namespace; another job on the node writes an EI0011. The exporter, which
// finds both through /proc, must count the other job's EI0011 within a few
// seconds and exit within 5 s of SIGTERM — with the default (a FUSE root is
// refused after a statfs that itself hangs) and with
// --cannlog.cross-filesystems (the hung mount is walked into).
func TestHungFilesystemDelaysNobody(t *testing.T) {
	bin := buildExporter(t)
	if os.Geteuid() != 0 {
		testtools.Unavailable(t, "needs root to create namespaces and mount FUSE")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		testtools.Unavailable(t, "unshare not found (util-linux)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testtools.NeedsKernel(t, "no /dev/fuse here: %v", err)
	}
	// The attacker's tree: its whole log root a hung FUSE mount, or
	// (round five, issue 38) a tmpfs root with a plog of its own and a hung
	// FUSE mount at run/device-0. On 0.4.0 the time-zone inference walked
	// that tree by path on the poll goroutine, with no worker: it blocked in
	// run/device-0 for good, every job's lines stopped and SIGTERM was
	// ignored.
	const hungWholeRoot = `set -e
mount --make-rprivate /
exec 3<>/dev/fuse
mount -i -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0 hung "$ASCEND_PROCESS_LOG_PATH"
touch "$READY"
exec sleep 600
`
	const hungDevice0 = `set -e
mount --make-rprivate /
mount -t tmpfs tmpfs "$ASCEND_PROCESS_LOG_PATH"
mkdir -p "$ASCEND_PROCESS_LOG_PATH/run/plog" "$ASCEND_PROCESS_LOG_PATH/run/device-0"
echo '[INFO] HCCL(1,python3):2026-01-07-10:00:00.000.000 [init.cc:1] [1]attacker start' > "$ASCEND_PROCESS_LOG_PATH/run/plog/plog-1_20260107100000000.log"
exec 3<>/dev/fuse
mount -i -t fuse -o fd=3,rootmode=40000,user_id=0,group_id=0 hung "$ASCEND_PROCESS_LOG_PATH/run/device-0"
touch "$READY"
exec sleep 600
`
	for _, tc := range []struct {
		name     string
		extra    []string
		attacker string
		// touched: the hung mount is asked something (and a call
		// abandoned); otherwise the kernel refuses the mount point first.
		touched bool
	}{
		{"default", nil, hungWholeRoot, true},
		{"cross-filesystems", []string{"--cannlog.cross-filesystems"}, hungWholeRoot, true},
		{"device-0", nil, hungDevice0, false},
		{"device-0-cross-filesystems", []string{"--cannlog.cross-filesystems"}, hungDevice0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			victimRoot := filepath.Join(dir, "victim", "logs")
			hungRoot := filepath.Join(dir, "attacker", "logs")
			for _, d := range []string{victimRoot, hungRoot} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			plog := "debug/plog/plog-1_20260107100000000.log"
			victimReady, hungReady := filepath.Join(dir, "victim.ready"), filepath.Join(dir, "attacker.ready")
			victim := namespacedJob(t, `set -e
mount --make-rprivate /
mount -t tmpfs tmpfs "$ASCEND_PROCESS_LOG_PATH"
mkdir -p "$ASCEND_PROCESS_LOG_PATH/debug/plog"
echo '[INFO] HCCL(1,python3):2026-01-07-10:00:00.000.000 [init.cc:1] [1]start' > "$ASCEND_PROCESS_LOG_PATH/`+plog+`"
echo '[INFO] HCCL(1,python3):2026-01-07-10:00:00.001.000 [hccl_communicator_attrs.cc:327] [1][Communicator Key Info]identifier[10.0.0.1%eth0_60000_0_1767780000000000] rankSize[8] serverNum[1] moduleNum[1] superPodNum[0] multiModuleDiffDeviceNumMode[0] multiSuperPodDiffServerNumMode[0]' >> "$ASCEND_PROCESS_LOG_PATH/`+plog+`"
touch '`+victimReady+`'
exec sleep 600
`, victimReady, "ASCEND_PROCESS_LOG_PATH="+victimRoot)
			// fd 3 is the FUSE connection; nobody reads it, so the
			// kernel's INIT is never answered and every call blocks. sleep
			// inherits it and keeps the mount hung until it is killed.
			attacker := namespacedJob(t, tc.attacker, hungReady, "ASCEND_PROCESS_LOG_PATH="+hungRoot, "READY="+hungReady)

			npuSMI := filepath.Join(dir, "npu-smi")
			capture := filepath.Join(dir, "npu-smi.txt")
			if err := os.WriteFile(capture, []byte(twoProcessNPUSMI(victim, attacker)), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(npuSMI, []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", testtools.FreePort(t))
			args := append([]string{"--web.listen-address=" + addr, "--npusmi.path=" + npuSMI, "--path.procfs=/proc",
				"--cannlog.root=" + filepath.Join(dir, "none"), "--cannlog.poll-interval=50ms",
				"--no-collector.hccn", "--no-collector.pods", "--no-collector.npuhealth", "--web.scrape-cache-ttl=0s"}, tc.extra...)
			p := testtools.StartProcess(t, dir, bin, args...)
			url := "http://" + addr + "/metrics"
			victimFound := regexp.MustCompile(`(?m)^ascend_npu_processes\{cann_logs="found",chip="0",npu="0"\} [12]$`)
			var page string
			waitFor(t, 20*time.Second, func() bool { _, page = collectorSuccess(t, url); return victimFound.MatchString(page) },
				func() string { return "the victim's logs were never found:\n" + page + p.Output(3000) })

			// The victim's EI0011s, written through its own root: the
			// first while the exporter meets the hung mount (its first
			// look and its first read each wait out one deadline, 1 s),
			// the second once it has (nothing waits for the mount again).
			for i, limit := range []time.Duration{5 * time.Second, 2 * time.Second} {
				f, err := os.OpenFile(filepath.Join(fmt.Sprintf("/proc/%d/root", victim), victimRoot, plog), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				written := time.Now()
				if _, err := f.WriteString("[ERROR] HCCP(1,python3):2026-01-07-10:00:59.000.000 [ra_host.c:1] tid:1,ra_qp_create(1): ra qp create fail, reason: out of memory\n"); err != nil {
					t.Fatal(err)
				}
				_ = f.Close()
				fault := regexp.MustCompile(`(?m)^hccl_fault_events_total\{[^}]*code="EI0011"[^}]*source="plog"[^}]*\} ` + strconv.Itoa(i+1) + `$`)
				waitFor(t, limit, func() bool { _, page = collectorSuccess(t, url); return fault.MatchString(page) },
					func() string {
						return fmt.Sprintf("the victim's EI0011 #%d was not counted within %v:\n%s%s", i+1, limit, page, p.Output(3000))
					})
				t.Logf("the victim's EI0011 #%d was served %v after its write", i+1, time.Since(written).Round(time.Millisecond))
				time.Sleep(3 * time.Second)
			}
			hung := regexp.MustCompile(`(?m)^hccl_exporter_log_hung_calls_total [1-9]`)
			if tc.touched && !hung.MatchString(page) {
				t.Errorf("no hung call counted:\n%s", page)
			}

			sent := time.Now()
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code, ok := p.Wait(5 * time.Second)
			if !ok {
				t.Fatalf("the exporter did not exit within 5 s of SIGTERM:\n%s", p.Output(3000))
			}
			if code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0:\n%s", code, p.Output(3000))
			}
			t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
		})
	}
}
