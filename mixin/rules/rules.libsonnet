// Recording rules. They are evaluated in the same group as the alerts that
// read them (see alerts/alerts.libsonnet), so an alert never lags its
// recording rule by one evaluation; prometheusRules therefore holds no groups
// of its own, and these objects are shared through _hcclRecordingRules.
{
  local cfg = $._config,

  // Helpers the alerts share (hidden fields: functions of PromQL text).
  //
  // _hcclPerChipJobOwner(x): _hcclPerChip for the job owner's alerts:
  // where no pod holds the chip (bare metal, systemd) the alert carries
  // hccl_job="node/<instance>", as the fault alerts do, so every job-owner
  // alert has a routing key (docs/runbooks.md, "Routing labels").
  _hcclPerChipJobOwner(x):: |||
    max without (%(targetLabelsCSV)s) (
      %(x)s
    )
    * on (job, instance, npu, chip) group_left (namespace, pod) hccl:npu_pod:unique
    or ignoring (namespace, pod, %(jobLabel)s)
    label_replace(
      max without (%(targetLabelsCSV)s) (
        %(x)s
      ),
      "%(jobLabel)s", "node/$1", "instance", "(.*)"
    )
  ||| % (cfg { x: x }),
  // _hcclWithJob(x): x with an empty hccl_job filled with "node/<instance>"
  // (faults the logs tie to no communicator and no pod: bare metal), so a
  // job is never the empty string and Alertmanager's inhibition, which
  // compares missing labels as equal, never joins two jobs.
  _hcclWithJob(x):: |||
    label_replace(
      label_replace(
        label_join(%(x)s, "hccl_job_or_node", ";", "%(jobLabel)s", "instance"),
        "%(jobLabel)s", "node/$1", "hccl_job_or_node", ";(.+)"
      ),
      "hccl_job_or_node", "", "hccl_job_or_node", ".*"
    )
  ||| % (cfg { x: x }),
  // _hcclNoTarget(x): x without the target labels of the exporter's own pod
  // (config targetLabels), keeping a training pod's namespace, pod and
  // container that the exporter exported (honorLabels). A series whose
  // namespace and pod are those of the exporter's own target (its
  // hccl_exporter_build_info) had none of its own.
  _hcclNoTarget(x):: |||
    max without (service, endpoint) (
      %(x)s
      unless on (job, instance, namespace, pod) hccl_exporter_build_info%(hcclSelectorBraces)s
    )
    or
    max without (%(targetLabelsCSV)s) (
      %(x)s
      and on (job, instance, namespace, pod) hccl_exporter_build_info%(hcclSelectorBraces)s
    )
  ||| % (cfg { x: x }),
  // _hcclPerChip(x): a per-chip condition x with the pod that holds the
  // chip (hccl:npu_pod:unique), falling back to x alone where no pod is
  // known (bare metal, systemd), never with the exporter's own pod.
  _hcclPerChip(x):: |||
    max without (%(targetLabelsCSV)s) (
      %(x)s
    )
    * on (job, instance, npu, chip) group_left (namespace, pod) hccl:npu_pod:unique
    or ignoring (namespace, pod)
    max without (%(targetLabelsCSV)s) (
      %(x)s
    )
  ||| % (cfg { x: x }),

  // _hcclJobLastEvent(matchers): the time of the latest event of each
  // HCCL fault code per job and node (hccl_job never empty), of the codes
  // the extra matchers select. The cross-node alerts inline it rather than
  // read its recording rule: a global ruler (vmalert) reads recorded series
  // back from storage only after its ingestion delay.
  _hcclJobLastEvent(matchers):: |||
    max without (%(targetLabelsCSV)s, source, resource) (
      %(withJob)s
    )
  ||| % (cfg { withJob: $._hcclWithJob('hccl_fault_last_event_timestamp_seconds{%(hcclSelectorComma)scode=~"%(hcclCodesRE)s"%(extra)s}' % (cfg { extra: if matchers == '' then '' else ', ' + matchers })) }),

  _hcclRecordingRules+:: {
    // New HCCL fault events per series in the last 10 minutes, rounded, at
    // least 1, by job (hccl_job, never empty), without the exporter's own
    // target labels.
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
    // - Only HCCL's codes (config hcclCodesRE): an operator's EZ9999 or the
    //   runtime's EE1001 is not an HCCL fault.
    'hccl:fault_events:new10m': {
      record: 'hccl:fault_events:new10m',
      expr: $._hcclWithJob($._hcclNoTarget(|||
        clamp_min(
          round(
            (
                increase(hccl_fault_events_total{%(sel)s}[10m]) > 0
              or
                (hccl_fault_events_total{%(sel)s} > 0 unless hccl_fault_events_total{%(sel)s} offset 10m)
            )
            and ignoring (stage)
              (time() - hccl_fault_last_event_timestamp_seconds{%(sel)s} < 600)
          ),
          1
        )
      ||| % { sel: cfg.hcclSelectorComma + 'code=~"' + cfg.hcclCodesRE + '"' })),
    },
    // The time of the latest event of each HCCL fault code per job and
    // node: the most recent fault of a job is the max over its nodes.
    'hccl_job:hccl_fault_last_event_timestamp_seconds:max': {
      record: 'hccl_job:hccl_fault_last_event_timestamp_seconds:max',
      expr: $._hcclJobLastEvent(''),
    },
    // The namespace and pod of every chip the kubelet assigned to exactly
    // one pod (all its containers), value 1. A chip split into vNPUs for
    // several pods names none: a per-chip alert then keeps its labels
    // rather than fail on a many-to-many match. Per-chip alerts join it
    // with `* on (job, instance, npu, chip) group_left (namespace, pod)`
    // and fall back to themselves with `or ignoring (namespace, pod)`, so
    // they still fire where no pod info exists (bare metal, systemd).
    'hccl:npu_pod:unique': {
      record: 'hccl:npu_pod:unique',
      expr: |||
        max by (job, instance, npu, chip, namespace, pod) (ascend_npu_pod_info%(hcclSelectorBraces)s)
        and on (job, instance, npu, chip)
          (count by (job, instance, npu, chip) (max by (job, instance, npu, chip, namespace, pod) (ascend_npu_pod_info%(hcclSelectorBraces)s)) == 1)
      ||| % cfg,
    },
    // The namespace and pod of every settings set on a node whose
    // processes' chips (hccl_process_info) all belong to one pod, value 1:
    // the per-settings-set alerts join it like hccl:npu_pod:unique, for the
    // job owner's route. A set shared by two pods on one node names none.
    'hccl:settings_pod:unique': {
      record: 'hccl:settings_pod:unique',
      expr: |||
        max by (job, instance, settings, namespace, pod) (
          hccl_process_info%(hcclSelectorBraces)s * on (job, instance, npu, chip) group_left (namespace, pod) hccl:npu_pod:unique
        )
        and on (job, instance, settings)
          (
            count by (job, instance, settings) (
              max by (job, instance, settings, namespace, pod) (
                hccl_process_info%(hcclSelectorBraces)s * on (job, instance, npu, chip) group_left (namespace, pod) hccl:npu_pod:unique
              )
            ) == 1
          )
      ||| % cfg,
    },
    // Settings sets the members of each communicator run, over all nodes:
    // the communicator identifier is the same on every node of a job and
    // unique to it, so this needs no cluster label and never compares two
    // jobs. Processes whose logs printed none of the set's variables
    // (settings="") are left out: unknown is not different. Ids are
    // compared within one hash version (the "<v>-" prefix of the settings
    // label; none before version 2): during a rolling upgrade of the
    // exporter one job's nodes print two versions of the same set.
    'communicator:hccl_settings_sets:count': {
      record: 'communicator:hccl_settings_sets:count',
      expr: |||
        max by (communicator) (
          count by (communicator, settings_version) (
            label_replace(
              count by (communicator, settings) (hccl_communicator_info{%(hcclSelectorComma)ssettings!=""}),
              "settings_version", "$1", "settings", "([0-9]+)-.*"
            )
          )
        )
      ||| % cfg,
    },
  },

  prometheusRules+:: { groups+: [] },
}
