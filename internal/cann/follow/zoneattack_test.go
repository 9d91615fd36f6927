package follow

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"

	"github.com/hccl-exporter/hccl_exporter/diagnose"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

// zoneCollector is a collector over roots under --cannlog.timezone=auto
// whose own zone is UTC.
func zoneCollector(t *testing.T, cfg Config) *Service {
	t.Helper()
	cfg.Timezone = "auto"
	f, err := tail.New(tail.Config{Roots: cfg.Roots, DisableNotify: true, CrossFilesystems: cfg.CrossFilesystems, IODeadline: 300 * time.Millisecond},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	opts := logstate.DefaultOptions()
	opts.Location = time.UTC
	c := newService(cfg, Deps{}, nil, slog.New(slog.DiscardHandler), f, logstate.NewState(opts))
	c.zones.local = func() *time.Location { return time.UTC }
	return c
}

// inferredOffsets returns hccl_exporter_log_timezone_offset_seconds by root.
func inferredOffsets(t *testing.T, c *Service) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(string(exposition(t, c)), "\n") {
		rest, ok := strings.CutPrefix(line, "hccl_exporter_log_timezone_offset_seconds{root=\"")
		if !ok {
			continue
		}
		root, val, _ := strings.Cut(rest, "\"} ")
		out[root] = val
	}
	return out
}

// Z1: a job's root (a host path its containers write, or its own tree)
// holds `security -> <host dir>`. On 0.4.0 the zone inference walked the
// root by path: it opened and read a 0600 host file behind the link and set
// the job's zone from it. Now no link is followed: the root has no zone of
// its own files, and none from the host's.
func TestAttackZ1ZoneLinkToHostDir(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	host := t.TempDir() // a host directory the exporter can read and the job cannot
	hostPlog := filepath.Join(host, "plog")
	if err := os.MkdirAll(hostPlog, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(hostPlog, "plog-1_20260101000000000.log")
	plus5 := time.FixedZone("", 5*3600)
	line := fmt.Sprintf("[INFO] HCCL(1,python3):%s.000 [x.cc:1] [1]root-only host line\n", now.In(plus5).Format("2006-01-02-15:04:05.000"))
	if err := os.WriteFile(secret, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(secret, now, now); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "job")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(root, "security")); err != nil {
		t.Fatal(err)
	}
	c := zoneCollector(t, Config{Roots: []string{root}})
	defer c.Close()
	c.pollOnce(now)
	if got := inferredOffsets(t, c); len(got) != 0 {
		t.Fatalf("the job's zone was inferred from a host file behind a link: %v (from %s)", got, c.roots.configured[0].zone.from)
	}
}

// Z2: a hung FUSE file system on a job's own run/device-0. On 0.4.0 the
// zone inference walked every root by path on the poll goroutine with no
// worker: the walk blocked in the FUSE mount for good, every job's lines
// stopped, and Close (what SIGTERM runs) never returned. Now the walk does
// not enter a mount point (unless --cannlog.cross-filesystems, and then it
// runs on a goroutine of its own, abandoned at the deadline): the other
// root's zone is inferred, its lines read, and Close returns at once.
func TestAttackZ2ZoneHungFUSE(t *testing.T) {
	if os.Getenv("HCCL_ZONE_Z2_CHILD") != "" {
		z2Child(t, os.Getenv("HCCL_ZONE_Z2_CHILD") == "cross")
		return
	}
	for _, mode := range []string{"default", "cross"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestAttackZ2ZoneHungFUSE$", "-test.v")
			cmd.Env = append(os.Environ(), "HCCL_ZONE_Z2_CHILD="+mode)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
			var b strings.Builder
			cmd.Stdout, cmd.Stderr = &b, &b
			if err := cmd.Start(); err != nil {
				testtools.NeedsKernel(t, "cannot start a process in a new mount namespace: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("child still running after 30 s (killed):\n%s", b.String())
			}
			out := b.String()
			if strings.Contains(out, "SKIP-FUSE") {
				testtools.NeedsKernel(t, "no FUSE mount here:\n%s", out)
			}
			if err != nil {
				if !strings.Contains(out, "=== RUN") {
					testtools.NeedsKernel(t, "cannot start a process in a new mount namespace: %v", err)
				}
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("child:\n%s", out)
		})
	}
}

func z2Child(t *testing.T, cross bool) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	now := time.Now().Truncate(time.Second)
	attacker := filepath.Join(t.TempDir(), "attacker")
	dev0 := filepath.Join(attacker, "run", "device-0")
	if err := os.MkdirAll(dev0, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	shanghai := time.FixedZone("", 8*3600)
	writeRoot(t, victim, shanghai, now, "[ERROR] HCCP(156,python3):%s [ra_hdc.c:1] [156]ra qp create fail, out of memory")
	abort := zoneHungFUSE(t, dev0)
	defer abort()
	c := zoneCollector(t, Config{Roots: []string{attacker, victim}, CrossFilesystems: cross})
	start := time.Now()
	done := make(chan struct{})
	go func() {
		c.pollOnce(now)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a poll still running after 5 s: one job's hung file system blinds every job")
	}
	t.Logf("poll took %v", time.Since(start))
	if got := inferredOffsets(t, c)[victim]; got != "28800" {
		t.Errorf("the victim's zone: %q, want 28800 (UTC+08:00)", got)
	}
	if last := lastEvent(t, c.state, "EI0011"); !last.Equal(now) {
		t.Errorf("the victim's EI0011 at %v, want %v", last, now)
	}
	start = time.Now()
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close (what SIGTERM runs) still waiting after 5 s")
	}
	t.Logf("Close took %v", time.Since(start))
}

// zoneHungFUSE mounts a FUSE file system at dir whose daemon never answers
// (as tail's B4 test does) and returns what aborts and unmounts it.
func zoneHungFUSE(t *testing.T, dir string) func() {
	t.Helper()
	fd, err := syscall.Open("/dev/fuse", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := syscall.Mount("hung", dir, "fuse", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		_ = syscall.Close(fd)
		fmt.Println("SKIP-FUSE", err)
		t.Skip(err)
	}
	return func() {
		_ = syscall.Close(fd)
		_ = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
}

// TestZoneOneRuleForExporterAndDiagnose (issue 40): the exporter and
// diagnose read the same files in the same zone. On 0.4.0 the exporter
// inferred the demo's zone from the files' modification times (a checkout's:
// no zone at all, so it applied its own, UTC+00:00) while diagnose read the
// communicator identifiers (UTC+08:00). Both now apply logstate.InferZone.
func TestZoneOneRuleForExporterAndDiagnose(t *testing.T) {
	for _, tc := range []struct {
		name, root, node string
		bundle           []string // diagnose's input
	}{
		{"demo", filepath.Join(demoDir, "log"), "", []string{filepath.Join(demoDir, "log")}},
		{"bundle ei0011-root-cause node-1", "../../../examples/bundles/ei0011-root-cause/node-1/ascend/log", "node-1",
			[]string{"../../../examples/bundles/ei0011-root-cause"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "log")
			copyTree(t, tc.root, root) // modification times now, as a fresh checkout's
			c := zoneCollector(t, Config{Roots: []string{root}})
			defer c.Close()
			c.pollOnce(time.Now())
			exporter := inferredOffsets(t, c)[root]

			rep, err := diagnose.Run(tc.bundle, diagnose.Options{Location: time.UTC, InferZones: true})
			if err != nil {
				t.Fatal(err)
			}
			var zone string
			for _, n := range rep.Clock.Nodes {
				if tc.node == "" || n.Node == tc.node {
					zone = n.Zone
					break
				}
			}
			loc, err := logstate.ParseZone(strings.TrimPrefix(zone, "UTC"))
			if err != nil {
				t.Fatalf("diagnose's zone %q: %v (%+v)", zone, err, rep.Clock.Nodes)
			}
			_, off := time.Now().In(loc).Zone()
			if exporter != fmt.Sprint(off) {
				t.Errorf("the exporter reads the files at offset %q s, diagnose in %s (%d s)", exporter, zone, off)
			}
			if off != 8*3600 {
				t.Errorf("diagnose read them in %s, the demo prints UTC+08:00", zone)
			}
		})
	}
}
