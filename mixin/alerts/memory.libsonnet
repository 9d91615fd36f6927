// NPU memory held with no process on the chip: a process exited (or was
// killed) but its device memory was not released — a known driver issue
// after abnormal exits — and the next job on the chip starts short of HBM
// (EI0011, EL0004). npu-smi lists the chip's processes; with none, HBM in
// use above the driver's own reservation is held by nobody.
{
  local cfg = $._config,

  _config+:: {
    // HBM in use on a chip with no process above this fraction of its
    // total pages NPUMemoryHeldWithoutProcess. An idle chip shows the
    // driver's reservation, about 3 GB (2.8 GB of 32 GB on 910B4, 3.4 GB
    // of 64 GB on 910B3: docs/runbooks.md).
    hbmHeldWithoutProcessRatio: 0.2,
  },

  prometheusAlerts+:: {
    groups: std.map(
      function(g) if g.name != 'hccl-exporter-health' then g else g {
        rules+: [
          {
            alert: 'NPUMemoryHeldWithoutProcess',
            expr: $._hcclPerChip(|||
              ascend_npu_hbm_used_bytes%(hcclSelectorBraces)s > %(hbmHeldWithoutProcessRatio)g * ascend_npu_hbm_total_bytes%(hcclSelectorBraces)s
              unless on (job, instance, npu, chip)
                count by (job, instance, npu, chip) (ascend_npu_process_memory_bytes%(hcclSelectorBraces)s)
            ||| % cfg),
            'for': '10m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'NPU memory is in use on a chip with no process.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }} has had {{ $value | humanize1024 }}B of HBM in use',
                'for 10 minutes while npu-smi lists no process on it: memory a process that exited left behind (a known driver issue).',
                'The next job on the chip starts short of HBM and may fail link setup (EI0011) or its buffers (EL0004).',
              ]),
              runbook_url: cfg.runbookURLBase + '#npumemoryheldwithoutprocess',
            },
          },
        ],
      },
      super.groups
    ),
  },
}
