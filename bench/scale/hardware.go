package main

// Hardware health (the npuhealth collector, docs/hardware.md) on a real
// node: the term H of docs/scale.md. The generated nodes of the formula
// points print no detail answers, so those points run without the
// collector and this term is counted here, from the collector's families
// (the budget nodes of budget.go measure it on the real binary).

// hardwareChip is the series one chip exports when every detail query
// answers, by family.
type hardwareChip struct {
	links        int  // HCCS links (7 on A2/A3, 6 on an A3 SuperPoD, 0 where -t hccs is unsupported)
	pcie, sio    bool // -t pcie-err (910B, A3 A+X boards) and -t sio-info (A3) answer
	engines      int  // -t usages engines printed (6 on recent drivers, 4 on 23.0.x)
	activeCodes  int  // error codes active now
	hbmBandwidth bool
}

// queryTypes: the detail query types a default run asks (health, ecc,
// pcie-err, hccs, sio-info, memory, usages, board, card-board) and those
// only a switch adds (ecc-enable, volt, common). Each type has a
// hccl_exporter_npu_smi_detail_calls_total series per result it has had:
// one on a node whose every call of a type ends the same way.
const (
	defaultQueryTypes  = 9
	switchedQueryTypes = 3
)

// hardwareFixed: the calls counter of the types asked,
// hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds,
// hccl_exporter_npu_smi_detail_stale_chips, ascend_npu_chips and
// ascend_npu_device_files.
func hardwareFixed(all bool) int {
	types := defaultQueryTypes
	if all {
		types += switchedQueryTypes
	}
	return types + 1 + 1 + 1 + 1
}

// families returns the per-chip series by family: with all, every family
// the collector exports (its golden output); otherwise the default set.
func (h hardwareChip) families(all bool) map[string]int {
	f := map[string]int{
		"ascend_npu_error_codes":             1,
		"ascend_npu_error_code":              h.activeCodes,
		"ascend_npu_hbm_ecc_errors_total":    2, // single, double
		"ascend_npu_hbm_ecc_lifetime_errors": 2,
		"ascend_npu_hbm_ecc_pages":           2, // double-bit isolated, pending
		"ascend_npu_hbm_temperature_celsius": 1,
	}
	if h.links > 0 {
		f["ascend_npu_hccs_healthy"] = 1
		for _, fam := range []string{"ascend_npu_hccs_chip_errors_total", "ascend_npu_hccs_chip_retries_total", "ascend_npu_hccs_min_lanes",
			"ascend_npu_hccs_transmit_bytes_total", "ascend_npu_hccs_receive_bytes_total"} {
			f[fam] = 1
		}
	}
	if h.pcie {
		f["ascend_npu_pcie_chip_errors_total"] = 1
	}
	if h.sio {
		f["ascend_npu_sio_errors_total"] = 2
	}
	if h.hbmBandwidth {
		f["ascend_npu_hbm_bandwidth_utilization_ratio"] = 1
	}
	if all {
		// --npuhealth.hccs-links, -hccs-traffic, -engine-utilization,
		// -ecc-enable, -voltage, -aicore-frequency.
		for _, fam := range []string{"ascend_npu_hccs_errors_total", "ascend_npu_hccs_retries_total", "ascend_npu_hccs_lanes",
			"ascend_npu_hccs_transmit_packets_total", "ascend_npu_hccs_receive_packets_total"} {
			f[fam] = h.links
		}
		if h.pcie {
			f["ascend_npu_pcie_errors_total"] = 5 // --npuhealth.pcie-types
		}
		f["ascend_npu_utilization_ratio"] = h.engines
		f["ascend_npu_hbm_ecc_enabled"] = 1
		f["ascend_npu_voltage_volts"] = 1
		f["ascend_npu_aicore_frequency_hertz"] = 1
		f["ascend_npu_aicore_rated_frequency_hertz"] = 1
	}
	return f
}

// hardwareSeries is H for x chips of one kind (all: every switch on).
func hardwareSeries(x int, h hardwareChip, all bool) int {
	return hardwareFixed(all) + x*sum(h.families(all))
}

// worstHardwareChip is a die of an Atlas A3 A+X board that answers every
// query (7 HCCS links, PCIe and SIO) on a recent driver, with no code active.
var worstHardwareChip = hardwareChip{links: 7, pcie: true, sio: true, engines: 6, hbmBandwidth: true}
