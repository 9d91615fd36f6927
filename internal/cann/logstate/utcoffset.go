package logstate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// IANA names in --cannlog.timezone, diagnose --timezone (and TZ) work
	// in images without /usr/share/zoneinfo; the database adds about 450 KB.
	_ "time/tzdata"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
)

// CANN prints local time without a zone. Zones are whole quarter-hours
// from UTC−12 to UTC+14, so the offset of a writer follows from one printed
// time and the true time of the same moment (a file's modification time, a
// CRI time stamp), rounded to 15 minutes.
const (
	zoneStep      = 15 * time.Minute
	minZoneOffset = -12 * time.Hour
	maxZoneOffset = 14 * time.Hour
	// zoneSlack is how far the two times may disagree beyond the zone: the
	// printed time is taken when the line is formatted, the modification
	// time when the buffered line reaches the file.
	zoneSlack = 5 * time.Minute
)

// realOffsets are the UTC offsets zones in use have (IANA tzdata, standard
// and daylight time): whole hours and the few half and three-quarter
// hours. An inferred offset outside them means the two times do not belong
// together (a file copied without its modification time, a test's
// fixture), and is refused rather than applied.
var realOffsets = func() map[time.Duration]bool {
	m := map[time.Duration]bool{}
	for h := -12; h <= 14; h++ {
		m[time.Duration(h)*time.Hour] = true
	}
	for _, hm := range [][2]int{{-9, 30}, {-3, 30}, {-2, 30}, {3, 30}, {4, 30}, {5, 30}, {5, 45}, {6, 30}, {8, 45}, {9, 30}, {10, 30}, {12, 45}, {13, 45}} {
		off := time.Duration(hm[0])*time.Hour + time.Duration(hm[1])*time.Minute
		if hm[0] < 0 {
			off = time.Duration(hm[0])*time.Hour - time.Duration(hm[1])*time.Minute
		}
		m[off] = true
	}
	return m
}()

// fixedZones holds one *time.Location per quarter-hour offset, so that
// reading a line in an inferred zone allocates nothing.
var fixedZones = func() map[int]*time.Location {
	m := map[int]*time.Location{}
	for off := minZoneOffset; off <= maxZoneOffset; off += zoneStep {
		m[int(off.Seconds())] = time.FixedZone(zoneName(off), int(off.Seconds()))
	}
	return m
}()

func zoneName(off time.Duration) string {
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	h, m := int(off.Hours()), int(off.Minutes())%60
	return "UTC" + string(sign) + twoDigits(h) + ":" + twoDigits(m)
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }

// InferOffset returns the UTC offset of the writer of printed (a time as
// CANN printed it, read as if in UTC) given the true time of the same
// moment, in whole quarter-hours; ok is false when the two are not a
// quarter-hour multiple apart within zoneSlack, or the offset is not one a
// zone in use has (realOffsets): the times do not belong together.
func InferOffset(printedAsUTC, actual time.Time) (offset time.Duration, ok bool) {
	d := printedAsUTC.Sub(actual)
	rounded := d.Round(zoneStep)
	if diff := d - rounded; diff > zoneSlack || diff < -zoneSlack {
		return 0, false
	}
	if !realOffsets[rounded] {
		return 0, false
	}
	return rounded, true
}

// ZoneForOffset returns the fixed zone of a quarter-hour offset.
func ZoneForOffset(offset time.Duration) *time.Location {
	if z, ok := fixedZones[int(offset.Seconds())]; ok {
		return z
	}
	return time.FixedZone(zoneName(offset), int(offset.Seconds()))
}

// zoneFromPair infers the zone of a printed plog time from the true time of
// the same moment.
func zoneFromPair(raw []byte, actual time.Time) (*time.Location, bool) {
	printed, ok := parse.ParsePlogTime(raw, time.UTC)
	if !ok {
		return nil, false
	}
	off, ok := InferOffset(printed, actual)
	if !ok {
		return nil, false
	}
	return ZoneForOffset(off), true
}

// zoneGrammar is what ParseZone accepts, for error messages.
const zoneGrammar = "give Local, UTC, an IANA name such as Asia/Shanghai, or a UTC offset such as +08:00, -0530 or +8"

// ParseZone reads a zone as a flag gives it: Local, UTC, an IANA name
// (Asia/Shanghai) or a fixed UTC offset (+08:00, -0530, +8) up to 14 hours
// either way. It is the one grammar of --cannlog.timezone and of diagnose's
// --timezone and --node-timezone.
func ParseZone(s string) (*time.Location, error) {
	if s == "" {
		return nil, fmt.Errorf("empty zone: %s", zoneGrammar)
	}
	if s[0] == '+' || s[0] == '-' {
		off, ok := parseOffset(s)
		if !ok {
			return nil, fmt.Errorf("zone offset %q: want ±hh:mm between -14:00 and +14:00", s)
		}
		return ZoneForOffset(off), nil
	}
	if s == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %w (%s)", s, err, zoneGrammar)
	}
	return loc, nil
}

// parseOffset reads ±h, ±hh, ±hhmm or ±hh:mm.
func parseOffset(s string) (time.Duration, bool) {
	sign := time.Duration(1)
	if s[0] == '-' {
		sign = -1
	}
	hm := s[1:]
	if h, m, ok := strings.Cut(hm, ":"); ok {
		if len(h) != 2 || len(m) != 2 {
			return 0, false
		}
		hm = h + m
	}
	var hs, ms string
	switch len(hm) {
	case 1, 2:
		hs = hm
	case 4:
		hs, ms = hm[:2], hm[2:]
	default:
		return 0, false
	}
	h, err := strconv.ParseUint(hs, 10, 8)
	if err != nil {
		return 0, false
	}
	var m uint64
	if ms != "" {
		if m, err = strconv.ParseUint(ms, 10, 8); err != nil {
			return 0, false
		}
	}
	off := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if m > 59 || off > maxZoneOffset {
		return 0, false
	}
	return sign * off, true
}
