package hccn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// TestSlowCommandsOnTheirOwnInterval: -optical, -tls and -speed are called
// at the first sweep and again only once --hccn.slow-interval has passed;
// the sweeps in between still export their last answers. A slow command
// that failed is asked again at the next sweep, not a slow interval later.
func TestSlowCommandsOnTheirOwnInterval(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	c := newFakeCollector(t, n, chips910B(2), 10*time.Second)
	// Each call is a process: a short slow interval keeps the sweeps few.
	c.cfg.SlowInterval = 2 * time.Minute
	at := time.Unix(1700000000, 0)
	c.now = func() time.Time { return at }

	count := func() map[string]int {
		m := map[string]int{}
		for _, call := range n.calls() {
			m[strings.Fields(call)[1]]++
		}
		return m
	}
	c.Sweep(context.Background())
	first := string(gather(t, metrictest.Unchecked(c)))
	for i := 0; i < 3; i++ { // 3 more sweeps 30 s apart: 1.5 minutes
		at = at.Add(30 * time.Second)
		c.Sweep(context.Background())
	}
	got := count()
	for _, cmd := range []string{"optical", "tls", "speed"} {
		if got[cmd] != 2 {
			t.Errorf("-%s called %d times in 4 sweeps within the slow interval, want 2 (once per chip)", cmd, got[cmd])
		}
	}
	for _, cmd := range []string{"link", "net_health", "link_stat", "stat", "qp_info"} {
		if got[cmd] != 8 {
			t.Errorf("-%s called %d times, want 8 (every sweep, 2 chips)", cmd, got[cmd])
		}
	}
	out := string(gather(t, metrictest.Unchecked(c)))
	for _, series := range []string{"ascend_roce_tls_enabled{", "ascend_roce_link_speed_bytes_per_second{", "ascend_roce_optical_present{"} {
		if strings.Contains(first, series) != strings.Contains(out, series) {
			t.Errorf("%s: exported after the first sweep %v, after a carried-over one %v", series,
				strings.Contains(first, series), strings.Contains(out, series))
		}
	}
	if !strings.Contains(out, "ascend_roce_tls_enabled{") {
		t.Error("the fixture answers -tls: the check above looks at nothing")
	}

	// Past the slow interval they are asked again.
	at = at.Add(31 * time.Second)
	c.Sweep(context.Background())
	if got := count(); got["tls"] != 4 {
		t.Errorf("-tls called %d times after the slow interval, want 4", got["tls"])
	}

	// A failed slow answer is not carried: the next sweep asks again.
	n.fail(1, "tls", 11, "stdout", "hccn_tool is busy, please try again.")
	at = at.Add(3 * time.Minute)
	c.Sweep(context.Background())
	at = at.Add(30 * time.Second)
	c.Sweep(context.Background())
	if got := count(); got["tls"] != 6+1 {
		t.Errorf("-tls called %d times, want 7: chip 0 once more, chip 1 (busy) at both sweeps", got["tls"])
	}
}
