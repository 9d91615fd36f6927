package diagnose

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
)

func seedFiles(f *testing.F) {
	_ = filepath.WalkDir("testdata/bundle", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			rel, _ := filepath.Rel("testdata/bundle", p)
			f.Add(filepath.ToSlash(rel), b)
		}
		return nil
	})
	f.Add("../../etc/passwd", []byte("root:x:0:0"))
	f.Add("/abs/plog-1_00000000000000000.log", []byte("[ERROR] HCCL(1,x):2025-01-01-00:00:00.000.000 ra qp create fail, reason: out of memory\n"))
	f.Add("a/b.log.gz", []byte("\x1f\x8b\x08garbage"))
	f.Add("x.log", bytes.Repeat([]byte("EL0004: [size:99999999999999999999]\xff\n"), 20))
}

// FuzzBundle: any file name and content, in a directory and in a tar.gz,
// must be read without a panic, and the two reports must agree on what
// was found.
func FuzzBundle(f *testing.F) {
	seedFiles(f)
	f.Fuzz(func(t *testing.T, name string, content []byte) {
		rel := bundle.CleanArchivePath(name)
		if rel == "" || strings.ContainsRune(rel, 0) || len(rel) > 200 {
			return
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content))}); err != nil {
			return
		}
		_, _ = tw.Write(content)
		_ = tw.Close()
		_ = zw.Close()
		dir := t.TempDir()
		archive := filepath.Join(dir, "b.tgz")
		if err := os.WriteFile(archive, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		ra, err := Run([]string{archive}, testOptions())
		if err != nil {
			t.Fatalf("archive: %v", err)
		}
		tree := filepath.Join(dir, "tree")
		p := filepath.Join(tree, filepath.FromSlash(rel))
		if os.MkdirAll(filepath.Dir(p), 0o755) != nil || os.WriteFile(p, content, 0o644) != nil {
			return // a name the file system refuses
		}
		rd, err := Run([]string{tree}, testOptions())
		if err != nil {
			t.Fatalf("directory: %v", err)
		}
		if len(ra.Faults) != len(rd.Faults) {
			t.Errorf("archive found %d fault codes, directory %d", len(ra.Faults), len(rd.Faults))
		}
		for _, r := range []*model.Report{ra, rd} {
			if err := WriteText(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			if err := WriteHTML(io.Discard, r); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzArchive: arbitrary bytes as an archive give an error in the report,
// never a panic.
func FuzzArchive(f *testing.F) {
	f.Add([]byte{})
	good := tarGz(f, "testdata/bundle", "")
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "x.tar.gz")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Run([]string{p}, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteText(io.Discard, r); err != nil {
			t.Fatal(err)
		}
	})
}
