package cannlog

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.cannlog switch.
var Spec = collector.Spec{Name: "cannlog", Help: "effective HCCL settings and HCCL fault codes from CANN plogs and screen logs, and which chip each process of the logs runs on.", DefaultEnabled: true}

// FamilyGroups are the collector's families a default run leaves out, each
// group behind its own switch named for what it adds:
// --[no-]<collector>.<group>, as --[no-]collector.<name> switches a whole
// collector. Everything the shipped alerts, recording rules, dashboards and
// runbooks query is on by default (TestDefaultSetServesRulesDashboardsRunbooks
// checks it with the PromQL parser); these groups add detail no shipped
// rule or panel reads.
var FamilyGroups = []collector.FamilyGroup{
	{Collector: "cannlog", Name: "rejected-values", Help: "[HCCL_ENV] values the exporter refused, by variable (one zero-initialised counter per checked variable).",
		Families: []string{"hccl_env_values_rejected_total"}},
}
