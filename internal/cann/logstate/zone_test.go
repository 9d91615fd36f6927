package logstate

import (
	"testing"
	"time"
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
