// Package logstate owns what the CANN logs said: State reads plog and
// screen-log lines (Ingest) and keeps the effective HCCL settings of each
// process ([HCCL_ENV] lines and older wordings), its communicators, buffers
// and links, HCCL fault events (fault codes printed in screen logs, plog
// error lines the fault catalog maps to codes; the catalog is one table,
// catalog.go) and line counters.
//
// State serves all of it as a prometheus.Collector (the series of
// hccl_fault_events_total, hccl_env_*, hccl_communicator_*,
// hccl_exporter_log_lines_total …), as read-only views (Processes, Process,
// Devices, Faults) and as a state file (MarshalBinary, UnmarshalBinary). It
// does no file I/O and knows nothing of who feeds it: the cannlog collector
// feeds it followed lines, the offline diagnose command the files of a
// bundle.
//
// A process is known by its CANN log directory and its pid (ProcessKey):
// pods write to their own directories and often have equal pids in their
// own pid namespaces. Each process remembers the NPU it drives (the
// devicePhyId its plogs print) for the joins of cmd/hccl_exporter; its host
// pid is the cannlog collector's table of roots' to know. Liveness says
// which processes still run (the cannlog collector asks npu-smi's table, its
// table of roots and /proc); Expire drops the others after their TTL.
// The workload memory (workload.go) remembers, per workload the headroom
// join binds processes to (BindWorkload), the link-set kinds its processes
// ran and their link-setup failures, across restarts; the state file also
// carries other packages' blobs (AttachExtension: the learned QP sizes).
// The zone grammar of the flags (ParseZone) and the offset inference from
// a printed and a true time (InferOffset) live here, for both the
// collector and diagnose.
package logstate
