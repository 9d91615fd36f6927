// Package tail owns the file-following layer of the cannlog collector: it
// finds CANN process logs (plog-<pid>_<time>.log, device-<pid>_<time>.log
// under run/, debug/ and security/ of each log root) and screen logs (glob
// patterns, Kubernetes pod logs included), follows them across CANN
// rotation (new file per 20 MB, oldest deleted), kubelet rotation (rename,
// then a new file), truncation and replacement, and delivers every complete
// line exactly once — also across restarts, through a state file that holds
// the read offsets and the caller's own state in one atomic write.
//
// It knows nothing about what a line means: parsing and counting belong to
// the cannlog package. See docs/tailing.md for the design and measurements.
package tail
