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

    // Every alert's runbook_url is this plus '#<alertname in lower case>'.
    runbookURLBase: 'https://github.com/hccl-exporter/hccl_exporter/blob/main/docs/runbooks.md',

    // Derived: the selector inside braces next to other matchers, and as
    // braces of its own.
    hcclSelectorComma:: if self.hcclSelector == '' then '' else self.hcclSelector + ', ',
    hcclSelectorBraces:: if self.hcclSelector == '' then '' else '{' + self.hcclSelector + '}',
  },
}
