package hccn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// TestStaleSweepNotServed is the edge of issue 24: while hccn_tool hangs,
// the sweep in flight can take timeout × chips × commands, and the previous
// sweep was served with hccl_exporter_hccn_tool_up 1 all along. Data older than two
// intervals is not served: up 0, no per-chip series, an error that says why
// — however long the sweep in flight takes.
func TestStaleSweepNotServed(t *testing.T) {
	n := newFakeNode(t)
	node910B(n)
	c := newFakeCollector(t, n, chips910B(2), 10*time.Second)
	c.cfg.Interval = 30 * time.Second
	at := time.Unix(1700000000, 0)
	s := c.Sweep(context.Background())
	if !s.Complete {
		t.Fatalf("sweep: %v", s.Err)
	}
	for _, tc := range []struct {
		age   time.Duration
		fresh bool
	}{{0, true}, {2 * c.cfg.Interval, true}, {2*c.cfg.Interval + time.Second, false}, {time.Hour, false}} {
		c.now = func() time.Time { return at.Add(tc.age) }
		ch := make(chan prometheus.Metric, 1000)
		err := c.Update(context.Background(), ch)
		close(ch)
		up, links := -1.0, 0
		for m := range ch {
			switch m.Desc() {
			case upDesc:
				var pb dto.Metric
				if err := m.Write(&pb); err != nil {
					t.Fatal(err)
				}
				up = pb.GetGauge().GetValue()
			case linkUpDesc:
				links++
			}
		}
		if tc.fresh {
			if err != nil || up != 1 || links != 2 {
				t.Errorf("age %s: up %v, %d link series, err %v; want the sweep served", tc.age, up, links, err)
			}
			continue
		}
		if up != 0 || links != 0 || !errors.Is(err, collector.ErrNoData) {
			t.Errorf("age %s: up %v, %d link series, err %v; want up 0, nothing else, ErrNoData", tc.age, up, links, err)
		}
	}
}
