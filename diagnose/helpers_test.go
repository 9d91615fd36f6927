package diagnose

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// testOptions are deterministic: UTC, two workers.
func testOptions() Options {
	return Options{Location: time.UTC, Workers: 2}
}

// writeTree creates files (slash paths → contents) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tarGz packs the files under dir into a gzipped tar, in walk (name) order,
// each entry named prefix + its path relative to dir.
func tarGz(t testing.TB, dir, prefix string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		name := prefix + filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func run(t testing.TB, paths ...string) *model.Report {
	t.Helper()
	r, err := Run(paths, testOptions())
	if err != nil {
		t.Fatalf("Run(%v): %v", paths, err)
	}
	return r
}

// envPlog is a run/plog of pid with the given [HCCL_ENV] settings, in
// CANN's format.
func envPlog(pid, buffsize, qps string, extra ...string) string {
	head := "[INFO] HCCL(" + pid + ",python3):2025-11-03-20:17:02.882.069 [externalinput.cc:1370] [" + pid + "][HCCL_ENV] "
	s := head + "HCCL_BUFFSIZE set by environment to [" + buffsize + "]M\n"
	if qps == "" {
		s += head + "HCCL_RDMA_QPS_PER_CONNECTION is set to default value [1]\n"
	} else {
		s += head + "environmental variable HCCL_RDMA_QPS_PER_CONNECTION is set to [" + qps + "]\n"
	}
	for _, e := range extra {
		s += head + e + "\n"
	}
	return s
}

// faultOf returns the report's fault of a code, or nil.
func faultOf(r *model.Report, code string) *model.Fault {
	for i := range r.Faults {
		if r.Faults[i].Code == code {
			return &r.Faults[i]
		}
	}
	return nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
