// hccl_exporter monitoring mixin: alerts, recording rules and Grafana
// dashboards for Huawei Ascend NPU clusters, configured by
// config.libsonnet. Compose it like node-mixin:
//
//   local hccl = (import 'mixin/mixin.libsonnet') + {
//     _config+:: { hcclSelector: 'job="hccl-exporter"', clusterLabel: 'training_job' },
//   };
//   hccl.prometheusAlerts  // { groups: [...] } (recording rules included)
//   hccl.grafanaDashboards // { 'hccl-faults.json': {...}, ... }
(import 'config.libsonnet') +
(import 'rules/rules.libsonnet') +
(import 'rules/pods.libsonnet') +
(import 'rules/compat.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'alerts/transport.libsonnet') +
(import 'alerts/memory.libsonnet') +
(import 'alerts/hardware.libsonnet') +
// After the alerts: it adds its recording rules to their capacity group.
(import 'rules/capacity.libsonnet') +
(import 'dashboards/dashboards.libsonnet') +
// Last: the policy's default labels apply to every alert above.
(import 'alerts/policy.libsonnet')
