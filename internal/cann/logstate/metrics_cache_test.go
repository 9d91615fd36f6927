package logstate

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
	if !strings.Contains(first, "settings=2-e3b0c442 value=200 variable=HCCL_BUFFSIZE") || !strings.Contains(first, "communicator=c1 \n") {
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
		{"11", "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [400]M", "set_by=environment settings=2-b3ea955a value=400 variable=HCCL_BUFFSIZE", "value=200"},
		{"12", "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s", "set_by=default settings=", ""},
		{"11", "[Communicator Key Info]identifier[c2] rankSize[16] serverNum[2] moduleNum[2]", "communicator=c2 \n", ""},
		{"11", "[Communicator Key Info]identifier[c2] rankSize[32] serverNum[4] moduleNum[4]", "communicator=c2 \n", ""},
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
# HELP hccl_communicator_ranks Ranks of a communicator ([Communicator Key Info] rankSize; the same on every node).
# TYPE hccl_communicator_ranks gauge
hccl_communicator_ranks{communicator="c1"} 8
hccl_communicator_ranks{communicator="c2"} 32
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
	if got := envSeries(); !strings.Contains(got, "settings=2-e3b0c442 value=200 variable=HCCL_BUFFSIZE") || strings.Contains(got, "value=400") {
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

// The series are shaped per job: the processes of one settings set share
// their settings series, and a communicator's series are one per
// communicator, summed over its members on the node. The ids are
// hcclenv.SettingsID of the canonical values (computed independently:
// sha256 of "HCCL_BUFFSIZE\x00209715200\x00", first 4 bytes, and so on).
func TestSeriesPerSettingsSetAndCommunicator(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 6, 16, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	src := &Source{Path: "/log/run/plog/plog-1_x.log", Kind: SourcePlog}
	in := func(pid, msg string) { st.Ingest(src, plogLine(pid, msg)) }
	// 11 and 12: the same job, default buffer; 13 sets its own.
	for _, pid := range []string{"11", "12"} {
		in(pid, "[HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M")
		in(pid, "[HCCL_ENV] HCCL_IF_BASE_PORT set by default to [60000]")
		in(pid, "[Communicator Key Info]identifier[w] rankSize[16] serverNum[2] moduleNum[2]")
		in(pid, "[HCCL_TRACE][CreateCCLbuffer]Create ccl buffer success. buffer ptr[0x1], size[420478976]")
		in(pid, "create hccl transport:communicator[AllReduce_w], local rank[0], ip[a], remote rank[8], ip[b], transporttype[ROCE], rdma qpn[1], rdma qp sport[2], rdma TC[132], rdma SL[4]")
	}
	in("13", "[HCCL_ENV] HCCL_BUFFSIZE set by environment to [400]M")
	in("13", "[Communicator Key Info]identifier[w] rankSize[16] serverNum[2] moduleNum[2]")
	in("13", "[Communicator Key Info]identifier[t] rankSize[8] serverNum[1] moduleNum[1]")
	// 14 printed no variable of the set: its set is unknown ("").
	in("14", "[HCCL_ENV] HCCL_IF_BASE_PORT set by default to [60000]")
	in("14", "[Communicator Key Info]identifier[t] rankSize[8] serverNum[1] moduleNum[1]")
	// HCCL_IF_BASE_PORT at its default is no series (not a variable of
	// the set); HCCL_BUFFSIZE is, default or not.
	want := `
# HELP hccl_env_info Effective HCCL setting of the node's processes of one settings set, from their settings lines in run/plog ([HCCL_ENV] and the untagged wordings of older CANN): one series per variable and value per set, not per process, for the variables the ranks of a communicator must agree on (the settings set's inputs) and every variable set explicitly (set_by environment or ge_option). Another variable left at HCCL's default has no series.
# TYPE hccl_env_info gauge
hccl_env_info{set_by="default",settings="2-e3b0c442",value="200",variable="HCCL_BUFFSIZE"} 1
hccl_env_info{set_by="environment",settings="2-b3ea955a",value="400",variable="HCCL_BUFFSIZE"} 1
# HELP hccl_env_buffsize_bytes Effective HCCL_BUFFSIZE of a settings set in bytes (each communicator allocates 2 x this).
# TYPE hccl_env_buffsize_bytes gauge
hccl_env_buffsize_bytes{settings="2-e3b0c442"} 2.097152e+08
hccl_env_buffsize_bytes{settings="2-b3ea955a"} 4.194304e+08
# HELP hccl_communicator_info 1 for each communicator of the node's processes and each settings set its members on the node run: more than one settings per communicator, on any nodes, is a misconfigured job.
# TYPE hccl_communicator_info gauge
hccl_communicator_info{communicator="t",settings=""} 1
hccl_communicator_info{communicator="t",settings="2-b3ea955a"} 1
hccl_communicator_info{communicator="w",settings="2-e3b0c442"} 1
hccl_communicator_info{communicator="w",settings="2-b3ea955a"} 1
# HELP hccl_communicator_ranks Ranks of a communicator ([Communicator Key Info] rankSize; the same on every node).
# TYPE hccl_communicator_ranks gauge
hccl_communicator_ranks{communicator="t"} 8
hccl_communicator_ranks{communicator="w"} 16
# HELP hccl_communicator_servers Servers of a communicator ([Communicator Key Info] serverNum; the same on every node).
# TYPE hccl_communicator_servers gauge
hccl_communicator_servers{communicator="t"} 1
hccl_communicator_servers{communicator="w"} 2
# HELP hccl_communicator_processes Processes of the node that are members of a communicator.
# TYPE hccl_communicator_processes gauge
hccl_communicator_processes{communicator="t"} 2
hccl_communicator_processes{communicator="w"} 3
# HELP hccl_communicator_established_queue_pairs RoCE QPs the node's members of a communicator have created, from their ` + "`create hccl transport:`" + ` run-log lines with ` + "`rdma qpn[`" + ` (one per QP, over every link set they built).
# TYPE hccl_communicator_established_queue_pairs gauge
hccl_communicator_established_queue_pairs{communicator="t"} 0
hccl_communicator_established_queue_pairs{communicator="w"} 2
# HELP hccl_communicator_ccl_buffer_bytes cclBuffer the node's members of a communicator have allocated (` + "`Create ccl buffer success`" + ` lines); 0 until its first collective, when HCCL allocates 2 x its buffer size + 1 MiB per member together with link setup.
# TYPE hccl_communicator_ccl_buffer_bytes gauge
hccl_communicator_ccl_buffer_bytes{communicator="t"} 0
hccl_communicator_ccl_buffer_bytes{communicator="w"} 8.40957952e+08
`
	if err := testutil.CollectAndCompare(st, strings.NewReader(want), "hccl_env_info", "hccl_env_buffsize_bytes",
		"hccl_communicator_info", "hccl_communicator_ranks", "hccl_communicator_servers", "hccl_communicator_processes",
		"hccl_communicator_established_queue_pairs", "hccl_communicator_ccl_buffer_bytes"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	// The processes' view names the same sets.
	for _, d := range st.Devices() {
		want := map[int]string{11: "2-e3b0c442", 12: "2-e3b0c442", 13: "2-b3ea955a", 14: ""}[d.Key.PID]
		if d.Settings != want || d.Name != "python3" {
			t.Errorf("process %d: settings %q name %q, want %q python3", d.Key.PID, d.Settings, d.Name, want)
		}
	}
}
