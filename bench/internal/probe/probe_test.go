package probe

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestFreeAddr(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address %s not free: %v", addr, err)
	}
	l.Close()
}

func TestCPUTimeAndMemoryOfSelf(t *testing.T) {
	pid := os.Getpid()
	// Burn CPU until at least one clock tick (10 ms) is accounted.
	before := CPUTime(pid)
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for CPUTime(pid) <= before && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i
		}
	}
	_ = x
	if got := CPUTime(pid); got <= before {
		t.Errorf("CPUTime(self) = %v, did not grow from %v after busy work", got, before)
	}
	rss, hwm := Memory(pid)
	if rss <= 0 || hwm < rss {
		t.Errorf("Memory(self) = rss %d KiB, hwm %d KiB; want 0 < rss ≤ hwm", rss, hwm)
	}
	if CPUTime(-1) != 0 {
		t.Error("CPUTime of no process is not 0")
	}
	if r, h := Memory(-1); r != 0 || h != 0 {
		t.Error("Memory of no process is not 0")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 50 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{0, 1 * time.Millisecond},
	} {
		if got := Percentile(d, c.q); got != c.want {
			t.Errorf("Percentile(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if d[0] != 100*time.Millisecond {
		t.Error("Percentile sorted its input")
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
}

// TestParseOpenMetrics: the OpenMetrics of a counter, and the Go
// collector's gauge and counter whose families share a name there, parse
// as the text format would give them.
func TestParseOpenMetrics(t *testing.T) {
	om := "# HELP go_memstats_alloc_bytes Bytes in use.\n# TYPE go_memstats_alloc_bytes gauge\ngo_memstats_alloc_bytes 5.0\n" +
		"# HELP go_memstats_alloc_bytes Bytes allocated.\n# TYPE go_memstats_alloc_bytes counter\ngo_memstats_alloc_bytes_total 9.0\n" +
		"# HELP hccl_exporter_log_lines_total Lines.\n# TYPE hccl_exporter_log_lines counter\nhccl_exporter_log_lines_total{level=\"INFO\"} 3.0\nhccl_exporter_log_lines_total{level=\"ERROR\"} 1.0\n" +
		"# EOF\n"
	om = strings.Replace(om, "# HELP hccl_exporter_log_lines_total", "# HELP hccl_exporter_log_lines", 1)
	fams, err := ParseText([]byte(om))
	if err != nil {
		t.Fatal(err)
	}
	if got := GaugeSum(fams, "go_memstats_alloc_bytes"); got != 5 {
		t.Errorf("gauge = %v", got)
	}
	if got := CounterSum(fams, "go_memstats_alloc_bytes_total"); got != 9 {
		t.Errorf("counter = %v", got)
	}
	if got := CounterSum(fams, "hccl_exporter_log_lines_total"); got != 4 {
		t.Errorf("lines = %v", got)
	}
}

func TestParseTextAndSums(t *testing.T) {
	const text = `# TYPE lines_total counter
lines_total{module="HCCL"} 3
lines_total{module="GE"} 4
# TYPE files_tracked gauge
files_tracked{root="a"} 2
files_tracked{root="b"} 5
`
	fams, err := ParseText([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := CounterSum(fams, "lines_total"); got != 7 {
		t.Errorf("CounterSum = %v, want 7", got)
	}
	if got := GaugeSum(fams, "files_tracked"); got != 7 {
		t.Errorf("GaugeSum = %v, want 7", got)
	}
	if CounterSum(fams, "absent") != 0 || GaugeSum(fams, "absent") != 0 {
		t.Error("sum of an absent family is not 0")
	}
	if _, err := ParseText([]byte("not { an exposition")); err == nil {
		t.Error("ParseText accepted garbage")
	}
}

func TestSteal(t *testing.T) {
	a := parseSteal([]byte("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 1 2 3\n"))
	if a != (Steal{Stolen: 35, Total: 1000}) {
		t.Fatalf("parsed %+v", a)
	}
	b := parseSteal([]byte("cpu  150 0 50 850 10 0 5 135 7 0\n"))
	if got := StealPercent(a, b); got != 50 {
		t.Fatalf("StealPercent = %v, want 50", got)
	}
	for _, bad := range []string{"", "intr 1 2", "cpu 1 2 3", "cpu a b c d e f g h"} {
		if got := parseSteal([]byte(bad)); got != (Steal{}) {
			t.Fatalf("parseSteal(%q) = %+v", bad, got)
		}
	}
	if StealPercent(b, a) != 0 || StealPercent(Steal{}, Steal{}) != 0 {
		t.Fatal("StealPercent of readings going backwards or empty is not 0")
	}
	if ReadSteal().Total == 0 {
		t.Log("no /proc/stat here")
	}
}

// FuzzParseSteal: any /proc/stat text gives a reading or the zero one,
// never a panic, and a steal never above the total.
func FuzzParseSteal(f *testing.F) {
	f.Add([]byte("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 1 2 3\n"))
	f.Add([]byte("cpu 1 2 3 4 5 6 7 8\n"))
	f.Add([]byte("cpu 18446744073709551615 1 1 1 1 1 1 1\n"))
	f.Add([]byte("cpu 0 0 0 0 0 0 0 18446744073709551615\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := parseSteal(b)
		if st.Stolen > st.Total {
			t.Fatalf("more stolen than in all: %+v", st)
		}
		if p := StealPercent(Steal{}, st); p < 0 || p > 100 {
			t.Fatalf("StealPercent %v for %+v", p, st)
		}
	})
}
