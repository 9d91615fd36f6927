// Package npusmi is the collector of the ascend_npu_* series and the
// hccl_exporter_npu_smi_* run series: it owns the --npusmi.* flags (the
// shared run's binary, timeout and minimum interval, which main turns into
// the one internal/npusmi.Runner every npu-smi consumer shares), and turns
// each scrape's run into const metrics. A failed run sets
// hccl_exporter_npu_smi_up to 0 and exports no per-chip values: old values
// are never served as if they were fresh. It also says whether npu-smi's
// pids are of another pid namespace than --path.procfs (pidns.go).
package npusmi
