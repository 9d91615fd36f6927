package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/cli"
)

// sampleBundle is the diagnose package's sample bundle (three nodes).
var sampleBundle = filepath.Join("..", "..", "diagnose", "testdata", "bundle")

// parseDiagnose runs args as main's run does: the diagnose command when
// they select it, with its own parser.
func parseDiagnose(t *testing.T, args ...string) (selected bool, code int, stdout, stderr string, parseErr error) {
	t.Helper()
	dargs, ok := cli.Args(args)
	if !ok {
		return false, 0, "", "", nil
	}
	var out, errOut bytes.Buffer
	d := cli.New(&out, &errOut)
	d.Terminate = func(int) { t.Fatalf("%v: the parser terminated:\n%s%s", args, out.String(), errOut.String()) }
	if err := d.Parse(dargs); err != nil {
		return false, 0, "", "", err
	}
	code = d.Run(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return true, code, out.String(), errOut.String(), nil
}

// TestDiagnoseHelp: `diagnose --help` shows diagnose's own flags, not the
// server's, and says how to reach buffsize; `diagnose buffsize --help`
// offers json as --format does.
func TestDiagnoseHelp(t *testing.T) {
	help := func(args ...string) string {
		dargs, ok := cli.Args(args)
		if !ok {
			t.Fatalf("%v does not select diagnose", args)
		}
		var out, errOut bytes.Buffer
		d := cli.New(&out, &errOut)
		terminated := false
		d.Terminate = func(int) { terminated = true }
		_ = d.Parse(dargs)
		if !terminated {
			t.Errorf("%v did not end after the help", args)
		}
		return out.String()
	}
	report := help("diagnose", "--help")
	for _, want := range []string{"usage: hccl_exporter diagnose [<flags>] <path>...", "--layout=auto", "--timezone=", "--node-timezone=NODE=ZONE", "--workers=0", "--format=text", "diagnose buffsize --help"} {
		if !strings.Contains(report, want) {
			t.Errorf("diagnose --help lacks %q:\n%s", want, report)
		}
	}
	for _, server := range []string{"--web.", "--cannlog.", "--npu-smi.", "serve"} {
		if strings.Contains(report, server) {
			t.Errorf("diagnose --help shows the server's %q:\n%s", server, report)
		}
	}
	buff := help("--log.level=debug", "diagnose", "buffsize", "--help")
	for _, want := range []string{"--micro-batch-size=", "--dtype=DTYPE", "json (the same fields"} {
		if !strings.Contains(buff, want) {
			t.Errorf("diagnose buffsize --help lacks %q:\n%s", want, buff)
		}
	}
	if strings.Contains(buff, "--layout") || strings.Contains(buff, "html") {
		t.Errorf("diagnose buffsize --help offers report flags:\n%s", buff)
	}
}

func TestDiagnoseCLI(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		selected bool
		code     int
		stdout   string // substring
		stderr   string // substring
		parseErr string // substring; the command then does not run
	}{
		{name: "no command serves", args: nil, selected: false},
		{name: "default subcommand", args: []string{"diagnose", "--timezone", "UTC", sampleBundle}, selected: true, code: 1, stdout: "EI0011: NOT ENOUGH NPU MEMORY"},
		{name: "explicit report", args: []string{"diagnose", "report", sampleBundle}, selected: true, code: 1, stdout: "FAULT CODES (9)"},
		{name: "json before path", args: []string{"diagnose", "--format", "json", sampleBundle}, selected: true, code: 1, stdout: `"schema_version": 1`},
		{name: "json after report", args: []string{"diagnose", "report", "--format=json", "--layout", "node", sampleBundle}, selected: true, code: 1, stdout: `"name": "bundle"`},
		{name: "report flag first", args: []string{"diagnose", "--layout", "nodes", sampleBundle}, selected: true, code: 1, stdout: "node-c:"},
		{name: "missing path", args: []string{"diagnose", filepath.Join(t.TempDir(), "nope")}, selected: true, code: 2, stderr: "no such file or directory"},
		{name: "bad timezone", args: []string{"diagnose", "--timezone", "Mars/Olympus", sampleBundle}, parseErr: "--timezone"},
		{name: "bad node timezone", args: []string{"diagnose", "--node-timezone", "node-a", sampleBundle}, parseErr: "want NODE=ZONE"},
		{name: "timezone auto", args: []string{"diagnose", "--timezone", "auto", filepath.Join("..", "..", "diagnose", "testdata", "incidents", "ei0011")}, selected: true, code: 1, stdout: "node-3: zone UTC+08:00 (inferred from 1 communicator identifier(s))"},
		{name: "node timezone", args: []string{"diagnose", "--timezone", "+00:00", "--node-timezone", "node-a=+08:00", sampleBundle}, selected: true, code: 1, stdout: "node-a: zone UTC+08:00"},
		{name: "no path", args: []string{"diagnose"}, parseErr: "required argument 'path' not provided"},
		{name: "bad format", args: []string{"diagnose", "--format", "yaml", sampleBundle}, parseErr: "enum value must be one of text,json,html"},
		{name: "buffsize html", args: []string{"diagnose", "buffsize", "--format", "html", "--micro-batch-size", "1", "--seq-len", "1", "--hidden-size", "1", "--dtype", "bf16"}, parseErr: "enum value must be one of text,json"},
		{name: "server flag is not diagnose's", args: []string{"diagnose", "--web.telemetry-path=/x", sampleBundle}, parseErr: "unknown long flag"},
		{name: "html", args: []string{"diagnose", "--format", "html", "--timezone", "UTC", sampleBundle}, selected: true, code: 1, stdout: `<svg class="timeline"`},
		{name: "buffsize", args: []string{"diagnose", "buffsize", "--micro-batch-size", "1", "--seq-len", "4096", "--hidden-size", "8192", "--dtype", "bf16"},
			selected: true, code: 0, stdout: "export HCCL_BUFFSIZE=64\n"},
		{name: "buffsize json", args: []string{"diagnose", "--format", "json", "buffsize", "--micro-batch-size=2", "--seq-len=2048", "--hidden-size=5120", "--dtype=fp32"},
			selected: true, code: 0, stdout: `"hccl_buffsize_mb": 80`},
		{name: "buffsize zero", args: []string{"diagnose", "buffsize", "--micro-batch-size", "0", "--seq-len", "4096", "--hidden-size", "8192", "--dtype", "bf16"},
			parseErr: "--micro-batch-size=0"},
		{name: "buffsize missing flag", args: []string{"diagnose", "buffsize", "--micro-batch-size", "1"}, parseErr: "required flag"},
		{name: "buffsize bad dtype", args: []string{"diagnose", "buffsize", "--micro-batch-size", "1", "--seq-len", "1", "--hidden-size", "1", "--dtype", "fp64"}, parseErr: "enum value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			selected, code, stdout, stderr, err := parseDiagnose(t, c.args...)
			if c.parseErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.parseErr) {
					t.Fatalf("parse error %v, want %q", err, c.parseErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if selected != c.selected || code != c.code {
				t.Fatalf("selected %v exit %d, want %v %d; stderr %s", selected, code, c.selected, c.code, stderr)
			}
			if !strings.Contains(stdout, c.stdout) {
				t.Errorf("stdout lacks %q:\n%.2000s", c.stdout, stdout)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr lacks %q: %s", c.stderr, stderr)
			}
			if strings.Contains(strings.Join(c.args, " "), "json") && c.code != 2 {
				var v map[string]any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("not JSON: %v\n%s", err, stdout)
				}
			}
		})
	}
}

// silentBundle printed its times in UTC+8 (diagnose/gen_bundles_test.go).
var silentBundle = filepath.Join("..", "..", "diagnose", "testdata", "incidents", "silent-peer-utc8")

// TestDiagnoseHelperProcess is the command run in a child process whose
// TZ differs from the bundle's zone (TestDiagnoseTZ); it does nothing in
// a normal run.
func TestDiagnoseHelperProcess(t *testing.T) {
	if os.Getenv("HCCL_DIAGNOSE_HELPER") != "1" {
		t.Skip("helper process of TestDiagnoseTZ")
	}
	args := strings.Split(os.Getenv("HCCL_DIAGNOSE_ARGS"), "\n")
	_, code, stdout, stderr, err := parseDiagnose(t, args...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Print(stdout)
	fmt.Fprint(os.Stderr, stderr)
	os.Exit(code)
}

// TestDiagnoseTZ: the command, run with TZ=UTC (and other zones) on a
// UTC+8 bundle, names the failing pair and the silent rank inside the
// incident, and exits 1 (findings).
func TestDiagnoseTZ(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tz := range []string{"UTC", "America/Los_Angeles", "Asia/Shanghai"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDiagnoseHelperProcess$")
		cmd.Env = append(os.Environ(), "TZ="+tz, "HCCL_DIAGNOSE_HELPER=1",
			"HCCL_DIAGNOSE_ARGS="+strings.Join([]string{"diagnose", "--format", "json", silentBundle}, "\n"))
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("TZ=%s: %v, want exit 1; stderr:\n%s", tz, err, errOut.String())
		}
		var rep struct {
			Incidents []struct {
				FailingPair *struct {
					Src pairEnd `json:"src"`
					Dst pairEnd `json:"dst"`
				} `json:"failing_pair"`
				SilentRanks []struct {
					Rank int `json:"rank"`
					PID  int `json:"pid"`
				} `json:"silent_ranks"`
			} `json:"incidents"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("TZ=%s: %v:\n%s", tz, err, out.String())
		}
		if len(rep.Incidents) != 1 || rep.Incidents[0].FailingPair == nil {
			t.Fatalf("TZ=%s: incidents %+v", tz, rep.Incidents)
		}
		in := rep.Incidents[0]
		p := in.FailingPair
		if p.Src.Rank != 3 || p.Src.Server != "10.20.1.11" || p.Dst.Rank != 11 || p.Dst.Server != "10.20.1.12" {
			t.Errorf("TZ=%s: failing pair %+v", tz, *p)
		}
		if len(in.SilentRanks) != 1 || in.SilentRanks[0].Rank != 11 || in.SilentRanks[0].PID != 670003 {
			t.Errorf("TZ=%s: silent ranks %+v", tz, in.SilentRanks)
		}
	}
}

// TestDiagnoseDetail: the text report summarises processes by settings set
// and communicators; --detail lists each one.
func TestDiagnoseDetail(t *testing.T) {
	const perProcess = "node-b pid 2730114 pretrain_gpt, settings set 2-18f6b57e"
	_, code, summary, _, err := parseDiagnose(t, "diagnose", sampleBundle)
	if err != nil || code != 1 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if strings.Contains(summary, perProcess) || !strings.Contains(summary, "settings set 2-18f6b57e: 1 process(es) on node-b") {
		t.Errorf("the summary lists processes one by one, or lacks the group")
	}
	_, code, detail, _, err := parseDiagnose(t, "diagnose", "--detail", sampleBundle)
	if err != nil || code != 1 || !strings.Contains(detail, perProcess) {
		t.Errorf("--detail: exit %d, %v, lists the process: %v", code, err, strings.Contains(detail, perProcess))
	}
}

// pairEnd is one end of a failing pair in the report's JSON, as a program
// reads it.
type pairEnd struct {
	Rank   int    `json:"rank"`
	Server string `json:"server"`
}
