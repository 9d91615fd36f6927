package cannlog

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

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/tail"
)

func TestInferOffset(t *testing.T) {
	actual := time.Date(2026, 1, 7, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		printed time.Time // as printed, read as UTC
		want    time.Duration
		ok      bool
	}{
		{"UTC writer", actual.Add(200 * time.Millisecond), 0, true},
		{"UTC+8 writer, line buffered 3 s", actual.Add(8*time.Hour - 3*time.Second), 8 * time.Hour, true},
		{"UTC-5", actual.Add(-5 * time.Hour), -5 * time.Hour, true},
		{"India UTC+5:30", actual.Add(5*time.Hour + 30*time.Minute + time.Second), 5*time.Hour + 30*time.Minute, true},
		{"Nepal UTC+5:45", actual.Add(5*time.Hour + 45*time.Minute), 5*time.Hour + 45*time.Minute, true},
		{"Newfoundland UTC-3:30", actual.Add(-3*time.Hour - 30*time.Minute), -3*time.Hour - 30*time.Minute, true},
		// Not a zone: a file written half an hour after its last line, a fixture.
		{"-00:30 is no zone", actual.Add(-30 * time.Minute), 0, false},
		{"7 minutes off a quarter", actual.Add(8*time.Hour + 7*time.Minute), 0, false},
		{"beyond UTC+14", actual.Add(15 * time.Hour), 0, false},
		{"days apart", actual.Add(-72 * time.Hour), 0, false},
	} {
		got, ok := InferOffset(tc.printed, actual)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: InferOffset = %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if z := ZoneForOffset(8 * time.Hour); z.String() != "UTC+08:00" || z != ZoneForOffset(8*time.Hour) {
		t.Errorf("ZoneForOffset(8h) = %v, want one shared UTC+08:00", z)
	}
	if z := ZoneForOffset(-3*time.Hour - 30*time.Minute); z.String() != "UTC-03:30" {
		t.Errorf("ZoneForOffset(-3:30) = %v", z)
	}
}

func FuzzZoneFromPair(f *testing.F) {
	f.Add([]byte("2026-01-07-10:00:00.000.000"), int64(1767751200))
	f.Add([]byte("2026-01-07-02:00:00.123.456"), int64(1767751200))
	f.Add([]byte("garbage"), int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, unix int64) {
		z, ok := zoneFromPair(raw, time.Unix(unix, 0))
		if !ok {
			return
		}
		_, off := time.Now().In(z).Zone()
		if !realOffsets[time.Duration(off)*time.Second] {
			t.Fatalf("zone %v with offset %d s is no real zone", z, off)
		}
	})
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
			opts := DefaultOptions()
			opts.Location, opts.Now = shanghai, func() time.Time { return now }
			c := newCollector(cfg, nil, slog.New(slog.NewTextHandler(&logs, nil)), f, NewState(opts))
			defer c.Close()
			c.zones.local = func() *time.Location { return shanghai }
			if !c.zones.auto {
				c.zones.fixed = shanghai
			}
			c.pollOnce(now)
			got := lastEvent(t, c.state, "EI0011", FaultSourcePlog)
			if !got.Equal(tc.wantLast) {
				t.Errorf("EI0011 last event %v, want %v", got.UTC(), tc.wantLast.UTC())
			}
			want := fmt.Sprintf(`
# HELP ascend_log_timezone_applied_offset_seconds UTC offset the exporter reads the times of a CANN log root in (--cannlog.timezone: the inferred one under auto).
# TYPE ascend_log_timezone_applied_offset_seconds gauge
ascend_log_timezone_applied_offset_seconds{root=%q} %s
# HELP ascend_log_timezone_offset_seconds UTC offset the writers of a CANN log root print their times in, inferred from the newest file's modification time and the time printed in its last line (whole quarter-hours). Absent while no file allows it.
# TYPE ascend_log_timezone_offset_seconds gauge
ascend_log_timezone_offset_seconds{root=%q} 0
`, root, tc.wantOffset, root)
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ascend_log_timezone_offset_seconds", "ascend_log_timezone_applied_offset_seconds"); err != nil {
				t.Error(err)
			}
			c.pollOnce(now.Add(zoneEvery))
			if n := strings.Count(logs.String(), "another zone"); n != 1 {
				t.Errorf("zone difference logged %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}

// lastEvent is the latest time of a code's fault events from a source.
func lastEvent(t *testing.T, st *State, code, source string) time.Time {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	var last time.Time
	for k, v := range st.faults {
		if k.code == code && k.source == source && v.last.After(last) {
			last = v.last
		}
	}
	return last
}

// TestScreenZoneFromRuntime: a UTC container's screen log, kept by the
// kubelet in CRI format, on a UTC+8 exporter. The CRI time stamp carries a
// zone; under auto the printed time is read in the zone that agrees with it.
func TestScreenZoneFromRuntime(t *testing.T) {
	line := []byte("2026-01-07T02:00:00.500000000Z stderr F RuntimeError: [PID: 156] 2026-01-07-02:00:00.400.000 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate")
	for _, tc := range []struct {
		auto bool
		want time.Time
	}{
		{true, time.Date(2026, 1, 7, 2, 0, 0, 400e6, time.UTC)},
		{false, time.Date(2026, 1, 6, 18, 0, 0, 400e6, time.UTC)},
	} {
		opts := DefaultOptions()
		opts.Location, opts.ScreenZoneFromRuntime = time.FixedZone("CST", 8*3600), tc.auto
		st := NewState(opts)
		st.Ingest(&Source{Path: "/var/log/pods/train_job-a-0_uid/pytorch/0.log", Kind: SourceScreen}, line)
		if got := lastEvent(t, st, "EI0011", FaultSourceScreen); !got.Equal(tc.want) {
			t.Errorf("auto=%v: EI0011 at %v, want %v", tc.auto, got.UTC(), tc.want)
		}
	}
}
