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
