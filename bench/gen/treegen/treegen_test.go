package treegen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recount counts a tree independently of the generator's own counters.
func recount(t *testing.T, dir string) (Counts, map[string]int64, [32]byte) {
	t.Helper()
	var c Counts
	sizes := map[string]int64{}
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel))
		h.Write(b)
		sizes[rel] = int64(len(b))
		c.Files++
		c.Bytes += int64(len(b))
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			l := sc.Text()
			c.Lines++
			switch {
			case strings.HasPrefix(l, "[INFO] "):
				c.Info++
			case strings.HasPrefix(l, "[DEBUG] "):
				c.Debug++
			case strings.HasPrefix(l, "[WARNING] "):
				c.Warning++
			case strings.HasPrefix(l, "[ERROR] "):
				c.Error++
			case strings.HasPrefix(l, "[EVENT] "):
				c.Event++
			}
			if strings.Contains(l, "[HCCL_ENV]") {
				c.HCCLEnv++
			}
			if strings.HasPrefix(l, "[ERROR] HCC") && strings.Contains(l, "ra qp create fail") && strings.Contains(l, "out of memory") {
				c.EI0011++
			}
			if strings.HasPrefix(l, "[ERROR] HCC") && strings.Contains(l, "wait socket establish timeout") {
				c.EI0006++
			}
			if strings.Contains(l, "ErrToWarn:") {
				c.ErrToWrn++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return c, sizes, sum
}

func TestWriteCountsCutAndDeterminism(t *testing.T) {
	spec := Spec{Bytes: 6 << 20, PIDs: 12, FileCap: 256 << 10, Seed: 7}
	a := t.TempDir()
	got, err := Write(a, spec)
	if err != nil {
		t.Fatal(err)
	}
	want, sizes, sumA := recount(t, a)
	if got != want {
		t.Fatalf("generator counts %+v\nrecounted        %+v", got, want)
	}
	if got.Error == 0 || got.EI0011 == 0 || got.EI0006 == 0 || got.HCCLEnv == 0 || got.ErrToWrn == 0 || got.Warning == 0 {
		t.Fatalf("tree lacks a kind of line: %+v", got)
	}
	if got.Bytes < spec.Bytes || got.Bytes > spec.Bytes+int64(spec.PIDs)*2*4096 {
		t.Fatalf("tree is %d bytes, asked %d", got.Bytes, spec.Bytes)
	}
	// Files are cut near FileCap, and the first process spans several.
	var first, device int
	for rel, n := range sizes {
		if n > spec.FileCap+4096 {
			t.Errorf("%s is %d bytes, cap %d", rel, n, spec.FileCap)
		}
		if strings.Contains(rel, "plog-400001_") {
			first++
		}
		if strings.Contains(rel, "device-") {
			device++
		}
	}
	if first < 3 {
		t.Errorf("first process wrote %d files, want several", first)
	}
	if device == 0 {
		t.Error("no device logs")
	}
	// Same spec, same bytes.
	b := t.TempDir()
	if _, err := Write(b, spec); err != nil {
		t.Fatal(err)
	}
	if _, _, sumB := recount(t, b); sumA != sumB {
		t.Fatal("two writes of one spec differ")
	}
}
