// Package npufault owns the classification of the NPU's hardware error
// codes (npu-smi info -t health, Error Code; DCMI's error-code list): each
// code's handling level in MindCluster's terms (RestartNPU, SeparateNPU,
// NotHandleFault, …). The table MindCluster ships is built into the binary
// (faultCode.json, go:embed), so an install without the Helm chart
// classifies the documented codes too; a file in the same format replaces
// it.
package npufault

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ClassUnknown is the class of a code the table does not list.
const ClassUnknown = "unknown"

// classRank orders MindCluster's handling levels, most severe first: a code
// listed under two levels takes the more severe, as MindCluster's device
// plugin does (its docs: "同一故障码配置在多个故障级别中 … 默认按照高等级故障处理").
// Levels a file adds later rank after these, before unknown.
var classRank = []string{
	"ManuallySeparateNPU", "SeparateNPU", "PreSeparateNPU", "RestartNPU", "FreeRestartNPU",
	"RestartBusiness", "RestartRequest", "SubHealthFault", "NotHandleFault",
}

// Classes maps an error code (upper-case hex) to its handling class.
type Classes map[string]string

// Class is the class of code, ClassUnknown when not listed.
func (f Classes) Class(code string) string {
	if c, ok := f[code]; ok {
		return c
	}
	return ClassUnknown
}

// builtin is MindCluster's default table with the source of its codes
// (its _source and _sources keys); deploy/helm's tests keep the chart's
// files/faultCode.json identical to it.
//
//go:embed faultCode.json
var builtin []byte

// Builtin returns the embedded table's bytes (for the chart's copy and
// docs).
func Builtin() []byte { return append([]byte(nil), builtin...) }

// Default returns the classification built into the binary: MindCluster's
// default faultCode.json. It is parsed at each call (once per process in
// practice) so that no package state is shared; the package's tests keep
// it parseable.
func Default() (Classes, error) {
	c, err := Parse(builtin)
	if err != nil {
		return nil, fmt.Errorf("the built-in faultCode.json: %w", err)
	}
	return c, nil
}

// maxFile bounds the file read: MindCluster's is about 15 KiB.
const maxFile = 4 << 20

// Load reads a table in the format of MindCluster's ascend-device-plugin
// faultCode.json (see Parse); it replaces the built-in table as a whole.
// flag names the flag that gave path, for the error.
func Load(path, flag string) (Classes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%s %s: %d bytes, more than %d: not a faultCode.json", flag, path, len(b), maxFile)
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w (want MindCluster's faultCode.json format: {\"RestartNPUCodes\": [\"8C03A000\", …], …})", flag, path, err)
	}
	return f, nil
}

// Parse parses the faultCode.json format: one JSON object whose keys are a
// handling level followed by "Codes" (NotHandleFaultCodes, RestartNPUCodes,
// SeparateNPUCodes, …), each an array of hex code strings. The class is the
// key without "Codes". Keys of another shape are ignored, so a newer file
// with more fields still loads.
func Parse(b []byte) (Classes, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable result whatever the map order
	out := Classes{}
	for _, k := range keys {
		class, ok := strings.CutSuffix(k, "Codes")
		if !ok || class == "" {
			continue
		}
		var codes []string
		if err := json.Unmarshal(raw[k], &codes); err != nil {
			continue // not a list of codes: a field of a newer format
		}
		for _, c := range codes {
			c = strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(c), "0x"), "0X"))
			if !ValidCode(c) {
				return nil, fmt.Errorf("%s: %q is not a hex error code", k, c)
			}
			if old, ok := out[c]; !ok || rank(class) < rank(old) {
				out[c] = class
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no <Level>Codes array with a code")
	}
	return out, nil
}

// ValidCode reports whether s is an error code as npu-smi prints it and
// MindCluster lists it: 4 to 9 upper-case hex digits (8 for the chip's
// codes, 9 for MindCluster's UBOE codes such as 110001024).
func ValidCode(s string) bool {
	if len(s) < 4 || len(s) > 9 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

func rank(class string) int {
	for i, c := range classRank {
		if c == class {
			return i
		}
	}
	return len(classRank)
}
