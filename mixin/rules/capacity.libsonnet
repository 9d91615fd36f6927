// Capacity: the headroom of each chip, and of each node's fullest chip,
// under the settings users try first — HCCL_RDMA_QPS_PER_CONNECTION 1, 2,
// 4, 8 and HCCL_BUFFSIZE 200, 400 MB — so that "can this job run with QPS
// 8 here?" is a panel, not a calculation (docs/headroom.md "Capacity").
//
// The headroom collector exports what the two variables size of the link
// setup ahead and the rest (its capacity inputs):
//
//   headroom(q, B) = HBM free − hccl_link_setup_fixed_pending_bytes
//                    − hccl_link_setup_pending_links × QPs per link(q) × bytes per QP(q)
//                    − hccl_ccl_buffer_pending_communicators × (2 × B MiB + 1 MiB)
//
// with QPs per link N + 1 for N > 1, else 1 (transport_ibverbs.cc
// CreateQp), and bytes per QP the multi-QP size for N > 1
// (hccl_link_setup_pending_link_queue_pair_bytes{multi_qp}). At the
// current settings it is hccl_link_setup_headroom_bytes.
{
  local cfg = $._config,

  _config+:: {
    // The settings the capacity rules evaluate: QPs per connection and
    // HCCL_BUFFSIZE in MB (HCCL's MB: MiB).
    capacityQPsPerConnection: [1, 2, 4, 8],
    capacityBuffSizeMB: [200, 400],
  },

  // The setting is in the rule's labels (qps_per_connection, buffsize_mb),
  // so each rule records its own series.
  local capacityRule(q, b) = {
    record: 'npu:hccl_link_setup_headroom_bytes:capacity',
    expr: |||
      (ascend_npu_hbm_total_bytes%(sel)s - ascend_npu_hbm_used_bytes%(sel)s)
      - hccl_link_setup_fixed_pending_bytes%(sel)s
      - hccl_link_setup_pending_links%(sel)s * %(perLink)d
        * ignoring (multi_qp) hccl_link_setup_pending_link_queue_pair_bytes{%(selComma)smulti_qp="%(multi)s"}
      - hccl_ccl_buffer_pending_communicators%(sel)s * %(buffer)d
    ||| % {
      sel: cfg.hcclSelectorBraces,
      selComma: cfg.hcclSelectorComma,
      perLink: if q > 1 then q + 1 else 1,
      multi: if q > 1 then 'true' else 'false',
      buffer: (2 * b + 1) * 1048576,
    },
    labels: {
      qps_per_connection: std.toString(q),
      buffsize_mb: std.toString(b),
    },
  },

  _hcclCapacityRules:: [
    capacityRule(q, b)
    for q in cfg.capacityQPsPerConnection
    for b in cfg.capacityBuffSizeMB
  ] + [
    // Per node: its fullest chip under each setting (a node is as good
    // as the chip a rank of the job lands on).
    {
      record: 'instance:hccl_link_setup_headroom_bytes:capacity_min',
      expr: 'min without (npu, chip) (npu:hccl_link_setup_headroom_bytes:capacity)',
    },
  ],

  // In the group of the headroom alerts (rules/rules.libsonnet: the mixin
  // keeps recording rules in the groups that read or sit next to them).
  prometheusAlerts+:: {
    groups: std.map(
      function(g) if g.name != 'hccl-exporter-capacity' then g else g { rules+: $._hcclCapacityRules },
      super.groups
    ),
  },
}
