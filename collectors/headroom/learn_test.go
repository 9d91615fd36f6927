package headroom

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// steppingNPU is a chip whose HBM and logged QPs change from scrape to
// scrape.
type steppingNPU struct {
	hbm *float64
}

func (s steppingNPU) Chips(context.Context) ([]model.ChipMemory, []model.ChipProcess, error) {
	return []model.ChipMemory{{NPU: "0", Chip: "0", Name: "910B3", Driver: "24.1.rc3", HBMUsedBytes: *s.hbm, HBMTotalBytes: 65536 * mib}},
		[]model.ChipProcess{{NPU: "0", Chip: "0", PID: 100}}, nil
}

type steppingSettings struct{ qps *uint64 }

func (s steppingSettings) Settings(model.ChipProcess) (model.ProcessSettings, bool) {
	p := known(1, 200, world64)
	p.Communicators[0].OpBaseTags = true
	p.Communicators[0].EstablishedQPs = *s.qps
	p.Communicators[0].CCLBufferBytes = 401 << 20
	return p, true
}

// TestCollectorLearns: through the collector, the learned size appears as
// hccl_link_setup_queue_pair_observed_bytes, and the size the model uses
// turns from modelled to learned once enough bursts agree.
func TestCollectorLearns(t *testing.T) {
	hbm, qps := float64(1000*mib), uint64(0)
	c := New(model.DefaultConfig(), Deps{NPU: steppingNPU{&hbm}, Settings: steppingSettings{&qps},
		Estimator: model.NewEstimator(model.EstimatorConfig{MinObservations: 2})}, nil)
	pc := &promCollector{c: c}
	scrape := func() {
		ch := make(chan prometheus.Metric, 256)
		if err := c.Update(context.Background(), ch); err != nil {
			t.Fatal(err)
		}
		close(ch)
		for range ch {
		}
	}
	sizeSource := func() string {
		out := ""
		for _, l := range []string{sizeLearned, sizeModelled} {
			if testutil.CollectAndCount(filtered{pc, `mode="910b_op_base",product="910B3",source="` + l + `"`}) == 1 {
				out = l
			}
		}
		return out
	}
	for range 3 {
		scrape()
	}
	if s := sizeSource(); s != sizeModelled {
		t.Errorf("before any burst the size's source is %q, want modelled", s)
	}
	for range 2 {
		qps += 16
		hbm += 16 * 3.5 * mib
		for range 3 {
			scrape()
		}
	}
	want := `
# HELP hccl_link_setup_queue_pair_observations_total Link-setup bursts learned from (hccl_link_setup_queue_pair_observed_bytes), per product, driver version and QP mode; kept in the state file.
# TYPE hccl_link_setup_queue_pair_observations_total counter
hccl_link_setup_queue_pair_observations_total{driver="24.1.rc3",mode="910b_op_base",product="910B3"} 2
# HELP hccl_link_setup_queue_pair_observed_bytes Device memory of one RoCE QP measured on this node: the median over link-setup bursts (HBM used after − before ÷ QPs created, on a chip that allocated nothing else meanwhile; outliers rejected) per product (npu-smi's chip name), driver version and QP mode. The headroom model uses it once hccl_link_setup_queue_pair_observations_total reaches --headroom.learn-min-observations agreeing bursts.
# TYPE hccl_link_setup_queue_pair_observed_bytes gauge
hccl_link_setup_queue_pair_observed_bytes{driver="24.1.rc3",mode="910b_op_base",product="910B3"} 3.670016e+06
`
	if err := testutil.CollectAndCompare(pc, strings.NewReader(want), "hccl_link_setup_queue_pair_observations_total",
		"hccl_link_setup_queue_pair_observed_bytes"); err != nil {
		t.Error(err)
	}
	if s := sizeSource(); s != sizeLearned {
		t.Errorf("after 2 agreeing bursts the size's source is %q, want learned", s)
	}
	if problems, err := testutil.CollectAndLint(pc); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// filtered exposes the one hccl_link_setup_queue_pair_size_bytes series of
// pc whose labels contain match.
type filtered struct {
	pc    prometheus.Collector
	match string
}

func (f filtered) Describe(ch chan<- *prometheus.Desc) { ch <- sizeDesc }

func (f filtered) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric, 256)
	go func() { f.pc.Collect(all); close(all) }()
	for m := range all {
		if m.Desc() == sizeDesc && strings.Contains(metricLabels(m), f.match) {
			ch <- m
		}
	}
}

// metricLabels renders m's labels as name="value",… in name order.
func metricLabels(m prometheus.Metric) string {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		return ""
	}
	var parts []string
	for _, l := range d.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
