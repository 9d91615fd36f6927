// The alert groups of hccl_exporter, each with the recording rules its
// alerts read (rules/rules.libsonnet). Group names and alert names are the
// product's contract (DESIGN.md): routes, silences and runbooks use them.
//
// hccl-exporter-cluster compares the members of a communicator on all
// nodes and needs every node in one evaluation; every other group joins
// series of one target only (docs/scale.md, alerts/sharded/).
{
  local cfg = $._config,
  local consistentRE = std.join('|', cfg.consistentVariables),
  // The selector inside a query string of an annotation template (its
  // quotes escaped for the template's string literal).
  local selQ = std.strReplace(cfg.hcclSelectorComma, '"', '\\"'),

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'hccl-exporter-faults',
        rules: [
          // New fault events per series in the last 10 minutes, rounded, at least 1.
          //
          // - increase() sees events on series that already existed: the exporter
          //   pre-initialises catalog codes at 0, and survives counter resets.
          // - `unless … offset 10m` sees the first event of a series that did not
          //   exist 10 minutes ago (a new pod's namespace/pod/container label set
          //   appearing at 1).
          // - Both only count when the event itself is recent: the log line's time
          //   (hccl_fault_last_event_timestamp_seconds) is less than 10 minutes
          //   old. This keeps an exporter that (re)starts and reads old logs, or
          //   whose counters go 0 → N while it replays them, from alerting on
          //   history. The exporter must therefore read log times in the zone
          //   their writers print (--cannlog.timezone=auto infers it per root;
          //   CANNLogTimezoneMismatch fires when they differ).
          $._hcclRecordingRules['hccl:fault_events:new10m'],
          {
            alert: 'HCCLQPMemoryAllocationFailed',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0011"})',
            labels: {
              severity: 'critical',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'An HCCL device-memory allocation failed (EI0011); the job has most likely failed.',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0011 Resource_Error_Insufficient_Device_Memory event(s) in the last 10 minutes:',
                'HCCL could not allocate NPU memory; the report prints the size: 0.25–3 MB (or 262144~3145728) is a RoCE',
                'queue pair at link setup, about 2 × HCCL_BUFFSIZE + 1 MiB is the cclBuffer.',
                '{{- with printf "min(hccl_link_setup_headroom_bytes{instance=%q})" $labels.instance | query }}',
                'Lowest link-setup headroom on the node: {{ . | first | value | humanize1024 }}B.{{ end }}',
                '{{- with printf "max(hccl_env_rdma_qps_per_connection{instance=%q})" $labels.instance | query }}',
                'Highest HCCL_RDMA_QPS_PER_CONNECTION: {{ . | first | value }}.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclqpmemoryallocationfailed',
            },
          },
          {
            alert: 'HCCLLinkSetupTimeout',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0006"})',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'HCCL parameter-plane link setup timed out (EI0006).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0006 event(s) in the last 10 minutes: a peer rank did not connect within',
                'HCCL_CONNECT_TIMEOUT + 20 s.',
                '{{- with printf "max(hccl_env_connect_timeout_seconds{instance=%q})" $labels.instance | query }}',
                'HCCL_CONNECT_TIMEOUT on the node: {{ . | first | value | humanizeDuration }}.{{ end }}',
                'Often a symptom: look for the rank that failed first.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hccllinksetuptimeout',
            },
          },
          {
            alert: 'HCCLPortBindFailed',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code=~"EI0019|EI0020|EJ0003"})',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'HCCL could not listen on its socket port ({{ $labels.code }}).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} {{ $labels.code }} event(s) in the last 10 minutes: the IP address and port',
                'HCCL wanted were already bound, usually by a previous or concurrent training process.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclportbindfailed',
            },
          },
          {
            alert: 'HCCLParameterInconsistent',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EI0005"})',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'Ranks called a collective with inconsistent arguments (EI0005).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EI0005 event(s) in the last 10 minutes: the cross-rank consistency check',
                'at link setup found a different operator, count or data type on the peer.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclparameterinconsistent',
            },
          },
          // The runtime reports any out-of-memory as EL0004; the exporter counts
          // it as HCCL's (hccl_fault_events_total) only where HCCL allocated
          // (HCCL's own plog line, "requested by HCCL module", or
          // HcclAllocComResourceByTiling in the report's traceback); every
          // other EL0004 is ascend_cann_fault_events_total. The remedy is
          // HCCL_BUFFSIZE, not fewer QPs, so it is a separate alert.
          {
            alert: 'HCCLBufferAllocationFailed',
            expr: 'max without (stage, source) (hccl:fault_events:new10m{code="EL0004"})',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'The runtime could not allocate device memory HCCL requested for its buffers (EL0004).',
              description: std.join(' ', [
                '{{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} reported',
                '{{ $value | humanize }} EL0004 out-of-memory event(s) of HCCL in the last 10 minutes (HCCL module or',
                "HcclAllocComResourceByTiling): HCCL's buffers (2 × HCCL_BUFFSIZE per communicator) did not fit.",
                '{{- with printf "max(hccl_env_buffsize_bytes{instance=%q})" $labels.instance | query }}',
                'Largest HCCL_BUFFSIZE on the node: {{ . | first | value | humanize1024 }}B.{{ end }}',
                '{{- with printf "max(hccl_ccl_buffer_bytes{instance=%q})" $labels.instance | query }}',
                'Largest HCCL buffer total on one chip: {{ . | first | value | humanize1024 }}B.{{ end }}',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclbufferallocationfailed',
            },
          },
        ],
      },
      // Which pod holds each chip (pods collector, kubelet PodResources API).
      {
        name: 'hccl-exporter-pods',
        rules: [
          // The namespace and pod of every chip the kubelet assigned to exactly
          // one pod (all its containers), value 1. A chip split into vNPUs for
          // several pods names none: a per-chip alert then keeps its labels
          // rather than fail on a many-to-many match. Per-chip alerts join it
          // with `* on (job, instance, npu, chip) group_left (namespace, pod)`
          // and fall back to themselves with `or ignoring (namespace, pod)`, so
          // they still fire where no pod info exists (bare metal, systemd).
          $._hcclRecordingRules['hccl:npu_pod:unique'],
          // The same per settings set of a node, through the chips its
          // processes run on.
          $._hcclRecordingRules['hccl:settings_pod:unique'],
        ],
      },
      {
        name: 'hccl-exporter-capacity',
        rules: [
          // Fires only where link setup is still ahead: queue pairs HCCL will
          // create (bound="expected": the link sets HCCL's level-1 algorithms
          // still create, every remote rank after an AlltoAll/send-recv/MC2,
          // the next capture of a capturing process), or a cclBuffer HCCL allocates at a
          // communicator's first collective. A job whose links are all set up has
          // both at 0 (their memory is in HBM used already) and never alerts,
          // however full its chip is. `for: 0m`: the headroom goes negative
          // only minutes before the link setup that fails (the chip fills,
          // then the next collective links), so any wait costs the job owner
          // lead time. (keep_firing_for would add hysteresis, but vmalert
          // rejects the field.)
          {
            alert: 'NPULinkSetupHeadroomLow',
            expr: $._hcclPerChipJobOwner(|||
              hccl_link_setup_headroom_bytes%(hcclSelectorBraces)s < 0
              and ignoring (bound)
                (
                    hccl_link_setup_pending_queue_pairs{%(hcclSelectorComma)sbound="expected"} > 0
                  or ignoring (bound)
                    hccl_ccl_buffer_pending_bytes%(hcclSelectorBraces)s > 0
                )
            ||| % cfg),
            'for': '0m',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'An NPU does not have enough free HBM for the HCCL link setup still ahead on it.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}: free HBM minus the memory of',
                'the link setup HCCL will still do is {{ $value | humanize1024 }}B.',
                '{{- with printf "hccl_link_setup_pending_queue_pairs{instance=%q,npu=%q,chip=%q,bound=\\"expected\\"}" $labels.instance $labels.npu $labels.chip | query }}',
                'Queue pairs HCCL will still create: {{ . | first | value | humanize }}.{{ end }}',
                '{{- with printf "hccl_link_setup_queue_pair_memory_bytes{instance=%q,npu=%q,chip=%q,bound=\\"expected\\"}" $labels.instance $labels.npu $labels.chip | query }}',
                'Their memory: {{ . | first | value | humanize1024 }}B.{{ end }}',
                '{{- with printf "hccl_link_setup_queue_pair_memory_bytes{instance=%q,npu=%q,chip=%q,bound=\\"high\\"}" $labels.instance $labels.npu $labels.chip | query }}',
                'If every remote rank were linked: {{ . | first | value | humanize1024 }}B.{{ end }}',
                '{{- with printf "hccl_ccl_buffer_pending_bytes{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip | query }}',
                'cclBuffer still to allocate: {{ . | first | value | humanize1024 }}B.{{ end }}',
                '{{- with printf "hccl_link_setup_established_queue_pairs{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip | query }}',
                'Already set up (in HBM used): {{ . | first | value | humanize }} queue pairs.{{ end }}',
                '{{- with printf "ascend_npu_hbm_total_bytes{instance=%q,npu=%q,chip=%q} - ascend_npu_hbm_used_bytes{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip $labels.instance $labels.npu $labels.chip | query }}',
                'Free HBM: {{ . | first | value | humanize1024 }}B.{{ end }}',
                "EI0011 is likely when the job sets up these links (a new communicator's first collective, or a",
                'first collective of a new kind).',
                // Workload memory (docs/headroom.md): the link sets of an
                // earlier process of the same workload are counted from this
                // one's start; say when that process failed here.
                '{{- with printf "hccl_workload_link_setup_failure_timestamp_seconds{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip | query }}{{ with . | first }}',
                'This workload ran out of memory here before: {{ .Labels.code }}{{ with .Labels.resource }} resource[{{ . }}]{{ end }} at {{ .Value | humanizeTimestamp }} ({{ .Labels.stage }});',
                "the link sets it set up then are counted from this process's start.{{ end }}{{ end }}",
              ]),
              runbook_url: cfg.runbookURLBase + '#npulinksetupheadroomlow',
            },
          },
          // The device's QP table, not its HBM: HCCP refuses the 8193rd QP of
          // a device ("Exceeded the maximum QP limit", RS_QP_NUM_MAX), which
          // fails link setup with EI0007 resource[qp] however much HBM is free.
          {
            alert: 'NPUQueuePairSlotsExhausted',
            expr: $._hcclPerChipJobOwner(|||
              hccl_link_setup_queue_pair_slots_free{%(hcclSelectorComma)sbound="expected"} < 0
            ||| % cfg),
            'for': '0m',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: "The HCCL link setup still ahead on an NPU needs more queue pairs than the device's QP table has left.",
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}:',
                'the queue pairs HCCL will still create do not fit in the QP table of the device (8192 per device): {{ $value | humanize }} slots left after them.',
                '{{- with printf "ascend_roce_active_queue_pairs{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip | query }}',
                'Live QPs: {{ . | first | value | humanize }}.{{ end }}',
                'The link setup will fail with EI0007 resource[qp] ("Exceeded the maximum QP limit") whatever HBM is free.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuqueuepairslotsexhausted',
            },
          },
          // A lint (severity info: it never pages and no route need send it
          // anywhere urgent): one alert per settings set per node; every
          // process of a job on a node prints the same settings, so a
          // 64-rank job on 8 nodes raises 8 alerts in one notification
          // group, not 64.
          {
            alert: 'HCCLQPsPerConnectionAboveRecommended',
            // The pod of the settings set (hccl:settings_pod:unique), for the
            // job owner's route; without pod information it carries
            // hccl_job="node/<instance>" instead.
            expr: |||
              max without (%(targetLabelsCSV)s) (hccl_env_rdma_qps_per_connection%(hcclSelectorBraces)s > %(qpsPerConnectionLimit)d)
              * on (job, instance, settings) group_left (namespace, pod) hccl:settings_pod:unique
              or ignoring (namespace, pod, %(jobLabel)s)
              label_replace(
                max without (%(targetLabelsCSV)s) (hccl_env_rdma_qps_per_connection%(hcclSelectorBraces)s > %(qpsPerConnectionLimit)d),
                "%(jobLabel)s", "node/$1", "instance", "(.*)"
              )
            ||| % cfg,
            'for': '1m',
            labels: {
              severity: 'info',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'A training job uses more than %(qpsPerConnectionLimit)d queue pairs per connection.' % cfg,
              description: std.join(' ', [
                '{{ with printf "count(hccl_process_info{instance=%%q,settings=%%q})" $labels.instance $labels.settings | query }}{{ . | first | value | humanize }}{{ else }}The{{ end }}',
                'process(es)',
                '{{- with printf "hccl_process_info{instance=%%q,settings=%%q}" $labels.instance $labels.settings | query }} ({{ . | first | label "process" }}){{ end }}',
                'of settings set {{ $labels.settings }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} run with HCCL_RDMA_QPS_PER_CONNECTION={{ $value }} (allowed 1–32,',
                'recommended 1–%(qpsPerConnectionLimit)d): every RoCE connection creates that many queue pairs plus one, 0.25–3 MiB of HBM each,',
                'with no guaranteed speed-up above %(qpsPerConnectionLimit)d, and EI0011 becomes likely.',
              ]) % cfg,
              runbook_url: cfg.runbookURLBase + '#hcclqpsperconnectionaboverecommended',
            },
          },
        ],
      },
      // Cross-node rules: they compare the members of a communicator on all
      // nodes, so they need every node in one evaluation. With sharded
      // Prometheus servers evaluate this group in a global ruler (vmalert,
      // Thanos Ruler, Mimir ruler) and the others where the nodes are
      // scraped: alerts/sharded/ holds the two halves (docs/scale.md).
      {
        name: 'hccl-exporter-cluster',
        rules: [
          // Settings sets the members of each communicator run, over all nodes:
          // the communicator identifier is the same on every node of a job and
          // unique to it, so this needs no cluster label and never compares two
          // jobs. Processes whose logs printed none of the set's variables
          // (settings="") are left out: unknown is not different.
          $._hcclRecordingRules['communicator:hccl_settings_sets:count'],
          // The description names the variables that differ: those of the
          // set (config consistentVariables) with more than one value among
          // the communicator's settings sets (hccl_env_info of the sets; the
          // runbook's query shows the values).
          {
            alert: 'HCCLSettingsInconsistentInCommunicator',
            // Routing: hccl_job is the communicator (as on the fault alerts),
            // and namespace the one namespace the communicator's settings
            // sets run in (hccl:settings_pod:unique on each node), where
            // there is one; the job owner's route matches either.
            expr: |||
              label_replace(
                (communicator:hccl_settings_sets:count > 1)
                * on (communicator) group_left (namespace) (
                  %(commNS)s
                  and on (communicator) (count by (communicator) (%(commNS)s) == 1)
                )
                or on (communicator)
                (communicator:hccl_settings_sets:count > 1),
                "%(jobLabel)s", "$1", "communicator", "(.+)"
              )
            ||| % (cfg { commNS: 'max by (communicator, namespace) (hccl_communicator_info{%(hcclSelectorComma)ssettings!=""} * on (job, instance, settings) group_left (namespace) hccl:settings_pod:unique)' % cfg }),
            'for': '5m',
            labels: {
              severity: 'warning',
              audience: 'job-owner',
            },
            annotations: {
              summary: 'Members of one HCCL communicator run different settings.',
              description: std.join(' ', [
                'The members of communicator {{ $labels.communicator }} run {{ $value }} different settings sets:',
                '{{- range printf "count by (settings) (count by (settings, instance) (hccl_communicator_info{' + selQ + 'communicator=%q,settings!=\\"\\"}))" $labels.communicator | query | sortByLabel "settings" }}',
                '[{{ .Labels.settings }} on {{ .Value }} node(s)]{{ end }}. They differ in:',
                '{{- with printf "count by (variable) (count by (variable, value) (max by (settings, variable, value) (hccl_env_info{' + selQ + 'variable=~\\"' + consistentRE + '\\"}) * on (settings) group_left () max by (settings) (hccl_communicator_info{' + selQ + 'communicator=%q}))) > 1" $labels.communicator | query }}{{ range sortByLabel "variable" . }}',
                '{{ .Labels.variable }} ({{ .Value }} values);{{ end }}{{ else }} no variable in value, but in which',
                'variables their builds print (mixed CANN versions?);{{ end }}',
                'HCCL requires these to agree on every rank of a communicator: expect link setup to fail or',
                'time out (EI0005, EI0006), or ranks to wait for each other until HCCL_EXEC_TIMEOUT.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclsettingsinconsistentincommunicator',
            },
          },
        ],
      },
      // RoCE NICs of the NPUs (hccn collector, hccn_tool). docs/hccn.md.
      {
        name: 'hccl-exporter-network',
        rules: [
          // Only chips a process runs on: a single-server inference job needs
          // no RoCE, and a port without an optical module is DOWN by design.
          {
            alert: 'RoCELinkDown',
            expr: $._hcclPerChip(|||
              ascend_roce_link_up%(hcclSelectorBraces)s == 0
              and on (job, instance, npu, chip)
                count by (job, instance, npu, chip) (ascend_npu_process_memory_bytes%(hcclSelectorBraces)s)
            ||| % cfg),
            'for': '2m',
            labels: {
              severity: 'critical',
              audience: 'infra',
            },
            annotations: {
              summary: 'The RoCE link of an NPU chip with a running process is DOWN.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}: hccn_tool has reported its',
                'RoCE port DOWN for 2 minutes while',
                '{{- with printf "count(ascend_npu_process_memory_bytes{instance=%q,npu=%q,chip=%q})" $labels.instance $labels.npu $labels.chip | query }}',
                '{{ . | first | value }}{{ end }} process(es) run on the chip. HCCL link setup to other servers fails',
                '(EI0009 "The network port is down", EJ0002, EI0006) and running transfers stop. Check the optical module, the cable and the switch port.',
              ]),
              runbook_url: cfg.runbookURLBase + '#rocelinkdown',
            },
          },
          // The same on a chip no process runs on, with an optical module
          // (a port without one is DOWN by design): the best time to fix a
          // link is before a job is scheduled on it.
          {
            alert: 'RoCELinkDown',
            expr: $._hcclPerChip(|||
              ascend_roce_link_up%(hcclSelectorBraces)s == 0
              and on (job, instance, npu, chip) (ascend_roce_optical_present%(hcclSelectorBraces)s == 1)
              unless on (job, instance, npu, chip)
                count by (job, instance, npu, chip) (ascend_npu_process_memory_bytes%(hcclSelectorBraces)s)
            ||| % cfg),
            'for': cfg.idleLinkDownFor,
            labels: {
              severity: 'warning',
              audience: 'infra',
            },
            annotations: {
              summary: 'The RoCE link of an idle NPU chip is DOWN.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}: hccn_tool has reported its RoCE port DOWN for %s' % cfg.idleLinkDownFor,
                'with an optical module present and no process on the chip. The next job scheduled on it fails link setup',
                '(EI0009 "The network port is down"). Check the optical module, the cable and the switch port now.',
              ]),
              runbook_url: cfg.runbookURLBase + '#rocelinkdown',
            },
          },
          // increase() ignores the count a chip already had when the exporter
          // started, and survives a driver reload or `-link_stat -c`.
          {
            alert: 'RoCELinkFlapping',
            expr: $._hcclPerChip(|||
              increase(ascend_roce_link_down_events_total%(hcclSelectorBraces)s[10m]) > 0
            ||| % cfg),
            'for': '1m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'The RoCE link of an NPU chip went down and up again.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}: about {{ printf "%.0f" $value }}',
                'link-down event(s) in the last 10 minutes (hccn_tool -link_stat). Each one makes HCCL link setup and',
                'transfers on the port retry or time out.',
                '{{- with printf "ascend_roce_link_up{instance=%q,npu=%q,chip=%q}" $labels.instance $labels.npu $labels.chip | query }}',
                'The link is {{ if eq (. | first | value) 1.0 }}UP{{ else }}DOWN{{ end }} now.{{ end }}',
                "Check the optical module (power, temperature), the cable and the switch port's error counters.",
              ]),
              runbook_url: cfg.runbookURLBase + '#rocelinkflapping',
            },
          },
          // Init (no detect IP configured, or not probed yet) and Detect ip set
          // (just configured) are configuration states, not faults.
          {
            alert: 'RoCENetworkUnhealthy',
            expr: $._hcclPerChip(|||
              ascend_roce_network_health{%(hcclSelectorComma)sstatus!~"Success|Init|Detect ip set"} == 1
            ||| % cfg),
            'for': '5m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: "An NPU chip's RoCE port cannot reach its detect IP ({{ $labels.status }}).",
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}: hccn_tool -net_health has',
                'reported {{ $labels.status }} for 5 minutes: the port does not reach the address set with',
                'hccn_tool -netdetect (usually its gateway). HCCL link setup to other servers is likely to time out (EI0006).',
              ]),
              runbook_url: cfg.runbookURLBase + '#rocenetworkunhealthy',
            },
          },
        ],
      },
      {
        name: 'hccl-exporter-health',
        rules: [
          {
            alert: 'NPUHealthDegraded',
            expr: $._hcclPerChip(|||
              ascend_npu_health_status{%(hcclSelectorComma)sstatus!~"OK|Critical"} == 1
            ||| % cfg),
            'for': '5m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'An NPU chip reports health {{ $labels.status }}.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} has reported health',
                '{{ $labels.status }} for 5 minutes (npu-smi info).',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhealthdegraded',
            },
          },
          {
            alert: 'NPUHealthDegraded',
            expr: $._hcclPerChip(|||
              ascend_npu_health_status{%(hcclSelectorComma)sstatus="Critical"} == 1
            ||| % cfg),
            'for': '1m',
            labels: {
              severity: 'critical',
            },
            annotations: {
              summary: 'An NPU chip reports health Critical.',
              description: std.join(' ', [
                'NPU {{ $labels.npu }} chip {{ $labels.chip }} on {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }} has reported health',
                'Critical for 1 minute (npu-smi info); jobs on it will fail.',
              ]),
              runbook_url: cfg.runbookURLBase + '#npuhealthdegraded',
            },
          },
          // The runbook's skew check as an alert. The writers of a log root print
          // their times in one zone (inferred from file modification times) and
          // the exporter reads them in another (a fixed --cannlog.timezone, or
          // auto before a root could be inferred): every fault time lands that
          // far off, and an event read hours in the past never fires a fault
          // alert. The second branch catches what no offset explains: fault
          // times in the future.
          {
            alert: 'CANNLogTimezoneMismatch',
            expr: |||
              max without (%(targetLabelsCSV)s) (
                hccl_exporter_log_timezone_offset_seconds%(hcclSelectorBraces)s != hccl_exporter_log_timezone_applied_offset_seconds%(hcclSelectorBraces)s
              )
              or
              (
                max by (job, instance) (hccl_fault_last_event_timestamp_seconds%(hcclSelectorBraces)s) - time() > 300
                and on (job, instance)
                  count by (job, instance) (hccl_fault_last_event_timestamp_seconds%(hcclSelectorBraces)s - time() > 300) >= %(futureFaultSeries)d
              )
            ||| % cfg,
            'for': '15m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'CANN log times on a node are read in the wrong time zone; fault alerts may not fire.',
              description: std.join(' ', [
                '{{ if $labels.root }}The CANN logs under {{ $labels.root }} on {{ $labels.instance }} are printed in UTC',
                '{{- with printf "hccl_exporter_log_timezone_offset_seconds{instance=%q,root=%q}" $labels.instance $labels.root | query }}{{ if ge (. | first | value) 0.0 }}+{{ end }}{{ . | first | value | humanizeDuration }}{{ end }}',
                'but read in UTC',
                '{{- with printf "hccl_exporter_log_timezone_applied_offset_seconds{instance=%q,root=%q}" $labels.instance $labels.root | query }}{{ if ge (. | first | value) 0.0 }}+{{ end }}{{ . | first | value | humanizeDuration }}{{ end }}:',
                'every fault time is off by the difference, and a fresh EI0011 can look hours old and page no one.',
                "Run the exporter with --cannlog.timezone=auto (the default) or the writers' zone.",
                '{{- else }}A fault event on {{ $labels.instance }} is dated {{ $value | humanizeDuration }} in the future:',
                "the exporter reads log times in the wrong zone or the node's clock is off. Check --cannlog.timezone and NTP.{{ end }}",
              ]),
              runbook_url: cfg.runbookURLBase + '#cannlogtimezonemismatch',
            },
          },
          // The exporter is blind to processes that run on a chip: their
          // settings, link setups and plog faults never reach any other
          // alert, and the chip's headroom counts none of their links.
          // 10 minutes: discovery follows npu-smi runs, and a process may
          // take a while to write its first plog.
          {
            alert: 'HCCLLogsNotVisible',
            expr: $._hcclPerChip(|||
              ascend_npu_processes{%(hcclSelectorComma)scann_logs="missing"} > 0
            ||| % cfg),
            'for': '10m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'hccl_exporter cannot read the CANN logs of processes on an NPU chip.',
              description: std.join(' ', [
                '{{ $value }} process(es) on NPU {{ $labels.npu }} chip {{ $labels.chip }} of {{ $labels.instance }}{{ with $labels.pod }} (pod {{ $labels.namespace }}/{{ . }}){{ end }}',
                'have written no CANN log the exporter can read for 10 minutes: their HCCL settings, link setups and EI0011',
                'are invisible, and the headroom of the chip counts none of their link setups.',
                "Mount the host's /proc and run with --path.procfs (as root), or give --cannlog.root their log directory.",
              ]),
              runbook_url: cfg.runbookURLBase + '#hccllogsnotvisible',
            },
          },
          // A failed npu-smi run shows as hccl_exporter_npu_smi_up 0 even when the
          // collector itself reports success; both count as failing.
          {
            alert: 'HCCLExporterCollectorFailing',
            expr: |||
              max without (%(targetLabelsCSV)s) (
                  hccl_exporter_collector_success%(hcclSelectorBraces)s == 0
                or
                  label_replace(hccl_exporter_npu_smi_up%(hcclSelectorBraces)s == 0, "collector", "npusmi", "", "")
                or
                  label_replace(hccl_exporter_hccn_tool_up%(hcclSelectorBraces)s == 0, "collector", "hccn", "", "")
                or
                  label_replace(hccl_exporter_pod_resources_up%(hcclSelectorBraces)s == 0, "collector", "pods", "", "")
              )
            ||| % cfg,
            'for': '15m',
            labels: {
              severity: 'warning',
            },
            annotations: {
              summary: 'An hccl_exporter collector (or the npu-smi, hccn_tool or kubelet source it runs) has been failing for 15 minutes.',
              description: std.join(' ', [
                'Collector {{ $labels.collector }} on {{ $labels.instance }} has failed every scrape for 15 minutes:',
                "its metrics are missing and the alerts built on them cannot fire. See the exporter's log.",
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexportercollectorfailing',
            },
          },
        ],
      },
    ],
  },
}
