package diagnose

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	goldenfile "github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// zipOf packs the files under dir into a zip, each entry named prefix + its
// path relative to dir, plus the extra entries given.
func zipOf(t testing.TB, dir, prefix string, extra func(zw *zip.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(prefix + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(zw)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestZipBundle is the edge of issue 24: a zip bundle given to diagnose was
// read as one plain-text screen log. It is read like a tar: the same report
// as the directory, entries named with ../ cleaned (nothing is extracted),
// symlink and directory entries skipped, whatever its file name says.
func TestZipBundle(t *testing.T) {
	dirReport := run(t, "testdata/bundle")
	tmp := t.TempDir()
	data := zipOf(t, "testdata/bundle", "", func(zw *zip.Writer) {
		h := &zip.FileHeader{Name: "node-x/run/plog/plog-9_20251103201702000.log"}
		h.SetMode(fs.ModeSymlink | 0o777)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("/etc/shadow"))
		if _, err := zw.Create("../../escape/"); err != nil {
			t.Fatal(err)
		}
	})
	for _, name := range []string{"bundle.zip", "bundle.log"} { // the name is not what tells
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r := run(t, p)
		if r.Inputs[0].Type != "archive" {
			t.Fatalf("%s: type %s", name, r.Inputs[0].Type)
		}
		if r.Inputs[0].SkippedFiles != 1 {
			t.Errorf("%s: %d entries skipped, want 1 (the symlink)", name, r.Inputs[0].SkippedFiles)
		}
		if got, want := reportJSON(t, r), reportJSON(t, dirReport); got != want {
			t.Errorf("%s: report differs from the directory's:\n%s", name, goldenfile.FirstDifference([]byte(got), []byte(want)))
		}
		if strings.Contains(reportJSON(t, r), "shadow") {
			t.Errorf("%s: a symlink entry was read", name)
		}
	}
}
