package dashboards

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// TestPanelsOnTheDemo runs the demo as `make run-demo` does
// (scripts/demo.sh --serve: no kubelet, default families) with the shipped
// rules in a real Prometheus, and every panel of every dashboard either
// shows data or says on the panel why it is empty (its noValue text, shown
// in place of "No data"). A panel that is empty without a word fails.
func TestPanelsOnTheDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo and Prometheus")
	}
	dir := t.TempDir()
	port := testtools.FreePort(t)
	t.Setenv("DEMO_PORT", fmt.Sprint(port))
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	script, err := filepath.Abs(filepath.Join("..", "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	testtools.StartProcess(t, dir, script, "--serve")
	rules := filepath.Join(dir, "hccl_exporter.rules.yml")
	if err := os.WriteFile(rules, alerts.Rules, 0o644); err != nil {
		t.Fatal(err)
	}
	instance := fmt.Sprintf("127.0.0.1:%d", port)
	prom := testtools.StartPrometheus(t, testtools.PrometheusConfig{
		ScrapeTargets: []string{instance},
		JobName:       "hccl_exporter",
		RuleFiles:     []string{rules},
	})
	// The script builds the exporter first: minutes on a loaded machine.
	prom.WaitTargetsUp(t, "hccl_exporter", 8*time.Minute)
	// Every source answered (the detail sweep, hccn_tool, the CANN logs),
	// and rate() has two samples of each counter.
	prom.WaitQuery(t, `count(ascend_npu_error_codes) == 8 and on () count(rate(ascend_roce_transmit_bytes_total[1m])) == 8 and on () count(hccl_link_setup_headroom_bytes) > 0`,
		2*time.Minute, func(s []testtools.Sample) bool { return len(s) == 1 })
	time.Sleep(3 * time.Second)

	qs, err := Queries("hccl_exporter", instance)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct{ dashboard, title string }
	data := map[panel]bool{}
	noValue := map[panel]string{}
	end := time.Now()
	for _, q := range qs {
		p := panel{q.Dashboard, q.Panel}
		noValue[p] = q.NoValue
		var n int
		if q.Instant {
			s, err := prom.Query(q.Expr)
			if err != nil {
				t.Errorf("%s %q %s: %v\n%s", q.Dashboard, q.Panel, q.RefID, err, q.Expr)
			}
			n = len(s)
		} else {
			s, err := prom.QueryRange(q.Expr, end.Add(-30*time.Second), end, time.Second)
			if err != nil {
				t.Errorf("%s %q %s: %v\n%s", q.Dashboard, q.Panel, q.RefID, err, q.Expr)
			}
			n = len(s)
		}
		data[p] = data[p] || n > 0
	}
	empty := 0
	for p, has := range data {
		if has {
			continue
		}
		empty++
		why := strings.TrimSpace(noValue[p])
		if why == "" || strings.EqualFold(why, "No data") {
			t.Errorf("%s %q shows no data on the demo and does not say why (set fieldConfig.defaults.noValue in mixin/dashboards/)", p.dashboard, p.title)
		} else {
			t.Logf("%s %q: empty on the demo, and says %q", p.dashboard, p.title, why)
		}
	}
	t.Logf("%d of %d panels have data on the demo; %d say why not", len(data)-empty, len(data), empty)
}
