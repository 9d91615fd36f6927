package npusmi

import (
	"context"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// TestInfoIdentity: ascend_npu_info carries the header's driver version
// and the identity the npuhealth sweep published (empty for a chip it does
// not know).
func TestInfoIdentity(t *testing.T) {
	c, _, _ := newScripted(time.Minute, step{out: readFile(t, "testdata/info-910b4-procs-v24.1.rc3.txt")})
	c.ids = &ascend.Identities{}
	c.ids.Publish(map[ascend.ChipID]ascend.Identity{{NPU: "0", Chip: "0"}: {VDieID: "185011D4-21104518-A0C4ED94-14CC040A-56102003",
		SerialNumber: "102386371810N3000136", ProductName: "IT21PDDA01"}})
	if _, err := c.run.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.run.InFlight() != nil {
		t.Error("InFlight is not nil after the run ended")
	}
	mfs := metrictest.Gather(t, metrictest.Unchecked(c))
	if _, ok := metrictest.Find(mfs, "ascend_npu_info", map[string]string{"npu": "0", "chip": "0",
		"vdie_id": "185011D4-21104518-A0C4ED94-14CC040A-56102003", "serial_number": "102386371810N3000136", "product_name": "IT21PDDA01",
		"driver_version": "24.1.rc3"}); !ok {
		t.Errorf("no ascend_npu_info with the VDie ID and driver version: %v", metrictest.Samples(mfs, "ascend_npu_info"))
	}
	if _, ok := metrictest.Find(mfs, "ascend_npu_info", map[string]string{"npu": "1", "vdie_id": ""}); !ok {
		t.Error("a chip the source does not know has no empty vdie_id")
	}
}
