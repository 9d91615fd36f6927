package bundle

import (
	"sort"
	"time"
)

// Options tune Read.
type Options struct {
	// Workers bounds the goroutines reading files; ≤ 0 means GOMAXPROCS.
	Workers int
	// NewSink makes the sink of each rotation group as the group is
	// found; it must not be nil.
	NewSink func(key string, kind Kind) Sink
}

// A Sink takes the lines of one rotation group: its files one after the
// other, in the order their writer wrote them, each line without its
// newline (valid only during the call; at most readBufferSize bytes, a
// longer line is cut). The files of one group are read by one goroutine;
// different groups' sinks are called concurrently.
type Sink interface {
	StartFile(rel string)
	Line(line []byte)
	EndFile()
}

// FileTimeSink is a Sink that takes each file's modification time (its
// file system's, or its archive entry's), given right after StartFile
// where known. Copies and archives may not keep it: it is a last resort.
type FileTimeSink interface {
	FileModTime(t time.Time)
}

// Read reads the bundle at paths: every log file of every input into the
// sink of its rotation group. An *InputError means an input could not be
// used at all; problems reading part of an input are in the Errs of the
// input or of the group.
func Read(paths []string, opts Options) ([]*Input, error) {
	ins, err := openInputs(paths)
	if err != nil {
		return nil, err
	}
	// Archives are read sequentially (one stream each) and are usually the
	// largest inputs: start them first; then the groups of directories,
	// largest first, so the last jobs are short.
	var jobs []func([]byte)
	var groups []*Group
	for _, in := range ins {
		if in.Type == "archive" {
			jobs = append(jobs, func(buf []byte) { in.readArchive(&opts, buf) })
			continue
		}
		if err := in.list(&opts); err != nil {
			return nil, err
		}
		for _, g := range in.Groups {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Size != groups[j].Size {
			return groups[i].Size > groups[j].Size
		}
		return groups[i].Key < groups[j].Key
	})
	for _, g := range groups {
		jobs = append(jobs, g.readJob)
	}
	runJobs(jobs, opts.Workers)
	return ins, nil
}
