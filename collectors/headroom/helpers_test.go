package headroom

import (
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/comm"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

const mib = 1 << 20

// world64 is the golden job's communicator: 64 ranks on 8 servers, nothing
// linked yet.
var world64 = comm.Communicator{Name: "world", RankSize: 64, ServerNum: 8, SuperPodNum: 0, DeviceType: -1, SuperPodMode: -1, StandardCard: -1}

// known is a process whose logs printed QPs per connection and HCCL_BUFFSIZE.
func known(qps float64, buffMiB float64, comms ...comm.Communicator) model.ProcessSettings {
	return model.ProcessSettings{QPsPerConnection: qps, QPsKnown: true, BuffSizeBytes: buffMiB * mib, BuffSizeKnown: true, Communicators: comms}
}

// mustNew is New with the default flags.
func mustNew(t testing.TB, deps Deps) *Collector {
	t.Helper()
	cfg := Config{Model: model.DefaultConfig(), Learn: LearnConfig{QPSize: true, MinObservations: 3, WorkloadTTL: time.Hour, MaxWorkloads: 1}}
	c, err := New(cfg, deps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
