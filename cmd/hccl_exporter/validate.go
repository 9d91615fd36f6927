package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
)

// A flag value kingpin parses is only of the right type: a duration of 0 or
// -1s, a negative cap or an empty path went through, to panic later
// (--web.telemetry-path= made the HTTP mux panic) or to mean something the
// user did not ask (a cap of 0 silently became the default). Every flag of
// the server therefore has a rule here, checked after parsing; a value that
// breaks it stops the exporter with exit status 2 and says which flag, what
// value and what is expected. TestEveryFlagIsValidated enumerates kingpin's
// model, so a new flag without a rule (and a test case) fails the build.

// flagRule checks one flag's parsed value.
type flagRule struct {
	// expect says what the flag accepts, in the error.
	expect string
	// check reports whether v (the flag's kingpin.Getter value; the text
	// of a value that has none) is acceptable. A repeatable flag is
	// checked element by element.
	check func(v any) bool
}

// Bounds used by more than one rule.
const (
	maxInterval = 24 * time.Hour
	maxCap      = 1 << 24 // caps of labels and table sizes
)

func durationIn(lo, hi time.Duration, what string) flagRule {
	return flagRule{expect: what, check: func(v any) bool {
		d, ok := v.(time.Duration)
		return ok && d >= lo && d <= hi
	}}
}

// positive is a duration above 0 and at most hi.
func positive(hi time.Duration) flagRule {
	return durationIn(time.Nanosecond, hi, fmt.Sprintf("a duration above 0 and at most %s, such as 30s or 5m", fmtDuration(hi)))
}

func intIn(lo, hi int, what string) flagRule {
	return flagRule{expect: what, check: func(v any) bool {
		n, ok := v.(int)
		return ok && n >= lo && n <= hi
	}}
}

// capRule is a cap on distinct label values or table rows: there is no
// "unlimited", and 0 no longer quietly means the default.
var capRule = intIn(1, maxCap, fmt.Sprintf("a whole number from 1 to %d (there is no unlimited: omit the flag for the default)", maxCap))

// parsedAs: kingpin or the value's own Set already rejects what is wrong
// (a bool, a byte size, a log level); expect is said with its error.
func parsedAs(expect string) flagRule {
	return flagRule{expect: expect, check: func(any) bool { return true }}
}

// switchRule: a bool flag takes no value (--x or --no-x).
var switchRule = parsedAs("no value: --NAME or --no-NAME")

var byteSize = parsedAs("a size above 0 with a base-2 unit, such as 256KiB or 3MiB")

func stringRule(expect string, ok func(string) bool) flagRule {
	return flagRule{expect: expect, check: func(v any) bool {
		s, isString := v.(string)
		return isString && ok(s)
	}}
}

// clean: no control character (a newline or NUL in a path is a copy-paste
// accident) and no blank at either end (a YAML quoting slip).
func clean(s string) bool {
	return strings.TrimSpace(s) == s && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// executable: a program run without a shell, by path or looked up in PATH.
var executable = stringRule("a program name or path (not empty, no blanks at the ends)", func(s string) bool {
	return s != "" && clean(s)
})

// absPath and absPathOrEmpty: host paths the exporter reads under.
var absPath = stringRule("an absolute path", func(s string) bool { return filepath.IsAbs(s) && clean(s) })

var absPathOrEmpty = stringRule("an absolute path, or empty to disable", func(s string) bool {
	return s == "" || (filepath.IsAbs(s) && clean(s))
})

var pathRule = stringRule("a path (not empty, no blanks at the ends)", func(s string) bool { return s != "" && clean(s) })

// fileOrEmpty: a file read at start; checked now so that a typo exits 2
// with the flag's name rather than 1 from deep inside a collector.
var fileOrEmpty = stringRule("empty, or an existing regular file", func(s string) bool {
	if s == "" {
		return true
	}
	fi, err := os.Stat(s)
	return err == nil && fi.Mode().IsRegular()
})

// stateFile: written by the exporter, so it need not exist, but it is not a
// directory and its directory exists.
var stateFile = stringRule("empty (no state kept), or a file path whose directory exists", func(s string) bool {
	if s == "" {
		return true
	}
	if !clean(s) || strings.HasSuffix(s, "/") {
		return false
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return false
	}
	fi, err := os.Stat(filepath.Dir(s))
	return err == nil && fi.IsDir()
})

var globRule = stringRule("a glob such as /var/log/pods/*/*/*.log", func(s string) bool {
	if s == "" || !clean(s) {
		return false
	}
	_, err := filepath.Match(s, "")
	return err == nil
})

// telemetryPath: a path the HTTP mux accepts as a pattern without a method
// or wildcards, and not one of the exporter's own pages.
var telemetryPathRE = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$`)

var telemetryPath = stringRule("a URL path starting with / such as /metrics (no blanks, %, { or }; not /healthz)", func(s string) bool {
	return telemetryPathRE.MatchString(s) && s != healthzPath
})

// listenAddress: host:port with a port from 0 to 65535, or exporter-toolkit's
// vsock://[CID]:PORT.
var listenAddress = stringRule("host:port (such as :9842, 127.0.0.1:9842 or [::1]:9842) with a port from 0 to 65535, or vsock://:PORT", func(s string) bool {
	if rest, ok := strings.CutPrefix(s, "vsock://"); ok {
		s = rest
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || !clean(host) {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= math.MaxUint16
})

var timezoneRule = stringRule("auto, Local, an IANA zone such as Asia/Shanghai, or a UTC offset such as +08:00", func(s string) bool {
	_, _, err := cannlog.ParseTimezone(s)
	return err == nil
})

// flagRules holds the rule of every flag of the server. Bounds say what the
// exporter can work with, not what is wise: the help says that.
var flagRules = map[string]flagRule{
	"web.telemetry-path":           telemetryPath,
	"web.max-requests":             intIn(0, 1<<20, "0 (no bound) or a number of parallel requests up to 1048576"),
	"web.disable-exporter-metrics": switchRule,
	// Past Prometheus's 5m look-back a cached answer would be served as
	// fresh while it is not.
	"web.scrape-cache-ttl":            durationIn(0, 5*time.Minute, "0 (no cache) or a duration up to 5m (Prometheus's look-back), such as 1s"),
	"web.scrape-timeout":              positive(time.Hour),
	"web.scrape-timeout-offset":       durationIn(0, time.Hour, "0 or a duration below --web.scrape-timeout, such as 500ms"),
	"web.read-header-timeout":         positive(time.Hour),
	"web.idle-timeout":                positive(maxInterval),
	"web.write-timeout":               positive(time.Hour),
	"web.max-header-bytes":            intIn(1<<10, 1<<20, "a number of bytes from 1024 to 1048576 (Go's own default is 1 MiB)"),
	"web.max-connections":             intIn(0, 1<<20, "0 (no cap) or a number of connections up to 1048576"),
	"web.systemd-socket":              switchRule,
	"web.listen-address":              listenAddress,
	"web.config.file":                 fileOrEmpty,
	"npusmi.path":                     executable,
	"npusmi.timeout":                  positive(10 * time.Minute),
	"npusmi.min-interval":             durationIn(0, maxInterval, "0 (a run per scrape) or a duration up to 24h, such as 5s"),
	"npuhealth.interval":              durationIn(10*time.Second, maxInterval, "a duration from 10s to 24h (a sweep makes about 8 npu-smi calls per chip)"),
	"npuhealth.fault-code-file":       fileOrEmpty,
	"cannlog.root":                    pathRule,
	"path.procfs":                     absPathOrEmpty,
	"cannlog.screen-log-path":         globRule,
	"cannlog.state-file":              stateFile,
	"cannlog.process-ttl":             positive(30 * maxInterval),
	"cannlog.fault-ttl":               positive(30 * maxInterval),
	"cannlog.poll-interval":           durationIn(10*time.Millisecond, time.Hour, "a duration from 10ms to 1h, such as 1s"),
	"cannlog.rescan-interval":         durationIn(100*time.Millisecond, maxInterval, "a duration from 100ms to 24h, not below --cannlog.poll-interval"),
	"cannlog.checkpoint-interval":     durationIn(100*time.Millisecond, maxInterval, "a duration from 100ms to 24h, such as 10s"),
	"cannlog.max-line-bytes":          intIn(1<<10, 64<<20, "a number of bytes from 1024 to 67108864 (a line is held whole until its end)"),
	"cannlog.max-open-files":          intIn(0, 1<<24, "0 (from RLIMIT_NOFILE) or a number of files up to 16777216"),
	"cannlog.max-pids":                capRule,
	"cannlog.max-communicators":       capRule,
	"cannlog.max-codes":               capRule,
	"cannlog.max-fault-pods":          capRule,
	"cannlog.max-modules":             capRule,
	"cannlog.cross-filesystems":       switchRule,
	"cannlog.timezone":                timezoneRule,
	"headroom.qp-bytes-low":           byteSize,
	"headroom.qp-bytes-high":          byteSize,
	"headroom.capture-window":         positive(maxInterval),
	"headroom.learn-qp-size":          switchRule,
	"headroom.learn-min-observations": intIn(1, 1<<20, "a number of agreeing bursts from 1 to 1048576, such as 5"),
	"headroom.learn-ttl":              durationIn(time.Hour, 366*24*time.Hour, "a duration from 1h to 8784h (a year), such as 168h"),
	"headroom.learn-reset":            switchRule,
	"headroom.workload-memory-ttl":    positive(30 * maxInterval),
	"headroom.workload-memory-max":    capRule,
	"hccn.path":                       executable,
	"hccn.timeout":                    positive(10 * time.Minute),
	"hccn.interval":                   durationIn(time.Second, maxInterval, "a duration from 1s to 24h (each sweep makes one call per command per NPU chip)"),
	"hccn.slow-interval":              durationIn(0, 7*maxInterval, "0 (every sweep) or a duration up to 168h, not below --hccn.interval"),
	"pods.kubelet-socket":             absPathOrEmpty,
	"pods.kubelet-interval":           positive(maxInterval),
	"pods.kubelet-timeout":            positive(10 * time.Minute),
	"pods.max-assignments":            capRule,
	"pods.kubelet-logs":               absPathOrEmpty,
	"path.devfs":                      absPath,
	"log.level":                       parsedAs("one of debug, info, warn, error"),
	"log.format":                      parsedAs("one of logfmt, json"),
}

// kingpinOwn are kingpin's own flags, which need no rule.
var kingpinOwn = map[string]bool{
	"help": true, "help-long": true, "help-man": true, "version": true,
	"completion-bash": true, "completion-script-bash": true, "completion-script-zsh": true,
}

func init() {
	for _, s := range collectorSpecs {
		flagRules["collector."+s.Name] = switchRule
	}
	for _, g := range familyGroups {
		flagRules[g.Collector+"."+g.Name] = switchRule
	}
}

// flagError names the flag, its value and what it accepts.
func flagError(name, value, expect string) error {
	return fmt.Errorf("--%s=%q: expected %s", name, value, strings.ReplaceAll(expect, "NAME", name))
}

// validateFlags checks every flag of sa against its rule, then the rules
// that relate two flags, then the collectors' own Validate.
func validateFlags(sa *serveApp, args []string) error {
	// Errors quote a value as it was typed (-1m, not -1m0s).
	typed := map[string]string{}
	if ctx, err := sa.app.ParseContext(args); err == nil {
		for _, el := range ctx.Elements {
			if fc, ok := el.Clause.(*kingpin.FlagClause); ok && el.Value != nil {
				typed[fc.Model().Name] = *el.Value
			}
		}
	}
	shown := func(name string, v kingpin.Value) string {
		if s, ok := typed[name]; ok {
			return s
		}
		return v.String()
	}
	values := map[string]kingpin.Value{}
	for _, f := range sa.app.Model().Flags {
		values[f.Name] = f.Value
		rule, ok := flagRules[f.Name]
		if !ok {
			continue // kingpin's own; a flag of ours without a rule fails TestEveryFlagIsValidated
		}
		if err := checkFlag(f.Name, f.Value, shown(f.Name, f.Value), rule); err != nil {
			return err
		}
	}
	dur := func(name string) time.Duration {
		if g, ok := values[name].(kingpin.Getter); ok {
			d, _ := g.Get().(time.Duration)
			return d
		}
		return 0
	}
	for _, r := range []struct {
		name   string
		bad    bool
		expect string
	}{
		{"web.scrape-timeout-offset", dur("web.scrape-timeout-offset") >= dur("web.scrape-timeout"),
			"a duration below --web.scrape-timeout (" + dur("web.scrape-timeout").String() + ")"},
		{"web.write-timeout", dur("web.write-timeout") < dur("web.scrape-timeout"),
			"a duration not below --web.scrape-timeout (" + dur("web.scrape-timeout").String() + "): the answer of a slow scrape would be cut"},
		{"cannlog.rescan-interval", dur("cannlog.rescan-interval") < dur("cannlog.poll-interval"),
			"a duration not below --cannlog.poll-interval (" + dur("cannlog.poll-interval").String() + ")"},
		{"hccn.slow-interval", dur("hccn.slow-interval") != 0 && dur("hccn.slow-interval") < dur("hccn.interval"),
			"0 or a duration not below --hccn.interval (" + dur("hccn.interval").String() + ")"},
		{"npusmi.timeout", dur("npusmi.timeout") > dur("npuhealth.interval"),
			"a duration not above --npuhealth.interval (" + dur("npuhealth.interval").String() + ")"},
	} {
		if r.bad {
			return flagError(r.name, shown(r.name, values[r.name]), r.expect)
		}
	}
	if len(*sa.toolkitFlags.WebListenAddresses) == 0 && !*sa.toolkitFlags.WebSystemdSocket {
		return errors.New("--web.listen-address: expected at least one address (or --web.systemd-socket)")
	}
	w := sa.wiring
	if w.headroom.QPBytesLow > w.headroom.QPBytesHigh {
		return fmt.Errorf("--headroom.qp-bytes-low=%q with --headroom.qp-bytes-high=%q: expected the low bound not above the high one "+
			"(one of them alone is checked against the other's default: 256KiB low, 3MiB high)",
			shown("headroom.qp-bytes-low", values["headroom.qp-bytes-low"]), shown("headroom.qp-bytes-high", values["headroom.qp-bytes-high"]))
	}
	for _, v := range []interface{ Validate() error }{w.headroom, w.hccn, w.health} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// checkFlag applies rule to a flag's value, element by element for a
// repeatable flag.
func checkFlag(name string, v kingpin.Value, shown string, rule flagRule) error {
	g, ok := v.(kingpin.Getter)
	if !ok {
		if !rule.check(v.String()) {
			return flagError(name, shown, rule.expect)
		}
		return nil
	}
	val := g.Get()
	if list, ok := val.(*[]string); ok { // a repeatable flag
		for _, s := range *list {
			if !rule.check(s) {
				return flagError(name, s, rule.expect)
			}
		}
		return nil
	}
	if !rule.check(val) {
		return flagError(name, shown, rule.expect)
	}
	return nil
}

// fmtDuration prints 24h0m0s as 24h.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// expectOf is what name accepts, with the flag's own name filled in.
func expectOf(name string) string {
	r, ok := flagRules[name]
	if !ok {
		return ""
	}
	return strings.ReplaceAll(r.expect, "NAME", name)
}

// misusedSwitch: kingpin answers "--collector.hccn=false" with "unexpected
// false", naming neither the flag nor what it takes.
func misusedSwitch(app *kingpin.Application, args []string) error {
	switches := map[string]bool{}
	for _, f := range app.Model().Flags {
		if f.IsBoolFlag() {
			switches[f.Name] = true
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			continue
		}
		if base, neg := strings.CutPrefix(name, "no-"); neg && switches[base] {
			name = base
		}
		if switches[name] {
			return fmt.Errorf("%s: expected no value: --%s or --no-%s", a, name, name)
		}
	}
	return nil
}

// nameFlag turns a kingpin parse error into one that names the flag: the
// error of a value's own Set ("time: missing unit in duration \"5\"")
// does not. The arguments are matched to their flags again on a fresh
// parser and each value set on its own, so the first that fails is named
// with what it expects.
func nameFlag(newApp func() *kingpin.Application, args []string, err error) error {
	ctx, perr := newApp().ParseContext(args)
	if perr != nil {
		return err // not a value: an unknown flag or a stray argument, which kingpin names
	}
	for _, el := range ctx.Elements {
		fc, ok := el.Clause.(*kingpin.FlagClause)
		if !ok || el.Value == nil {
			continue
		}
		m := fc.Model()
		if serr := m.Value.Set(*el.Value); serr != nil {
			msg := fmt.Sprintf("--%s=%q: %v", m.Name, *el.Value, serr)
			if e := expectOf(m.Name); e != "" {
				msg += "; expected " + e
			}
			return errors.New(msg)
		}
	}
	return err
}
