package npuhealth

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.npuhealth switch.
var Spec = collector.Spec{Name: "npuhealth", Help: "NPU hardware health from npu-smi's detail queries (error codes, HBM ECC, PCIe/HCCS/SIO errors, " +
	"utilisation by engine) and the chip count (background sweep).", DefaultEnabled: true}

// FamilyGroups are the collector's families a default run leaves out, each
// group behind its own switch named for what it adds:
// --[no-]<collector>.<group>, as --[no-]collector.<name> switches a whole
// collector. Everything the shipped alerts, recording rules, dashboards and
// runbooks query is on by default (TestDefaultSetServesRulesDashboardsRunbooks
// checks it with the PromQL parser); these groups add detail no shipped
// rule or panel reads.
var FamilyGroups = []collector.FamilyGroup{
	{Collector: "npuhealth", Name: "hccs-links", Help: "HCCS CRC errors, retries and lanes up per link (npu-smi info -t hccs; link " +
		"is the number -lane takes); the chip's totals and fewest lanes, ascend_npu_hccs_chip_{errors,retries}_total " +
		"and ascend_npu_hccs_min_lanes, are always served.",
		Families: []string{"ascend_npu_hccs_errors_total", "ascend_npu_hccs_retries_total", "ascend_npu_hccs_lanes"}},
	{Collector: "npuhealth", Name: "hccs-traffic", Help: "HCCS packets sent and received per link (npu-smi info -t hccs); the " +
		"chip's totals, ascend_npu_hccs_{transmit,receive}_bytes_total, are always served.",
		Families: []string{"ascend_npu_hccs_transmit_packets_total", "ascend_npu_hccs_receive_packets_total"}},
	{Collector: "npuhealth", Name: "engine-utilization", Help: "utilisation of every engine (aicore, aivector, aicube, aicpu, " +
		"ctrlcpu, overall; npu-smi info -t usages); the AI Core's, ascend_npu_aicore_utilization_ratio, is always " +
		"served.",
		Families: []string{"ascend_npu_utilization_ratio"}},
	{Collector: "npuhealth", Name: "pcie-types", Help: "PCIe error counters per type (tx, rx, lcrc, ecrc, retry; npu-smi " +
		"info -t pcie-err); the chip's sum, ascend_npu_pcie_chip_errors_total, is always served.",
		Families: []string{"ascend_npu_pcie_errors_total"}},
	{Collector: "npuhealth", Name: "voltage", Help: "the chip's voltage (npu-smi info -t volt, one more call per chip and sweep).",
		Families: []string{"ascend_npu_voltage_volts"}},
	{Collector: "npuhealth", Name: "aicore-frequency", Help: "the AI Core's current and rated frequency (npu-smi info -t common, " +
		"one more call per NPU and sweep); current below rated is a throttled or idle chip.",
		Families: []string{"ascend_npu_aicore_frequency_hertz", "ascend_npu_aicore_rated_frequency_hertz"}},
	{Collector: "npuhealth", Name: "ecc-enable", Help: "whether HBM ECC is enabled (npu-smi info -t ecc-enable).",
		Families: []string{"ascend_npu_hbm_ecc_enabled"}},
}
