package pods

import (
	"strconv"
	"strings"
)

// Device is an NPU the kubelet assigned to a container, as the Ascend
// device plugin names it.
type Device struct {
	// ID is the device id as the kubelet reports it, e.g. "Ascend910-3".
	ID string
	// Type is the chip type the id starts with: Ascend910, Ascend310P, …
	Type string
	// PhyID is the physical id of the chip (the N of /dev/davinciN).
	PhyID int
	// VNPU is the id of a virtual NPU (a static vNPU slice of the chip), -1
	// for a whole chip.
	VNPU int
}

// deviceForms documents the device ids the Ascend device plugin
// (MindCluster ascend-device-plugin, common.GetDeviceID) hands to the
// kubelet, and how each is read. The phy id is always the last
// dash-separated field.
var deviceForms = []struct{ form, example, meaning string }{
	{"<type>-<phy id>", "Ascend910-3", "a whole chip: Ascend910 (910, A2 910B and A3 910_93 all register as Ascend910), Ascend310, Ascend310P, Ascend310B"},
	{"<type>-<cores>c-<vnpu id>-<phy id>", "Ascend910-2c-100-3", "a static vNPU of <cores> AI cores carved out of the chip (resources such as huawei.com/Ascend910-2c)"},
	{"<type>-<cores>c.<cpus>cpu[.dvpp|.ndvpp]-<vnpu id>-<phy id>", "Ascend310P-2c.1cpu-100-0", "a 310P vNPU template that also names AI CPUs (and media units)"},
}

// ParseDeviceID reads an Ascend device plugin device id. ok is false for
// ids of other device plugins (GPUs, RDMA devices, HAMi's UUIDs), which are
// not NPUs this exporter can place.
func ParseDeviceID(id string) (Device, bool) {
	if !strings.HasPrefix(id, "Ascend") || len(id) > 128 {
		return Device{}, false
	}
	parts := strings.Split(id, "-")
	d := Device{ID: id, Type: parts[0], VNPU: -1}
	phy, ok := smallInt(parts[len(parts)-1])
	if !ok {
		return Device{}, false
	}
	d.PhyID = phy
	switch len(parts) {
	case 2:
		return d, true
	case 4:
		cores, vnpu := parts[1], parts[2]
		if i := strings.IndexByte(cores, '.'); i >= 0 {
			cores = cores[:i]
		}
		if !strings.HasSuffix(cores, "c") {
			return Device{}, false
		}
		if _, ok := smallInt(strings.TrimSuffix(cores, "c")); !ok {
			return Device{}, false
		}
		v, ok := smallInt(vnpu)
		if !ok {
			return Device{}, false
		}
		d.VNPU = v
		return d, true
	}
	return Device{}, false
}

// smallInt parses a non-negative decimal of at most 6 digits.
func smallInt(s string) (int, bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
