// What a user of the mixin sets: selectors, the label that groups nodes into
// a cluster, thresholds, links. The defaults render exactly the shipped
// alerts/hccl_exporter.rules.yml and dashboards/*.json.
{
  _config+:: {
    // Label matchers selecting hccl_exporter's series, without braces, e.g.
    // 'job="hccl-exporter"' or 'job=~"npu.*", env="prod"'. Empty selects by
    // metric name only (the metric names are unique to hccl_exporter).
    hcclSelector: '',

    // The target label that groups nodes into a cluster (dashboards). No
    // rule needs it: HCCLSettingsInconsistentInCommunicator compares the
    // members of one communicator, whose identifier names one job.
    clusterLabel: 'cluster',

    // The variables HCCL requires to agree across the ranks of a
    // communicator (internal/hcclenv Consistent; mixin_test checks the two
    // lists agree). The description of
    // HCCLSettingsInconsistentInCommunicator names those that differ.
    consistentVariables: [
      'HCCL_ALGO',
      'HCCL_BUFFSIZE',
      'HCCL_CONNECT_TIMEOUT',
      'HCCL_DETERMINISTIC',
      'HCCL_EXEC_TIMEOUT',
      'HCCL_INTER_HCCS_DISABLE',
      'HCCL_INTRA_ROCE_ENABLE',
      'HCCL_OP_EXPANSION_MODE',
      'HCCL_RDMA_QPS_PER_CONNECTION',
    ],

    // HCCL_RDMA_QPS_PER_CONNECTION above this raises the info (lint)
    // HCCLQPsPerConnectionAboveRecommended (HCCL allows 1–32; above 8 there
    // is no guaranteed speed-up and EI0011 becomes likely).
    qpsPerConnectionLimit: 8,

    // The alerting policy (alerts/policy.libsonnet, docs/runbooks.md).
    //
    // Job identity. The exporter labels every HCCL fault series with
    // hccl_job: the communicator its process belongs to where the logs tie
    // the process to one (the identifier is the same on every node of the
    // job; a screen report is tied by its [PID: n], on bare metal too; a
    // communicator two pods' processes claim ties none), else
    // "<namespace>/<pod>" of the training pod; the rules fill an
    // empty hccl_job with "node/<instance>", so a job is never the empty
    // string. Consequences are inhibited, and failures counted, per job:
    // the cluster label and hccl_job.
    jobLabel: 'hccl_job',
    jobLabels: [self.clusterLabel, self.jobLabel],
    // Target labels the Prometheus Operator (ServiceMonitor) and other
    // Kubernetes service discovery attach to every series of the exporter.
    // They name the exporter's own pod, never a training job's: no alert
    // carries them (the rules drop them; a training pod's namespace, pod and
    // container come from the exporter's own series, kept with
    // honorLabels).
    targetLabels: ['namespace', 'pod', 'container', 'service', 'endpoint'],
    // Alert groups whose series never name a training pod: the policy
    // drops the target labels from every alert in them.
    nodeOnlyGroups: ['hccl-exporter-hardware'],
    // The fault-code table (internal/cann/logstate codes.go, generated into
    // lib/faultcodes.json by `make mixin`): the one judgement of each code
    // that diagnose and these inhibitions share. Roles: `local` (a rank's
    // own failure), `waiting` (a peer did not answer in time), `either`
    // (raised by a failing rank and by the peers of one: EI0009, EI0012,
    // EI0013, EI9999 …). Alertmanager cannot order events in time, so:
    // - ownCodes start HCCLJobFailed, the job's inhibitor;
    // - consequenceCodes (waiting and either) are held back while it fires
    //   and never start it: an either code alone may be the only trace of
    //   a peer that crashed without an HCCL code, so it is notified.
    faultTable:: (import 'lib/faultcodes.json').codes,
    ownCodes: [c.code for c in self.faultTable if c.role == 'local'],
    waitingCodes: [c.code for c in self.faultTable if c.role == 'waiting'],
    eitherCodes: [c.code for c in self.faultTable if c.role == 'either'],
    consequenceCodes: self.waitingCodes + self.eitherCodes,
    // The codes of HCCL (EI), HCCP (EJ) and HCCL's own device-memory
    // failure (EL0004 in hccl_fault_events_total: the exporter counts
    // EL0004 there only where HCCL allocated). Every other CANN code is
    // counted in ascend_cann_fault_events_total and drives no HCCL alert;
    // the rules also ignore them in hccl_fault_* (exporters before 0.4).
    hcclCodesRE: 'E[IJ][0-9]{4}|EL0004',
    // Root causes infrastructure can fix: the table's infra codes at link
    // setup (EI0009 reason "The network port is down" comes with
    // RoCELinkDown; EJ0002 "The network port is down"). The infra codes of
    // execution (EI0013, EI0018 error CQEs) also follow a peer's exit, so
    // several jobs with them do not point at the fabric.
    infraCodes: [c.code for c in self.faultTable if c.audience == 'infra' && c.stage == 'link_setup'],
    // HCCL's defaults of the peers' timers, used where the logs print no
    // setting (internal/hcclenv).
    defaultConnectTimeoutSeconds: 120,
    defaultExecTimeoutSeconds: 1836,
    // Infra-actionable root causes in this many distinct jobs of one
    // cluster within the window, for clusterFailureFor, page the
    // infrastructure on-call (HCCLJobFailuresAcrossCluster); fewer go to
    // the jobs' owners only.
    clusterFailureJobs: 2,
    clusterFailureWindowSeconds: 1800,
    clusterFailureFor: '2m',
    // RoCELinkDown on a chip with no process (the best time to fix a
    // link): a warning after this long. A port without an optical module
    // never fires (DOWN by design).
    idleLinkDownFor: '30m',
    // CANNLogTimezoneMismatch's future-dated branch: fault series of at
    // least this many (code, pod) series of a node dated more than 5
    // minutes ahead. One line any pod prints is not enough.
    futureFaultSeries: 3,
    // More than this fraction of a scrape job's exporters down, and at
    // least fleetDownMinTargets of them, pages infrastructure
    // (HCCLExporterDown, critical): the exporter blind fleet-wide.
    fleetDownRatio: 0.5,
    fleetDownMinTargets: 3,

    // npu-exporter's names (npu_chip_info_*, machine_*, container_npu_*)
    // and its id, model_name, vdie_id, pcie_bus_info, namespace, pod_name
    // and container_name labels, recorded from this exporter's series so
    // that npu-exporter's dashboards keep working while they move
    // (mixin/rules/compat.libsonnet, docs/migrating.md). Off: the
    // recordings double the series of the families they serve. On, the
    // group joins prometheusRules; alerts/npu_exporter_compat.rules.yml is
    // rendered either way, to load next to the shipped rules.
    npuExporterCompat: false,
    // rate() window of the recorded bandwidths (npu_chip_info_bandwidth_*,
    // npu_chip_info_hccs_bandwidth_info_total_*): at least two scrapes.
    npuExporterCompatRateWindow: '1m',

    // Every alert's runbook_url is this plus '#<alertname in lower case>'.
    runbookURLBase: 'https://github.com/hccl-exporter/hccl_exporter/blob/main/docs/runbooks.md',

    // Derived: the selector inside braces next to other matchers, and as
    // braces of its own.
    hcclSelectorComma:: if self.hcclSelector == '' then '' else self.hcclSelector + ', ',
    hcclSelectorBraces:: if self.hcclSelector == '' then '' else '{' + self.hcclSelector + '}',
    targetLabelsCSV:: std.join(', ', self.targetLabels),
  },
}
