// Package follow owns following the CANN logs: the Service wires the
// follower (internal/cann/tail) that delivers the lines of
// the CANN process logs (plog) of every training process and of the
// training screen logs, the discovery of each NPU process's own log root through /proc, the
// time zone of each log root, and the follower's, zones' and coverage
// series.
//
// What the lines say is kept by the log state (internal/cann/logstate): the
// effective HCCL settings of each process, its communicators, HCCL fault
// events and line counters. Data flows one way: the follower delivers
// lines, the Service hands each to logstate.State.Ingest with its source
// (path, kind, pod, zone), and serves the state's own series next to its
// own. A background goroutine polls the follower and checkpoints the state
// together with the read offsets; scrapes only read the state and never do
// file I/O. The joins (internal/join) read the state through Devices,
// ProcessVars, BindWorkload and Workload for the headroom view; the
// collectors/cannlog collector serves its series and owns its flags; the offline diagnose command uses logstate directly and does
// not depend on this package. A discovered process's log root is found by
// internal/cann/discover; the line grammar is internal/cann/parse.
//
// The table of log roots (roots.go) is the one place that knows every root
// read, configured or discovered through /proc, and which process owns it
// (host pid and start time, namespace pid), its zone and whether its files
// are pinned; discovery, zones, coverage, liveness and the follower's
// pinning all read it. The service also serves hccl_process_info (each
// process of the logs and the chip npu-smi shows it on) and
// ascend_npu_processes, and says which processes still run (coverage.go).
//
// Each log root is read in the zone its writers print times in
// (--cannlog.timezone=auto infers it from the files' modification times and
// last printed times).
package follow
