package follow

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// A tenant's screen log on bare metal prints an EI0011 with the victim's
// pid. On 0.5.0 the report carried the victim's hccl_job (paging the
// victim's owner). Now the collector names the screen log's writer, the
// owner of the discovered process holding it open: the tenant's uid, so
// the report is the tenant's (untied, counted). The victim's own screen
// log, held by the victim's process, still carries its job.
func TestBareMetalScreenWriterOwnsItsReports(t *testing.T) {
	const job = "10.0.0.11%enp189s0f0_60000_0_1767685109881000"
	for _, tc := range []struct {
		name   string
		holder int // the host pid whose process holds the screen log
		tied   bool
	}{
		{"tenant-writes", 4300, false},
		{"victim-writes", 4242, true},
		{"nobody-holds", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procfs := t.TempDir()
			for pid, uid := range map[int]int{4242: 1001, 4300: 2002} {
				root := fakeProcess(t, procfs, pid, pid, "ASCEND_PROCESS_LOG_PATH=/job/logs")
				setUID(t, procfs, pid, uid)
				if pid == 4242 {
					writePlog(t, filepath.Join(root, "job", "logs"), pid, "")
				}
			}
			screen := filepath.Join(t.TempDir(), "train.log")
			report := "[PID: 4242] 2026-01-06-15:40:12.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n"
			if err := os.WriteFile(screen, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.holder != 0 {
				fd := filepath.Join(procfs, strconv.Itoa(tc.holder), "fd")
				if err := os.MkdirAll(fd, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(screen, filepath.Join(fd, "1")); err != nil {
					t.Fatal(err)
				}
			}
			tab := &fakeTable{}
			tab.set(ascend.Process{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 4242}, ascend.Process{ChipID: ascend.ChipID{NPU: "1", Chip: "0"}, PID: 4300})
			c, err := New(Config{Timezone: "UTC", ProcessTTL: time.Hour, ScreenGlobs: []string{screen}}, Deps{Procfs: procfs, Processes: tab}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			// Discovery first (the victim's plog read), then the screen log.
			for deadline := time.Now().Add(5 * time.Second); len(c.Processes()) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				c.pollOnce(time.Now())
			}
			f, err := os.OpenFile(screen, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(report); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var faults []string
			page := ""
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				c.pollOnce(time.Now())
				page = string(exposition(t, c))
				faults = faults[:0]
				for _, l := range strings.Split(page, "\n") {
					if strings.HasPrefix(l, `hccl_fault_events_total{code="EI0011"`) && strings.Contains(l, `source="screen"`) && !strings.HasSuffix(l, " 0") {
						faults = append(faults, l)
					}
				}
				if len(faults) > 0 {
					break
				}
			}
			if len(faults) != 1 {
				t.Fatalf("screen EI0011 series %v, want one", faults)
			}
			if got := strings.Contains(faults[0], `hccl_job="`+job+`"`); got != tc.tied {
				t.Errorf("carries the victim's job: %v, want %v: %s", got, tc.tied, faults[0])
			}
			untied := strings.Contains(page, `hccl_exporter_screen_reports_untied_total{reason="other_owner"} 1`+"\n")
			if untied == tc.tied {
				t.Errorf("counted untied (other_owner): %v, want %v", untied, !tc.tied)
			}
		})
	}
}

// setUID rewrites the Uid line of a fake process's status.
func setUID(t *testing.T, procfs string, pid, uid int) {
	t.Helper()
	p := filepath.Join(procfs, strconv.Itoa(pid), "status")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	u := strconv.Itoa(uid)
	s := strings.Replace(string(b), "Uid:\t0\t0\t0\t0", "Uid:\t"+u+"\t"+u+"\t"+u+"\t"+u, 1)
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o400); err != nil {
		t.Fatal(err)
	}
}
