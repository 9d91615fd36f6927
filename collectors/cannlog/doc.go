// Package cannlog owns the cannlog collector of hccl_exporter: it follows
// the CANN process logs (plog) of every training process and the training
// screen logs, and turns them into the effective HCCL settings of each
// process ([HCCL_ENV] lines), its communicators, HCCL fault events (fault
// codes printed in screen logs, plog error lines the fault catalog maps to
// codes) and line counters.
//
// Data flows one way: the follower (sub-package tail) delivers lines, the
// parsers (sub-package parse) read them, State keeps what they said, and the
// Collector serves State as metrics and as read-only views (Processes,
// Faults) for the headroom collector and the offline diagnose command. A
// background goroutine polls the follower and checkpoints State together
// with the read offsets; scrapes only read State under a lock and never do
// file I/O.
//
// A process is known by its CANN log directory and its pid (ProcessKey):
// pods write to their own directories and often have equal pids in their
// own pid namespaces. Each log root is read in the zone its writers print
// times in (--cannlog.timezone=auto infers it from the files), and each
// process remembers the NPU it drives (the devicePhyId its plogs print) for
// the joins of internal/join.
package cannlog
