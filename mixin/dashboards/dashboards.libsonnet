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
  local configure(d) = d {
    templating+: {
      list: [
        if v.type == 'query' && std.objectHas(v, 'definition') then
          v {
            definition: selectVar(v.definition),
            query: if std.isString(v.query) then selectVar(v.query) else v.query { query: selectVar(v.query.query) },
          }
        else v
        for v in super.list
      ],
    },
  },

  grafanaDashboards+:: {
    'hccl-faults.json': configure(import 'hccl-faults.json'),
    'hccl-settings.json': configure(import 'hccl-settings.json'),
    'npu-memory-headroom.json': configure(import 'npu-memory-headroom.json'),
    'roce-network.json': configure(import 'roce-network.json'),
  },
}
