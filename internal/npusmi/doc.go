// Package npusmi owns what hccl_exporter learns from Huawei's `npu-smi info`
// table and the one run of it every consumer shares: per-chip HBM and DDR
// memory, hugepages, AI Core utilisation, power, temperature and health, and
// the process table (pid → NPU/chip, device memory).
//
// Data flows one way through its three parts:
//
//   - RunInfo (runner.go) executes `<--npusmi.path> info` without a shell, in
//     its own process group, and kills the whole group at --npusmi.timeout,
//     because npu-smi can hang inside the driver and can leave helpers holding
//     its stdout;
//   - Parse (parse.go) is pure: it turns the captured bytes into a Snapshot.
//     It understands every known layout (HBM layout of 910/910A/910B*, Atlas
//     A3 910_93 with two dies per NPU, non-HBM 310/310P3 including the
//     two-chip 300I Duo, the separate-column Ascend 950 layout, wider columns
//     of newer drivers, and the process table variants). Blocks are keyed by
//     NPU id + chip index, never by the separator lines, because separators
//     differ between hosts. Placeholders (`NA`, `-`, `0 / 0`) become Values
//     with OK=false. A cut output is a failed run, never a smaller node: Parse
//     rejects a table that ends mid-line, after a row instead of a separator,
//     with an NPU row missing its chip row, or with a process table that stops
//     before an NPU of the device table;
//   - the Runner (run.go) shares one npu-smi run among all concurrent callers
//     (the npusmi, headroom and pods collectors of a scrape, the npuhealth
//     sweep's chip list, log discovery), reuses a result for
//     --npusmi.min-interval, and rejects (complete.go) a missing process table
//     where earlier runs printed one, and a table listing fewer chips than
//     complete runs did unless AcceptRuns whole tables in a row agree on it.
//
// Snapshot reads the scrape's run; Latest the last successful one without
// running npu-smi. Snapshots handed out are shared and read-only. The
// ascend_npu_* series are collectors/npusmi's.
package npusmi
