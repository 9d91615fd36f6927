// NPU hardware health from the npuhealth collector's npu-smi detail sweep
// (docs/hardware.md): a lost chip, active error codes by handling class,
// HBM ECC, interconnect errors, and the sweep itself failing. Every alert is
// infra's: the node's hardware, not a job's settings. A group of its own:
// each rule joins one target's series only (a per-node group when rules are
// sharded).
{
  local cfg = $._config,

  _config+:: {
    // Error-code classes (MindCluster faultCode.json levels,
    // --npuhealth.fault-code-file) that need the chip reset or isolated:
    // NPUHardwareFault pages for these and warns for the others.
    hardwareFaultCriticalClasses: ['ManuallySeparateNPU', 'SeparateNPU', 'PreSeparateNPU', 'RestartNPU', 'FreeRestartNPU'],
  },

  local critical = std.join('|', cfg.hardwareFaultCriticalClasses),

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'hccl-exporter-hardware',
        rules: [
          {
            alert: 'NPUChipMissing',
            expr: |||
              ascend_npu_chips%(hcclSelectorBraces)s < ascend_npu_device_files%(hcclSelectorBraces)s
              or
              ascend_npu_chips%(hcclSelectorBraces)s < max_over_time(ascend_npu_chips%(hcclSelectorBraces)s[1d])
            ||| % cfg,
            'for': '5m',
            labels: {
              severity: 'critical',
            },
            annotations: {
              summary: 'An NPU chip has disappeared from npu-smi.',
              description: std.join(' ', [
                'npu-smi on {{ $labels.instance }} lists {{ $value }} NPU chips, fewer than the node has /dev/davinciN device files',
                'or had in the last day (ascend_npu_chips). A chip that drops out of npu-smi has no series left:',
                'its jobs fail and nothing else alerts on it.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuchipmissing',
            },
          },
          {
            alert: 'NPUHardwareFault',
            expr: |||
              ascend_npu_error_code{%(hcclSelectorComma)sclass=~"%(critical)s"} == 1
            ||| % (cfg { critical: critical }),
            'for': '1m',
            labels: {
              severity: 'critical',
            },
            annotations: {
              summary: 'An NPU chip reports a fault that needs a reset or isolation ({{ $labels.class }}).',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }} reports error code {{ $labels.code }}',
                '(class {{ $labels.class }}, npu-smi info -t health): the chip needs a reset or must be taken out of scheduling.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhardwarefault',
            },
          },
          {
            alert: 'NPUHardwareFault',
            expr: |||
              ascend_npu_error_code{%(hcclSelectorComma)sclass!~"%(critical)s"} == 1
            ||| % (cfg { critical: critical }),
            'for': '5m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'An NPU chip reports error code {{ $labels.code }} ({{ $labels.class }}).',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }} has reported error code {{ $labels.code }}',
                '(class {{ $labels.class }}, npu-smi info -t health) for 5 minutes.{{ if eq $labels.class "unknown" }} Class unknown: the code is not in',
                '--npuhealth.fault-code-file (or none is set); look it up before the chip takes new jobs.{{ else }} Its class needs no reset',
                'or isolation now (docs/runbooks.md#npuhardwarefault); watch whether it recurs.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhardwarefault',
            },
          },
          {
            alert: 'NPUHBMUncorrectableECC',
            expr: |||
              increase(ascend_npu_hbm_ecc_errors_total{%(hcclSelectorComma)sbit="double"}[10m]) > 0
            ||| % cfg,
            labels: {
              severity: 'critical',
            },
            annotations: {
              summary: 'An NPU chip has new uncorrectable (double-bit) HBM ECC errors.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }} counted {{ $value | humanize }} new double-bit',
                'HBM ECC errors in 10 minutes (npu-smi info -t ecc). The job touching that memory fails; the pages are isolated at',
                'the next chip reset.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhbmuncorrectableecc',
            },
          },
          {
            alert: 'NPUHBMPagesPendingIsolation',
            expr: |||
              ascend_npu_hbm_ecc_pages{%(hcclSelectorComma)sstate="pending"} > 0
            ||| % cfg,
            'for': '10m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'HBM pages of an NPU chip wait for isolation at the next reset.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }} has {{ $value }} {{ $labels.bit }}-bit HBM pages',
                'waiting to be isolated (npu-smi info -t ecc, Next-Isolated). They are isolated only by a chip reset: reset it when idle.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhbmpagespendingisolation',
            },
          },
          {
            alert: 'NPUInterconnectErrors',
            expr: |||
              ascend_npu_hccs_healthy%(hcclSelectorBraces)s == 0
              or label_replace(increase(ascend_npu_hccs_chip_errors_total%(hcclSelectorBraces)s[15m]) > 0, "hccs", "errors", "", "")
              or label_replace(increase(ascend_npu_hccs_chip_retries_total%(hcclSelectorBraces)s[15m]) > 0, "hccs", "retries", "", "")
              or label_replace(increase(ascend_npu_pcie_chip_errors_total%(hcclSelectorBraces)s[15m]) > 0, "type", "all types", "", "")
              or increase(ascend_npu_sio_errors_total%(hcclSelectorBraces)s[15m]) > 0
            ||| % cfg,
            // A counter rising once keeps its 15-minute increase above 0 for
            // at most 15 minutes: a single CRC error or retry, which a
            // 500-node fleet sees somewhere every day, never fires. Errors
            // recurring at least every 15 minutes for 20 minutes (or HCCS
            // NOK for 20 minutes) do (docs/runbooks.md#npuinterconnecterrors).
            'for': '20m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'An NPU chip reports interconnect errors (HCCS, PCIe or SIO).',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}:',
                "{{ with $labels.hccs }}HCCS {{ . }} rose by {{ $value | humanize }} in 15 minutes over the chip's links (which link: npu-smi info -t hccs -i {{ $labels.npu }} -c {{ $labels.chip }}, or --npuhealth.hccs-links){{ else }}{{ with $labels.type }}PCIe errors ({{ . }}: which, npu-smi info -t pcie-err -i {{ $labels.npu }} -c {{ $labels.chip }}, or --npuhealth.pcie-types) rose by {{ $value | humanize }} in 15 minutes{{ else }}{{ with $labels.direction }}SIO {{ . }} errors rose by {{ $value | humanize }} in 15 minutes{{ else }}HCCS reports NOK{{ end }}{{ end }}{{ end }}",
                '(npu-smi info -t hccs|pcie-err|sio-info). Collectives over that link slow down or fail.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuinterconnecterrors',
            },
          },
          {
            alert: 'NPUHardwareProbeFailing',
            expr: |||
              (
                sum without (type, result) (increase(hccl_exporter_npu_smi_detail_calls_total{%(hcclSelectorComma)sresult=~"timeout|error|parse_error"}[30m])) > 0
                unless
                sum without (type, result) (increase(hccl_exporter_npu_smi_detail_calls_total{%(hcclSelectorComma)sresult="success"}[30m])) > 0
              )
              or
              time() - hccl_exporter_npu_smi_detail_last_sweep_timestamp_seconds%(hcclSelectorBraces)s > 900
              or
              hccl_exporter_npu_smi_detail_stale_chips%(hcclSelectorBraces)s > 0
            ||| % cfg,
            'for': '15m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: "The exporter cannot read the NPUs' hardware health.",
              description: std.join(' ', [
                'On {{ $labels.instance }} no npu-smi detail call has succeeded for 30 minutes, the last sweep finished more',
                'than 15 minutes ago, or chips have had no detail reading for two sweep intervals because their calls hang',
                '(hccl_exporter_npu_smi_detail_calls_total, hccl_exporter_npu_smi_detail_stale_chips).',
                'Error codes, ECC and interconnect errors of those chips are not watched: the hardware alerts cannot fire for them.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhardwareprobefailing',
            },
          },
        ],
      },
    ],
  },
}
