package diagnose

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	goldenfile "github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// TestGolden runs diagnose over the sample bundle (three nodes assembled
// from the captured samples, see testdata/README.md) and compares the text
// and JSON reports with the golden files. Run `go test ./diagnose -update`
// to rewrite them after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	r := run(t, "testdata/bundle")
	if r.ExitCode != 1 || r.Status != model.StatusFindings {
		t.Errorf("exit %d status %s, want 1 findings", r.ExitCode, r.Status)
	}
	var text, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	goldenfile.Compare(t, "testdata/golden/bundle.txt", text.Bytes())
	goldenfile.Compare(t, "testdata/golden/bundle.json", js.Bytes())

	// The JSON reads back into a Report and writes out the same.
	var back model.Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("report does not read back: %v", err)
	}
	var again bytes.Buffer
	if err := WriteJSON(&again, &back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), js.Bytes()) {
		t.Errorf("JSON does not round-trip:\n%s", goldenfile.FirstDifference(again.Bytes(), js.Bytes()))
	}
}
