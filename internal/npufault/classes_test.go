package npufault

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultClassifiesDocumentedCodes: a code whose level a public source
// documents has its class without any file.
func TestDefaultClassifiesDocumentedCodes(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{
		"8C1F8609":  "NotHandleFault", // issue 47: stayed unknown with the chart's 11 codes
		"8C03A000":  "RestartNPU",
		"8C084E00":  "FreeRestartNPU",
		"80E18402":  "SeparateNPU",
		"110001024": "PreSeparateNPU",
		"80E01801":  "RestartBusiness",
		"80C98008":  "RestartRequest",
		"81A3880C":  "SubHealthFault",
		"81078603":  "NotHandleFault",
		"DEADBEEF":  ClassUnknown,
	} {
		if got := d.Class(code); got != want {
			t.Errorf("Class(%s) = %q, want %q", code, got, want)
		}
	}
	// Every listed code has its source (TestBuiltinSources), so the table
	// holds only the 12 documented ones.
	if len(d) != 12 {
		t.Errorf("%d codes built in, want the 12 documented", len(d))
	}
}

// TestBuiltinSources: the built-in table says where its codes come from,
// and every per-code note names a listed code and the level it is listed
// under.
func TestBuiltinSources(t *testing.T) {
	var raw struct {
		Sources map[string]string `json:"_sources"`
	}
	if err := json.Unmarshal(Builtin(), &raw); err != nil {
		t.Fatal(err)
	}
	var lists map[string]json.RawMessage
	if err := json.Unmarshal(Builtin(), &lists); err != nil {
		t.Fatal(err)
	}
	listedAt := map[string][]string{}
	for k, v := range lists {
		var codes []string
		if strings.HasSuffix(k, "Codes") && json.Unmarshal(v, &codes) == nil {
			for _, c := range codes {
				listedAt[strings.ToUpper(c)] = append(listedAt[strings.ToUpper(c)], k)
			}
		}
	}
	for code := range listedAt {
		if raw.Sources[code] == "" {
			t.Errorf("%s is listed with no source in _sources", code)
		}
	}
	for code, note := range raw.Sources {
		levels := listedAt[code]
		if len(levels) == 0 {
			t.Errorf("_sources names %s, which no list holds", code)
			continue
		}
		found := false
		for _, l := range levels {
			found = found || strings.Contains(note, "("+l+")")
		}
		if !found {
			t.Errorf("_sources[%s] = %q names none of its lists %v", code, note, levels)
		}
	}
}

func TestLoadReplaces(t *testing.T) {
	f, err := Load(filepath.Join("testdata", "override.json"), "--npuhealth.fault-code-file")
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{
		"8C03A000": "RestartNPU", "8C084E00": "FreeRestartNPU", "A2301001": "SeparateNPU", // listed twice: the more severe
		"110001024": "PreSeparateNPU", "80E01809": "NotHandleFault", "DEADBEEF": ClassUnknown,
		"8C1F8609": ClassUnknown, // built in, but the file is the whole table
	} {
		if got := f.Class(code); got != want {
			t.Errorf("Class(%s) = %q, want %q", code, got, want)
		}
	}
	for _, bad := range []string{`[]`, `{"RestartNPUCodes": ["XYZ"]}`, `{"other": 1}`, `{"RestartNPUCodes": []}`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%s): no error", bad)
		}
	}
	if _, err := Load(filepath.Join("testdata", "missing.json"), "--x.file"); err == nil || !strings.Contains(err.Error(), "--x.file") {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, make([]byte, maxFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, "--x.file"); err == nil || !strings.Contains(err.Error(), "not a faultCode.json") {
		t.Errorf("oversized file: %v", err)
	}
}

// FuzzParse: any JSON either loads codes that are hex or is rejected.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "override.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(builtin)
	f.Add([]byte(`{"RestartNPUCodes": ["0x8c03a000"], "x": {}}`))
	f.Add([]byte(`{"Codes": ["1234"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fc, err := Parse(b)
		if err != nil {
			return
		}
		for code, class := range fc {
			if !ValidCode(code) || class == "" {
				t.Fatalf("%q → %q accepted", code, class)
			}
		}
	})
}
