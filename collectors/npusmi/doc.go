// Package npusmi owns everything hccl_exporter learns from Huawei's `npu-smi info`
// table: per-chip HBM and DDR memory, hugepages, AI Core utilisation, power,
// temperature and health, and the process table (pid → NPU/chip, device memory).
//
// It has three parts, and data flows one way through them:
//
//   - the runner (runner.go) executes `<--npusmi.path> info` without a shell, in its
//     own process group, and kills the whole group at --npusmi.timeout, because
//     npu-smi can hang inside the driver and can leave helpers holding its stdout;
//   - the parser (parse.go) is pure: Parse turns the captured bytes into a Snapshot.
//     It understands every known layout (HBM layout of 910/910A/910B*, Atlas A3
//     910_93 with two dies per NPU, non-HBM 310/310P3 including the two-chip 300I Duo,
//     the separate-column Ascend 950 layout, wider columns of newer drivers, and the
//     process table variants). Blocks are keyed by NPU id + chip index, never by the
//     separator lines, because separators differ between hosts. Placeholders (`NA`,
//     `-`, `0 / 0`) become Values with OK=false, so no sample is exported for them;
//   - the collector (collector.go) shares one npu-smi run among all concurrent
//     callers, reuses a result for --npusmi.min-interval so npu-smi runs at most
//     once per interval whatever the scrape load, and turns the Snapshot into the
//     ascend_npu_* series. A failed run sets hccl_exporter_npu_smi_up to 0 and exports no
//     per-chip values: old values are never served as if they were fresh;
//   - a cut output is a failed run (parse_error), never a smaller node. A table is
//     complete by its structure: Parse rejects a table that ends mid-line, after a
//     row instead of a separator, with an NPU row missing its chip row, or with a
//     process table that stops before an NPU of the device table (npu-smi accounts
//     for every NPU there, by a process row or "No running processes found in NPU
//     <id>"). The collector (complete.go) rejects a missing process table where
//     earlier runs printed one, and a table listing fewer chips than complete runs
//     did unless acceptRuns whole tables in a row agree on it (a chip really gone);
//     an HBM table without its process table never proves itself whole.
//
// Other collectors read the same run through (*Collector).Snapshot (headroom, in
// the same scrape) and (*Collector).Latest (process liveness, without running
// npu-smi). Snapshots handed out are shared and must be treated as read-only.
package npusmi
