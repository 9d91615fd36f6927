package nodegen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/npusmi"
)

// TestTreeParses writes nodes and reads them back with the exporter's own
// parsers: the npu-smi table through npusmi.Parse, every plog and the screen
// log through a logstate.State. The counts must be the requested ones.
func TestTreeParses(t *testing.T) {
	for _, s := range []Spec{
		{NPUs: 8, ChipsPerNPU: 1, Processes: 8, Communicators: 1, Seed: 1},
		{NPUs: 4, ChipsPerNPU: 2, Processes: 12, Communicators: 3, FaultCodes: CatalogCodes() + 4, EventsPerCode: 2, NoiseLines: 5, QPsPerConnection: 16, BuffsizeMB: 512, Seed: 7},
		{NPUs: 16, ChipsPerNPU: 2, Processes: 64, Communicators: 8, FaultCodes: 3, Seed: 1},
		{NPUs: 2, ChipsPerNPU: 2, Processes: 0, Communicators: 2, Seed: 3},  // idle node: no processes
		{NPUs: 12, ChipsPerNPU: 1, Processes: 5, Communicators: 0, Seed: 4}, // NPU IDs of two digits, idle NPUs
	} {
		name := strconv.Itoa(s.NPUs) + "x" + strconv.Itoa(s.ChipsPerNPU) + "_p" + strconv.Itoa(s.Processes) +
			"_c" + strconv.Itoa(s.Communicators) + "_k" + strconv.Itoa(s.FaultCodes)
		t.Run(name, func(t *testing.T) {
			n, err := New(s)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := n.WriteTree(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			checkNPUSMI(t, n, tr)
			checkLogs(t, n, tr)
		})
	}
}

func checkNPUSMI(t *testing.T, n *Node, tr *Tree) {
	t.Helper()
	out, err := os.ReadFile(tr.NPUSMITable)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := npusmi.Parse(out)
	if err != nil {
		t.Fatalf("npusmi.Parse: %v", err)
	}
	if len(snap.Warnings) > 0 {
		t.Errorf("parse warnings: %q", snap.Warnings)
	}
	s := n.Spec
	if got, want := len(snap.Chips), s.NPUs*s.ChipsPerNPU; got != want {
		t.Fatalf("chips = %d, want %d", got, want)
	}
	if got := len(snap.Processes); got != s.Processes {
		t.Errorf("processes = %d, want %d", got, s.Processes)
	}
	for i, c := range snap.Chips {
		want := n.Chips[i]
		if c.NPU != strconv.Itoa(want.NPU) || c.Chip != strconv.Itoa(want.Chip) || c.PhyID != strconv.Itoa(want.PhyID) || c.BusID != want.BusID || c.Health != "OK" {
			t.Errorf("chip %d = %+v, want %+v", i, c, want)
		}
		if !c.HBMUsedBytes.OK || c.HBMUsedBytes.V != float64(want.HBMUsedMB)*1048576 || c.HBMTotalBytes.V != hbmTotalMB*1048576 {
			t.Errorf("chip %d HBM = %v / %v, want %d / %d MiB", i, c.HBMUsedBytes, c.HBMTotalBytes, want.HBMUsedMB, hbmTotalMB)
		}
		if want.HBMUsedMB > hbmTotalMB || want.HBMUsedMB < 2800 {
			t.Errorf("chip %d HBM used %d MiB is not realistic", i, want.HBMUsedMB)
		}
		if c.PowerWatts.OK != (want.Chip == 0) {
			t.Errorf("chip %d power = %v (A3: only die 0 prints power)", i, c.PowerWatts)
		}
		if c.MemoryTotalBytes.OK || c.HugepagesTotal.OK {
			t.Errorf("chip %d: 0 / 0 placeholders must not parse as values", i)
		}
	}
	pids := map[int]bool{}
	for _, p := range snap.Processes {
		pids[p.PID] = true
		if !p.MemoryBytes.OK || p.MemoryBytes.V <= 0 {
			t.Errorf("process %d memory = %v", p.PID, p.MemoryBytes)
		}
	}
	for _, p := range n.Processes {
		if !pids[p.PID] {
			t.Errorf("pid %d missing from the process table", p.PID)
		}
	}
}

func checkLogs(t *testing.T, n *Node, tr *Tree) {
	t.Helper()
	st := logstate.NewState(logstate.Options{})
	var plogs int
	err := filepath.WalkDir(tr.LogRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasPrefix(d.Name(), "plog-") || len(strings.TrimSuffix(strings.SplitN(d.Name(), "_", 2)[1], ".log")) != 17 {
			t.Errorf("plog name %q is not plog-<pid>_<17 digits>.log", d.Name())
		}
		plogs++
		ingest(t, st, &logstate.Source{Path: path, Kind: logstate.SourcePlog}, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s := n.Spec
	if plogs != s.Processes {
		t.Errorf("plogs = %d, want %d", plogs, s.Processes)
	}
	procs := st.Processes()
	if len(procs) != s.Processes {
		t.Fatalf("processes in the logs = %d, want %d", len(procs), s.Processes)
	}
	wantBuff, wantQPs := 200.0*1048576, 1.0
	if s.BuffsizeMB > 0 {
		wantBuff = float64(s.BuffsizeMB) * 1048576
	}
	if s.QPsPerConnection > 0 {
		wantQPs = float64(s.QPsPerConnection)
	}
	for _, p := range procs {
		if len(p.Communicators) != s.Communicators {
			t.Errorf("pid %d: %d communicators, want %d", p.PID, len(p.Communicators), s.Communicators)
		}
		ids := map[string]bool{}
		for _, c := range p.Communicators {
			ids[c.Name] = true
			if c.RankSize < 1 || c.ServerNum < 1 {
				t.Errorf("pid %d communicator %s: rankSize %d serverNum %d", p.PID, c.Name, c.RankSize, c.ServerNum)
			}
		}
		if len(ids) != s.Communicators {
			t.Errorf("pid %d: communicator ids not distinct: %v", p.PID, ids)
		}
		if len(p.Env) < 20 {
			t.Errorf("pid %d: %d [HCCL_ENV] settings, want the whole block", p.PID, len(p.Env))
		}
		if e := p.Env["HCCL_BUFFSIZE"]; !e.HasNumber || e.Number != wantBuff {
			t.Errorf("pid %d HCCL_BUFFSIZE = %+v, want %v bytes", p.PID, e, wantBuff)
		}
		if e := p.Env["HCCL_RDMA_QPS_PER_CONNECTION"]; !e.HasNumber || e.Number != wantQPs {
			t.Errorf("pid %d HCCL_RDMA_QPS_PER_CONNECTION = %+v, want %v", p.PID, e, wantQPs)
		}
	}
	if s.FaultCodes == 0 {
		if tr.ScreenLog != "" {
			t.Errorf("screen log %s written without fault codes", tr.ScreenLog)
		}
		return
	}
	ingest(t, st, &logstate.Source{Path: tr.ScreenLog, Kind: logstate.SourceScreen}, tr.ScreenLog)
	faults := st.Faults()
	if len(faults) != s.FaultCodes {
		t.Fatalf("fault codes = %d, want %d", len(faults), s.FaultCodes)
	}
	for _, f := range faults {
		if f.Count != uint64(n.Spec.EventsPerCode) {
			t.Errorf("code %s counted %d times, want %d", f.Code, f.Count, n.Spec.EventsPerCode)
		}
	}
}

func ingest(t *testing.T, st *logstate.State, src *logstate.Source, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		st.Ingest(src, sc.Bytes())
	}
}

// TestDeterministic: the same spec and seed give the same bytes; another
// seed gives other HBM values.
func TestDeterministic(t *testing.T) {
	hash := func(s Spec) [32]byte {
		n, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := n.WriteTree(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		err = filepath.WalkDir(tr.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(tr.Dir, path)
			b, err := os.ReadFile(path)
			h.Write([]byte(rel))
			h.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return [32]byte(h.Sum(nil))
	}
	s := Spec{NPUs: 4, ChipsPerNPU: 2, Processes: 9, Communicators: 2, FaultCodes: 5, NoiseLines: 3, Seed: 42}
	first, second := hash(s), hash(s)
	if first != second {
		t.Error("same spec, different trees")
	}
	s2 := s
	s2.Seed = 43
	if hash(s2) == first {
		t.Error("another seed, same tree")
	}
}

func TestSpecErrors(t *testing.T) {
	for _, s := range []Spec{
		{},
		{NPUs: 1, ChipsPerNPU: 0},
		{NPUs: MaxNPUs + 1, ChipsPerNPU: 1},
		{NPUs: 1, ChipsPerNPU: 1, Processes: -1},
		{NPUs: 1, ChipsPerNPU: 1, QPsPerConnection: 33},
		{NPUs: 1, ChipsPerNPU: 1, FaultCodes: MaxFaultCodes + 1},
	} {
		if _, err := New(s); err == nil {
			t.Errorf("New(%+v) = nil error", s)
		}
	}
	n, err := New(Spec{NPUs: 1, ChipsPerNPU: 1, Processes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WritePlog(&bytes.Buffer{}, 1); err == nil {
		t.Error("WritePlog of a process out of range: nil error")
	}
}
