package npusmi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// FuzzParse: no input makes Parse panic, and whatever it accepts is safe
// to export (valid label values, no negative memory, used ≤ total, no
// duplicate series).
func FuzzParse(f *testing.F) {
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
	demo, err := os.ReadFile(demoScript)
	if err == nil {
		f.Add(demo)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := Parse(in)
		if err != nil {
			if s != nil {
				t.Fatal("snapshot returned with an error")
			}
			return
		}
		checkSnapshot(t, s)
		// Exporting must not panic either (MustNewConstMetric panics on
		// invalid label values), and a pedantic registry must accept it.
		c, _, _ := newScripted(0, step{out: in})
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(metrictest.Unchecked(c))
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("gather: %v", err)
		}
	})
}
