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

    // HCCL_RDMA_QPS_PER_CONNECTION above this pages
    // HCCLQPsPerConnectionAboveRecommended (HCCL allows 1–32; above 8 there
    // is no guaranteed speed-up and EI0011 becomes likely).
    qpsPerConnectionLimit: 8,

    // The alerting policy (alerts/policy.libsonnet, docs/runbooks.md).
    //
    // Labels that tell one job from another: the target's cluster label and
    // the pod's namespace. Consequences are inhibited, and failures counted,
    // per job. Without pod information (bare metal) a cluster is one job.
    jobLabels: [self.clusterLabel, 'namespace'],
    // Fault codes a rank raises because a peer failed or did not answer in
    // time (diagnose's waiting role, diagnose/roles.go): they never count
    // as a job's failure and are inhibited while a root cause of the same
    // job is recent.
    waitingCodes: ['EI0002', 'EI0005', 'EI0006', 'EI0015'],
    // HCCL's defaults of the peers' timers, used where the logs print no
    // setting (internal/hcclenv).
    defaultConnectTimeoutSeconds: 120,
    defaultExecTimeoutSeconds: 1836,
    // Root-cause faults in this many jobs, or on this many nodes, of one
    // cluster within the window page the infrastructure on-call
    // (HCCLJobFailuresAcrossCluster); fewer go to the jobs' owners only.
    clusterFailureJobs: 2,
    clusterFailureNodes: 4,
    clusterFailureWindowSeconds: 1800,

    // Every alert's runbook_url is this plus '#<alertname in lower case>'.
    runbookURLBase: 'https://github.com/hccl-exporter/hccl_exporter/blob/main/docs/runbooks.md',

    // Derived: the selector inside braces next to other matchers, and as
    // braces of its own.
    hcclSelectorComma:: if self.hcclSelector == '' then '' else self.hcclSelector + ', ',
    hcclSelectorBraces:: if self.hcclSelector == '' then '' else '{' + self.hcclSelector + '}',
  },
}
