package parse

import "time"

// looksPlogTime reports whether b (26 bytes) has the shape
// `YYYY-MM-DD-hh:mm:ss.mmm.uuu`; a space instead of the third `-` is
// accepted (one official doc sample prints it that way).
func looksPlogTime(b []byte) bool {
	if len(b) < plogTimeLen {
		return false
	}
	for i := 0; i < plogTimeLen; i++ {
		c := b[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != '-' && c != ' ' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		case 19, 23:
			if c != '.' {
				return false
			}
		default:
			if !isDigit(c) {
				return false
			}
		}
	}
	return true
}

func num(b []byte) int {
	n := 0
	for _, c := range b {
		n = n*10 + int(c-'0')
	}
	return n
}

// ParsePlogTime parses a CANN timestamp in loc. It accepts the plog form
// `2025-11-03-20:18:46.447.213` (milliseconds.microseconds) and its shorter
// prefixes `2025-11-03-20:18:46.447` and `2025-11-03-20:18:46` (torch_npu).
// CANN prints local time without a zone, so the caller picks the zone.
// It does not allocate.
func ParsePlogTime(b []byte, loc *time.Location) (time.Time, bool) {
	const short = len("2025-11-03-20:18:46")
	if len(b) < short {
		return time.Time{}, false
	}
	var buf [plogTimeLen]byte
	copy(buf[:], b)
	switch {
	case len(b) >= plogTimeLen && looksPlogTime(b):
	case len(b) >= short+4 && b[short] == '.' && looksPrefix(b[:short+4]):
		copy(buf[short+4:], ".000")
	case looksPrefix(b[:short]):
		copy(buf[short:], ".000.000")
	default:
		return time.Time{}, false
	}
	year, month, day := num(buf[0:4]), num(buf[5:7]), num(buf[8:10])
	hour, minute, sec := num(buf[11:13]), num(buf[14:16]), num(buf[17:19])
	ms, us := num(buf[20:23]), num(buf[24:27])
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	if loc == nil {
		loc = time.Local
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6+us*1e3, loc), true
}

// looksPrefix checks a prefix of the plog time layout: date, time and,
// when present, the millisecond part.
func looksPrefix(b []byte) bool {
	var full [plogTimeLen]byte
	copy(full[:], "0000-00-00-00:00:00.000.000")
	copy(full[:], b)
	return looksPlogTime(full[:])
}

// FindPlogTime returns the first CANN timestamp in b (see ParsePlogTime),
// as printed, or nil. Screen logs print it after `[PID: N] ` or after the
// fault code.
func FindPlogTime(b []byte) []byte {
	const short = len("2025-11-03-20:18:46")
	for i := 0; i+short <= len(b); i++ {
		if !isDigit(b[i]) || b[i+4] != '-' || b[i+7] != '-' || b[i+13] != ':' {
			continue
		}
		if i > 0 && isDigit(b[i-1]) {
			continue
		}
		if i+plogTimeLen <= len(b) && looksPlogTime(b[i:]) {
			return b[i : i+plogTimeLen]
		}
		if looksPrefix(b[i : i+short]) {
			return b[i : i+short]
		}
	}
	return nil
}
