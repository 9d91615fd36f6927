package testtools

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Process is an external program started for a test. Its output goes to a
// log file that is printed when the test fails.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// StartProcess starts path with args in its own process group, writing its
// output to a file in dir. The test's cleanup stops the whole group (SIGTERM,
// then SIGKILL after 5s) and, if the test failed, logs the output's tail.
func StartProcess(t testing.TB, dir, path string, args ...string) *Process {
	t.Helper()
	name := filepath.Base(path)
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("create %s log: %v", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s output (%s):\n%s", name, logPath, p.Output(8192))
		}
	})
	return p
}

// Exited reports whether the process has ended, and with what error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Signal sends sig to the process (not its group).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Wait waits up to timeout for the process to end and returns its exit
// code (-1 when a signal ended it); ok is false on timeout.
func (p *Process) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// Output returns at most the last n bytes the process wrote.
func (p *Process) Output(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", p.LogPath, err)
	}
	return string(tail(b, n))
}

func (p *Process) stop() {
	pgid := p.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	if done, _ := p.Exited(); done {
		// The leader is gone; children it left in the group may not be.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// waitHTTPReady polls url until it answers 200, the process exits, or the
// timeout passes.
func waitHTTPReady(t testing.TB, p *Process, url string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		if done, err := p.Exited(); done {
			t.Fatalf("%s exited before it was ready (%v):\n%s", p.Name, err, p.Output(4096))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			t.Fatalf("%s not ready at %s after %s (last: %v):\n%s", p.Name, url, timeout, last, p.Output(4096))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid is the process id of the started program.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
