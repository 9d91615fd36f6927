package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/npusmi"
)

// fakeNPUSMI returns an npu-smi collector that prints the given capture.
func fakeNPUSMI(t *testing.T, capture string) *npusmi.Collector {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "npu-smi")
	abs, err := filepath.Abs(capture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat '"+abs+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return npusmi.New(npusmi.Config{Path: script, Timeout: 10 * time.Second}, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestHeadroomJoinsOnContainerPIDWhenLogsKnowOnlyThat(t *testing.T) {
	npu := fakeNPUSMI(t, "testdata/info-a3-container-pid.txt")
	tests := []struct {
		name   string
		logged map[int]bool
		want   map[string]int // chip → pid the headroom model sees
	}{
		{"no cannlog", nil, map[string]int{"0": 2871543, "1": 2871544}},
		{"logs know host pids", map[int]bool{2871543: true, 2871544: true}, map[string]int{"0": 2871543, "1": 2871544}},
		{"logs know the container pid", map[int]bool{213: true}, map[string]int{"0": 2871543, "1": 213}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chips := npuChips{npu: npu}
			if tc.logged != nil {
				chips.logged = func(pid int) bool { return tc.logged[pid] }
			}
			mem, procs, err := chips.Chips(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(mem) != 2 {
				t.Fatalf("chips = %d, want 2", len(mem))
			}
			got := map[string]int{}
			for _, p := range procs {
				got[p.Chip] = p.PID
			}
			for chip, pid := range tc.want {
				if got[chip] != pid {
					t.Errorf("chip %s: pid %d, want %d", chip, got[chip], pid)
				}
			}
		})
	}
}

func TestNPULivenessUsesLastSnapshotOnly(t *testing.T) {
	npu := fakeNPUSMI(t, "testdata/info-a3-container-pid.txt")
	live := npuLiveness{npu}
	if live.Alive(2871543) {
		t.Fatal("alive before any npu-smi run: liveness must not run npu-smi itself")
	}
	if live.Ready() {
		t.Fatal("ready before any npu-smi run")
	}
	if _, err := npu.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !live.Ready() {
		t.Fatal("not ready after a successful npu-smi run")
	}
	for pid, want := range map[int]bool{2871543: true, 2871544: true, 213: true, 1: false} {
		if got := live.Alive(pid); got != want {
			t.Errorf("Alive(%d) = %v, want %v", pid, got, want)
		}
	}
	if (npuLiveness{}).Alive(213) {
		t.Error("nil npu-smi collector reports a pid alive")
	}
}

func TestLivenessWithoutNPUSMIIsReadyAtOnce(t *testing.T) {
	live := npuLiveness{}
	if !live.Ready() {
		t.Fatal("liveness without npu-smi waits for a run that never comes")
	}
	if live.Alive(1) {
		t.Fatal("liveness without npu-smi reports a pid alive")
	}
}
