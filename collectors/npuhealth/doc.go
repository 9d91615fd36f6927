// Package npuhealth owns the hardware-health half of npu-smi: the detail
// queries `npu-smi info -t <type> -i N [-c C]` that the device table of
// `npu-smi info` does not show (active error codes, HBM ECC counters and
// pages waiting for isolation, PCIe/HCCS/SIO error counters, HBM temperature,
// utilisation per engine, the chip's VDie ID), and the count of chips and of
// /dev/davinciN device files that tells a lost chip from a quiet one.
//
// Parts, data flowing one way:
//
//   - the parsers (parse.go) are pure: one function per query type turns
//     the captured stdout into a typed reading, keyed by label text (labels
//     vary by product and driver: a label → field map, unknown labels
//     ignored), and classify (result.go) recognises the answers npu-smi
//     prints with exit status 0 that are not data ("does not support
//     querying", "Failed to query", DCMI busy -8020);
//   - the fault-code table (faultcode.go) reads MindCluster's device-plugin
//     faultCode.json format to give each error code its handling class;
//   - the sweep (sweep.go) runs in the background through internal/vendorcli
//     (no shell, timeout, process-group kill), every --npuhealth.interval
//     and never in a scrape, one call at a time while calls answer (a slow
//     call lets the next chip start, at most 4 at once), responsive chips
//     first and within a budget; it waits while the npusmi collector's own
//     `npu-smi info` run is in flight, remembers per chip the types the
//     product does not support (asked once until restart), and carries a
//     reading over one sweep when DCMI answered busy;
//   - the collector (collector.go) serves each chip's latest reading, its
//     metrics built once when it was read, and stops serving a chip whose
//     reading is older than two intervals (the others are still served).
package npuhealth
