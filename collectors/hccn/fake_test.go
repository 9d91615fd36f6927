package hccn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"
)

// The test binary doubles as a fake hccn_tool: run with fakeDirEnv set, it
// answers `-i <phy> -<cmd> -g` from files instead of running tests, so the
// runner and sweep tests exec a real child process without a shell:
//
//	<dir>/<phy>/<cmd>.txt    printed on stdout, exit 0
//	<dir>/<phy>/<cmd>.fail   "<exit code> stdout|stderr <message>": a failure
//	<dir>/<phy>/hang         every call on this device hangs, with a child
//	                         that also sleeps (the group kill must get both)
//
// A missing <phy> directory answers as the tool does for an unknown device;
// a missing command file as for an unknown command.
const (
	fakeDirEnv  = "HCCN_TEST_FAKE_DIR"
	fakeLogEnv  = "HCCN_TEST_FAKE_LOG"  // every call appends "start <phy> <cmd> <pid>" and "end …"
	fakePidsEnv = "HCCN_TEST_FAKE_PIDS" // hang: "<pid> <child pid>" is appended here
	fakeSleep   = "HCCN_TEST_FAKE_SLEEP_CHILD"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeSleep) != "" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	if dir := os.Getenv(fakeDirEnv); dir != "" {
		os.Exit(fakeHCCNTool(dir, os.Getenv(fakeLogEnv), os.Args[1:], os.Stdout, os.Stderr, hangProcess))
	}
	os.Exit(m.Run())
}

// hangProcess is a hung call in the child: it starts a grandchild that
// sleeps too (the group kill must get both) and never returns.
func hangProcess() {
	self, _ := os.Executable()
	child := exec.Command(self)
	child.Env = append(os.Environ(), fakeSleep+"=1")
	if err := child.Start(); err == nil {
		clitest.AppendLine(os.Getenv(fakePidsEnv), fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid))
	}
	time.Sleep(time.Hour)
}

// fakeHCCNTool answers one call from the files under dir, logging it to
// logf, in the child process (TestMain) or in the test's own (inProcess).
// hang is what a call on a hung device does; it returns when the call is
// over (the in-process fake's timeout).
func fakeHCCNTool(dir, logf string, args []string, stdout, stderr io.Writer, hang func()) int {
	if len(args) != 4 || args[0] != "-i" || !strings.HasPrefix(args[2], "-") || args[3] != "-g" {
		fmt.Fprintln(stderr, "The total count of input parameters is wrong!")
		return 4
	}
	phy, cmd := args[1], strings.TrimPrefix(args[2], "-")
	clitest.AppendLine(logf, fmt.Sprintf("start %s %s %d", phy, cmd, os.Getpid()))
	defer clitest.AppendLine(logf, fmt.Sprintf("end %s %s %d", phy, cmd, os.Getpid()))
	dev := filepath.Join(dir, phy)
	if _, err := os.Stat(dev); err != nil {
		fmt.Fprintln(stderr, "Get invalid device id.")
		return 4
	}
	if _, err := os.Stat(filepath.Join(dev, "hang")); err == nil {
		hang()
		return -1
	}
	if b, err := os.ReadFile(filepath.Join(dev, cmd+".fail")); err == nil {
		f := strings.SplitN(strings.TrimSpace(string(b)), " ", 3)
		code, _ := strconv.Atoi(f[0])
		w := stderr
		if len(f) > 1 && f[1] == "stdout" {
			w = stdout
		}
		if len(f) > 2 {
			fmt.Fprintln(w, f[2])
		}
		return code
	}
	b, err := os.ReadFile(filepath.Join(dev, cmd+".txt"))
	if err != nil {
		fmt.Fprintln(stderr, "Get invalid major cmd.")
		fmt.Fprintln(stderr, "Enter [ hccn_tool -h ] for more details.")
		return 3
	}
	_, _ = stdout.Write(b)
	return 0
}

// inProcess makes c answer its calls from the fake's files in this
// process instead of starting a child per call (about 10 ms each, 40 per
// sweep of a 8-chip node). -short uses it for the tests of what the
// collector makes of the answers; the tests of the process itself (hangs
// killed with their group, Stop cancelling a call, the binary resolved at
// each sweep) and the whole suite without -short keep the child. A hung
// device's call waits for its timeout or ctx, as vendorcli.Run does, and
// returns what Run returns then.
func (n *fakeNode) inProcess(c *Collector) {
	c.exec = func(ctx context.Context, bin string, args []string) output {
		begin := time.Now()
		ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		var stdout, stderr bytes.Buffer
		code := fakeHCCNTool(n.dir, n.log, args, &stdout, &stderr, func() { <-ctx.Done() })
		o := output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code, Duration: time.Since(begin)}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			o.TimedOut = true
		}
		if len(o.Stdout) > maxOutputBytes && !o.TimedOut { // as runTool
			o.Stdout, o.Truncated = o.Stdout[:maxOutputBytes], true
			o.Err = fmt.Errorf("printed more than %d bytes; output rejected", maxOutputBytes)
		}
		return o
	}
}

// fakeNode is a directory the fake serves, built by tests.
type fakeNode struct {
	t   *testing.T
	dir string
	log string
}

func newFakeNode(t *testing.T) *fakeNode {
	t.Helper()
	d := t.TempDir()
	n := &fakeNode{t: t, dir: filepath.Join(d, "node"), log: filepath.Join(d, "calls.log")}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return n
}

// set writes the answer of one command on one device.
func (n *fakeNode) set(phy int, cmd, stdout string) {
	n.write(phy, cmd+".txt", stdout)
	_ = os.Remove(filepath.Join(n.dir, strconv.Itoa(phy), cmd+".fail"))
}

// fail makes one command fail with code and message on stream.
func (n *fakeNode) fail(phy int, cmd string, code int, stream, msg string) {
	n.write(phy, cmd+".fail", fmt.Sprintf("%d %s %s", code, stream, msg))
}

func (n *fakeNode) hang(phy int) { n.write(phy, "hang", "") }

func (n *fakeNode) write(phy int, name, data string) {
	n.t.Helper()
	d := filepath.Join(n.dir, strconv.Itoa(phy))
	if err := os.MkdirAll(d, 0o755); err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// calls returns the calls the fake logged, as "phy cmd" in start order.
func (n *fakeNode) calls() []string {
	b, _ := os.ReadFile(n.log)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "start" {
			out = append(out, f[1]+" "+f[2])
		}
	}
	return out
}

// maxConcurrent returns the most calls the log shows running at once.
func (n *fakeNode) maxConcurrent() int {
	b, _ := os.ReadFile(n.log)
	cur, most := 0, 0
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "start "):
			cur++
		case strings.HasPrefix(l, "end "):
			cur--
		}
		most = max(most, cur)
	}
	return most
}

// use points the test's process environment at the fake and returns the
// binary to run.
func (n *fakeNode) use(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeDirEnv, n.dir)
	t.Setenv(fakeLogEnv, n.log)
	// A race-enabled binary sleeps 1s at exit by default; the fake is one.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	return self
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
