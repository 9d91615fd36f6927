package main

// Hardware health (the npuhealth collector, docs/hardware.md) on a real
// node: the term H of docs/scale.md. The generated nodes print no detail
// answers, so the scale tool runs without the collector and this term is
// counted here, from the collector's families.

// hardwareChip is the series one chip exports when every detail query
// answers, by family.
type hardwareChip struct {
	links        int  // HCCS links (7 on A2/A3, 6 on an A3 SuperPoD, 0 where -t hccs is unsupported)
	pcie, sio    bool // -t pcie-err (910B, A3 A+X boards) and -t sio-info (A3) answer
	engines      int  // -t usages engines printed (6 on recent drivers, 4 on 23.0.x)
	activeCodes  int  // error codes active now
	hbmBandwidth bool
}

// hardwareFixed: hccl_exporter_npu_smi_detail_calls_total (9 types × 6
// results), hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds,
// hccl_exporter_npu_smi_detail_stale_chips, ascend_npu_chips,
// ascend_npu_device_files.
const hardwareFixed = 9*6 + 1 + 1 + 1 + 1

func (h hardwareChip) families() map[string]int {
	f := map[string]int{
		"ascend_npu_error_codes":                 1,
		"ascend_npu_error_code":                  h.activeCodes,
		"ascend_npu_hbm_ecc_errors_total":        2, // single, double
		"ascend_npu_hbm_ecc_lifetime_errors":     2,
		"ascend_npu_hbm_ecc_pages":               2, // double-bit isolated, pending
		"ascend_npu_hbm_ecc_enabled":             1,
		"ascend_npu_hbm_temperature_celsius":     1,
		"ascend_npu_utilization_ratio":           h.engines,
		"ascend_npu_hccs_errors_total":           h.links,
		"ascend_npu_hccs_retries_total":          h.links,
		"ascend_npu_hccs_transmit_packets_total": h.links,
		"ascend_npu_hccs_receive_packets_total":  h.links,
		"ascend_npu_hccs_lanes":                  h.links,
	}
	if h.links > 0 {
		f["ascend_npu_hccs_healthy"] = 1
	}
	if h.pcie {
		f["ascend_npu_pcie_errors_total"] = 5
	}
	if h.sio {
		f["ascend_npu_sio_errors_total"] = 2
	}
	if h.hbmBandwidth {
		f["ascend_npu_hbm_bandwidth_utilization_ratio"] = 1
	}
	return f
}

// hardwareSeries is H for X chips of one kind.
func hardwareSeries(x int, h hardwareChip) int {
	return hardwareFixed + x*sum(h.families())
}

// worstHardwareChip is a die of an Atlas A3 A+X board that answers every
// query (7 HCCS links, PCIe and SIO) on a recent driver, with no code active.
var worstHardwareChip = hardwareChip{links: 7, pcie: true, sio: true, engines: 6, hbmBandwidth: true}
