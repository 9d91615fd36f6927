package analyse

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

// BenchmarkEventWatch measures what gathering the root-cause inputs adds to
// reading plogs, against reading them into the state alone, in the same
// run: the lines of the ei0011 bundle's plogs (diagnose/testdata/incidents) plus graph-mode entry lines
// and per-QP link lines, the high-volume lines of a real run/plog. It
// reports ns per line for both and their ratio (docs/benchmarks.md).
func BenchmarkEventWatch(b *testing.B) {
	var lines [][]byte
	err := filepath.WalkDir(filepath.Join("..", "testdata", "incidents", "ei0011"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(filepath.ToSlash(p), "/plog/") {
			return err
		}
		content, err := os.ReadFile(p)
		for _, l := range strings.Split(strings.TrimSpace(string(content)), "\n") {
			lines = append(lines, []byte(l))
		}
		return err
	})
	if err != nil || len(lines) == 0 {
		b.Fatalf("the ei0011 bundle's plogs: %d lines, %v", len(lines), err)
	}
	for i := range 2000 {
		lines = append(lines,
			[]byte(fmt.Sprintf("[INFO] HCCL(42,python):2025-02-20-16:27:32.%03d.044 [hcom.cc:454][42]Entry-HcomAllReduce:tag[HcomAllReduce_6629421139219749105_0], inputPtr[0x12c3bcb06c00], outputPtr[0x12c39e106000], count[22348800], dataType[float32], op[sum], group[hccl_world_group], streamId[13], deviceLogicId[0]", i%1000)),
			[]byte(fmt.Sprintf("[INFO] HCCL(42,python):2025-02-20-16:27:32.%03d.051 [transport_ibverbs.cc:1010] [42]create hccl transport:communicator[AllReduce_10.0.0.1%%enp_60000_0_1], local rank[3], ip[192.168.1.3], remote rank[%d], ip[192.168.2.3], transporttype[ROCE], rdma qpn[%d], rdma qp sport[%d], rdma TC[132], rdma SL[4]", i%1000, i%64, 1000+i, 50000+i)))
	}
	src := &logstate.Source{Path: "run/plog/plog-42_20250220162732000.log", Kind: logstate.SourcePlog}
	opts := testOptions()
	var base, with time.Duration
	for b.Loop() {
		t0 := time.Now()
		st := logstate.NewState(opts.stateOptions())
		for _, l := range lines {
			st.Ingest(src, l)
		}
		t1 := time.Now()
		w := newEventWatch(time.UTC)
		so := opts.stateOptions()
		so.OnFault = w.onFault
		so.OnHCCLLine = w.onHCCLLine
		st = logstate.NewState(so)
		for _, l := range lines {
			w.lineNo++
			w.cur = l
			st.Ingest(src, l)
		}
		t2 := time.Now()
		base += t1.Sub(t0)
		with += t2.Sub(t1)
	}
	n := float64(b.N) * float64(len(lines))
	b.ReportMetric(float64(base.Nanoseconds())/n, "state-ns/line")
	b.ReportMetric(float64(with.Nanoseconds())/n, "state+watch-ns/line")
	b.ReportMetric(float64(with)/float64(base), "ratio")
	b.ReportMetric(0, "ns/op") // the two timings above are the result
}
