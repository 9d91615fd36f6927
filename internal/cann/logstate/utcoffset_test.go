package logstate

import (
	"strings"
	"testing"
	"time"
)

// offsetAt is loc's UTC offset on a day without daylight time anywhere
// tested here.
func offsetAt(loc *time.Location) int {
	_, off := time.Date(2026, 3, 18, 0, 0, 0, 0, loc).Zone()
	return off
}

func TestParseZone(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		err    bool
	}{
		{"UTC", 0, false},
		{"Asia/Shanghai", 8 * 3600, false},
		{"Asia/Kathmandu", 5*3600 + 45*60, false},
		{"+08:00", 8 * 3600, false},
		{"-0530", -(5*3600 + 30*60), false},
		{"+8", 8 * 3600, false},
		{"+05:45", 5*3600 + 45*60, false},
		{"-12:00", -12 * 3600, false},
		{"+14:00", 14 * 3600, false},
		{"-14", -14 * 3600, false}, // beyond the zones in use, but a fixed offset all the same
		{"+15:00", 0, true},
		{"+08:70", 0, true},
		{"+8:00", 0, true},
		{"+080", 0, true},
		{"+", 0, true},
		{"+-8", 0, true},
		{"+ 8", 0, true},
		{"Mars/Olympus", 0, true},
		{"", 0, true},
	} {
		loc, err := ParseZone(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseZone(%q) err %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if err == nil && offsetAt(loc) != tc.offset {
			t.Errorf("ParseZone(%q) offset %d, want %d", tc.in, offsetAt(loc), tc.offset)
		}
	}
	if loc, err := ParseZone("Local"); err != nil || loc != time.Local {
		t.Errorf("ParseZone(Local) = %v, %v", loc, err)
	}
	// A quarter-hour offset is the shared fixed zone, named canonically.
	if loc, _ := ParseZone("+8"); loc != ZoneForOffset(8*time.Hour) || loc.String() != "UTC+08:00" {
		t.Errorf("ParseZone(+8) = %v, want the shared UTC+08:00", loc)
	}
	_, err := ParseZone("Mars/Olympus")
	if err == nil || !strings.Contains(err.Error(), "+08:00") {
		t.Errorf("error does not say what is accepted: %v", err)
	}
}

// FuzzParseZone: whatever a flag says, ParseZone does not panic, and an
// offset it accepts is within ±14 h.
func FuzzParseZone(f *testing.F) {
	for _, s := range []string{"UTC", "Local", "+08:00", "-0530", "+8", "+14:00", "+99", "-", "Asia/Shanghai", "../../etc/passwd", "+٠٨"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseZone(s)
		if err != nil {
			return
		}
		if loc == nil {
			t.Fatalf("ParseZone(%q): nil zone without an error", s)
		}
		if off := offsetAt(loc); off < -14*3600 || off > 14*3600 {
			t.Fatalf("ParseZone(%q): offset %d", s, off)
		}
	})
}
