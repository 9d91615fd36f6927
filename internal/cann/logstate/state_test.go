package logstate

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// exposition renders a collector's metrics as the golden files hold them.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	return metrictest.Exposition(t, c)
}

func TestSamplesGolden(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 18, 12, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	ingestTree(t, st, "testdata/cann-log")
	ingestTree(t, st, "testdata/screen-log")
	got := exposition(t, st)
	golden(t, "samples.prom", got)

	if err := testutil.CollectAndCompare(st, bytes.NewReader(got)); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestFixturesGolden(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 7, 12, 0, 0, 0, time.UTC)}
	st := NewState(testOptions(clock))
	ingestTree(t, st, "testdata/fixtures/run")
	ingestTree(t, st, "testdata/fixtures/debug")
	pod := &Source{Path: "/var/log/pods/train_llama-0_uid/trainer/0.log", Kind: SourceScreen, Namespace: "train", Pod: "llama-0", Container: "trainer"}
	ingestFile(t, st, pod, "testdata/fixtures/screen/cri.log")
	ingestFile(t, st, sourceFor("docker-json.log"), "testdata/fixtures/screen/docker-json.log")
	ingestFile(t, st, sourceFor("plain-mixed.log"), "testdata/fixtures/screen/plain-mixed.log")
	got := exposition(t, st)
	golden(t, "fixtures.prom", got)
	if problems, err := testutil.CollectAndLint(st); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}

	// The view diagnose and headroom read.
	procs := st.Processes()
	if len(procs) != 4 {
		t.Fatalf("processes = %+v", procs)
	}
	p := procs[0]
	if p.PID != 4242 || p.Name != "python3" {
		t.Fatalf("first process %+v", p)
	}
	if bs := p.Env["HCCL_BUFFSIZE"]; !bs.HasNumber || bs.Number != 512<<20 || bs.SetBy != "environment" || bs.Value != "512" {
		t.Errorf("HCCL_BUFFSIZE = %+v", bs)
	}
	if et := p.Env["HCCL_EXEC_TIMEOUT"]; et.Number != 3600 {
		t.Errorf("HCCL_EXEC_TIMEOUT = %+v", et)
	}
	if th := p.Env["HCCL_MULTI_QP_THRESHOLD"]; th.Number != 1024*1024 {
		t.Errorf("HCCL_MULTI_QP_THRESHOLD = %+v", th)
	}
	// Two communicators were created and the newest destroyed.
	want := []comm.Communicator{{Name: "hccl_world_group", RankSize: 16, ServerNum: 2, SuperPodNum: 0, ModuleNum: 2, DeviceType: -1, UserRank: 3, DevicePhyID: 3,
		SuperPodID: "0", SuperPodMode: 0, StandardCard: 0}}
	if !reflect.DeepEqual(p.Communicators, want) {
		t.Errorf("communicators = %+v, want %+v", p.Communicators, want)
	}
	if !p.LastWrite.Equal(time.Date(2026, 1, 7, 9, 0, 5, 2000, time.UTC)) {
		t.Errorf("last write %v", p.LastWrite)
	}
	if bs := procs[2].Env["HCCL_BUFFSIZE"]; procs[2].PID != 4444 || bs.Number != 300<<20 {
		t.Errorf("untagged HCCL_BUFFSIZE without unit: %+v", procs[2])
	}

	faults := st.Faults()
	byCode := map[string]FaultSummary{}
	for _, f := range faults {
		byCode[f.Code] = f
	}
	ei11 := byCode["EI0011"]
	if ei11.Count != 2 || ei11.BySource["screen"] != 1 || ei11.BySource["plog"] != 1 || ei11.Title == "" || ei11.Remedy == "" {
		t.Errorf("EI0011 summary %+v", ei11)
	}
	if !reflect.DeepEqual(ei11.PIDs, []int{5151, 7001}) {
		t.Errorf("EI0011 pids %v", ei11.PIDs)
	}
	if s := byCode["EZ9999"]; s.Stage != "unknown" || s.Title != "" || s.Count != 1 {
		t.Errorf("EZ9999 summary %+v", s)
	}
}

func TestProcessVarsCopiesOnlyTheNamedVariables(t *testing.T) {
	st := NewState(DefaultOptions())
	src := &Source{Path: "/x/run/plog/plog-4242_20260107100000000.log", Kind: SourcePlog, Dir: "/x"}
	for _, l := range []string{
		"[INFO] HCCL(4242,python3):2026-01-07-10:00:00.000.001 [env.cc:1][HCCL_ENV] HCCL_RDMA_QPS_PER_CONNECTION set by environment to [4]",
		"[INFO] HCCL(4242,python3):2026-01-07-10:00:00.000.002 [env.cc:1][HCCL_ENV] HCCL_BUFFSIZE set by default to [200]M",
	} {
		st.Ingest(src, []byte(l))
	}
	if len(st.Keys(4242)) != 1 || len(st.Keys(1)) != 0 {
		t.Fatalf("Keys: 4242=%v 1=%v", st.Keys(4242), st.Keys(1))
	}
	key := ProcessKey{Dir: "/x", PID: 4242}
	full, _ := st.Process(key)
	pv, ok := st.ProcessVars(key, "HCCL_RDMA_QPS_PER_CONNECTION", "HCCL_INTRA_ROCE_ENABLE")
	if !ok {
		t.Fatal("ProcessVars: pid unknown")
	}
	if len(pv.Env) != 1 || pv.Env["HCCL_RDMA_QPS_PER_CONNECTION"] != full.Env["HCCL_RDMA_QPS_PER_CONNECTION"] {
		t.Fatalf("ProcessVars Env = %+v, want only the QPS setting of %+v", pv.Env, full.Env)
	}
	if pv.Env["HCCL_RDMA_QPS_PER_CONNECTION"].Number != 4 {
		t.Fatalf("QPS = %+v", pv.Env["HCCL_RDMA_QPS_PER_CONNECTION"])
	}
	if _, ok := st.ProcessVars(ProcessKey{Dir: "/x", PID: 1}); ok {
		t.Fatal("ProcessVars of an unknown pid")
	}
}
