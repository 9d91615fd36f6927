// Package clitest holds what the tests of vendor-tool runners share: the
// fake tools' call log and the /proc checks that a killed tool left no
// process of its group running. Only tests import it.
package clitest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// AppendLine appends line to the file at path (no-op for an empty path). A
// fake tool logs its calls this way; errors are ignored, as a fake has no
// one to report them to.
func AppendLine(path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line + "\n")
}

// ProcState returns the state letter and process group of a process, ""
// when it does not exist.
func ProcState(pid int) (state string, pgrp int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return "", 0
	}
	pgrp, _ = strconv.Atoi(f[2])
	return f[0], pgrp
}

// running reports whether a state letter is a process that still runs:
// zombies waiting for a non-reaping init hold nothing.
func running(state string) bool { return state != "" && state != "Z" && state != "X" }

// liveGroupMembers lists the running processes of group pgid.
func liveGroupMembers(pgid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, pg := ProcState(pid); pg == pgid && running(st) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitGone polls until no process of group pgid and none of pids runs, or
// fails the test after 5 s.
func WaitGone(t testing.TB, pgid int, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := liveGroupMembers(pgid)
		for _, p := range pids {
			if st, _ := ProcState(p); running(st) {
				live = append(live, p)
			}
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has running processes %v", pgid, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ReadPids reads "<parent> <child>" as a hanging fake wrote it.
func ReadPids(t testing.TB, path string) (parent, child int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fake tool wrote no pids: %v", err)
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &parent, &child); err != nil {
		t.Fatalf("pids file %q: %v", b, err)
	}
	return parent, child
}
