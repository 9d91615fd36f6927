package hccn

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.hccn switch.
var Spec = collector.Spec{Name: "hccn", Help: "RoCE NIC link state, flaps, health, live queue pairs and error counters per NPU chip from hccn_tool (background sweep).", DefaultEnabled: true}

// FamilyGroups are the collector's families a default run leaves out, each
// group behind its own switch named for what it adds:
// --[no-]<collector>.<group>, as --[no-]collector.<name> switches a whole
// collector. Everything the shipped alerts, recording rules, dashboards and
// runbooks query is on by default (TestDefaultSetServesRulesDashboardsRunbooks
// checks it with the PromQL parser); these groups add detail no shipped
// rule or panel reads.
var FamilyGroups = []collector.FamilyGroup{
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
}
