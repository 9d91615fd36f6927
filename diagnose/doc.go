// Package diagnose owns the offline analysis behind `hccl_exporter
// diagnose`: it reads a bundle of CANN logs and training screen logs
// collected from the nodes of a failed job (directories and .tar.gz
// archives, streamed, never extracted), feeds every line through the same
// parsers and state as the cannlog collector (one logstate.State per rotation
// group, merged per node, since pids are only unique within a node), and
// builds one Report, written as text, JSON or one self-contained HTML page.
//
// The Report holds the incidents (incidents.go): every fault event ordered
// on a common clock (the nodes' zones given or inferred from communicator
// identifiers, their offsets measured over the communicators' initialisation,
// clock.go, zone.go), grouped into incidents, each with its first failing
// node, pid, rank and device, its consequences by code role and the waiting
// process's own timer (roles.go), its confidence and reasons, and the
// remedy starting from that root cause (rootremedy.go). Beside them: the
// fault codes with their stage, counts, times, nodes and pids; the effective
// HCCL settings of every process and the variables whose values disagree
// between nodes; and, for EI0011, the troubleshooting guide's four remedies
// filled in with the bundle's own numbers, kept apart from a driver-reported
// cclBuffer out-of-memory (EL0004), whose remedy is HCCL_BUFFSIZE.
// docs/diagnose.md describes the command and every field of its JSON output.
package diagnose
