package npuhealth

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ClassUnknown is the class of a code the fault-code file does not list, or
// of every code when no file is given.
const ClassUnknown = "unknown"

// classRank orders MindCluster's handling levels, most severe first: a code
// listed under two levels (the shipped file has one) takes the more severe.
// Levels the file adds later rank after these, before unknown.
var classRank = []string{
	"ManuallySeparateNPU", "SeparateNPU", "PreSeparateNPU", "RestartNPU", "FreeRestartNPU",
	"RestartBusiness", "RestartRequest", "SubHealthFault", "NotHandleFault",
}

// FaultCodes maps an error code (upper-case hex) to its handling class.
type FaultCodes map[string]string

// Class is the class of code, ClassUnknown when not listed.
func (f FaultCodes) Class(code string) string {
	if c, ok := f[code]; ok {
		return c
	}
	return ClassUnknown
}

// maxFaultCodeFile bounds the file read: the shipped one is about 15 KiB.
const maxFaultCodeFile = 4 << 20

// LoadFaultCodes reads a fault-code table in the format of MindCluster's
// ascend-device-plugin faultCode.json: one JSON object whose keys are a
// handling level followed by "Codes" (NotHandleFaultCodes, RestartNPUCodes,
// SeparateNPUCodes, …), each an array of hex code strings. The class is the
// key without "Codes". Keys of another shape are ignored, so a newer file
// with more fields still loads.
func LoadFaultCodes(path string) (FaultCodes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--npuhealth.fault-code-file: %w", err)
	}
	if len(b) > maxFaultCodeFile {
		return nil, fmt.Errorf("--npuhealth.fault-code-file %s: %d bytes, more than %d: not a faultCode.json", path, len(b), maxFaultCodeFile)
	}
	f, err := ParseFaultCodes(b)
	if err != nil {
		return nil, fmt.Errorf("--npuhealth.fault-code-file %s: %w (want MindCluster's faultCode.json format: {\"RestartNPUCodes\": [\"8C03A000\", …], …})", path, err)
	}
	return f, nil
}

// ParseFaultCodes parses the faultCode.json format (see LoadFaultCodes).
func ParseFaultCodes(b []byte) (FaultCodes, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable result whatever the map order
	out := FaultCodes{}
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
			if !isHexCode(c) {
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

func rank(class string) int {
	for i, c := range classRank {
		if c == class {
			return i
		}
	}
	return len(classRank)
}
