// Package alerts ships hccl_exporter's Prometheus alerting and recording rules
// (hccl_exporter.rules.yml, rendered from the monitoring mixin in mixin/ by
// `make mixin`; sharded/ holds its per-node and cross-node halves), their
// promtool unit tests (tests/) and an example Alertmanager configuration. The files are the product; this package embeds
// them so other tests (the end-to-end test) can load exactly what users get.
package alerts

import _ "embed"

// Rules is hccl_exporter.rules.yml.
//
//go:embed hccl_exporter.rules.yml
var Rules []byte

// CompatRules is npu_exporter_compat.rules.yml: npu-exporter's names and
// labels recorded from this exporter's series (off by default; load it
// next to Rules, whose hccl:npu_container:unique it reads).
//
//go:embed npu_exporter_compat.rules.yml
var CompatRules []byte

// CompatRulesFile is CompatRules' file name.
const CompatRulesFile = "npu_exporter_compat.rules.yml"

// AlertmanagerExample is alertmanager.example.yml.
//
//go:embed alertmanager.example.yml
var AlertmanagerExample []byte

// RunbookBase is where every alert's runbook_url points, followed by
// "#<alertname in lower case>".
const RunbookBase = "https://github.com/hccl-exporter/hccl_exporter/blob/main/docs/runbooks.md"

// AlertmanagerConfigExample is alertmanagerconfig.example.yaml: the same
// policy as an AlertmanagerConfig resource of the Prometheus Operator
// (kube-prometheus-stack).
//
//go:embed alertmanagerconfig.example.yaml
var AlertmanagerConfigExample []byte
