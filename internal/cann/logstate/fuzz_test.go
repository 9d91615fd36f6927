package logstate

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzIngest feeds arbitrary lines to every source kind, then renders,
// saves and restores the state: nothing may panic and the metrics must
// stay valid.
func FuzzIngest(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*/plog/*.log")
	more, _ := filepath.Glob("testdata/*/screen/*.log")
	screens, _ := filepath.Glob("testdata/screen-log/*.log")
	for _, p := range append(append(files, more...), screens...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		st := NewState(testOptions(&fakeClock{t: time.Unix(1767780000, 0)}))
		for _, k := range []SourceKind{SourcePlog, SourceDevicePlog, SourceScreen} {
			src := &Source{Path: "f", Kind: k, Namespace: string(line[:min(len(line), 8)])}
			st.Ingest(src, line)
			st.Ingest(src, line)
		}
		_ = st.metrics()
		blob, err := st.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := NewState(Options{}).UnmarshalBinary(blob); err != nil {
			t.Fatal(err)
		}
		st.Processes()
		st.Faults()
		st.Expire(nil)
	})
}
