// Package cannlog is the collector of what the CANN logs say: it owns the
// --cannlog.* flags (the log follower's configuration, which main hands to
// internal/cann/follow) and serves the log state's series (settings,
// communicators, faults, line counters: internal/cann/logstate) with the
// follower's own (files, zones, coverage, hccl_process_info). Reading the
// logs, discovering each NPU process's log root and checkpointing are the
// follower's; a scrape only reads.
package cannlog
