// Alerts on HCCL transport faults an operator can act on: QPs that could
// not be created for a reason other than memory (EI0007 resource="qp"),
// transport initialisation (EI0009, of which "The network port is down"),
// RoCE retransmission timeouts (EI0013) and execution timeouts (EI0002).
// They join the group hccl-exporter-faults, whose recording rule
// (hccl:fault_events:new10m) they read: a rule group evaluates its rules in
// order, separate groups in no set order.
{
  local cfg = $._config,

  prometheusAlerts+:: {
    groups: std.map(
      function(g) if g.name != 'hccl-exporter-faults' then g else g {
        rules+: [
          // EI0007 resource[qp]: HCOMM raises it whenever a QP create fails
          // (transport_ibverbs.cc); an out-of-memory QP is EI0011
          // (HCCLQPMemoryAllocationFailed). Users hit it with HBM to spare
          // (vllm-ascend #9005: a driver/firmware upgrade fixed it).
          {
            alert: 'HCCLQPResourceExhausted',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0007",resource="qp"})',
            labels: {
              severity: 'critical',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'HCCL could not create a RoCE queue pair (EI0007 resource[qp]); the job has most likely failed.',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0007 resource[qp] event(s) in the last 10 minutes: a queue-pair create failed',
                'for a reason other than out-of-memory — often a driver/firmware (HDK) too old for the CANN version, or the',
                "device's QPs used up by HCCL and other RDMA users.",
                '{{- with printf "max(hccl_env_rdma_qps_per_connection{instance=%q})" $labels.instance | query }}',
                'Highest HCCL_RDMA_QPS_PER_CONNECTION: {{ . | first | value }}.{{ end }}',
                '{{- with printf "max(ascend_roce_active_queue_pairs{instance=%q})" $labels.instance | query }}',
                'Most live QPs on one chip: {{ . | first | value }}.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclqpresourceexhausted',
            },
          },
          {
            alert: 'HCCLTransportInitFailed',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0009"})',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'HCCL transport initialisation failed (EI0009).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0009 event(s) in the last 10 minutes. Reason "The network port is down":',
                "the chip's RoCE port is down (see RoCELinkDown): check the optical module, the NIC IP and the switch link.",
                'Other reasons name the failing peer pair (createLink para).',
                '{{- with printf "count(ascend_roce_link_up{instance=%q} == 0)" $labels.instance | query }}',
                'RoCE ports DOWN on the node: {{ . | first | value }}.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#hccltransportinitfailed',
            },
          },
          {
            alert: 'HCCLRoCERetransmissionTimeout',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0013"})',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'A RoCE transfer of HCCL exhausted its retransmissions (EI0013, error CQE 12).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0013 event(s) in the last 10 minutes: the peer did not acknowledge within',
                'HCCL_RDMA_TIMEOUT × HCCL_RDMA_RETRY_CNT — the network between the two devices dropped packets or a port',
                'flapped, or the peer process exited first.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclroceretransmissiontimeout',
            },
          },
          {
            alert: 'HCCLExecutionTimeout',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0002"})',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'An HCCL collective timed out waiting for a peer (EI0002).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0002 event(s) in the last 10 minutes: a notify wait exceeded HCCL_EXEC_TIMEOUT.',
                'Usually a consequence: find the rank that failed or stalled first.',
                '{{- with printf "max(hccl_env_exec_timeout_seconds{instance=%q})" $labels.instance | query }}',
                'HCCL_EXEC_TIMEOUT on the node: {{ . | first | value | humanizeDuration }}.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexecutiontimeout',
            },
          },
        ],
      },
      // HCCL requires the same TLS switch on every rank's RoCE port
      // (communicator init fails with EI0016 from HDK 25.2.0, older builds
      // time out at link setup). Compares nodes, so it joins the
      // cross-node group.
      std.map(
        function(g) if g.name != 'hccl-exporter-cluster' then g else g {
          rules+: [
            {
              alert: 'HCCLTLSInconsistent',
              expr: |||
                max by (%(clusterLabel)s) (ascend_roce_tls_enabled%(hcclSelectorBraces)s and on (job, instance, npu, chip) count by (job, instance, npu, chip) (ascend_npu_process_memory_bytes%(hcclSelectorBraces)s))
                !=
                min by (%(clusterLabel)s) (ascend_roce_tls_enabled%(hcclSelectorBraces)s and on (job, instance, npu, chip) count by (job, instance, npu, chip) (ascend_npu_process_memory_bytes%(hcclSelectorBraces)s))
              ||| % cfg,
              'for': '5m',
              labels: {
                severity: 'warning',
              },
              annotations: {
                summary: 'RoCE ports of one job disagree on TLS.',
                description: std.join(' ', [
                  '{{ with $labels.%s }}Cluster {{ . }}{{ else }}Nodes without a cluster label{{ end }}:' % cfg.clusterLabel,
                  'chips running processes have TLS on (hccn_tool -tls -g tls switch[1]) on some RoCE ports and off on others.',
                  'HCCL requires the same TLS setting on every rank: communicator init fails (EI0016) or link setup times out (EI0006).',
                  '{{- with printf "count(ascend_roce_tls_enabled{%s=%%q} == 1)" $labels.%s | query }}' % [cfg.clusterLabel, cfg.clusterLabel],
                  'Ports with TLS on: {{ . | first | value }}.{{ end }}',
                ]),
                runbook_url: cfg.runbookURLBase + '#hccltlsinconsistent',
              },
            },
          ],
        },
        super.groups
      )
    ),
  },
}
