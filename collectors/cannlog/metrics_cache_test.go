package cannlog

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func plogLine(pid, msg string) []byte {
	return []byte("[INFO] HCCL(" + pid + ",python3):2026-01-06-15:38:29.870.111 [externalinput.cc:1] [" + pid + "]" + msg)
}

// The per-process series follow every change of a process's settings and
// communicators, its expiry and a restored state.
func TestProcessSeriesFollowChanges(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 6, 16, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	src := &Source{Path: "/log/run/plog/plog-1_x.log", Kind: SourcePlog}
	ingest := func(pid, msg string) { st.Ingest(src, plogLine(pid, msg)) }
	envSeries := func() string {
		var b strings.Builder
		for _, m := range st.metrics() {
			var d dto.Metric
			_ = m.Write(&d)
			if !strings.Contains(m.Desc().String(), `"hccl_env_info"`) && !strings.Contains(m.Desc().String(), `"hccl_communicator_ranks"`) {
				continue
			}
			for _, l := range d.GetLabel() {
				b.WriteString(l.GetName() + "=" + l.GetValue() + " ")
			}
			b.WriteString("\n")
		}
		return b.String()
	}

	ingest("11", "[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M")
	ingest("11", "[Communicator Key Info]identifier[c1] rankSize[8] serverNum[1] moduleNum[1]")
	first := envSeries()
	if !strings.Contains(first, "value=200 variable=HCCL_BUFFSIZE") || !strings.Contains(first, "communicator=c1 pid=11") {
		t.Fatalf("series: %s", first)
	}
	// The same block again (every communicator init prints it): the same
	// series.
	ingest("11", "[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M")
	ingest("11", "[Communicator Key Info]identifier[c1] rankSize[8] serverNum[1] moduleNum[1]")
	if again := envSeries(); again != first {
		t.Fatalf("an unchanged block changed the series:\n%s\nwas\n%s", again, first)
	}
	// A changed value, a new process, a new communicator, a destroyed one.
	steps := []struct {
		pid, msg string
		want     string
		gone     string
	}{
		{"11", "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [400]M", "set_by=environment value=400 variable=HCCL_BUFFSIZE", "value=200"},
		{"12", "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s", "pid=12 process=python3 set_by=default value=1836", ""},
		{"11", "[Communicator Key Info]identifier[c2] rankSize[16] serverNum[2] moduleNum[2]", "communicator=c2 pid=11", ""},
		{"11", "[Communicator Key Info]identifier[c2] rankSize[32] serverNum[4] moduleNum[4]", "communicator=c2 pid=11", ""},
	}
	for i, s := range steps {
		ingest(s.pid, s.msg)
		got := envSeries()
		if !strings.Contains(got, s.want) || (s.gone != "" && strings.Contains(got, s.gone)) {
			t.Fatalf("step %d: series:\n%s", i, got)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(st)
	want := `
# HELP hccl_communicator_ranks Ranks of a communicator of a process ([Communicator Key Info] rankSize).
# TYPE hccl_communicator_ranks gauge
hccl_communicator_ranks{communicator="c1",pid="11"} 8
hccl_communicator_ranks{communicator="c2",pid="11"} 32
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hccl_communicator_ranks"); err != nil {
		t.Fatal(err)
	}
	// Expiry removes the process's series.
	clock.Advance(48 * time.Hour)
	if n := st.Expire(nil); n != 2 {
		t.Fatalf("expired %d processes, want 2", n)
	}
	if got := envSeries(); got != "" {
		t.Fatalf("series after expiry:\n%s", got)
	}
	// A restored state shows its own processes.
	other := NewState(testOptions(clock))
	other.Ingest(src, plogLine("77", "[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M"))
	blob, err := other.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	if got := envSeries(); !strings.Contains(got, "pid=77") {
		t.Fatalf("series after restore:\n%s", got)
	}
}

// The per-process series come in the order the registry sorts them in, so that its
// sort has nothing to move.
func TestProcessSeriesSorted(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 6, 16, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	src := &Source{Path: "/p", Kind: SourcePlog}
	for _, pid := range []string{"300010", "300002", "300001"} {
		for _, msg := range []string{
			"[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s",
			"[HCCL_ENV] HCCL_BUFFSIZE set by environment to [400]M",
			"[HCCL_ENV] HCCL_RDMA_TC set by default to [132]",
			"[Communicator Key Info]identifier[zz] rankSize[8] serverNum[1] moduleNum[1]",
			"[Communicator Key Info]identifier[aa] rankSize[8] serverNum[1] moduleNum[1]",
		} {
			st.Ingest(src, plogLine(pid, msg))
		}
	}
	byFamily := map[string][]string{}
	var families []string
	for _, m := range st.metrics() {
		name := m.Desc().String()
		var d dto.Metric
		_ = m.Write(&d)
		var key []string
		for _, l := range d.GetLabel() {
			key = append(key, l.GetValue())
		}
		if _, ok := byFamily[name]; !ok {
			families = append(families, name)
		}
		byFamily[name] = append(byFamily[name], strings.Join(key, "\x00"))
	}
	for _, f := range families {
		if !strings.Contains(f, "hccl_env") && !strings.Contains(f, "hccl_communicator") {
			continue
		}
		if !slices.IsSorted(byFamily[f]) {
			t.Errorf("%s not in registry order: %q", f, byFamily[f])
		}
	}
}
