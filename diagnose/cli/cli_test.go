package cli

import (
	"io"
	"strings"
	"testing"
)

// diagnoseFlagCases: for every flag of `diagnose` and `diagnose buffsize`,
// values refused with an error naming the flag (0.4.0 took --workers=-1 and
// --micro-batch-size=0 without a word about either flag).
var diagnoseFlagCases = map[string][]string{
	"format":           {"xml"},
	"layout":           {"tree"},
	"timezone":         {"Mars/Olympus", "+25:00"},
	"node-timezone":    {"node1", "node1=Mars/Olympus"},
	"workers":          {"-1", "x", "100000"},
	"detail":           {"yes"},
	"log.level":        {"verbose"},
	"log.format":       {"xml"},
	"micro-batch-size": {"0", "-1", "x"},
	"seq-len":          {"0", "-4096"},
	"hidden-size":      {"0", "8k"},
	"dtype":            {"fp7"},
}

// TestEveryDiagnoseFlagIsValidated enumerates the flags of both diagnose
// parsers: each has bad values, and each is refused naming the flag.
func TestEveryDiagnoseFlagIsValidated(t *testing.T) {
	for _, buffsize := range []bool{false, true} {
		d := New(io.Discard, io.Discard)
		d.buffsizeSelected = buffsize
		// args gives every required flag a good value but name's.
		args := func(name, value string) []string {
			if !buffsize {
				return []string{"examples", "--" + name + "=" + value}
			}
			out := []string{"buffsize"}
			for _, f := range [][2]string{{"micro-batch-size", "1"}, {"seq-len", "4096"}, {"hidden-size", "8192"}, {"dtype", "bf16"}, {name, value}} {
				if f[0] != name || f[1] == value {
					out = append(out, "--"+f[0]+"="+f[1])
				}
			}
			return out
		}
		if err := New(io.Discard, io.Discard).Parse(args("log.level", "info")); err != nil {
			t.Fatalf("diagnose (buffsize %v) with good values: %v", buffsize, err)
		}
		for _, f := range d.App().Model().Flags {
			if kingpinOwn[f.Name] {
				continue
			}
			bads, ok := diagnoseFlagCases[f.Name]
			if !ok {
				t.Errorf("diagnose (buffsize %v) --%s has no case in diagnoseFlagCases", buffsize, f.Name)
				continue
			}
			for _, bad := range bads {
				a := args(f.Name, bad)
				err := New(io.Discard, io.Discard).Parse(a)
				if err == nil || !strings.Contains(err.Error(), "--"+f.Name) {
					t.Errorf("diagnose %q: %v; want an error naming --%s", a, err, f.Name)
				}
			}
		}
	}
}

// kingpinOwn are kingpin's own flags, which need no case.
var kingpinOwn = map[string]bool{
	"help": true, "help-long": true, "help-man": true, "version": true,
	"completion-bash": true, "completion-script-bash": true, "completion-script-zsh": true,
}
