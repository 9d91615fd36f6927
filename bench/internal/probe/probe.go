// Package probe owns what the bench commands (bench/node, bench/scale) read
// of the hccl_exporter process they start and of its scrapes: a free
// loopback address to run it on, its CPU time and memory from /proc (Linux),
// the metric families of a text exposition and the sum of one family, and
// latency percentiles.
package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// FreeAddr returns a 127.0.0.1 address with a port free at the time of the
// call, for the exporter's --web.listen-address.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// CPUTime is the user+system CPU time of pid from /proc/<pid>/stat (clock
// ticks of 10 ms: USER_HZ is 100 on Linux); 0 when it cannot be read.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces: fields count from
	// after its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond
}

// Steal is the machine's CPU time so far from the first line of /proc/stat:
// the time stolen by the hypervisor for other guests and the total. On a
// shared host a latency measured while other guests run says more about them
// than about the exporter: StealPercent between two readings tells which.
type Steal struct{ Stolen, Total uint64 }

// ReadSteal reads /proc/stat; the zero Steal when it cannot be read.
func ReadSteal() Steal {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Steal{}
	}
	return parseSteal(b)
}

// parseSteal reads the aggregate "cpu" line: user nice system idle iowait
// irq softirq steal guest guest_nice, in ticks. Guest time is part of user
// time already, so the total stops at steal.
func parseSteal(b []byte) Steal {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return Steal{}
	}
	var st Steal
	for i := 1; i <= 8; i++ {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil || st.Total+v < st.Total { // not a number, or a sum past uint64
			return Steal{}
		}
		st.Total += v
		if i == 8 {
			st.Stolen = v
		}
	}
	return st
}

// StealPercent is the share of the CPU time between a and b that was
// stolen, in percent; 0 when nothing can be told.
func StealPercent(a, b Steal) float64 {
	if b.Total <= a.Total || b.Stolen < a.Stolen {
		return 0
	}
	// Rounding can put a share of all the time a hair above 100.
	return min(100, 100*float64(b.Stolen-a.Stolen)/float64(b.Total-a.Total))
}

// Memory returns VmRSS and VmHWM (peak RSS) of pid in KiB from
// /proc/<pid>/status; 0 for what cannot be read.
func Memory(pid int) (rssKiB, hwmKiB int) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		v, _ := strconv.Atoi(fs[1])
		switch fs[0] {
		case "VmRSS:":
			rssKiB = v
		case "VmHWM:":
			hwmKiB = v
		}
	}
	return rssKiB, hwmKiB
}

// Percentile returns the q-quantile (0 < q ≤ 1) of d by the nearest-rank
// method; d is not modified. It is 0 for an empty d.
func Percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ParseText parses a Prometheus text exposition, or an OpenMetrics one as
// the exporter serves Prometheus's Accept header, into its metric families.
func ParseText(b []byte) (map[string]*dto.MetricFamily, error) {
	if bytes.HasSuffix(b, []byte("# EOF\n")) {
		b = openMetricsToText(b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// openMetricsToText rewrites the OpenMetrics the exporter writes (no
// exemplars, no created lines) as the text format: a counter family is
// named without its _total there and with it here; # UNIT and # EOF go.
// This also parts the Go collector's go_memstats_alloc_bytes gauge from
// its go_memstats_alloc_bytes_total counter, whose families share a name
// in OpenMetrics (client_golang issue 829).
func openMetricsToText(b []byte) []byte {
	lines := bytes.Split(b, []byte("\n"))
	counters := map[string]bool{}
	for _, l := range lines {
		if f := bytes.Fields(l); len(f) == 4 && string(f[0]) == "#" && string(f[1]) == "TYPE" && string(f[3]) == "counter" {
			counters[string(f[2])] = true
		}
	}
	var out bytes.Buffer
	out.Grow(len(b))
	for i, l := range lines {
		f := bytes.Fields(l)
		switch {
		case len(f) >= 2 && string(f[0]) == "#" && (string(f[1]) == "UNIT" || string(f[1]) == "EOF"):
			continue
		case len(f) >= 3 && string(f[0]) == "#" && (string(f[1]) == "HELP" || string(f[1]) == "TYPE") && counters[string(f[2])]:
			// The family right after this comment is the counter only if
			// its samples follow: a gauge of the same name keeps its name.
			if isCounterBlock(lines, i) {
				l = bytes.Replace(l, f[2], append(append([]byte{}, f[2]...), "_total"...), 1)
			}
		}
		out.Write(l)
		if i < len(lines)-1 {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// isCounterBlock reports whether the comment at lines[i] belongs to a block
// whose TYPE line says counter.
func isCounterBlock(lines [][]byte, i int) bool {
	for j := i; j < len(lines) && j <= i+2; j++ {
		f := bytes.Fields(lines[j])
		if len(f) >= 4 && string(f[0]) == "#" && string(f[1]) == "TYPE" {
			return string(f[3]) == "counter"
		}
	}
	return false
}

// CounterSum is the sum of the counter values of family name over all its
// label sets; 0 when the family is absent.
func CounterSum(fams map[string]*dto.MetricFamily, name string) float64 {
	var v float64
	if mf := fams[name]; mf != nil {
		for _, m := range mf.Metric {
			v += m.GetCounter().GetValue()
		}
	}
	return v
}

// GaugeSum is the sum of the gauge values of family name over all its label
// sets; 0 when the family is absent.
func GaugeSum(fams map[string]*dto.MetricFamily, name string) float64 {
	var v float64
	if mf := fams[name]; mf != nil {
		for _, m := range mf.Metric {
			v += m.GetGauge().GetValue()
		}
	}
	return v
}

// ParseSize reads 100M, 1G, 512K or a plain byte count.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want e.g. 100M or 1G", s)
	}
	return n * mult, nil
}
