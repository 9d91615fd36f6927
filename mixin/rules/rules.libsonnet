// Recording rules. They are evaluated in the same group as the alerts that
// read them (see alerts/alerts.libsonnet), so an alert never lags its
// recording rule by one evaluation; prometheusRules therefore holds no groups
// of its own, and these objects are shared through _hcclRecordingRules.
{
  local cfg = $._config,

  _hcclRecordingRules+:: {
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
    'hccl:fault_events:new10m': {
      record: 'hccl:fault_events:new10m',
      expr: |||
        clamp_min(
          round(
            (
                increase(hccl_fault_events_total%(hcclSelectorBraces)s[10m]) > 0
              or
                (hccl_fault_events_total%(hcclSelectorBraces)s > 0 unless hccl_fault_events_total%(hcclSelectorBraces)s offset 10m)
            )
            and ignoring (stage)
              (time() - hccl_fault_last_event_timestamp_seconds%(hcclSelectorBraces)s < 600)
          ),
          1
        )
      ||| % cfg,
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
    // (settings="") are left out: unknown is not different.
    'communicator:hccl_settings_sets:count': {
      record: 'communicator:hccl_settings_sets:count',
      expr: |||
        count by (communicator) (
          count by (communicator, settings) (hccl_communicator_info{%(hcclSelectorComma)ssettings!=""})
        )
      ||| % cfg,
    },
  },

  prometheusRules+:: { groups+: [] },
}
