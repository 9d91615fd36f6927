package logstate

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func envLine(pid int, ts, msg string) string {
	return fmt.Sprintf("[INFO] HCCL(%d,python3):%s [externalinput.cc:1] [%d][HCCL_ENV] %s", pid, ts, pid, msg)
}

func TestProcessTTL(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 9, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	src := &Source{Path: "plog-1_x.log", Kind: SourcePlog}
	st.Ingest(src, []byte(envLine(1, "2026-01-07-09:00:00.000.000", "HCCL_BUFFSIZE set by default to [200]M")))
	st.Ingest(src, []byte(envLine(2, "2026-01-07-09:00:00.000.000", "HCCL_BUFFSIZE set by default to [200]M")))
	alive := map[int]bool{1: true}
	live := LivenessFunc(func(pid int) bool { return alive[pid] })

	clock.Advance(59 * time.Minute)
	if n := st.Expire(live); n != 0 {
		t.Fatalf("expired %d within the TTL", n)
	}
	// pid 2 writes again, which restarts its TTL.
	st.Ingest(src, []byte("[INFO] HCCL(2,python3):2026-01-07-09:30:00.000.000 [a.cc:1] [2]still here"))
	clock.Advance(2 * time.Minute) // 61 min after pid 1's and 31 after pid 2's last write
	if n := st.Expire(live); n != 0 {
		t.Fatalf("expired %d: pid 1 is alive and pid 2 wrote recently", n)
	}
	clock.Advance(30 * time.Minute)
	if n := st.Expire(live); n != 1 {
		t.Fatalf("expired %d, want pid 2", n)
	}
	if ps := st.Processes(); len(ps) != 1 || ps[0].PID != 1 {
		t.Fatalf("processes = %+v", ps)
	}
	alive[1] = false
	if n := st.Expire(live); n != 1 || len(st.Processes()) != 0 {
		t.Fatalf("pid 1 not expired once dead: %d", n)
	}
	// Series go with the process.
	out := string(exposition(t, st))
	if strings.Contains(out, "hccl_env_info{") || strings.Contains(out, "hccl_env_buffsize_bytes{") {
		t.Errorf("series of expired processes remain:\n%s", out)
	}
	// Old logs of a dead process read at startup expire at the first check.
	st.Ingest(src, []byte(envLine(3, "2025-01-01-00:00:00.000.000", "HCCL_BUFFSIZE set by default to [200]M")))
	if n := st.Expire(live); n != 1 {
		t.Errorf("stale dead process kept: %d", n)
	}
}

func TestLabelCaps(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 9, 0, 0, 0, time.UTC)}
	o := testOptions(clock)
	o.MaxPIDs, o.MaxCommunicators, o.MaxCodes, o.MaxPods, o.MaxModules, o.MaxEnvPerPID = 2, 3, 2, 1, 3, 2
	st := NewState(o)
	plog := &Source{Path: "p", Kind: SourcePlog}
	for pid := 1; pid <= 4; pid++ {
		st.Ingest(plog, []byte(envLine(pid, "2026-01-07-09:00:00.000.000", "HCCL_BUFFSIZE set by default to [200]M")))
	}
	for _, v := range []string{"HCCL_A", "HCCL_B", "HCCL_C"} {
		st.Ingest(plog, []byte(envLine(1, "2026-01-07-09:00:00.000.000", v+" set by default to [1]")))
	}
	for i := 0; i < 5; i++ {
		st.Ingest(plog, []byte(fmt.Sprintf("[INFO] HCCL(1,p):2026-01-07-09:00:00.000.000 [a.cc:1] [1][Communicator Key Info]identifier[g%d] rankSize[8] serverNum[1]", i)))
	}
	for _, m := range []string{"GE", "RUNTIME", "FE", "TBE"} {
		st.Ingest(plog, []byte("[INFO] "+m+"(1,p):2026-01-07-09:00:00.000.000 [a.cc:1] x"))
	}
	screen := &Source{Path: "s", Kind: SourceScreen}
	for _, c := range []string{"EZ9999", "EH9999", "EE9999", "EI0011"} {
		st.Ingest(screen, []byte(c+": x"))
	}
	for _, pod := range []string{"a", "b"} {
		st.Ingest(&Source{Path: pod, Kind: SourceScreen, Namespace: "ns", Pod: pod, Container: "c"}, []byte("EI0006: x"))
	}
	expected := `
# HELP hccl_exporter_label_values_dropped_total Label values from logs dropped because the distinct values of the label reached the cap.
# TYPE hccl_exporter_label_values_dropped_total counter
hccl_exporter_label_values_dropped_total{label="code"} 1
hccl_exporter_label_values_dropped_total{label="communicator"} 2
hccl_exporter_label_values_dropped_total{label="module"} 2
hccl_exporter_label_values_dropped_total{label="pid"} 2
hccl_exporter_label_values_dropped_total{label="pod"} 1
hccl_exporter_label_values_dropped_total{label="variable"} 2
`
	if err := testutil.CollectAndCompare(st, strings.NewReader(expected), "hccl_exporter_label_values_dropped_total"); err != nil {
		t.Error(err)
	}
	// The event over the pod cap is kept without pod labels.
	expected = `
# HELP hccl_fault_events_total HCCL-related fault events: fault codes printed in screen logs (source=screen) and plog ERROR lines the fault catalog maps to a code (source=plog). resource: what an EI0007 failed to allocate (qp, device_memory, host_memory, other), empty otherwise.
# TYPE hccl_fault_events_total counter
hccl_fault_events_total{code="EI0006",container="",hccl_job="",namespace="",pod="",resource="",source="screen",stage="link_setup"} 1
hccl_fault_events_total{code="EI0006",container="c",hccl_job="ns/a",namespace="ns",pod="a",resource="",source="screen",stage="link_setup"} 1
`
	got := string(exposition(t, st))
	for _, l := range strings.Split(strings.TrimSpace(expected), "\n")[2:] {
		if !strings.Contains(got, l+"\n") {
			t.Errorf("missing %s", l)
		}
	}
	if n := testutil.CollectAndCount(st, "hccl_communicator_ranks"); n != 3 {
		t.Errorf("%d communicators exported, cap 3", n)
	}
}

func TestPersistRoundTrip(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	ingestTree(t, st, "testdata/fixtures/run")
	ingestTree(t, st, "testdata/fixtures/debug")
	cri := &Source{Path: "cri", Kind: SourceScreen, Namespace: "train", Pod: "p", Container: "c"}
	// Stop in the middle of a partial CRI line.
	st.Ingest(cri, []byte("2026-01-07T02:00:01.000000001Z stderr P [PID: 7001] 2026-01-07-10:00:01.123.456 Resource_Error(EI00"))
	blob, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	restored := NewState(testOptions(clock))
	if err := restored.UnmarshalBinary(blob); err != nil {
		t.Fatal(err)
	}
	if a, b := exposition(t, st), exposition(t, restored); !bytes.Equal(a, b) {
		t.Errorf("metrics differ after restore:\n%s\n---\n%s", a, b)
	}
	if fmt.Sprint(st.Processes()) != fmt.Sprint(restored.Processes()) || fmt.Sprint(st.Faults()) != fmt.Sprint(restored.Faults()) {
		t.Error("views differ after restore")
	}
	// The partial line completes after the restart.
	restored.Ingest(cri, []byte("2026-01-07T02:00:01.000000003Z stderr F 11): Failed to allocate"))
	if n := countOf(t, restored, "EI0011", "screen"); n != 1 {
		t.Errorf("EI0011 screen after restore = %v", n)
	}
	// Further communicators still respect the restored count.
	if restored.nComms != st.nComms {
		t.Errorf("nComms %d != %d", restored.nComms, st.nComms)
	}
	for _, bad := range [][]byte{[]byte("{"), []byte(`{"version":99}`)} {
		if err := restored.UnmarshalBinary(bad); err == nil {
			t.Errorf("UnmarshalBinary(%s) accepted", bad)
		}
	}
	if countOf(t, restored, "EI0011", "screen") != 1 {
		t.Error("a failed restore changed the state")
	}
	if err := NewState(Options{}).UnmarshalBinary(nil); err != nil {
		t.Errorf("empty blob: %v", err)
	}
}

func countOf(t *testing.T, st *State, code, source string) uint64 {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushAllPending() // as a scrape does
	var n uint64
	for k, v := range st.faults {
		if k.code == code && k.source == source {
			n += v.count
		}
	}
	return n
}

func TestHostileInput(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Unix(0, 0)}))
	huge := bytes.Repeat([]byte("A"), 1<<20)
	plogHuge := append([]byte("[ERROR] HCCL(1,p):2026-01-07-09:00:00.000.000 [a.cc:1] [1]"), huge...)
	plogHuge = append(plogHuge, " ra qp create fail, reason: out of memory"...)
	lines := [][]byte{
		huge,
		plogHuge,
		append([]byte("EI0011: "), huge...),
		[]byte("\x00\x00\x00"),
		[]byte("[INFO] HCCL(1,\x00\xff):2026-01-07-09:00:00.000.000 [a.cc:1] [1][HCCL_ENV] HCCL_BUFFSIZE set by environment to [\xff\xfe]M"),
		[]byte("\xc3\x28\xa0\xa1 EI0006: \xf0\x28\x8c\x28"),
		[]byte("[ERROR]"),
		[]byte("[INFO] HCCL(1,p):2026-01-07-09:00:00.000.000 [a.cc:1] [1][Communicator Key Info]identifier[\xff] rankSize[8] serverNum[0]"),
		[]byte("2026-01-07T02:00:01Z stderr P "),
		[]byte(`{"log":"\u0000EI0011: x\n","stream":"stderr","time":"bad"}`),
	}
	rng := rand.New(rand.NewSource(1))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for i := 0; i < n; i++ {
		b := make([]byte, rng.Intn(300))
		rng.Read(b)
		lines = append(lines, b)
	}
	for _, kind := range []SourceKind{SourcePlog, SourceDevicePlog, SourceScreen} {
		src := &Source{Path: "x", Kind: kind}
		for _, l := range lines {
			st.Ingest(src, l)
		}
	}
	if countOf(t, st, "EI0011", "plog") != 2 { // plog and device plog
		t.Error("fingerprint after a 1 MB message not found")
	}
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint after hostile input: %v %+v", err, problems)
	}
	if _, err := st.MarshalBinary(); err != nil {
		t.Errorf("state with invalid UTF-8 does not serialise: %v", err)
	}
}

func TestPartialCap(t *testing.T) {
	o := testOptions(&fakeClock{t: time.Unix(0, 0)})
	o.MaxPartialBytes = 64
	st := NewState(o)
	src := &Source{Path: "cri", Kind: SourceScreen}
	st.Ingest(src, []byte("2026-01-07T02:00:01Z stderr P EI0011: "+strings.Repeat("x", 100)))
	for i := 0; i < 100; i++ {
		st.Ingest(src, []byte("2026-01-07T02:00:01Z stderr P "+strings.Repeat("y", 100)))
	}
	st.Ingest(src, []byte("2026-01-07T02:00:01Z stderr F end"))
	if countOf(t, st, "EI0011", "screen") != 1 {
		t.Error("capped partial line lost its code")
	}
	if len(st.partial) != 0 {
		t.Error("partial buffer not released")
	}
}

func TestCommDestroyByName(t *testing.T) {
	st := NewState(testOptions(&fakeClock{t: time.Unix(0, 0)}))
	src := &Source{Path: "p", Kind: SourcePlog}
	for _, g := range []string{"a", "b", "c"} {
		st.Ingest(src, []byte("[INFO] HCCL(9,p):2026-01-07-09:00:00.000.000 [a.cc:1] [9][Communicator Key Info]identifier["+g+"] rankSize[8] serverNum[1]"))
	}
	st.Ingest(src, []byte("[INFO] HCCL(9,p):2026-01-07-09:00:00.000.000 [a.cc:1] [9][Communicator Key Info]identifier[a] rankSize[16] serverNum[2]"))
	st.Ingest(src, []byte("[INFO] HCCL(9,p):2026-01-07-09:00:00.000.000 [a.cc:1] [9]Entry-HcclCommDestroy: identifier[b] begin"))
	st.Ingest(src, []byte("[INFO] HCCL(9,p):2026-01-07-09:00:00.000.000 [a.cc:1] [9]Entry-HcclCommDestroy: identifier[zz] begin"))
	ps := st.Processes()
	var got []string
	for _, c := range ps[0].Communicators {
		got = append(got, fmt.Sprintf("%s %d %d", c.Name, c.RankSize, c.ServerNum))
	}
	if len(ps) != 1 || fmt.Sprint(got) != "[a 16 2 c 8 1]" {
		t.Fatalf("communicators %+v", ps)
	}
	for i := 0; i < 4; i++ {
		st.Ingest(src, []byte("[INFO] HCCL(9,p):2026-01-07-09:00:00.000.000 [a.cc:1] [9]Entry-HcclCommDestroy: op_base comm destroy begin"))
	}
	if st.nComms != 0 || len(st.Processes()[0].Communicators) != 0 {
		t.Errorf("nComms %d after destroying all", st.nComms)
	}
}

var benchInfo = []byte("[INFO] HCCL(3015875,python):2025-03-07-11:43:32.305.623 [hccl_opbase_atrace_info.cc:56][3017221]Entry-HcclAllReduce: tag[AllReduce_127.10.0.1%eth_60000_0_1741318944927847], sendBuf[0x1241d3dcdc00], recvBuf[0x124702f40200], count[10746295], dataType[float32], op[sum], localRank[0], streamId[7],comm[0xfffe380078d0], deviceLogicId[0]")

// BenchmarkIngestInfo measures the common case: an INFO line of a process
// with known settings (the time stamp is parsed to track its last write).
// Processes are keyed by their log directory and pid: dir=none is the
// baseline without a directory, dir=pod one of typical length.
func BenchmarkIngestInfo(b *testing.B) {
	for _, bc := range []struct{ name, dir string }{
		{"dir=none", ""},
		{"dir=pod", "/var/log/ascend/training-job-7f9c-worker-3"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			st := NewState(DefaultOptions())
			src := &Source{Path: "p", Kind: SourcePlog, Dir: bc.dir}
			st.Ingest(src, []byte(envLine(3015875, "2025-03-07-11:43:32.305.623", "HCCL_BUFFSIZE set by default to [200]M")))
			b.ReportAllocs()
			b.SetBytes(int64(len(benchInfo)))
			for b.Loop() {
				st.Ingest(src, benchInfo)
			}
		})
	}
}

func BenchmarkIngestScreenMiss(b *testing.B) {
	st := NewState(DefaultOptions())
	src := &Source{Path: "s", Kind: SourceScreen}
	line := []byte("2026-01-07T02:00:00.000000001Z stdout F epoch 1 step 1200/50000 | loss: 2.3456 | lr: 0.0001 | grad_norm: 1.234")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		st.Ingest(src, line)
	}
}

func TestIngestHotPathNoAlloc(t *testing.T) {
	st := NewState(DefaultOptions())
	src := &Source{Path: "p", Kind: SourcePlog}
	st.Ingest(src, []byte(envLine(3015875, "2025-03-07-11:43:32.305.623", "HCCL_BUFFSIZE set by default to [200]M")))
	other := []byte("[INFO] GE(77,python):2025-03-07-11:43:32.305.623 [ge.cc:56] [77]graph built")
	screen := &Source{Path: "s", Kind: SourceScreen}
	cri := []byte("2026-01-07T02:00:00.000000001Z stdout F epoch 1 step 10 loss 2.31")
	st.Ingest(src, other)
	if n := testing.AllocsPerRun(200, func() {
		st.Ingest(src, benchInfo)
		st.Ingest(src, other)
		st.Ingest(screen, cri)
	}); n != 0 {
		t.Errorf("hot path allocates %v times", n)
	}
}
