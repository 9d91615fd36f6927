package headroom

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// steppingNPU is two chips (npu 0 and 1, one process each: pids 100 and
// 200) whose HBM and logged QPs change from scrape to scrape.
type steppingNPU struct {
	hbm [2]*float64
}

func (s steppingNPU) Chips(context.Context) ([]model.ChipMemory, []model.ChipProcess, error) {
	var chips []model.ChipMemory
	var procs []model.ChipProcess
	for i, h := range s.hbm {
		npu := fmt.Sprint(i)
		chips = append(chips, model.ChipMemory{ChipID: ascend.ChipID{NPU: npu, Chip: "0"}, Name: "910B3", Driver: "24.1.rc3", HBMUsedBytes: ascend.Value{V: *h, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}})
		procs = append(procs, model.ChipProcess{ChipID: ascend.ChipID{NPU: npu, Chip: "0"}, PID: 100 * (i + 1)})
	}
	return chips, procs, nil
}

// steppingSettings: pid 100 is a process of pod a, pid 200 of pod b
// (the owners the kernel names, logstate).
type steppingSettings struct{ qps [2]*uint64 }

func (s steppingSettings) Settings(p model.ChipProcess) (model.ProcessSettings, bool) {
	i := p.PID/100 - 1
	ps := known(1, 200, world64)
	ps.Communicators[0].OpBaseTags = true
	ps.Communicators[0].EstablishedQPs = *s.qps[i]
	ps.Communicators[0].CCLBufferBytes = 401 << 20
	ps.Owner, ps.OwnerKernel = []string{"pod:a", "pod:b"}[i], true
	return ps, true
}

// TestCollectorLearns: through the collector, the learned size appears as
// hccl_link_setup_queue_pair_observed_bytes; the node's size (the size
// table's source) turns from modelled to learned only once two owners
// learned sizes that agree — one owner's bursts size its own QPs only.
func TestCollectorLearns(t *testing.T) {
	hbm, qps := [2]float64{1000 * mib, 1000 * mib}, [2]uint64{}
	npu, set := steppingNPU{[2]*float64{&hbm[0], &hbm[1]}}, steppingSettings{[2]*uint64{&qps[0], &qps[1]}}
	est := model.NewEstimator(model.EstimatorConfig{MinObservations: 2})
	c := mustNew(t, Deps{NPU: npu, Settings: set, Estimator: est})
	pc := &promCollector{c: c}
	// scrape is an npu-smi run, whose samples internal/join's view feeds
	// the estimator once (model.Samples), then a scrape, which only reads.
	scrape := func() {
		chips, procs, err := npu.Chips(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cfg := model.DefaultConfig()
		cfg.Now, cfg.Learned = time.Now(), est.Learned("24.1.rc3")
		for _, s := range model.Samples(cfg, chips, procs, set.Settings) {
			est.Observe(s)
		}
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
	bursts := func(chip int) {
		for range 2 {
			qps[chip] += 16
			hbm[chip] += 16 * 3.5 * mib
			for range 3 {
				scrape()
			}
		}
	}
	for range 3 {
		scrape()
	}
	if s := sizeSource(); s != sizeModelled {
		t.Errorf("before any burst the size's source is %q, want modelled", s)
	}
	bursts(0)
	if s := sizeSource(); s != sizeModelled {
		t.Errorf("after one owner's bursts the node's size's source is %q, want modelled", s)
	}
	bursts(1)
	want := `
# HELP hccl_link_setup_queue_pair_learned_owners ` + helpOf(learnedOwnersDesc) + `
# TYPE hccl_link_setup_queue_pair_learned_owners gauge
hccl_link_setup_queue_pair_learned_owners{driver="24.1.rc3",mode="910b_op_base",product="910B3"} 2
# HELP hccl_link_setup_queue_pair_observations_total Link-setup bursts learned from (hccl_link_setup_queue_pair_observed_bytes), per product, driver version and QP mode; kept in the state file.
# TYPE hccl_link_setup_queue_pair_observations_total counter
hccl_link_setup_queue_pair_observations_total{driver="24.1.rc3",mode="910b_op_base",product="910B3"} 4
# HELP hccl_link_setup_queue_pair_observed_bytes ` + helpOf(observedBytesDesc) + `
# TYPE hccl_link_setup_queue_pair_observed_bytes gauge
hccl_link_setup_queue_pair_observed_bytes{driver="24.1.rc3",mode="910b_op_base",product="910B3"} 3.670016e+06
`
	if err := testutil.CollectAndCompare(pc, strings.NewReader(want), "hccl_link_setup_queue_pair_observations_total",
		"hccl_link_setup_queue_pair_observed_bytes", "hccl_link_setup_queue_pair_learned_owners"); err != nil {
		t.Error(err)
	}
	if s := sizeSource(); s != sizeLearned {
		t.Errorf("after two owners' agreeing bursts the size's source is %q, want learned", s)
	}
	if problems, err := testutil.CollectAndLint(pc); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// helpOf is d's help text.
func helpOf(d *prometheus.Desc) string {
	s := d.String()
	i := strings.Index(s, `help: "`)
	j := strings.Index(s, `", unit: `)
	if j < 0 {
		j = strings.Index(s, `", constLabels`)
	}
	if i < 0 || j < i {
		return ""
	}
	h, err := strconv.Unquote(s[i+len("help: ") : j+1])
	if err != nil {
		return ""
	}
	return h
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
