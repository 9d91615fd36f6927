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
          // EI0009 where a RoCE port of the node is DOWN: reason "The network
          // port is down" (HCOMM adapter_hccp.cc HCCP_ELINKDOWN), which
          // infrastructure fixes: pages. Other reasons (Create Dest error,
          // QP status timeout) name a peer pair that failed or is
          // unreachable: the job owner's to look at first.
          {
            alert: 'HCCLTransportInitFailed',
            expr: |||
              max without (stage, source) (hccl:fault_events:new10m{code="EI0009"})
              and on (job, instance)
                count by (job, instance) (ascend_roce_link_up%(hcclSelectorBraces)s == 0)
            ||| % cfg,
            labels: {
              severity: 'critical',
              audience: 'infra',
            },
            annotations: {
              summary: 'HCCL transport initialisation failed (EI0009) on a node with a RoCE port DOWN.',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0009 event(s) in the last 10 minutes while',
                '{{- with printf "count(ascend_roce_link_up{instance=%q} == 0)" $labels.instance | query }}',
                '{{ . | first | value }}{{ end }} RoCE port(s) of the node are DOWN: reason "The network port is down".',
                'Check the optical module, the NIC IP and the switch link (hccn_tool -optical/-ip/-lldp).',
              ]),
              runbook_url: cfg.runbookURLBase + '#hccltransportinitfailed',
            },
          },
          {
            alert: 'HCCLTransportInitFailed',
            expr: |||
              max without (stage, source) (hccl:fault_events:new10m{code="EI0009"})
              unless on (job, instance)
                count by (job, instance) (ascend_roce_link_up%(hcclSelectorBraces)s == 0)
            ||| % cfg,
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'HCCL transport initialisation failed (EI0009).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0009 event(s) in the last 10 minutes with every RoCE port of the node UP:',
                'the peer named in createLink para failed or is unreachable. Check its logs first, then the link',
                'between the two (TLS switch and speed must match on both ends).',
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
              summary: 'A RoCE transfer of HCCL completed with an error CQE (EI0013).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0013 event(s) in the last 10 minutes: HCCL raises it for every error CQE',
                '(status 12: the peer did not acknowledge within HCCL_RDMA_TIMEOUT × HCCL_RDMA_RETRY_CNT). Most often the',
                'peer process exited first (held back while its job failed: HCCLJobFailed); otherwise the network between',
                'the two devices dropped packets or a port flapped.',
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
      // HCCL requires the same TLS switch on every rank's RoCE port of a
      // communicator (communicator init fails with EI0016 from HDK 25.2.0,
      // older builds time out at link setup); two jobs may differ. Compares
      // the nodes of a communicator, so it joins the cross-node group.
      std.map(
        function(g) if g.name != 'hccl-exporter-cluster' then g else g {
          rules+: [
            {
              alert: 'HCCLTLSInconsistent',
              expr: |||
                max by (communicator) (%(commTLS)s)
                !=
                min by (communicator) (%(commTLS)s)
              ||| % (cfg {
                       // Per communicator member on a node: the TLS switch of the
                       // chips its settings set's processes run on.
                       commTLS: |||
                         hccl_communicator_info%(hcclSelectorBraces)s
                         * on (job, instance, settings) group_left ()
                           max by (job, instance, settings) (
                             hccl_process_info%(hcclSelectorBraces)s
                             * on (job, instance, npu, chip) group_left ()
                               max by (job, instance, npu, chip) (ascend_roce_tls_enabled%(hcclSelectorBraces)s)
                           )
                       ||| % cfg,
                     }),
              'for': '5m',
              labels: {
                severity: 'warning',
              },
              annotations: {
                summary: 'RoCE ports of one communicator disagree on TLS.',
                description: std.join(' ', [
                  'The members of communicator {{ $labels.communicator }} run on chips with TLS on (hccn_tool -tls -g tls switch[1])',
                  'and on chips with TLS off. HCCL requires the same TLS setting on every rank of a communicator: communicator',
                  'init fails (EI0016) or link setup times out (EI0006). Jobs with different TLS settings of their own are fine.',
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
