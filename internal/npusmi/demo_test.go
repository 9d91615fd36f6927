package npusmi

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// demoScript is the fake npu-smi the demo and end-to-end tests run.

func TestDemoFakeNPUSMI(t *testing.T) {
	path, err := filepath.Abs(demoScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DEMO_NPU_SMI_OUTPUT", "")
	out, err := RunInfo(context.Background(), path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, s)
	if len(s.Chips) != 8 || len(s.Processes) != 8 || len(s.Warnings) != 0 {
		t.Fatalf("demo: %d chips, %d processes, warnings %q; want 8, 8, none", len(s.Chips), len(s.Processes), s.Warnings)
	}
	for i, c := range s.Chips {
		if c.NPU != strconv.Itoa(i) || c.Chip != "0" || c.Name != "910B3" || c.Health != "OK" ||
			c.HBMTotalBytes != mb(65536) || !c.HBMUsedBytes.OK {
			t.Errorf("demo chip %d = %+v", i, c)
		}
	}
	if got := s.Chips[0].HBMUsedBytes; got != mb(65500) {
		t.Errorf("demo NPU 0 HBM used = %v, want 65500 MiB", got.V)
	}
	for i, p := range s.Processes {
		if p.PID != 210001+i || p.Name != "python3" || p.NPU != strconv.Itoa(i) || !p.MemoryBytes.OK {
			t.Errorf("demo process %d = %+v", i, p)
		}
	}

	// DEMO_NPU_SMI_OUTPUT replaces the table.
	t.Setenv("DEMO_NPU_SMI_OUTPUT", filepath.Join("testdata", "info-a3-910_93-2die.txt"))
	out, err = RunInfo(context.Background(), path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := readFile(t, filepath.Join("testdata", "info-a3-910_93-2die.txt")); string(out) != string(want) {
		t.Error("DEMO_NPU_SMI_OUTPUT file not printed verbatim")
	}

	// Only `info` is supported.
	cmd := exec.Command(path, "-m")
	err = cmd.Run()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
		t.Errorf("npu-smi -m: %v, want exit status 2", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("%s must be executable: %v", path, err)
	}
}
