package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// sharedVolume is two processes, both pid 30 of their container, whose log
// roots are one directory (a volume both mount at /logs, or one's log
// directory bind-mounted from the other's): the attacker (host pid 4100)
// and the victim (4200). It returns the plog directory and a function that
// gives a process a descriptor on a file, for writing or for reading.
func sharedVolume(t *testing.T, procfs string) (dir string, hold func(pid, fd int, rel string, write bool)) {
	t.Helper()
	volume := fakeProcess(t, procfs, 4100, 30, "ASCEND_PROCESS_LOG_PATH=/logs")
	fakeProcess(t, procfs, 4200, 30, "ASCEND_PROCESS_LOG_PATH=/logs")
	victimRoot := filepath.Join(procfs, "4200", "root")
	if err := os.Remove(victimRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(volume, victimRoot); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(volume, "logs", "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hold = func(pid, fd int, rel string, write bool) {
		base := filepath.Join(procfs, strconv.Itoa(pid))
		for _, d := range []string{"fd", "fdinfo"} {
			if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(rel, filepath.Join(base, "fd", strconv.Itoa(fd))); err != nil {
			t.Fatal(err)
		}
		// fdinfo as the kernel prints it (proc(5)): flags in octal.
		flags := "0100000" // O_RDONLY|O_LARGEFILE
		if write {
			flags = "02102001" // O_WRONLY|O_APPEND|O_LARGEFILE|O_CLOEXEC
		}
		info := "pos:\t0\nflags:\t" + flags + "\nmnt_id:\t1450\nino:\t1234\n"
		if err := os.WriteFile(filepath.Join(base, "fdinfo", strconv.Itoa(fd)), []byte(info), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	return dir, hold
}

// settingsByHostPID polls until done says the rows settled (at most 5 s)
// and returns each discovered process's settings by host pid.
func settingsByHostPID(t *testing.T, c *Service, done func(map[int]map[string]string) bool) map[int]map[string]string {
	t.Helper()
	rows := map[int]map[string]string{}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.pollOnce(time.Now())
		clear(rows)
		for _, d := range c.Devices() {
			if d.HostPID == 0 {
				continue
			}
			pv, _ := c.Process(d.Key)
			m := map[string]string{}
			for k, v := range pv.Env {
				m[k] = v.Value
			}
			rows[d.HostPID] = m
		}
		if done(rows) || time.Now().After(deadline) {
			return rows
		}
	}
}

// a11: a container whose log directory is bind-mounted from another's
// opens the other's plog (the same pid in both containers names both
// files). On 0.5.0 a file the root's own process held went to that root's
// row: the attacker's row showed the victim's settings. Now the kernel's
// word decides: the process holding it for writing is its writer; where
// two write it, it is no one's row (a row of its own).
func TestAttackBindMountedLogDirectory(t *testing.T) {
	for _, tc := range []struct {
		name          string
		attackerWrite bool
		victimKeeps   bool
	}{
		{name: "attacker-reads-the-victims-file", victimKeeps: true},
		{name: "attacker-writes-the-victims-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procfs := t.TempDir()
			dir, hold := sharedVolume(t, procfs)
			write := func(name, lines string) string {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(lines), 0o644); err != nil {
					t.Fatal(err)
				}
				return "/logs/run/plog/" + name
			}
			victimFile := write("plog-30_20260106153829870.log",
				"[INFO] HCCL(30,python3):2026-01-06-15:38:29.890.000 [externalinput.cc:1370] [30][HCCL_ENV] HCCL_BUFFSIZE set by environment to [200]M\n"+
					"[INFO] HCCL(30,python3):2026-01-06-15:38:29.891.000 [externalinput.cc:1739] [30]environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [4]\n")
			attackerFile := write("plog-30_20260106153900000.log",
				"[INFO] HCCL(30,python3):2026-01-06-15:39:00.000.000 [externalinput.cc:1370] [30][HCCL_ENV] HCCL_BUFFSIZE set by environment to [1]M\n")
			hold(4200, 7, victimFile, true)
			hold(4100, 7, attackerFile, true)
			hold(4100, 8, victimFile, tc.attackerWrite)
			tab := &fakeTable{}
			tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4100}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4200})
			c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			rows := settingsByHostPID(t, c, func(rows map[int]map[string]string) bool {
				return rows[4100]["HCCL_BUFFSIZE"] == "1" && (!tc.victimKeeps || rows[4200]["HCCL_RDMA_QPS_PER_CONNECTION"] == "4")
			})
			if v, ok := rows[4100]["HCCL_RDMA_QPS_PER_CONNECTION"]; ok || rows[4100]["HCCL_BUFFSIZE"] != "1" {
				t.Errorf("the attacker's row: %v (QPS %q): want its own HCCL_BUFFSIZE 1 and none of the victim's settings", rows[4100], v)
			}
			if tc.victimKeeps && (rows[4200]["HCCL_BUFFSIZE"] != "200" || rows[4200]["HCCL_RDMA_QPS_PER_CONNECTION"] != "4") {
				t.Errorf("the victim's row: %v, want its own settings", rows[4200])
			}
		})
	}
}

// 46.5: a process holding 19,800 descriptors next to 300 plog-30_* files
// that two roots reach, and NPU processes coming and going. On 0.5.0 every
// file's writer was looked for by reading up to 65,536 descriptors of each
// process on the poll goroutine, again after every change of the table of
// roots: 300 x 19,800 links per round, a bystander's EI0011 40-56 s late.
// Now each process's descriptors are read once per look, off the poll
// goroutine, within a wait and a number of looks per poll, and decisions
// stay when an unrelated process comes or goes.
func TestWriterLooksBudgetedAndKept(t *testing.T) {
	procfs := t.TempDir()
	dir, hold := sharedVolume(t, procfs)
	for i := range 300 {
		name := fmt.Sprintf("plog-30_20260106153%06d.log", i)
		line := fmt.Sprintf("[INFO] HCCL(30,python3):2026-01-06-15:39:00.000.000 [externalinput.cc:1370] [30][HCCL_ENV] HCCL_BUFFSIZE set by environment to [%d]M\n", i+1)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hold(4100, 7, "/dev/null", false)
	for fd := range 19800 {
		if err := os.Symlink(fmt.Sprintf("/dev/shm/junk-%d", fd), filepath.Join(procfs, "4100", "fd", strconv.Itoa(100+fd))); err != nil {
			t.Fatal(err)
		}
	}
	tab := &fakeTable{}
	tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4100}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4200})
	c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour}, Deps{Procfs: procfs, Processes: tab}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// Lines keep coming to every file until each file's writer is
	// decided (a look not done leaves its file undecided until its next
	// line).
	var slowest time.Duration
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		t0 := time.Now()
		c.pollOnce(time.Now())
		slowest = max(slowest, time.Since(t0))
		if len(c.writers) >= 300 {
			break
		}
		for i := range 300 {
			f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("plog-30_20260106153%06d.log", i)), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "[INFO] HCCL(30,python3):2026-01-06-15:39:01.000.000 [x.cc:1] [30]still here\n")
			f.Close()
		}
	}
	if len(c.writers) < 300 {
		t.Fatalf("%d files decided, want the 300 files", len(c.writers))
	}
	t.Logf("slowest poll while deciding 300 files over 19,800 descriptors: %v", slowest)
	if slowest > 2*time.Second {
		t.Errorf("a poll took %v: the looks are not bounded", slowest)
	}
	// An unrelated NPU process (another pid in its container) comes and
	// goes: the decisions stay, no descriptor is read again.
	other := fakeProcess(t, procfs, 4300, 31, "ASCEND_PROCESS_LOG_PATH=/logs")
	_ = other
	c.looks.mu.Lock()
	looked := c.looks.looked
	c.looks.mu.Unlock()
	for i := range 4 {
		if i%2 == 0 {
			tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4100}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4200}, ascend.Process{ChipID: ascend.ChipID{NPU: "2", Chip: "0"}, PID: 4300})
		} else {
			tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4100}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4200})
		}
		c.pollOnce(time.Now())
		if len(c.writers) < 300 {
			t.Fatalf("round %d: %d decisions left after an unrelated process came or went, want 300", i, len(c.writers))
		}
	}
	c.looks.mu.Lock()
	defer c.looks.mu.Unlock()
	if c.looks.looked != looked {
		t.Errorf("%d looks at descriptors, was %d: an unrelated change read descriptors again", c.looks.looked, looked)
	}
}
