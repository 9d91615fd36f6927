package headroom

import (
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

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
