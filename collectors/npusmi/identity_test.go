package npusmi

import (
	"context"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

type vdies map[[2]string]string

func (v vdies) VDieID(npu, chip string) string { return v[[2]string{npu, chip}] }

// TestInfoIdentity: ascend_npu_info carries the header's driver version
// and the VDie ID an identity source knows (empty for a chip it does not).
func TestInfoIdentity(t *testing.T) {
	c, _, _ := newScripted(time.Minute, step{out: readFile(t, "testdata/info-910b4-procs-v24.1.rc3.txt")})
	c.SetIdentity(vdies{{"0", "0"}: "185011D4-21104518-A0C4ED94-14CC040A-56102003"})
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.InFlight() != nil {
		t.Error("InFlight is not nil after the run ended")
	}
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	if _, ok := metrictest.Find(mfs, "ascend_npu_info", map[string]string{"npu": "0", "chip": "0", "vdie_id": "185011D4-21104518-A0C4ED94-14CC040A-56102003", "driver_version": "24.1.rc3"}); !ok {
		t.Errorf("no ascend_npu_info with the VDie ID and driver version: %v", metrictest.Samples(mfs, "ascend_npu_info"))
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_info", map[string]string{"npu": "1", "vdie_id": ""}); !ok {
		t.Error("a chip the source does not know has no empty vdie_id")
	}
}
