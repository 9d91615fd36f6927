package headroom

import (
	"sort"
	"strings"
	"testing"
	"time"

	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestCollectorServesLearned: the collector serves what the estimator
// learned (internal/join's headroom view feeds it once per npu-smi run:
// TestHeadroomWritesOncePerRun): the learned size appears as
// hccl_link_setup_queue_pair_observed_bytes, and the size the model uses
// turns from modelled to learned once enough bursts agree. Scraping only
// reads: the scrapes between the runs change nothing.
func TestCollectorServesLearned(t *testing.T) {
	est := model.NewEstimator(model.EstimatorConfig{MinObservations: 2})
	hbm, qps := float64(1000*mib), 0.0
	at := time.Unix(1_800_000_000, 0)
	run := func() {
		at = at.Add(time.Minute)
		est.Observe(model.ChipSample{NPU: "0", Chip: "0", Product: "910B3", Driver: "24.1.rc3", At: at, HBMUsedBytes: hbm,
			QPsByMode: map[string]float64{"910b_op_base": qps}, Processes: "100@", LiveQPs: -1})
	}
	c := mustNew(t, Deps{NPU: fakeNPU{chips: []model.ChipMemory{{NPU: "0", Chip: "0", Name: "910B3", Driver: "24.1.rc3",
		HBMUsedBytes: hbm, HBMTotalBytes: 65536 * mib}}}, Estimator: est})
	pc := &promCollector{c: c}
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
		run()
	}
	if s := sizeSource(); s != sizeModelled {
		t.Errorf("before any burst the size's source is %q, want modelled", s)
	}
	for range 2 {
		qps += 16
		hbm += 16 * 3.5 * mib
		for range 3 {
			run()
			sizeSource() // a scrape between runs
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
