package hccn

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
)

func cpuMS(who int) float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// BenchmarkSweepDemoNode: one sweep of the demo node (8 chips × every command of
// the demo's shell fake through the real runner), with the exporter's own
// CPU and the children's per sweep, against a baseline measured in the same
// run: the same 40 process starts of the same fake, bare exec.Command.
func BenchmarkSweepDemoNode(b *testing.B) {
	path, err := filepath.Abs(demoScript)
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("DEMO_HCCN_TOOL_DIR", "")
	c := newCollector(Config{Path: path, Timeout: 10 * time.Second, Interval: time.Hour}, Deps{Chips: chips910B(8)}, nil)
	ctx := context.Background()
	self0, child0 := cpuMS(syscall.RUSAGE_SELF), cpuMS(syscall.RUSAGE_CHILDREN)
	b.ResetTimer()
	for range b.N {
		if s := c.Sweep(ctx); !s.Complete {
			b.Fatal(s.Err)
		}
	}
	b.StopTimer()
	perSweep := b.Elapsed() / time.Duration(b.N)
	self1, child1 := cpuMS(syscall.RUSAGE_SELF), cpuMS(syscall.RUSAGE_CHILDREN)

	calls := 8 * len(commands)
	begin := time.Now()
	bself0 := cpuMS(syscall.RUSAGE_SELF)
	for range b.N {
		for i := range calls {
			cmd := commands[i%len(commands)].name
			if err := exec.Command(path, "-i", fmt.Sprint(i/len(commands)), "-"+cmd, "-g").Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	base := time.Since(begin) / time.Duration(b.N)
	bself := (cpuMS(syscall.RUSAGE_SELF) - bself0) / float64(b.N)
	b.ReportMetric(float64(perSweep.Microseconds())/1000, "ms/sweep")
	b.ReportMetric((self1-self0)/float64(b.N), "exporter-cpu-ms/sweep")
	b.ReportMetric((child1-child0)/float64(b.N), "tool-cpu-ms/sweep")
	b.ReportMetric(float64(perSweep)/float64(base), "x-bare-execs")
	b.ReportMetric(bself, "bare-exec-cpu-ms/40")
}

// sweepOf builds a published sweep of n chips answering as the captures do
// (4 QPs, a full -stat dump), without running anything.
func sweepOf(b *testing.B, n int) *Collector {
	stat, err := ParseStat(readFile(b, filepath.Join("testdata", "stat-full-from-format.txt")))
	if err != nil {
		b.Fatal(err)
	}
	qps, err := ParseQPInfo(capture(b, "qp_info-4qp-2peers-from-format.txt"))
	if err != nil {
		b.Fatal(err)
	}
	ls, err := ParseLinkStat(capture(b, "link_stat-2025-with-down-count.txt"), time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	s := &Sweep{Started: time.Unix(1700000000, 0), Finished: time.Unix(1700000001, 0), Complete: true}
	for i := range n {
		s.Devices = append(s.Devices, Reading{
			Device:  Device{PhyID: i, ChipID: ascend.ChipID{NPU: fmt.Sprint(i / 2), Chip: fmt.Sprint(i % 2)}},
			HasLink: true, LinkUp: true, LinkStat: &ls, LinkDownEvents: 1,
			NetHealth: "Success", QPs: qps, HasQPs: true, Stat: stat,
		})
	}
	c := newCollector(Config{}, Deps{}, nil)
	for _, cmd := range commands {
		c.calls.Add(cmd.name, sweep.Success, float64(n))
	}
	c.latest.Publish(context.Background(), func() *published { return c.publish(s) })
	return c
}

// fixed re-sends pre-built metrics: the cheapest a collector can be.
type fixed []prometheus.Metric

func (fixed) Describe(chan<- *prometheus.Desc) {}
func (f fixed) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f {
		ch <- m
	}
}

// rebuilt builds the sweep's const metrics anew at every scrape, as the
// collector did before it kept them per sweep.
type rebuilt struct{ c *Collector }

func (rebuilt) Describe(chan<- *prometheus.Desc) {}
func (r rebuilt) Collect(ch chan<- prometheus.Metric) {
	for _, m := range r.c.publish(r.c.latest.Load().sweep).metrics {
		ch <- m
	}
}

// BenchmarkScrape: what the collector adds to a scrape (Update, gather and
// text encoding) for 8 and 16 chips, against two baselines alternated in
// the same loop so load moves every side: a collector re-sending the same
// metrics pre-built (the floor), and one rebuilding them at every scrape.
func BenchmarkScrape(b *testing.B) {
	for _, n := range []int{8, 16} {
		b.Run(fmt.Sprintf("chips=%d", n), func(b *testing.B) {
			c := sweepOf(b, n)
			ch := make(chan prometheus.Metric, 4096)
			if err := c.Update(context.Background(), ch); err != nil {
				b.Fatal(err)
			}
			close(ch)
			var pre fixed
			for m := range ch {
				pre = append(pre, m)
			}
			regOf := func(col prometheus.Collector) *prometheus.Registry {
				reg := prometheus.NewRegistry()
				reg.MustRegister(col)
				return reg
			}
			hccn, base, rebuild := regOf(metrictest.Unchecked(c)), regOf(pre), regOf(rebuilt{c})
			var buf bytes.Buffer
			scrape := func(reg *prometheus.Registry) time.Duration {
				begin := time.Now()
				buf.Reset()
				mfs, err := reg.Gather()
				if err != nil {
					b.Fatal(err)
				}
				enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
				for _, mf := range mfs {
					if err := enc.Encode(mf); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(begin)
			}
			var th, tb, tr time.Duration
			for range b.N {
				th += scrape(hccn)
				tb += scrape(base)
				tr += scrape(rebuild)
			}
			b.ReportMetric(float64(len(pre)), "series")
			b.ReportMetric(float64(th.Microseconds())/float64(b.N), "µs/scrape")
			b.ReportMetric(float64(tb.Microseconds())/float64(b.N), "prebuilt-µs/scrape")
			b.ReportMetric(float64(th)/float64(tb), "x-prebuilt")
			b.ReportMetric(float64(tr)/float64(th), "rebuilt-x")
		})
	}
}
