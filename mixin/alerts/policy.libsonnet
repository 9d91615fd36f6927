// The alerting policy (docs/runbooks.md, "Who gets which alert"), applied by
// label so that alerts added later slot in without a list of names:
//
// - `severity` says what pages: `critical` wakes someone (EI0011 and
//   EI0007 resource[qp], which killed a job; what infrastructure can fix:
//   a RoCE port down at link setup, hardware, the exporter blind
//   fleet-wide, several jobs failing with infrastructure's codes);
//   `warning` goes to a channel; `info` (lints) to a channel or nowhere.
// - `audience` says whose pager or channel: `job-owner` (the job's own
//   settings, memory and faults), `infra` (nodes, NPUs, the network, the
//   exporter itself) or `none` (an inhibitor that notifies no one). An
//   alert that sets none is `infra`'s: someone triages it. Every shipped
//   route matches `audience` before `severity`, so a job owner's page never
//   reaches infra's pager and an infra page never reaches a tenant.
// - Job-owner alerts carry the training pod's `namespace` (and `pod`) where
//   the exporter or the kubelet names it, for routing per team; no alert
//   carries the exporter's own pod (config targetLabels).
// - Consequences (the waiting and either codes of the fault-code table:
//   _config.consequenceCodes) are inhibited per job (cluster and hccl_job,
//   never empty), not per node, for as long as the peers' timers may still
//   run (HCCLJobFailed below), which only a rank's own failure
//   (_config.ownCodes) starts.
//
// This file is imported last: the default audience applies to every group.
{
  local cfg = $._config,
  local own = std.join('|', cfg.ownCodes),
  local jobBy = std.join(', ', cfg.jobLabels),
  local infra = std.join('|', cfg.infraCodes),

  prometheusAlerts+:: {
    groups: [
      g {
        rules: [
          local withAudience =
            if std.objectHas(r, 'alert') && !std.objectHas(r.labels, 'audience')
            then r { labels+: { audience: 'infra' } }
            else r;
          // Groups whose series are all the node's own (no training pod):
          // their alerts drop the exporter target's labels here, so that
          // alerts appended to them need not.
          if std.objectHas(r, 'alert') && std.member(cfg.nodeOnlyGroups, g.name)
          then withAudience { expr: 'max without (%s) (\n%s)' % [cfg.targetLabelsCSV, std.rstripChars(r.expr, '\n')] }
          else withAudience
          for r in g.rules
        ],
      }
      for g in super.groups
    ] + [
      // Fault codes per job over a window, and what follows from them. In a
      // global ruler with sharded Prometheus servers (alerts/sharded/): it
      // compares the nodes of a cluster.
      {
        name: 'hccl-exporter-job-failures',
        rules: [
          // Fires (to no receiver) from a rank's own failure until the
          // timers of the job's peers have surely run out: the last such
          // event on any node of the job, plus the job's longest
          // HCCL_CONNECT_TIMEOUT + 20 s (link setup waits) or
          // HCCL_EXEC_TIMEOUT (collectives wait), plus the 10 minutes a
          // fault alert fires for an event. Alertmanager inhibits the
          // consequences (consequenceCodes) of the same job while it fires:
          // with HCCL_CONNECT_TIMEOUT=1200 the peers' EI0006 arrive about
          // 20 minutes after the EI0011 alert resolved. Without settings in
          // the logs, HCCL's defaults (120 s, 1836 s) apply.
          $._hcclRecordingRules['hccl_job:hccl_fault_last_event_timestamp_seconds:max'],
          // Fires (to no receiver) from a rank's own failure (config
          // ownCodes) until the timers of the job's peers have surely run
          // out: the job's most recent such event on any node, plus the
          // cluster's longest
          // HCCL_CONNECT_TIMEOUT + 20 s (link setup waits) or
          // HCCL_EXEC_TIMEOUT (collectives wait), plus the 10 minutes a
          // fault alert fires for an event. Alertmanager inhibits the
          // consequences (config consequenceCodes) of the same job while it
          // fires: with HCCL_CONNECT_TIMEOUT=1200 the peers' EI0006 arrive
          // about 20 minutes after the EI0011 alert resolved. A job that fails
          // again later fires it again at its new fault. Without settings in
          // the logs, HCCL's defaults (120 s, 1836 s) apply.
          {
            alert: 'HCCLJobFailed',
            expr: |||
              min by (%(jobBy)s) (
                time() - %(last)s
              )
              < on (%(clusterLabel)s) group_left ()
              (
                max by (%(clusterLabel)s) (
                    label_replace(hccl_env_connect_timeout_seconds%(hcclSelectorBraces)s + 20, "timer", "connect", "", "")
                  or
                    label_replace(hccl_env_exec_timeout_seconds%(hcclSelectorBraces)s, "timer", "exec", "", "")
                )
                or on (%(clusterLabel)s)
                  max by (%(clusterLabel)s) (hccl_fault_last_event_timestamp_seconds%(hcclSelectorBraces)s) * 0 + %(defaultWaitSeconds)d
              ) + 600
            ||| % (cfg { jobBy: jobBy, last: $._hcclJobLastEvent('code=~"%s"' % own), defaultWaitSeconds: std.max(cfg.defaultConnectTimeoutSeconds + 20, cfg.defaultExecTimeoutSeconds) }),
            labels: {
              severity: 'none',
              audience: 'none',
              inhibits: 'job-consequences',
            },
            annotations: {
              summary: "A job failed with a root-cause HCCL fault; its peers' timeouts are held back.",
              description: std.join(' ', [
                'A root-cause fault code was reported {{ $value | humanizeDuration }} ago in job {{ $labels.%(jobLabel)s }}' % cfg,
                '{{ with $labels.%(clusterLabel)s }}of cluster {{ . }}{{ end }}. Alertmanager inhibits its consequences' % cfg,
                "(the fault-code table's waiting and either codes) in the same job while this fires; it notifies no one.",
              ]),
              runbook_url: cfg.runbookURLBase + '#hccljobfailed',
            },
          },
          // Several jobs of a cluster failing with a root cause
          // infrastructure fixes (config infraCodes: the RoCE port down at
          // link setup) in one window points at the cluster: page. Distinct
          // jobs, not nodes or events: one job on 64 nodes is one; an
          // operator's EZ9999, the runtime's EE1001 or a job's own EI0011
          // never count.
          {
            alert: 'HCCLJobFailuresAcrossCluster',
            expr: |||
              count by (%(clusterLabel)s) (
                count by (%(jobBy)s) (
                  time() - %(last)s < %(clusterFailureWindowSeconds)d
                )
              ) >= %(clusterFailureJobs)d
            ||| % (cfg { jobBy: jobBy, last: $._hcclJobLastEvent('code=~"%s"' % infra) }),
            'for': cfg.clusterFailureFor,
            labels: {
              severity: 'critical',
              audience: 'infra',
            },
            annotations: {
              summary: 'Several jobs of a cluster failed with RoCE link faults within %(clusterFailureWindowSeconds)d s.' % cfg,
              description: std.join(' ', [
                '{{ with $labels.%(clusterLabel)s }}Cluster {{ . }}{{ else }}Nodes without a cluster label{{ end }}:' % cfg,
                '{{ $value }} job(s) reported %s in the last %d s' % [std.join(' or ', cfg.infraCodes), cfg.clusterFailureWindowSeconds],
                '(%(clusterFailureJobs)d jobs page): RoCE ports or links down at link setup.' % cfg,
                "One job failing is its owner's to fix; this many points at the fabric: optical modules, switch ports, NIC addresses.",
              ]),
              runbook_url: cfg.runbookURLBase + '#hccljobfailuresacrosscluster',
            },
          },
        ],
      },
      // The exporter itself: without it no other alert of a node can fire.
      {
        name: 'hccl-exporter-self',
        rules: [
          // `up` of the scrape jobs that have served hccl_exporter in the
          // last day, so the rule needs no job name and an exporter down
          // since its start still counts once it was ever up.
          {
            alert: 'HCCLExporterDown',
            expr: |||
              max without (%(targetLabelsCSV)s) (
                up%(hcclSelectorBraces)s == 0
                and on (job)
                  count by (job) (last_over_time(hccl_exporter_build_info%(hcclSelectorBraces)s[1d]))
              )
            ||| % cfg,
            'for': '5m',
            labels: {
              severity: 'warning',
              audience: 'infra',
            },
            annotations: {
              summary: 'hccl_exporter on a node cannot be scraped.',
              description: std.join(' ', [
                'Prometheus has failed to scrape {{ $labels.instance }} (job {{ $labels.job }}) for 5 minutes:',
                'no NPU, HCCL fault or headroom alert can fire for this node until it is back.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexporterdown',
            },
          },
          // The exporter blind fleet-wide: most of a scrape job's targets
          // down at once (a broken rollout, a changed image, the node
          // selector) leaves no node with HCCL alerts: infrastructure's page.
          {
            alert: 'HCCLExporterDownAcrossFleet',
            expr: |||
              count by (job) (
                up%(hcclSelectorBraces)s == 0
                and on (job)
                  count by (job) (last_over_time(hccl_exporter_build_info%(hcclSelectorBraces)s[1d]))
              )
              / on (job)
              count by (job) (
                up%(hcclSelectorBraces)s
                and on (job)
                  count by (job) (last_over_time(hccl_exporter_build_info%(hcclSelectorBraces)s[1d]))
              )
              > %(fleetDownRatio)g
              and on (job)
              count by (job) (up%(hcclSelectorBraces)s == 0) >= %(fleetDownMinTargets)d
            ||| % cfg,
            'for': '5m',
            labels: {
              severity: 'critical',
              audience: 'infra',
            },
            annotations: {
              summary: 'Most hccl_exporter targets of a scrape job cannot be scraped: HCCL alerts are blind fleet-wide.',
              description: std.join(' ', [
                '{{ $value | humanizePercentage }} of the targets of job {{ $labels.job }} have been down for 5 minutes',
                '(more than %(fleetDownRatio)g and at least %(fleetDownMinTargets)d): no NPU, HCCL fault or headroom alert can' % cfg,
                'fire for those nodes. Look for a failed rollout, image or node selector of the exporter.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexporterdownacrossfleet',
            },
          },
          {
            alert: 'HCCLExporterLabelValuesDropped',
            expr: 'max without (%(targetLabelsCSV)s) (increase(hccl_exporter_label_values_dropped_total%(hcclSelectorBraces)s[30m]) > 0)' % cfg,
            labels: {
              severity: 'warning',
              audience: 'infra',
            },
            annotations: {
              summary: 'hccl_exporter dropped values of the {{ $labels.label }} label at its cap.',
              description: std.join(' ', [
                '{{ $labels.instance }} dropped {{ $value | humanize }} new value(s) of the {{ $labels.label }} label in the',
                'last 30 minutes: the cap on distinct values (--cannlog.max-pids, --cannlog.max-communicators,',
                '--cannlog.max-codes, --cannlog.max-fault-pods, --cannlog.max-modules) was reached, and series of the',
                'processes or pods beyond it are missing, so their alerts cannot fire.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexporterlabelvaluesdropped',
            },
          },
          {
            alert: 'HCCLExporterStateFileWriteErrors',
            expr: 'max without (%(targetLabelsCSV)s) (increase(hccl_exporter_log_state_file_write_errors_total%(hcclSelectorBraces)s[10m]) > 0)' % cfg,
            'for': '10m',
            labels: {
              severity: 'warning',
              audience: 'infra',
            },
            annotations: {
              summary: 'hccl_exporter cannot write its state file.',
              description: std.join(' ', [
                '{{ $labels.instance }} has failed to write --cannlog.state-file for 10 minutes',
                '({{ $value | humanize }} failed checkpoint(s) in the last 10 minutes). Its counters and read offsets',
                'are not saved: a restart now reads again what was read since the last checkpoint.',
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexporterstatefilewriteerrors',
            },
          },
          // npu-smi's pids are not the host's /proc's: discovery, the pods
          // of processes, headroom and NPUMemoryHeldWithoutProcess cannot
          // trust them, and nothing else says so (collectors/npusmi/pidns.go).
          {
            alert: 'HCCLExporterNPUSMIForeignPIDNamespace',
            expr: 'max without (%(targetLabelsCSV)s) (hccl_exporter_npu_smi_foreign_pid_namespace%(hcclSelectorBraces)s == 1)' % cfg,
            'for': '10m',
            labels: {
              severity: 'warning',
              audience: 'infra',
            },
            annotations: {
              summary: "npu-smi's process ids are not the host's: hccl_exporter cannot find the NPU processes.",
              description: std.join(' ', [
                'On {{ $labels.instance }} none of the pids npu-smi lists is the process of that name under --path.procfs',
                'for 10 minutes (hccl_exporter_npu_smi_foreign_pid_namespace): npu-smi reports pids of another pid',
                "namespace. The processes' CANN logs are not discovered, pods are not named from them, and the",
                'headroom and NPUMemoryHeldWithoutProcess rest on the wrong processes. Run the exporter with the',
                "host's /proc as --path.procfs (the DaemonSet's /host/proc) or with hostPID.",
              ]),
              runbook_url: cfg.runbookURLBase + '#hcclexporternpusmiforeignpidnamespace',
            },
          },
        ],
      },
    ],
  },
}
