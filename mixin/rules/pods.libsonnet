// Per-chip signals with the namespace, pod and container that hold the chip,
// recorded so that users chart them without a join: npu-exporter and
// dcgm-exporter put pod labels on every series; this exporter exports them
// once per chip (ascend_npu_pod_info, pods collector) and these rules join
// them, the Prometheus way. Charted by the NPU hardware dashboard's
// namespace/pod/container variables; docs/migrating.md maps npu-exporter's
// per-pod queries onto them.
{
  local cfg = $._config,

  // x joined with the one container that holds its chip.
  local withContainer(x) = |||
    max without (%(targetLabelsCSV)s) (%(x)s)
    * on (job, instance, npu, chip) group_left (namespace, pod, container) hccl:npu_container:unique
  ||| % (cfg { x: x }),
  local signal(metric, sel='') = {
    record: 'npu_namespace_pod_container:' + metric + ':join',
    expr: withContainer(metric + (if cfg.hcclSelector == '' && sel == '' then '' else '{' + cfg.hcclSelectorComma + sel + '}')),
  },

  prometheusRules+:: {
    groups+: [
      {
        name: 'hccl-exporter-pod-signals',
        rules: [
          // The namespace, pod and container of every chip that exactly one
          // container holds, value 1 (ascend_npu_pod_info's own labels: the
          // exporter exports them, kept with honorLabels). A chip shared by
          // several containers (vNPUs, two containers of one pod) names none
          // here; ascend_npu_pod_info lists them all.
          {
            record: 'hccl:npu_container:unique',
            expr: |||
              max by (job, instance, npu, chip, namespace, pod, container) (ascend_npu_pod_info%(hcclSelectorBraces)s)
              and on (job, instance, npu, chip)
                (count by (job, instance, npu, chip) (max by (job, instance, npu, chip, namespace, pod, container) (ascend_npu_pod_info%(hcclSelectorBraces)s)) == 1)
            ||| % cfg,
          },
          signal('ascend_npu_hbm_used_bytes'),
          signal('ascend_npu_hbm_total_bytes'),
          {
            record: 'npu_namespace_pod_container:ascend_npu_hbm_used:ratio',
            expr: |||
              npu_namespace_pod_container:ascend_npu_hbm_used_bytes:join
              / on (job, instance, npu, chip, namespace, pod, container)
              (npu_namespace_pod_container:ascend_npu_hbm_total_bytes:join > 0)
            |||,
          },
          signal('hccl_link_setup_headroom_bytes'),
          signal('ascend_npu_aicore_utilization_ratio'),
          signal('ascend_npu_error_codes'),
          signal('ascend_npu_error_code'),
        ],
      },
    ],
  },
}
