package headroom

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// benchNode is a full 16-chip A3 node: one process per chip with a world
// communicator and an expert-parallel one, each remembered by its workload.
func benchNode() (fakeNPU, fakeSettings) {
	var npu fakeNPU
	set := fakeSettings{}
	for i := range 16 {
		npu.chips = append(npu.chips, model.ChipMemory{ChipID: ascend.ChipID{NPU: fmt.Sprint(i / 2), Chip: fmt.Sprint(i % 2)}, Name: "910B3", Driver: "24.1.rc3",
			HBMUsedBytes: ascend.Value{V: 60000 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}})
		npu.procs = append(npu.procs, model.ChipProcess{ChipID: ascend.ChipID{NPU: fmt.Sprint(i / 2), Chip: fmt.Sprint(i % 2)}, PID: 1000 + i})
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
	perOp := map[string]float64{}
	for _, learn := range []string{"off", "on", "full"} {
		b.Run("learn="+learn, func(b *testing.B) {
			deps := Deps{NPU: npu, Settings: set}
			switch learn {
			case "on":
				deps.Estimator = model.NewEstimator(model.EstimatorConfig{})
			case "full":
				deps.Estimator = fullEstimator(b)
			}
			c := mustNew(b, deps)
			b.ReportAllocs()
			for b.Loop() {
				updateOnce(b, c)
			}
			perOp[learn] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
	}
	if perOp["off"] > 0 {
		b.Logf("learning on / off: %.2f×, full / off: %.2f× (%.0f, %.0f ns against %.0f ns per scrape)",
			perOp["on"]/perOp["off"], perOp["full"]/perOp["off"], perOp["on"], perOp["full"], perOp["off"])
	}
}

// fullEstimator holds as much as an estimator keeps: 256 keys (32 owners ×
// 8 modes) of 32 observations each, every one read per scrape (expiry,
// each owner's median, the owners' agreement).
func fullEstimator(b *testing.B) *model.Estimator {
	type entry struct {
		Owner   string    `json:"owner"`
		Kernel  bool      `json:"kernel"`
		Product string    `json:"product"`
		Mode    string    `json:"mode"`
		Driver  string    `json:"driver"`
		Values  []float64 `json:"values"`
		At      []int64   `json:"at"`
		Total   uint64    `json:"total"`
	}
	var es []entry
	now := time.Now().Unix()
	for o := range 32 {
		for _, m := range []model.QPMode{model.QPMode910BOpBase, model.QPMode910BOpBaseMultiQP, model.QPModeGraph, model.QPModeA3Host,
			model.QPModeA3HostMultiQP, model.QPModeA3AICPU, model.QPModeA3AICPUMultiQP, model.QPModeDeviceDirect} {
			e := entry{Owner: fmt.Sprintf("pod:%d", o), Kernel: true, Product: "910B3", Mode: m.Name, Driver: "24.1.rc3", Total: 32}
			for i := range 32 {
				e.Values = append(e.Values, m.Bytes()*(1+float64(i%5)/100))
				e.At = append(e.At, now-int64(i))
			}
			es = append(es, e)
		}
	}
	blob, err := json.Marshal(map[string]any{"version": 2, "learned": es})
	if err != nil {
		b.Fatal(err)
	}
	est := model.NewEstimator(model.EstimatorConfig{})
	if err := est.UnmarshalJSON(blob); err != nil {
		b.Fatal(err)
	}
	if keys, _ := est.Snapshot(); len(keys) != 8 || keys[0].Owners != 32 {
		b.Fatalf("the full estimator holds %+v", keys)
	}
	return est
}
