// Package analyse turns a bundle into a diagnose Report (package model):
// it reads every line of the bundle (package bundle) through the same
// parsers and state as the cannlog collector (one logstate.State per
// rotation group, merged per node, since pids are only unique within a
// node, sink.go, merge.go) and through its own watchers for what the state
// does not keep: every fault event with its line, ranks and the moments
// all ranks of a communicator share (events.go), the failing links HCCL
// names (linkfail.go) and the out-of-memory reports of screen logs
// (oom.go).
//
// From these it builds the Report (build.go): the nodes' zones, given or
// inferred from communicator identifiers (zone.go), their clocks' offsets
// measured over the communicators' initialisation (clock.go), the
// incidents (incidents.go): every fault event on a common clock, grouped
// by the role of its code and the waiting process's own timer (roles.go),
// each with its first failing node, pid, rank and device, its failing pair
// and silent ranks (pair.go), its confidence and reasons, and the remedy
// starting from that root cause (rootremedy.go); beside them the fault
// codes, the effective HCCL settings and the variables that disagree, and
// for EI0011 the troubleshooting guide's four remedies with the bundle's
// numbers, kept apart from a driver-reported cclBuffer out-of-memory
// (EL0004, remedies.go).
package analyse
