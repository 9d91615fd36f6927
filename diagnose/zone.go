package diagnose

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseZone reads a zone as the command line gives it: Local, UTC, an IANA
// name (Asia/Shanghai) or a fixed UTC offset (+08:00, -0530, +8).
func ParseZone(s string) (*time.Location, error) {
	if s == "" {
		return nil, fmt.Errorf("empty zone: give Local, UTC, an IANA name such as Asia/Shanghai, or an offset such as +08:00")
	}
	if s[0] == '+' || s[0] == '-' {
		sign := 1
		if s[0] == '-' {
			sign = -1
		}
		hm := strings.ReplaceAll(s[1:], ":", "")
		var h, m int
		var err error
		switch {
		case len(hm) <= 2:
			h, err = strconv.Atoi(hm)
		case len(hm) == 4:
			h, err = strconv.Atoi(hm[:2])
			if err == nil {
				m, err = strconv.Atoi(hm[2:])
			}
		default:
			err = fmt.Errorf("want ±hh:mm")
		}
		if err != nil || h > 14 || m > 59 {
			return nil, fmt.Errorf("zone offset %q: want ±hh:mm between -14:00 and +14:00", s)
		}
		off := sign * (h*3600 + m*60)
		return time.FixedZone("UTC"+s, off), nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %w (give Local, UTC, an IANA name such as Asia/Shanghai, or an offset such as +08:00)", s, err)
	}
	return loc, nil
}

// ParseNodeZones reads NODE=ZONE pairs (--node-timezone).
func ParseNodeZones(pairs []string) (map[string]*time.Location, error) {
	out := map[string]*time.Location{}
	for _, p := range pairs {
		node, zone, ok := strings.Cut(p, "=")
		if !ok || node == "" {
			return nil, fmt.Errorf("%q: want NODE=ZONE, e.g. node-3=Asia/Shanghai or node-3=+08:00", p)
		}
		loc, err := ParseZone(zone)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", node, err)
		}
		out[node] = loc
	}
	return out, nil
}
