package diagnose

import (
	"testing"
)

// BenchmarkSampleBundle measures a whole run over the sample bundle.
func BenchmarkSampleBundle(b *testing.B) {
	for b.Loop() {
		if _, err := Run([]string{"testdata/bundle"}, testOptions()); err != nil {
			b.Fatal(err)
		}
	}
}
