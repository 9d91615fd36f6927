package headroom

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// benchNode is a full 16-chip A3 node: one process per chip with a world
// communicator and an expert-parallel one, each remembered by its workload.
func benchNode() (fakeNPU, fakeSettings) {
	var npu fakeNPU
	set := fakeSettings{}
	for i := range 16 {
		npu.chips = append(npu.chips, model.ChipMemory{NPU: fmt.Sprint(i / 2), Chip: fmt.Sprint(i % 2), Name: "910B3", Driver: "24.1.rc3",
			HBMUsedBytes: 60000 * mib, HBMTotalBytes: 65536 * mib})
		npu.procs = append(npu.procs, model.ChipProcess{NPU: fmt.Sprint(i / 2), Chip: fmt.Sprint(i % 2), PID: 1000 + i})
		ep := world64
		ep.Name, ep.RankSize, ep.ServerNum, ep.OpBaseTags, ep.EstablishedQPs = "ep", 128, 16, true, 120
		s := known(1, 200, world64, ep)
		s.Workload = "k8s/serve/vllm"
		s.Remembered = []model.RememberedLinks{{RankSize: 128, ServerNum: 16, AllRanks: true, Capture: true, CaptureQPs: 120}}
		set[1000+i] = s
	}
	return npu, set
}

func updateOnce(b *testing.B, c *Collector) {
	ch := make(chan prometheus.Metric, 1024)
	if err := c.Update(context.Background(), ch); err != nil {
		b.Fatal(err)
	}
	close(ch)
	for range ch {
	}
}

// BenchmarkUpdateLearning: a scrape of a 16-chip node with QP-size learning
// and the workload memory's series, against the same scrape with learning
// off, in the same process (docs/benchmarks.md).
func BenchmarkUpdateLearning(b *testing.B) {
	npu, set := benchNode()
	perOp := map[bool]float64{}
	for _, learn := range []bool{false, true} {
		b.Run(fmt.Sprintf("learn=%v", learn), func(b *testing.B) {
			deps := Deps{NPU: npu, Settings: set}
			if learn {
				deps.Estimator = model.NewEstimator(model.EstimatorConfig{})
			}
			c := mustNew(b, deps)
			b.ReportAllocs()
			for b.Loop() {
				updateOnce(b, c)
			}
			perOp[learn] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
	}
	if perOp[false] > 0 {
		b.Logf("learning on / off: %.2f× (%.0f ns against %.0f ns per scrape)", perOp[true]/perOp[false], perOp[true], perOp[false])
	}
}
