// Package hccn owns what hccl_exporter learns from hccn_tool, the Ascend
// driver's tool for the RoCE NIC of each NPU chip: link state, link flaps,
// the detect-IP health probe, the live RoCE queue pairs and the packet and
// RoCE error counters of every chip.
//
// hccn_tool is slow and fragile to drive: a call on a device that is
// resetting waits about 5 minutes inside the tool, and a second caller gets
// "hccn_tool is busy". So nothing here runs in a scrape:
//
//   - the runner (runner.go) executes `<--hccn.path> -i <phy_id> -<cmd> -g`
//     without a shell, in its own process group, and kills the group at
//     --hccn.timeout; the exit status and the message (some failures
//     print on stdout) classify a call as success, timeout, busy,
//     unsupported, error or parse_error;
//   - the parsers (parse.go) are pure, one per command (-link, -link_stat,
//     -net_health, -qp_info, -stat), and reject cut-short output;
//   - the sweep (sweep.go) runs in one background goroutine every
//     --hccn.interval and calls the tool once at a time, device after
//     device; a device that times out has its remaining commands skipped
//     for that sweep, so a hung chip costs one timeout and the others are
//     read on time. A sweep is published whole when it ends;
//   - the collector (collector.go) exports the latest published sweep in
//     Update, never calling hccn_tool and never waiting. A command that
//     failed exports nothing for its chip (no stale value); its result is
//     counted in hccl_exporter_hccn_tool_calls_total, and hccl_exporter_hccn_tool_up says
//     whether the last sweep was complete. Where hccn_tool is absent the
//     collector logs it once and exports only hccl_exporter_hccn_tool_up 0.
//
// hccn_tool takes the chip's physical id; the exporter labels chips by
// npu-smi's NPU ID and chip index. MapDevices joins the two (devices.go;
// docs/hccn.md): npu-smi's Phy-ID where printed (A3, 950), the NPU ID on
// one-chip cards, else /dev/davinciN when npu-smi gives no chip list.
//
// Read-only views for other collectors, none of which runs hccn_tool:
// (*Collector).ActiveQPs returns per (npu, chip) the live QP count of the
// latest sweep that read it, when that sweep finished and whether it is
// fresh (finished within FreshFor = 2 × interval + timeout). The headroom
// model uses it as the measured number of QPs; a chip absent from it was
// not measured (not zero QPs). (*Collector).Latest returns the whole sweep
// (QP rows with their qpn and source port, link records, counters). Both
// are shared and must not be modified.
package hccn
