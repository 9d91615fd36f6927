// Package bundle reads a diagnose bundle: the paths of the command line
// (directories, .tar/.tar.gz/.tgz and zip archives, single files), streamed
// and never extracted. It owns the file layout: which files are logs and
// of which kind (classify.go), which files the collection tools
// (MindCluster, msnpureport, npu_log_collect.sh) put there and why they are
// skipped (collect.go), how files group into rotation groups and inputs
// into nodes (layout.go), and the bounded line reader (lines.go). Every
// line of a group goes, in write order, to the Sink the caller made for
// it; what a line means is the caller's (package analyse).
package bundle
