// Package parse owns the line grammars of the CANN logs and training screen
// logs that hccl_exporter reads: the plog header
// `[LEVEL] MODULE(PID,PNAME):TIME [file:line] [tid]message` and its variants,
// the `[HCCL_ENV]` settings lines, the communicator key-info lines, the HCCL
// multi-level error keywords, fault codes printed in screen logs, and the two
// container log wrappings (Kubernetes CRI and Docker json-file).
//
// The parsers are pure functions over one line. The plog header parser and
// the fault-code finder run on every line, so they work with byte scans over
// the caller's buffer and do not allocate; the rarer parsers (HCCL_ENV, key
// info, Docker JSON) may allocate. None of them panics on any input: they are
// fuzzed with NUL bytes, invalid UTF-8 and megabyte lines.
package parse
