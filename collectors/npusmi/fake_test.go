package npusmi

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli/clitest"
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
		clitest.AppendLine(os.Getenv(fakePidsEnv), fmt.Sprintf("%d %d", os.Getpid(), child.Process.Pid))
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
	clitest.AppendLine(logf, fmt.Sprintf("start %d", os.Getpid()))
	defer clitest.AppendLine(logf, fmt.Sprintf("end %d", os.Getpid()))
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
