package diagnose

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	goldenfile "github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// TestGolden runs diagnose over the sample bundle (three nodes assembled
// from the captured samples, see testdata/README.md) and compares the text
// and JSON reports with the golden files. Run `go test ./diagnose -update`
// to rewrite them after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	r := run(t, "testdata/bundle")
	if r.ExitCode != 1 || r.Status != StatusFindings {
		t.Errorf("exit %d status %s, want 1 findings", r.ExitCode, r.Status)
	}
	var text, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "testdata/golden/bundle.txt", text.Bytes())
	compareGolden(t, "testdata/golden/bundle.json", js.Bytes())

	// The JSON reads back into a Report and writes out the same.
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("report does not read back: %v", err)
	}
	var again bytes.Buffer
	if err := WriteJSON(&again, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), js.Bytes()) {
		t.Errorf("JSON does not round-trip:\n%s", lineDiff(js.String(), again.String()))
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if goldenfile.Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update and review the diff):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// lineDiff shows the first differing lines.
func lineDiff(want, got string) string {
	wl, gl := bytes.Split([]byte(want), []byte("\n")), bytes.Split([]byte(got), []byte("\n"))
	var out bytes.Buffer
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 10; i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			out.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + string(w) + "\n  got:  " + string(g) + "\n")
			shown++
		}
	}
	return out.String()
}
