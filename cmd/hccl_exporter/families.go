package main

import "github.com/hccl-exporter/hccl_exporter/exporter"

// familyGroups are the families a default run leaves out, each group behind
// its own switch named for what it adds: --[no-]<collector>.<group>, as
// --[no-]collector.<name> switches a whole collector. Everything the shipped
// alerts, recording rules, dashboards and runbooks query is on by default
// (TestDefaultSetServesRulesDashboardsRunbooks checks it with the PromQL
// parser); these groups add detail no shipped rule or panel reads.
var familyGroups = []exporter.FamilyGroup{
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
	{Collector: "hccn", Name: "optical-detail", Help: "the optical modules' receive and transmit power and bias per lane and " +
		"supply voltage (hccn_tool -optical); presence, temperature and the weakest lane's receive power, " +
		"ascend_roce_optical_rx_power_min_watts, are always served.",
		Families: []string{"ascend_roce_optical_rx_power_watts", "ascend_roce_optical_tx_power_watts", "ascend_roce_optical_tx_bias_amperes", "ascend_roce_optical_vcc_volts"}},
	{Collector: "hccn", Name: "packet-counters", Help: "the RoCE port's packet, pause-frame, ECN, MAC-error and unexpected-ACK " +
		"counters (hccn_tool -stat); bytes, retransmissions, errors, PFC and CNP counters are always served.",
		Families: []string{"ascend_roce_rx_packets_total", "ascend_roce_tx_packets_total", "ascend_roce_rx_pause_frames_total", "ascend_roce_tx_pause_frames_total",
			"ascend_roce_mac_rx_bad_packets_total", "ascend_roce_mac_tx_bad_packets_total", "ascend_roce_mac_rx_bad_bytes_total", "ascend_roce_mac_tx_bad_bytes_total", "ascend_roce_mac_rx_fcs_errors_total", "ascend_roce_rx_ecn_packets_total", "ascend_roce_unexpected_acks_total"}},
	{Collector: "hccn", Name: "link-up-count", Help: "how often each RoCE port came up (hccn_tool -link_stat, link up count: " +
		"npu-exporter's npu_chip_link_up_num); ascend_roce_link_down_events_total, the flaps, is always served.",
		Families: []string{"ascend_roce_link_up_events_total"}},
	{Collector: "cannlog", Name: "rejected-values", Help: "[HCCL_ENV] values the exporter refused, by variable (one zero-initialised counter per checked variable).",
		Families: []string{"hccl_env_values_rejected_total"}},
}
