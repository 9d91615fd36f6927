package backtest

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// durationRe matches one Prometheus duration: 2m, 1h30m, 500ms.
const durationRe = `(?:[0-9]+(?:ms|s|m|h|d|w|y))+`

var (
	// forLine is a rule's `for:` (or keep_firing_for:) line, quoted or not.
	forLine = regexp.MustCompile(`(?m)^(\s+(?:for|keep_firing_for):\s*)("?)(` + durationRe + `)("?)\s*$`)
	// rangeSel is a range `[5m]` or subquery `[1h:1m]` selector.
	rangeSel = regexp.MustCompile(`\[(` + durationRe + `)(?::(` + durationRe + `)?)?\]`)
	// offsetMod is an `offset 10m` modifier.
	offsetMod = regexp.MustCompile(`\boffset\s+(` + durationRe + `)`)
	// placeholder stands for a rewritten duration when CompressRules
	// checks that nothing else changed.
	placeholder = "\x00D\x00"
)

// CompressRules divides every rule duration of rules — `for:`, range and
// subquery selectors, `offset` — by factor, so that one real second plays
// factor simulated seconds. It returns an error when a duration does not
// divide into whole milliseconds or when the result differs from rules in
// anything but those durations.
func CompressRules(rules string, factor int) (string, error) {
	if factor < 1 {
		return "", fmt.Errorf("compression factor %d: must be at least 1", factor)
	}
	var errs []string
	scale := func(s string) string {
		d, err := model.ParseDuration(s)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%q: %v", s, err))
			return s
		}
		out := time.Duration(d) / time.Duration(factor)
		if out*time.Duration(factor) != time.Duration(d) || out%time.Millisecond != 0 {
			errs = append(errs, fmt.Sprintf("%s does not divide by %d into whole milliseconds", s, factor))
			return s
		}
		if out == 0 {
			return "0s"
		}
		return model.Duration(out).String()
	}
	out := forLine.ReplaceAllStringFunc(rules, func(m string) string {
		g := forLine.FindStringSubmatch(m)
		return g[1] + g[2] + scale(g[3]) + g[4]
	})
	out = rangeSel.ReplaceAllStringFunc(out, func(m string) string {
		g := rangeSel.FindStringSubmatch(m)
		s := "[" + scale(g[1])
		if strings.Contains(m, ":") {
			s += ":"
			if g[2] != "" {
				s += scale(g[2])
			}
		}
		return s + "]"
	})
	out = offsetMod.ReplaceAllStringFunc(out, func(m string) string {
		g := offsetMod.FindStringSubmatch(m)
		return strings.Replace(m, g[1], scale(g[1]), 1)
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("compress rules: %s", strings.Join(errs, "; "))
	}
	if a, b := masked(rules), masked(out); a != b {
		return "", fmt.Errorf("compress rules: the result differs from the shipped rules beyond for:/range/offset durations")
	}
	return out, nil
}

// masked replaces every duration CompressRules may rewrite by a
// placeholder.
func masked(s string) string {
	s = forLine.ReplaceAllString(s, "${1}${2}"+placeholder+"${4}")
	s = rangeSel.ReplaceAllString(s, "["+placeholder+"]")
	return offsetMod.ReplaceAllString(s, "offset "+placeholder)
}
