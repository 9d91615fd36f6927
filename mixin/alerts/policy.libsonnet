// The alerting policy (docs/runbooks.md, "Who gets which alert"), applied by
// label so that alerts added later slot in without a list of names:
//
// - `audience` says who can act: `job-owner` (the job's own settings, memory
//   and logs: warnings before the job fails, fault codes after), `infra`
//   (nodes, NPUs, the network, the exporter itself, and several jobs or
//   nodes failing at once) or `none` (an inhibitor that notifies no one).
//   An alert that sets none is `infra`'s: someone triages it.
// - `severity: critical` pages, but only with `audience: infra`; the job
//   owner's alerts are never routed to the pager.
// - Job-owner alerts carry the pod's `namespace` (and `pod`) where the
//   kubelet says which pod holds the chip, for routing per team.
// - Consequences (fault codes a rank raises because a peer failed:
//   _config.waitingCodes) are inhibited per job, not per node, for as long as
//   the peers' timers may still run (HCCLJobFailed below).
//
// This file is imported last: the default audience applies to every group.
{
  local cfg = $._config,
  local waiting = std.join('|', cfg.waitingCodes),
  local jobBy = std.join(', ', cfg.jobLabels),

  prometheusAlerts+:: {
    groups: [
      g {
        rules: [
          if std.objectHas(r, 'alert') && !std.objectHas(r.labels, 'audience')
          then r { labels+: { audience: 'infra' } }
          else r
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
          // Fires (to no receiver) from a root-cause fault code until the
          // timers of the job's peers have surely run out: the last such
          // event on any node of the job, plus the job's longest
          // HCCL_CONNECT_TIMEOUT + 20 s (link setup waits) or
          // HCCL_EXEC_TIMEOUT (collectives wait), plus the 10 minutes a
          // fault alert fires for an event. Alertmanager inhibits the
          // consequences (waiting codes) of the same job while it fires:
          // with HCCL_CONNECT_TIMEOUT=1200 the peers' EI0006 arrive about
          // 20 minutes after the EI0011 alert resolved. Without settings in
          // the logs, HCCL's defaults (120 s, 1836 s) apply.
          {
            alert: 'HCCLJobFailed',
            expr: |||
              max by (%(jobBy)s) (
                time() - hccl_fault_last_event_timestamp_seconds{%(hcclSelectorComma)scode!~"%(waiting)s"}
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
            ||| % (cfg { jobBy: jobBy, waiting: waiting, defaultWaitSeconds: std.max(cfg.defaultConnectTimeoutSeconds + 20, cfg.defaultExecTimeoutSeconds) }),
            labels: {
              severity: 'none',
              audience: 'none',
              inhibits: 'job-consequences',
            },
            annotations: {
              summary: "A job failed with a root-cause HCCL fault; its peers' timeouts are held back.",
              description: std.join(' ', [
                'A root-cause fault code was reported {{ $value | humanizeDuration }} ago in',
                '{{ with $labels.namespace }}namespace {{ . }}{{ else }}a job without pod information{{ end }}',
                '{{ with $labels.%(clusterLabel)s }}of cluster {{ . }}{{ end }}. Alertmanager inhibits the waiting codes' % cfg,
                '(%s) of the same job while this fires; it notifies no one.' % std.join(', ', cfg.waitingCodes),
              ]),
              runbook_url: cfg.runbookURLBase + '#hccljobfailed',
            },
          },
          // Several jobs, or several nodes, failing with a root-cause code
          // in one window points at the cluster (driver, fabric, a shared
          // setting) rather than at one job's configuration: page.
          {
            alert: 'HCCLJobFailuresAcrossCluster',
            expr: |||
              count by (%(clusterLabel)s) (
                count by (%(jobBy)s) (
                  time() - hccl_fault_last_event_timestamp_seconds{%(hcclSelectorComma)scode!~"%(waiting)s"} < %(clusterFailureWindowSeconds)d
                )
              ) >= %(clusterFailureJobs)d
              or
              count by (%(clusterLabel)s) (
                count by (%(clusterLabel)s, instance) (
                  time() - hccl_fault_last_event_timestamp_seconds{%(hcclSelectorComma)scode!~"%(waiting)s"} < %(clusterFailureWindowSeconds)d
                )
              ) >= %(clusterFailureNodes)d
            ||| % (cfg { jobBy: jobBy, waiting: waiting }),
            labels: {
              severity: 'critical',
              audience: 'infra',
            },
            annotations: {
              summary: 'Several jobs or nodes of a cluster failed with HCCL faults within %(clusterFailureWindowSeconds)d s.' % cfg,
              description: std.join(' ', [
                '{{ with $labels.%(clusterLabel)s }}Cluster {{ . }}{{ else }}Nodes without a cluster label{{ end }}:' % cfg,
                'root-cause HCCL fault codes in the last %(clusterFailureWindowSeconds)d s from' % cfg,
                '{{ with printf "count(count by (namespace) (time() - hccl_fault_last_event_timestamp_seconds{%(clusterLabel)s=%%q,code!~\\"%(waiting)s\\"} < %(clusterFailureWindowSeconds)d))" $labels.%(clusterLabel)s | query }}{{ . | first | value }}{{ end }} job(s) (namespaces) on' % (cfg { waiting: waiting }),
                '{{ with printf "count(count by (instance) (time() - hccl_fault_last_event_timestamp_seconds{%(clusterLabel)s=%%q,code!~\\"%(waiting)s\\"} < %(clusterFailureWindowSeconds)d))" $labels.%(clusterLabel)s | query }}{{ . | first | value }}{{ end }} node(s)' % (cfg { waiting: waiting }),
                '(%(clusterFailureJobs)d jobs or %(clusterFailureNodes)d nodes page).' % cfg,
                "One job failing is its owner's to fix; this many points at the cluster: driver, fabric, a shared image or setting.",
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
              up%(hcclSelectorBraces)s == 0
              and on (job)
                count by (job) (last_over_time(hccl_exporter_build_info%(hcclSelectorBraces)s[1d]))
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
          {
            alert: 'HCCLExporterLabelValuesDropped',
            expr: 'increase(hccl_exporter_label_values_dropped_total%(hcclSelectorBraces)s[30m]) > 0' % cfg,
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
            expr: 'increase(hccl_exporter_log_state_file_write_errors_total%(hcclSelectorBraces)s[10m]) > 0' % cfg,
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
        ],
      },
    ],
  },
}
