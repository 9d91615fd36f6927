package headroom

import (
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

// TestModelWorkloadMemory: a restarted process of a workload that ran an
// AlltoAll and captured on a communicator of the same shape expects both
// from its start; a communicator of another shape, and a process that has
// captured itself, take nothing from the memory.
func TestModelWorkloadMemory(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.Now = now
	ep := comm.Communicator{Name: "ep2", RankSize: 128, ServerNum: 16, SuperPodNum: 0, DeviceType: hcclenv.DevType910B, SuperPodMode: -1, StandardCard: -1,
		CCLBufferBytes: 401 << 20, OpBaseTags: true}
	chips := []ChipMemory{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, Name: "910B3", HBMUsedBytes: ascend.Value{V: 65516 * mib, OK: true}, HBMTotalBytes: ascend.Value{V: 65536 * mib, OK: true}}}
	procs := []ChipProcess{{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, PID: 100}}
	run := func(s ProcessSettings) ChipHeadroom {
		return Model(cfg, chips, procs, func(ChipProcess) (ProcessSettings, bool) { return s, true })[0]
	}
	capture := RememberedLinks{RankSize: 128, ServerNum: 16, AllRanks: true, Capture: true, CaptureQPs: 120}

	fresh := run(known(1, 200, ep))
	if fresh.RememberedQPs != 0 || fresh.CaptureQPs != 0 {
		t.Fatalf("without memory: %+v", fresh)
	}

	s := known(1, 200, ep)
	s.Remembered = []RememberedLinks{capture}
	got := run(s)
	// Every remote rank (128 − 8 on the server) instead of the plane, and
	// the capture's 120 offload QPs.
	if got.QPsExpected != 120+120 || got.CaptureQPs != 120 {
		t.Errorf("expected QPs %v (capture %v), want 120 AlltoAll + 120 capture", got.QPsExpected, got.CaptureQPs)
	}
	if want := got.QPsExpected - fresh.QPsExpected; got.RememberedQPs != want || want <= 120 {
		t.Errorf("remembered QPs %v, want %v (what the memory adds)", got.RememberedQPs, want)
	}
	if got.HeadroomBytes >= fresh.HeadroomBytes || got.HeadroomBytes >= 0 {
		t.Errorf("headroom %v with the memory, %v without: want it lower and below 0", got.HeadroomBytes, fresh.HeadroomBytes)
	}

	// After its own AlltoAll the process links every rank itself: only the
	// capture is the memory's.
	linked := ep
	linked.AllRanksOps, linked.RoCEPeers, linked.EstablishedQPs = true, 120, 120
	s = known(1, 200, linked)
	s.Remembered = []RememberedLinks{capture}
	if got := run(s); got.QPsExpected != 120 || got.RememberedQPs != 120 {
		t.Errorf("after its own AlltoAll: expected %v, remembered %v; want the capture's 120, all remembered", got.QPsExpected, got.RememberedQPs)
	}

	// Once it has captured itself, its own capture says what is next.
	captured := linked
	captured.Captures, captured.LastCaptureQPs, captured.LastCaptureAt = 1, 80, now.Add(-time.Minute)
	s = known(1, 200, captured)
	s.Remembered = []RememberedLinks{capture}
	if got := run(s); got.CaptureQPs != 80 || got.RememberedQPs != 0 {
		t.Errorf("after its own capture: capture %v, remembered %v; want its own 80, none remembered", got.CaptureQPs, got.RememberedQPs)
	}

	// Another shape: nothing.
	s = known(1, 200, ep)
	s.Remembered = []RememberedLinks{{RankSize: 64, ServerNum: 8, AllRanks: true, Capture: true, CaptureQPs: 500}}
	if got := run(s); got.RememberedQPs != 0 || got.QPsExpected != fresh.QPsExpected {
		t.Errorf("a remembered shape of 64×8 changed a 128×16 communicator: %+v", got)
	}
}
