package metrictest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	upDesc    = prometheus.NewDesc("t_up", "Up.", []string{"npu", "chip"}, nil)
	totalDesc = prometheus.NewDesc("t_total", "Total.", []string{"code"}, nil)
	rawDesc   = prometheus.NewDesc("t_raw", "Raw.", nil, nil)
)

type fixed struct{}

func (fixed) Describe(ch chan<- *prometheus.Desc) { ch <- upDesc; ch <- totalDesc; ch <- rawDesc }
func (fixed) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1, "0", "0")
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0, "0", "1")
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 2, "10", "1")
	ch <- prometheus.MustNewConstMetric(totalDesc, prometheus.CounterValue, 7, "EI0011")
	ch <- prometheus.MustNewConstMetric(rawDesc, prometheus.UntypedValue, 3)
}

func TestFindAndValue(t *testing.T) {
	mfs := Gather(t, fixed{})
	for _, tc := range []struct {
		name  string
		want  map[string]string
		value float64
		ok    bool
	}{
		{"t_up", Labels("npu=0,chip=1"), 0, true},
		{"t_up", Labels("npu=1"), 0, false}, // exact values: npu=10 is not npu=1
		{"t_up", Labels("npu=10"), 2, true},
		{"t_up", map[string]string{"pod": ""}, 0, false}, // a label the series lacks
		{"t_total", Labels("code=EI0011"), 7, true},
		{"t_raw", nil, 3, true},
		{"t_missing", nil, 0, false},
	} {
		v, ok := Find(mfs, tc.name, tc.want)
		if v != tc.value || ok != tc.ok {
			t.Errorf("Find(%s%v) = %v, %v; want %v, %v", tc.name, tc.want, v, ok, tc.value, tc.ok)
		}
	}
	if got := Value(t, fixed{}, "t_total", nil); got != 7 {
		t.Errorf("Value = %v", got)
	}
	if n := len(Samples(mfs, "t_up")); n != 3 {
		t.Errorf("%d t_up samples, want 3", n)
	}
	text := string(Exposition(t, fixed{}))
	if !strings.Contains(text, "# TYPE t_total counter\nt_total{code=\"EI0011\"} 7\n") ||
		strings.Index(text, "t_raw") > strings.Index(text, "t_total") {
		t.Errorf("exposition not sorted text format:\n%s", text)
	}
}

func TestLabels(t *testing.T) {
	got := Labels(" npu=0, chip=1 ,bad")
	if len(got) != 2 || got["npu"] != "0" || got["chip"] != "1" {
		t.Fatalf("Labels = %v", got)
	}
}
