package npusmi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// FuzzExport: whatever npusmi.Parse accepts is safe to export
// (MustNewConstMetric panics on invalid label values) and a pedantic
// registry accepts it (no duplicate series).
func FuzzExport(f *testing.F) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if _, err := npusmi.Parse(in); err != nil {
			return
		}
		c, _, _ := newScripted(0, step{out: in})
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(metrictest.Unchecked(c))
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("gather: %v", err)
		}
	})
}
