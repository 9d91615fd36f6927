package npusmi

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a fake npu-smi: run with fakeModeEnv set it
// behaves as the mode says instead of running tests, so runner tests exec a
// real child process without a shell or a script interpreter.
const (
	fakeModeEnv   = "NPUSMI_TEST_FAKE_MODE"
	fakeFileEnv   = "NPUSMI_TEST_FAKE_FILE"   // output mode: file to print
	fakeLogEnv    = "NPUSMI_TEST_FAKE_LOG"    // every invocation appends "start <pid>" and "end <pid>"
	fakeSleepEnv  = "NPUSMI_TEST_FAKE_SLEEP"  // sleep before answering
	fakePidsEnv   = "NPUSMI_TEST_FAKE_PIDS"   // hang modes: pids of the fake and its child
	fakeStdoutEnv = "NPUSMI_TEST_FAKE_STDOUT" // exit mode
	fakeStderrEnv = "NPUSMI_TEST_FAKE_STDERR" // exit mode
	fakeCodeEnv   = "NPUSMI_TEST_FAKE_CODE"   // exit mode
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		os.Exit(fakeNPUSMI(mode))
	}
	os.Exit(m.Run())
}

func appendLine(path, line string) {
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

func fakeNPUSMI(mode string) int {
	if len(os.Args) != 2 || os.Args[1] != "info" {
		fmt.Fprintln(os.Stderr, "usage: npu-smi info")
		return 2
	}
	spawnSleeper := func(holdStdout bool) {
		self, _ := os.Executable()
		child := exec.Command(self, "info")
		child.Env = append(os.Environ(), fakeModeEnv+"=sleep")
		if holdStdout {
			child.Stdout = os.Stdout
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake: start child:", err)
			os.Exit(99)
		}
		appendLine(os.Getenv(fakePidsEnv), fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid))
	}
	switch mode {
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "hang":
		spawnSleeper(false)
		time.Sleep(time.Hour)
		return 0
	case "hold-stdout":
		b, _ := os.ReadFile(os.Getenv(fakeFileEnv))
		_, _ = os.Stdout.Write(b)
		spawnSleeper(true)
		return 0
	}
	logf := os.Getenv(fakeLogEnv)
	appendLine(logf, fmt.Sprintf("start %d", os.Getpid()))
	defer appendLine(logf, fmt.Sprintf("end %d", os.Getpid()))
	if d, err := time.ParseDuration(os.Getenv(fakeSleepEnv)); err == nil {
		time.Sleep(d)
	}
	switch mode {
	case "output":
		b, err := os.ReadFile(os.Getenv(fakeFileEnv))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_, _ = os.Stdout.Write(b)
		return 0
	case "exit":
		fmt.Print(os.Getenv(fakeStdoutEnv))
		fmt.Fprint(os.Stderr, os.Getenv(fakeStderrEnv))
		code, _ := strconv.Atoi(os.Getenv(fakeCodeEnv))
		return code
	}
	fmt.Fprintln(os.Stderr, "fake: unknown mode", mode)
	return 98
}

// useFake points a config at the fake npu-smi in the given mode.
func useFake(t *testing.T, mode string, env map[string]string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeModeEnv, mode)
	for k, v := range env {
		t.Setenv(k, v)
	}
	return self
}

// procState returns the state letter of a process, "" when it does not exist.
func procState(pid int) (state string, pgrp int) {
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

// liveGroupMembers lists the processes of group pgid that still run (zombies
// waiting for a non-reaping init do not count: they hold nothing).
func liveGroupMembers(pgid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if st, pg := procState(pid); pg == pgid && st != "" && st != "Z" && st != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// waitGone polls until no process of group pgid runs, or fails the test.
func waitGone(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		live := liveGroupMembers(pgid)
		for _, p := range pids {
			if st, _ := procState(p); st != "" && st != "Z" && st != "X" {
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

func readPids(t *testing.T, path string) (parent, child int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fake npu-smi wrote no pids: %v", err)
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &parent, &child); err != nil {
		t.Fatalf("pids file %q: %v", b, err)
	}
	return parent, child
}
