// Package flagcheck owns how a flag's value is checked after parsing: the
// Rule every flag is defined with (Rules.Flag: each package defines its
// flags and their bounds in one place, its AddFlags), the common rules
// (durations and counts within bounds, caps, paths, switches), and the
// errors that name the flag, the value and what it expects.
package flagcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// A flag value kingpin parses is only of the right type: a duration of 0 or
// -1s, a negative cap or an empty path went through, to panic later
// (--web.telemetry-path= made the HTTP mux panic) or to mean something the
// user did not ask (a cap of 0 silently became the default). Every flag of
// the server therefore has a rule here, checked after parsing; a value that
// breaks it stops the exporter with exit status 2 and says which flag, what
// value and what is expected. TestEveryFlagIsValidated enumerates kingpin's
// model, so a new flag without a rule (and a test case) fails the build.

// Rule checks one flag's parsed value.
type Rule struct {
	// expect says what the flag accepts, in the error.
	expect string
	// check reports whether v (the flag's kingpin.Getter value; the text
	// of a value that has none) is acceptable. A repeatable flag is
	// checked element by element.
	check func(v any) bool
}

// Bounds used by more than one rule.
const (
	MaxInterval = 24 * time.Hour
	MaxCap      = 1 << 24 // caps of labels and table sizes
)

func DurationIn(lo, hi time.Duration, what string) Rule {
	return Rule{expect: what, check: func(v any) bool {
		d, ok := v.(time.Duration)
		return ok && d >= lo && d <= hi
	}}
}

// Positive is a duration above 0 and at most hi.
func Positive(hi time.Duration) Rule {
	return DurationIn(time.Nanosecond, hi, fmt.Sprintf("a duration above 0 and at most %s, such as 30s or 5m", fmtDuration(hi)))
}

func IntIn(lo, hi int, what string) Rule {
	return Rule{expect: what, check: func(v any) bool {
		n, ok := v.(int)
		return ok && n >= lo && n <= hi
	}}
}

// Cap is a cap on distinct label values or table rows: there is no
// "unlimited", and 0 no longer quietly means the default.
var Cap = IntIn(1, MaxCap, fmt.Sprintf("a whole number from 1 to %d (there is no unlimited: omit the flag for the default)", MaxCap))

// ParsedAs: kingpin or the value's own Set already rejects what is wrong
// (a bool, a byte size, a log level); expect is said with its error.
func ParsedAs(expect string) Rule {
	return Rule{expect: expect, check: func(any) bool { return true }}
}

// Switch: a bool flag takes no value (--x or --no-x).
var Switch = ParsedAs("no value: --NAME or --no-NAME")

var ByteSize = ParsedAs("a size above 0 with a base-2 unit, such as 256KiB or 3MiB")

func StringRule(expect string, ok func(string) bool) Rule {
	return Rule{expect: expect, check: func(v any) bool {
		s, isString := v.(string)
		return isString && ok(s)
	}}
}

// Clean: no control character (a newline or NUL in a path is a copy-paste
// accident) and no blank at either end (a YAML quoting slip).
func Clean(s string) bool {
	return strings.TrimSpace(s) == s && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Executable: a program run without a shell, by path or looked up in PATH.
var Executable = StringRule("a program name or path (not empty, no blanks at the ends)", func(s string) bool {
	return s != "" && Clean(s)
})

// AbsPath and AbsPathOrEmpty: host paths the exporter reads under.
var AbsPath = StringRule("an absolute path", func(s string) bool { return filepath.IsAbs(s) && Clean(s) })

var AbsPathOrEmpty = StringRule("an absolute path, or empty to disable", func(s string) bool {
	return s == "" || (filepath.IsAbs(s) && Clean(s))
})

var Path = StringRule("a path (not empty, no blanks at the ends)", func(s string) bool { return s != "" && Clean(s) })

// FileOrEmpty: a file read at start; checked now so that a typo exits 2
// with the flag's name rather than 1 from deep inside a collector.
var FileOrEmpty = StringRule("empty, or an existing regular file", func(s string) bool {
	if s == "" {
		return true
	}
	fi, err := os.Stat(s)
	return err == nil && fi.Mode().IsRegular()
})

// StateFile: written by the exporter, so it need not exist, but it is not a
// directory and its directory exists.
var StateFile = StringRule("empty (no state kept), or a file path whose directory exists", func(s string) bool {
	if s == "" {
		return true
	}
	if !Clean(s) || strings.HasSuffix(s, "/") {
		return false
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return false
	}
	fi, err := os.Stat(filepath.Dir(s))
	return err == nil && fi.IsDir()
})

var Glob = StringRule("a glob such as /var/log/pods/*/*/*.log", func(s string) bool {
	if s == "" || !Clean(s) {
		return false
	}
	_, err := filepath.Match(s, "")
	return err == nil
})

// flagError names the flag, its value and what it accepts.
func flagError(name, value, expect string) error {
	return fmt.Errorf("--%s=%q: expected %s", name, value, strings.ReplaceAll(expect, "NAME", name))
}

// Rules holds the rule of every flag defined through it. The zero value is
// ready; a nil *Rules defines flags without keeping their rules (tests of
// one package's flags).
type Rules struct {
	m map[string]Rule
}

// Flag defines --name on app with its rule, so that a flag and its bounds
// are written in one place.
func (r *Rules) Flag(app *kingpin.Application, name, help string, rule Rule) *kingpin.FlagClause {
	r.Add(name, rule)
	return app.Flag(name, help)
}

// Add keeps the rule of a flag defined elsewhere (the exporter-toolkit's,
// promslog's, kingpin's switches).
func (r *Rules) Add(name string, rule Rule) {
	if r == nil {
		return
	}
	if r.m == nil {
		r.m = map[string]Rule{}
	}
	r.m[name] = rule
}

// Has reports whether name has a rule.
func (r *Rules) Has(name string) bool {
	if r == nil {
		return false
	}
	_, ok := r.m[name]
	return ok
}

// Names lists the flags with a rule.
func (r *Rules) Names() []string {
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	return out
}

// Values is every parsed flag of an application by name, with the text
// each value was typed as, for the rules that relate two flags.
type Values struct {
	values map[string]kingpin.Value
	typed  map[string]string
}

// Shown is the flag's value as typed (-1m, not -1m0s).
func (v Values) Shown(name string) string {
	if s, ok := v.typed[name]; ok {
		return s
	}
	if val, ok := v.values[name]; ok {
		return val.String()
	}
	return ""
}

// Duration is a duration flag's value, 0 for another kind.
func (v Values) Duration(name string) time.Duration {
	if g, ok := v.values[name].(kingpin.Getter); ok {
		d, _ := g.Get().(time.Duration)
		return d
	}
	return 0
}

// Error is the error of flag name's value against what it expects.
func (v Values) Error(name, expect string) error {
	return flagError(name, v.Shown(name), expect)
}

// Check checks every flag of app that has a rule against it, as parsed
// from args, and returns the values for the checks that relate flags.
func (r *Rules) Check(app *kingpin.Application, args []string) (Values, error) {
	vs := Values{values: map[string]kingpin.Value{}, typed: map[string]string{}}
	if ctx, err := app.ParseContext(args); err == nil {
		for _, el := range ctx.Elements {
			if fc, ok := el.Clause.(*kingpin.FlagClause); ok && el.Value != nil {
				vs.typed[fc.Model().Name] = *el.Value
			}
		}
	}
	for _, f := range app.Model().Flags {
		vs.values[f.Name] = f.Value
	}
	for _, f := range app.Model().Flags {
		rule, ok := r.m[f.Name]
		if !ok {
			continue // kingpin's own; a flag of ours without a rule fails the command's test
		}
		if err := checkFlag(f.Name, f.Value, vs.Shown(f.Name), rule); err != nil {
			return vs, err
		}
	}
	return vs, nil
}

// checkFlag applies rule to a flag's value, element by element for a
// repeatable flag.
func checkFlag(name string, v kingpin.Value, shown string, rule Rule) error {
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

// Expect is what name accepts, with the flag's own name filled in.
func (r *Rules) Expect(name string) string {
	if r == nil {
		return ""
	}
	rule, ok := r.m[name]
	if !ok {
		return ""
	}
	return strings.ReplaceAll(rule.expect, "NAME", name)
}

// MisusedSwitch: kingpin answers "--collector.hccn=false" with "unexpected
// false", naming neither the flag nor what it takes.
func MisusedSwitch(app *kingpin.Application, args []string) error {
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

// NameFlag turns a kingpin parse error into one that names the flag: the
// error of a value's own Set ("time: missing unit in duration \"5\"")
// does not. The arguments are matched to their flags again on a fresh
// parser and each value set on its own, so the first that fails is named
// with what it expects.
func (r *Rules) NameFlag(newApp func() *kingpin.Application, args []string, err error) error {
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
			if e := r.Expect(m.Name); e != "" {
				msg += "; expected " + e
			}
			return errors.New(msg)
		}
	}
	return err
}
