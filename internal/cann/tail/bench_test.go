package tail

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchTree writes 4 plogs of 16 MiB of 150-byte lines (pid 10) below
// root/run/plog once per benchmark.
func benchTree(b *testing.B) (root string, size, lines int64) {
	b.Helper()
	root = b.TempDir()
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	line := "[INFO] HCCL(10,python3):2026-01-01-00:00:00.000.000 [file.cc:1] [10]" + strings.Repeat("x", 80) + "\n"
	chunk := strings.Repeat(line, (1<<20)/len(line))
	for i := range 4 {
		fh, err := os.Create(filepath.Join(dir, fmt.Sprintf("plog-10_%017d.log", 20260101000000000+i)))
		if err != nil {
			b.Fatal(err)
		}
		for range 16 {
			if _, err := fh.WriteString(chunk); err != nil {
				b.Fatal(err)
			}
			size += int64(len(chunk))
			lines += int64(len(chunk) / len(line))
		}
		_ = fh.Close()
	}
	return root, size, lines
}

// BenchmarkPollIngest reads a 64 MiB tree from the page cache with one
// follower per iteration: a configured root (read directly) and the same
// tree as a discovered root (every call through the root's worker).
func BenchmarkPollIngest(b *testing.B) {
	root, size, want := benchTree(b)
	for _, kind := range []string{"configured", "discovered"} {
		b.Run(kind, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				cfg := Config{DisableNotify: true}
				if kind == "configured" {
					cfg.Roots = []string{root}
				}
				f, err := New(cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				if kind == "discovered" {
					f.SetProcRoots([]ProcRoot{{Path: root, PID: 10}})
				}
				lines := 0
				for range 3 { // 32 MiB per file and Poll at most
					if err := f.Poll(func(*File, []byte) { lines++ }); err != nil {
						b.Fatal(err)
					}
				}
				if int64(lines) != want {
					b.Fatalf("%d lines, want %d", lines, want)
				}
				_ = f.Close()
			}
		})
	}
}

// BenchmarkPollManyFiles reads 2,000 small plogs (two lines each) with one
// follower per iteration: through a screen-log glob over the same files
// (read directly by path: the baseline) and as a configured root (every
// call on the root's worker since round five of issue 38: a goroutine and
// a timer per open, stat, read and close). It is the worst case of the
// worker's cost: per file, not per byte.
func BenchmarkPollManyFiles(b *testing.B) {
	root := b.TempDir()
	dir := filepath.Join(root, "run", "plog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	const files = 2000
	for i := range files {
		p := filepath.Join(dir, fmt.Sprintf("plog-%d_%017d.log", 1000+i, 20260101000000000))
		if err := os.WriteFile(p, []byte("[INFO] HCCL(1,python3):2026-01-01-00:00:00.000.000 [f.cc:1] [1]a\nsecond line\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, kind := range []string{"glob-direct", "configured-worker"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				cfg := Config{DisableNotify: true}
				if kind == "configured-worker" {
					cfg.Roots = []string{root}
				} else {
					cfg.ScreenGlobs = []string{filepath.Join(dir, "*.log")}
				}
				f, err := New(cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				lines := 0
				if err := f.Poll(func(*File, []byte) { lines++ }); err != nil {
					b.Fatal(err)
				}
				if lines != 2*files {
					b.Fatalf("%d lines, want %d", lines, 2*files)
				}
				_ = f.Close()
			}
		})
	}
}
