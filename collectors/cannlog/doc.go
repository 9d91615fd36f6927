// Package cannlog owns the cannlog collector of hccl_exporter: its flags,
// the follower (sub-package tail) that delivers the lines of the CANN
// process logs (plog) of every training process and of the training screen
// logs, the discovery of each NPU process's own log root through /proc, the
// time zone of each log root, and the follower's, zones' and coverage
// series.
//
// What the lines say is kept by the log state (sub-package logstate): the
// effective HCCL settings of each process, its communicators, HCCL fault
// events and line counters. Data flows one way: the follower delivers
// lines, the Collector hands each to logstate.State.Ingest with its source
// (path, kind, pod, zone), and serves the state's own series next to its
// own. A background goroutine polls the follower and checkpoints the state
// together with the read offsets; scrapes only read the state and never do
// file I/O. The headroom collector and internal/join read the state through
// Processes, Faults and State; the offline diagnose command uses logstate
// directly and does not depend on this package.
//
// Each log root is read in the zone its writers print times in
// (--cannlog.timezone=auto infers it from the files' modification times and
// last printed times).
package cannlog
