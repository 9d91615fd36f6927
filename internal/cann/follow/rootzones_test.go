package follow

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

func TestParseTimezone(t *testing.T) {
	for _, in := range []string{"", "auto"} {
		if loc, auto, err := ParseTimezone(in); err != nil || !auto || loc != nil {
			t.Errorf("ParseTimezone(%q) = %v, %v, %v; want auto", in, loc, auto, err)
		}
	}
	for in, want := range map[string]int{"UTC": 0, "+08:00": 8 * 3600, "Asia/Shanghai": 8 * 3600} {
		loc, auto, err := ParseTimezone(in)
		if err != nil || auto || offsetAt(loc) != want {
			t.Errorf("ParseTimezone(%q) = %v, %v, %v; want offset %d", in, loc, auto, err, want)
		}
	}
	_, _, err := ParseTimezone("UTC+8")
	if err == nil || !strings.Contains(err.Error(), "--cannlog.timezone") || !strings.Contains(err.Error(), "auto") {
		t.Errorf("ParseTimezone(UTC+8) error %v: should name the flag and auto", err)
	}
}

// offsetAt is loc's UTC offset on a day without daylight time anywhere
// tested here.
func offsetAt(loc *time.Location) int {
	_, off := time.Date(2026, 3, 18, 0, 0, 0, 0, loc).Zone()
	return off
}

// writeRoot writes a CANN log root whose writer prints its times in zone
// writer; the last line is written at `at` and the file's modification time
// says so, as a live file's does.
func writeRoot(t *testing.T, root string, writer *time.Location, at time.Time, lines ...string) {
	t.Helper()
	dir := filepath.Join(root, "debug", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, l+"\n", at.In(writer).Format("2006-01-02-15:04:05.000")+".000")
	}
	path := filepath.Join(dir, "plog-156_20260107020000000.log")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestTimezoneAuto: the exporter runs in UTC+8, a pod writes its plogs in
// UTC. Read in the exporter's zone, a fresh EI0011 lands 8 hours in the
// past; under auto it lands now, the writers' offset is exported, and the
// difference to the exporter's zone is logged once.
func TestTimezoneAuto(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	now := time.Now().Truncate(time.Millisecond)
	ei0011 := "[ERROR] HCCP(156,python3):%s [ra_hdc.c:1] [156]ra qp create fail, out of memory"
	for _, tc := range []struct {
		zone       string
		wantLast   time.Time
		wantOffset string // the applied offset
	}{
		{"auto", now, "0"},
		{"Local", now.Add(-8 * time.Hour), "28800"},
	} {
		t.Run(tc.zone, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "pod-a")
			writeRoot(t, root, time.UTC, now, ei0011)
			var logs bytes.Buffer
			cfg := Config{Roots: []string{root}, Timezone: tc.zone}
			f, err := tail.New(tail.Config{Roots: cfg.Roots, DisableNotify: true}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			// The exporter's own zone is UTC+8: Local means it.
			opts := logstate.DefaultOptions()
			opts.Location, opts.Now = shanghai, func() time.Time { return now }
			c := newService(cfg, Deps{}, nil, slog.New(slog.NewTextHandler(&logs, nil)), f, logstate.NewState(opts))
			defer c.Close()
			c.zones.local = func() *time.Location { return shanghai }
			if !c.zones.auto {
				c.zones.fixed = shanghai
			}
			c.pollOnce(now)
			got := lastEvent(t, c.state, "EI0011")
			if !got.Equal(tc.wantLast) {
				t.Errorf("EI0011 last event %v, want %v", got.UTC(), tc.wantLast.UTC())
			}
			want := fmt.Sprintf(`
# HELP hccl_exporter_log_timezone_applied_offset_seconds UTC offset the exporter reads the times of a CANN log root in (--cannlog.timezone: the inferred one under auto).
# TYPE hccl_exporter_log_timezone_applied_offset_seconds gauge
hccl_exporter_log_timezone_applied_offset_seconds{root=%q} %s
# HELP hccl_exporter_log_timezone_offset_seconds UTC offset the writers of a CANN log root print their times in, inferred from the newest file by the rule diagnose applies to a node (its communicator identifiers' creation times, else its modification time, against the times it prints; whole quarter-hours). Absent while no file allows it.
# TYPE hccl_exporter_log_timezone_offset_seconds gauge
hccl_exporter_log_timezone_offset_seconds{root=%q} 0
`, root, tc.wantOffset, root)
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "hccl_exporter_log_timezone_offset_seconds", "hccl_exporter_log_timezone_applied_offset_seconds"); err != nil {
				t.Error(err)
			}
			c.pollOnce(now.Add(zoneEvery))
			if n := strings.Count(logs.String(), "another zone"); n != 1 {
				t.Errorf("zone difference logged %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}

// lastEvent is the latest time of a code's fault events, from the state's
// per-code summary.
func lastEvent(t *testing.T, st *logstate.State, code string) time.Time {
	t.Helper()
	for _, f := range st.Faults() {
		if f.Code == code {
			return f.Last
		}
	}
	return time.Time{}
}
