// npu-exporter compatibility (off by default: _config.npuExporterCompat).
// MindCluster's npu-exporter names its series npu_chip_info_*, machine_*,
// container_npu_*, in MB and percent, and puts the chip's physical id
// (id), model_name, vdie_id, pcie_bus_info and the pod's namespace,
// pod_name, container_name on every per-chip series. These rules record
// those names and labels from this exporter's series (only from families a
// default run serves), so the dashboards and queries of npu-exporter's
// users keep working on the day they switch; docs/migrating.md maps every
// family, and the rewrites there are the way to move off these names.
//
// Units and meanings are npu-exporter's: MB (MiB) where it reports MB, %
// where it reports %, MB/s and GB/s over npuExporterCompatRateWindow. What
// differs: npu-exporter's model_name is DCMI's chip name, here the name
// npu-smi prints (910B3); container_npu_used_memory is the HBM of the chip
// the container holds (npu-exporter sums the container's processes: the
// same where one container holds the chip); process_id carries the host
// pid npu-smi prints.
{
  local cfg = $._config,
  local sel(extra='') =
    local all = std.join(', ', std.filter(function(x) x != '', [cfg.hcclSelector, extra]));
    if all == '' then '' else '{' + all + '}',
  local m(name, extra='') = name + sel(extra),

  // The labels npu-exporter puts on a chip's series, one series per chip,
  // value 1.
  local chipLabels = 'hccl:npu_exporter_chip_labels:info',
  local labelsOf = 'id, model_name, vdie_id, pcie_bus_info, namespace, pod_name, container_name',
  // x, per chip, without the exporter pod's own target labels, with
  // npu-exporter's labels.
  local perChip(x) = |||
    (max without (%(targetLabelsCSV)s) (%(x)s))
    * on (job, instance, npu, chip) group_left (%(labelsOf)s) %(chipLabels)s
  ||| % (cfg { x: x, labelsOf: labelsOf, chipLabels: chipLabels }),
  local rule(record, x) = { record: record, expr: perChip(x) },
  local node(record, x) = { record: record, expr: x },
  local rate(name) = 'rate(%s[%s])' % [m(name), cfg.npuExporterCompatRateWindow],

  npuExporterCompatRules:: {
    groups: [
      {
        name: 'npu-exporter-compat',
        rules: [
          {
            record: chipLabels,
            // ascend_npu_info's phy_id, name and bus_id under npu-exporter's
            // label names, and the one container that holds the chip
            // (hccl:npu_container:unique, the pod-signals group) as its
            // namespace, pod_name and container_name; none where no single
            // container holds it.
            expr: |||
              (
                max without (phy_id, name, bus_id) (
                  label_replace(label_replace(label_replace(
                    max by (job, instance, npu, chip, phy_id, name, bus_id, vdie_id) (%(info)s),
                    "id", "$1", "phy_id", "(.+)"),
                    "model_name", "$1", "name", "(.+)"),
                    "pcie_bus_info", "$1", "bus_id", "(.+)")
                )
              )
              * on (job, instance, npu, chip) group_left (namespace, pod_name, container_name)
                max by (job, instance, npu, chip, namespace, pod_name, container_name) (
                  label_replace(label_replace(hccl:npu_container:unique, "pod_name", "$1", "pod", "(.+)"), "container_name", "$1", "container", "(.+)")
                )
              or on (job, instance, npu, chip)
              max without (phy_id, name, bus_id) (
                label_replace(label_replace(label_replace(
                  max by (job, instance, npu, chip, phy_id, name, bus_id, vdie_id) (%(info)s),
                  "id", "$1", "phy_id", "(.+)"),
                  "model_name", "$1", "name", "(.+)"),
                  "pcie_bus_info", "$1", "bus_id", "(.+)")
              )
            ||| % { info: m('ascend_npu_info') },
          },
          rule('npu_chip_info_name', 'max by (job, instance, npu, chip, name) (%s)' % m('ascend_npu_info')),
          rule('npu_chip_info_hbm_used_memory', m('ascend_npu_hbm_used_bytes') + ' / 1048576'),
          rule('npu_chip_info_hbm_total_memory', m('ascend_npu_hbm_total_bytes') + ' / 1048576'),
          rule('npu_chip_info_hbm_utilization', '100 * %s / %s' % [m('ascend_npu_hbm_used_bytes'), m('ascend_npu_hbm_total_bytes')]),
          rule('npu_chip_info_hbm_temperature', m('ascend_npu_hbm_temperature_celsius')),
          rule('npu_chip_info_hbm_bandwidth_utilization', '100 * ' + m('ascend_npu_hbm_bandwidth_utilization_ratio')),
          rule('npu_chip_info_utilization', '100 * ' + m('ascend_npu_aicore_utilization_ratio')),
          rule('npu_chip_info_temperature', m('ascend_npu_temperature_celsius')),
          rule('npu_chip_info_power', m('ascend_npu_power_watts')),
          // 1 healthy, 0 not (npu-exporter's -1, unknown, is 0 here): the
          // state set serves only a chip's current status.
          rule('npu_chip_info_health_status', 'max without (status) (%s) or max without (status) (0 * %s)' % [
            m('ascend_npu_health_status', 'status="OK"'),
            m('ascend_npu_health_status'),
          ]),
          rule('npu_chip_info_hbm_ecc_single_bit_error_cnt', 'max without (bit) (%s)' % m('ascend_npu_hbm_ecc_errors_total', 'bit="single"')),
          rule('npu_chip_info_hbm_ecc_double_bit_error_cnt', 'max without (bit) (%s)' % m('ascend_npu_hbm_ecc_errors_total', 'bit="double"')),
          rule('npu_chip_info_hbm_ecc_double_bit_isolated_pages_cnt', 'max without (bit, state) (%s)' % m('ascend_npu_hbm_ecc_pages', 'bit="double", state="isolated"')),
          rule('npu_chip_info_process_info_num', |||
            count by (job, instance, npu, chip) (%(p)s)
            or on (job, instance, npu, chip) 0 * count by (job, instance, npu, chip) (%(t)s)
          ||| % { p: m('ascend_npu_process_memory_bytes'), t: m('ascend_npu_hbm_total_bytes') }),
          rule('npu_chip_info_process_info', 'max without (pid, process) (label_replace(%s, "process_id", "$1", "pid", "(.+)")) / 1048576' % m('ascend_npu_process_memory_bytes')),
          rule('npu_chip_info_link_status', m('ascend_roce_link_up')),
          rule('npu_chip_info_network_status', 'max without (status) (%s) or max without (status) (0 * %s)' % [
            m('ascend_roce_network_health', 'status="Success"'),
            m('ascend_roce_network_health'),
          ]),
          rule('npu_chip_info_bandwidth_tx', rate('ascend_roce_transmit_bytes_total') + ' / 1048576'),
          rule('npu_chip_info_bandwidth_rx', rate('ascend_roce_receive_bytes_total') + ' / 1048576'),
          rule('npu_chip_link_speed', m('ascend_roce_link_speed_bytes_per_second') + ' * 8 / 1e6'),
          rule('npu_chip_roce_new_pkt_rty_num', m('ascend_roce_retransmitted_packets_total')),
          rule('npu_chip_roce_out_of_order_num', m('ascend_roce_out_of_order_packets_total')),
          rule('npu_chip_roce_qp_status_err_num', m('ascend_roce_qp_status_errors_total')),
          rule('npu_chip_roce_verification_err_num', m('ascend_roce_verification_errors_total')),
          rule('npu_chip_roce_rx_err_pkt_num', m('ascend_roce_rx_error_packets_total')),
          rule('npu_chip_roce_tx_err_pkt_num', m('ascend_roce_tx_error_packets_total')),
          rule('npu_chip_roce_rx_cnp_pkt_num', m('ascend_roce_rx_cnp_packets_total')),
          rule('npu_chip_roce_tx_cnp_pkt_num', m('ascend_roce_tx_cnp_packets_total')),
          rule('npu_chip_mac_rx_pfc_pkt_num', m('ascend_roce_rx_pfc_packets_total')),
          rule('npu_chip_mac_tx_pfc_pkt_num', m('ascend_roce_tx_pfc_packets_total')),
          rule('npu_chip_optical_state', m('ascend_roce_optical_present')),
          rule('npu_chip_optical_temp', m('ascend_roce_optical_temperature_celsius')),
          rule('npu_chip_info_hccs_bandwidth_info_total_tx', rate('ascend_npu_hccs_transmit_bytes_total') + ' / 1e9'),
          rule('npu_chip_info_hccs_bandwidth_info_total_rx', rate('ascend_npu_hccs_receive_bytes_total') + ' / 1e9'),
          // The container's series: only chips one container holds.
          rule('container_npu_total_memory', '(%s / 1048576) and on (job, instance, npu, chip) hccl:npu_container:unique' % m('ascend_npu_hbm_total_bytes')),
          rule('container_npu_used_memory', '(%s / 1048576) and on (job, instance, npu, chip) hccl:npu_container:unique' % m('ascend_npu_hbm_used_bytes')),
          rule('container_npu_utilization', '(100 * %s) and on (job, instance, npu, chip) hccl:npu_container:unique' % m('ascend_npu_aicore_utilization_ratio')),
          rule('npu_container_info', 'max by (job, instance, npu, chip) (hccl:npu_container:unique)'),
          node('machine_npu_nums', 'max without (%s) (%s)' % [cfg.targetLabelsCSV, m('ascend_npu_chips')]),
          node('machine_card_nums', 'count by (job, instance) (count by (job, instance, npu) (%s))' % m('ascend_npu_info')),
          node('machine_healthy_npu_nums', 'sum by (job, instance) (%s) or sum by (job, instance) (0 * %s)' % [m('ascend_npu_health_status', 'status="OK"'), m('ascend_npu_health_status')]),
          node('machine_unhealthy_npu_nums', 'sum by (job, instance) (%s) or sum by (job, instance) (0 * %s)' % [m('ascend_npu_health_status', 'status=~"Warning|Alarm|Critical"'), m('ascend_npu_health_status')]),
          node('machine_unknown_npu_nums', 'sum by (job, instance) (%s) or sum by (job, instance) (0 * %s)' % [m('ascend_npu_health_status', 'status="UNKNOWN"'), m('ascend_npu_health_status')]),
        ],
      },
    ],
  },

  prometheusRules+:: {
    groups+: if cfg.npuExporterCompat then $.npuExporterCompatRules.groups else [],
  },
}
