// Grafana dashboards. Each *.json here is the dashboard as edited in Grafana
// (export it with "Export for sharing externally" off and paste it over the
// file); the mixin applies the configuration and `make mixin` writes the
// result to dashboards/, which users import without jsonnet.
{
  local cfg = $._config,

  // The job variable lists only the jobs the selector matches; the
  // instance variable follows the job variable, so both narrow.
  local selectVar(q) =
    if cfg.hcclSelector == '' then q
    else std.strReplace(std.strReplace(q,
                                       'hccl_exporter_build_info, ',
                                       'hccl_exporter_build_info{' + cfg.hcclSelector + '}, '),
                        'hccl_exporter_build_info{job=~',
                        'hccl_exporter_build_info{' + cfg.hcclSelectorComma + 'job=~'),
  // The cluster variable (the rules' clusterLabel): first of the target
  // variables, and every query that filters by $job filters by it too, so
  // panels added later follow without a change here. Series without the
  // label match its All value (".*").
  local withCluster(q) = std.strReplace(q, 'job=~"$job"', cfg.clusterLabel + '=~"$cluster",job=~"$job"'),
  local clusterQuery = selectVar('label_values(hccl_exporter_build_info, %s)' % cfg.clusterLabel),
  local clusterVar = {
    name: 'cluster',
    label: 'Cluster',
    type: 'query',
    datasource: { type: 'prometheus', uid: '${datasource}' },
    definition: clusterQuery,
    query: { query: clusterQuery, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    current: {},
    hide: 0,
    includeAll: true,
    allValue: '.*',
    multi: true,
    refresh: 2,
    regex: '',
    sort: 1,
    options: [],
  },
  local jobQuery = 'label_values(hccl_exporter_build_info{%s%s=~"$cluster"}, job)' % [cfg.hcclSelectorComma, cfg.clusterLabel],
  local configureVar(v) =
    if v.type == 'query' && v.name == 'job' then
      v { definition: jobQuery, query: if std.isString(v.query) then jobQuery else v.query { query: jobQuery } }
    else if v.type == 'query' && std.objectHas(v, 'definition') then
      v {
        definition: withCluster(selectVar(v.definition)),
        query: if std.isString(v.query) then withCluster(selectVar(v.query)) else v.query { query: withCluster(selectVar(v.query.query)) },
      }
    else v,
  local configurePanel(p) = p + (
    if std.objectHas(p, 'targets') then { targets: [
      if std.objectHas(t, 'expr') then t { expr: withCluster(t.expr) } else t
      for t in p.targets
    ] } else {}
  ) + (
    if std.objectHas(p, 'panels') then { panels: [configurePanel(q) for q in p.panels] } else {}
  ),
  local configure(d) = d {
    templating+: {
      list: std.flattenArrays([
        if v.type == 'query' && v.name == 'job' then [clusterVar, configureVar(v)] else [configureVar(v)]
        for v in super.list
      ]),
    },
    panels: [configurePanel(p) for p in super.panels],
  },

  grafanaDashboards+:: {
    'hccl-faults.json': configure(import 'hccl-faults.json'),
    'hccl-settings.json': configure(import 'hccl-settings.json'),
    'npu-memory-headroom.json': configure(import 'npu-memory-headroom.json'),
    'roce-network.json': configure(import 'roce-network.json'),
    'npu-hardware-health.json': configure(import 'npu-hardware-health.json'),
  },
}
