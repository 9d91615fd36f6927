package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// flagCases holds, for every flag of the server, values it must refuse
// (each on its own, the other flags at their defaults) and one it must
// accept. FILE and DIR are replaced by an existing file and directory.
var flagCases = map[string]struct {
	bad  []string
	good string
}{
	"web.telemetry-path":              {[]string{"", "metrics", "/met rics", "/{x}", "/a%20b", "/healthz", "GET /metrics"}, "/custom/metrics"},
	"web.max-requests":                {[]string{"-1", "x", "2000000"}, "0"},
	"web.disable-exporter-metrics":    {[]string{"maybe", "true"}, ""},
	"web.scrape-cache-ttl":            {[]string{"-1s", "1h", "5"}, "0s"},
	"web.scrape-timeout":              {[]string{"0s", "-10s", "2h", "ten"}, "30s"},
	"web.scrape-timeout-offset":       {[]string{"-1s", "10s", "20s"}, "0s"},
	"web.read-header-timeout":         {[]string{"0s", "-1s", "2h"}, "5s"},
	"web.idle-timeout":                {[]string{"0s", "-1m", "48h"}, "5m"},
	"web.write-timeout":               {[]string{"0s", "-1s", "5s"}, "1m"},
	"web.max-header-bytes":            {[]string{"0", "-1", "100", "2000000000"}, "4096"},
	"web.max-connections":             {[]string{"-1", "many"}, "0"},
	"web.systemd-socket":              {[]string{"yes"}, ""},
	"web.listen-address":              {[]string{"", "9842", ":99999", "localhost", ":-1", " :9842"}, "127.0.0.1:0"},
	"web.config.file":                 {[]string{"/nonexistent/web.yml", "DIR"}, "FILE"},
	"collector.npusmi":                {[]string{"false"}, ""},
	"collector.cannlog":               {[]string{"0"}, ""},
	"collector.pods":                  {[]string{"off"}, ""},
	"collector.headroom":              {[]string{"true"}, ""},
	"collector.npuhealth":             {[]string{"no"}, ""},
	"collector.hccn":                  {[]string{"1"}, ""},
	"npuhealth.hccs-links":            {[]string{"true"}, ""},
	"npuhealth.pcie-types":            {[]string{"true"}, ""},
	"npuhealth.hccs-traffic":          {[]string{"yes"}, ""},
	"npuhealth.engine-utilization":    {[]string{"on"}, ""},
	"npuhealth.voltage":               {[]string{"1"}, ""},
	"npuhealth.aicore-frequency":      {[]string{"false"}, ""},
	"npuhealth.ecc-enable":            {[]string{"no"}, ""},
	"hccn.optical-detail":             {[]string{"0"}, ""},
	"hccn.packet-counters":            {[]string{"off"}, ""},
	"hccn.link-up-count":              {[]string{"enable"}, ""},
	"cannlog.rejected-values":         {[]string{"true"}, ""},
	"npusmi.path":                     {[]string{"", " npu-smi", "npu-smi\n"}, "/usr/local/sbin/npu-smi"},
	"npusmi.timeout":                  {[]string{"0s", "-1s", "2m", "1h"}, "3s"},
	"npusmi.min-interval":             {[]string{"-1s", "48h"}, "0s"},
	"npuhealth.interval":              {[]string{"0s", "5s", "-1m", "48h"}, "2m"},
	"npuhealth.fault-code-file":       {[]string{"/nonexistent/faultCode.json", "DIR"}, "FILE"},
	"cannlog.root":                    {[]string{"", " /var/log/npu"}, "/var/log/npu"},
	"path.procfs":                     {[]string{"proc", "host/proc", "/proc "}, ""},
	"cannlog.screen-log-path":         {[]string{"", "/var/log/[", " /x/*.log"}, "/var/log/pods/*/*/*.log"},
	"cannlog.state-file":              {[]string{"/nonexistent/state.json", "DIR", "DIR/"}, "DIR/state.json"},
	"cannlog.process-ttl":             {[]string{"0s", "-1h", "9999h"}, "30m"},
	"cannlog.fault-ttl":               {[]string{"0s", "-6h"}, "12h"},
	"cannlog.poll-interval":           {[]string{"0s", "-1s", "1ms", "2h"}, "500ms"},
	"cannlog.rescan-interval":         {[]string{"0s", "-30s", "10ms", "48h"}, "1m"},
	"cannlog.checkpoint-interval":     {[]string{"0s", "-10s", "48h"}, "1m"},
	"cannlog.max-line-bytes":          {[]string{"0", "-1", "10", "1000000000"}, "131072"},
	"cannlog.max-open-files":          {[]string{"-1", "x"}, "4096"},
	"cannlog.max-pids":                {[]string{"0", "-1", "100000000"}, "2048"},
	"cannlog.max-communicators":       {[]string{"0", "-5"}, "100"},
	"cannlog.max-codes":               {[]string{"0", "-1"}, "64"},
	"cannlog.max-fault-pods":          {[]string{"0", "-1"}, "64"},
	"cannlog.max-modules":             {[]string{"0", "-1"}, "64"},
	"cannlog.cross-filesystems":       {[]string{"true"}, ""},
	"cannlog.timezone":                {[]string{"Mars/Olympus", "+25:00", "utc+8"}, "Asia/Shanghai"},
	"headroom.qp-bytes-low":           {[]string{"0", "-1MiB", "lots", "8MiB"}, "128KiB"},
	"headroom.qp-bytes-high":          {[]string{"0", "-3MiB", "100KiB"}, "2MiB"},
	"headroom.capture-window":         {[]string{"0s", "-5m", "48h"}, "10m"},
	"headroom.learn-qp-size":          {[]string{"true"}, ""},
	"headroom.learn-min-observations": {[]string{"0", "-1", "x"}, "3"},
	"headroom.learn-ttl":              {[]string{"0s", "-1h", "59m", "9999h"}, "24h"},
	"headroom.learn-reset":            {[]string{"true"}, ""},
	"headroom.workload-memory-ttl":    {[]string{"0s", "-1h", "9999h"}, "168h"},
	"headroom.workload-memory-max":    {[]string{"0", "-1", "100000000"}, "500"},
	"hccn.path":                       {[]string{"", "hccn_tool "}, "/usr/local/bin/hccn_tool"},
	"hccn.timeout":                    {[]string{"0s", "-1s", "1h"}, "10s"},
	"hccn.interval":                   {[]string{"0s", "500ms", "-30s"}, "1m"},
	"hccn.slow-interval":              {[]string{"-1m", "10s", "9999h"}, "0s"},
	"pods.kubelet-socket":             {[]string{"kubelet.sock", "/var/lib/kubelet.sock\n"}, ""},
	"pods.kubelet-interval":           {[]string{"0s", "-15s", "48h"}, "30s"},
	"pods.kubelet-timeout":            {[]string{"0s", "-5s", "1h"}, "2s"},
	"pods.max-assignments":            {[]string{"0", "-1"}, "64"},
	"pods.kubelet-logs":               {[]string{"var/log", " /var/log"}, ""},
	"path.devfs":                      {[]string{"", "dev"}, "/host/dev"},
	"log.level":                       {[]string{"verbose", ""}, "debug"},
	"log.format":                      {[]string{"xml"}, "json"},
}

// TestEveryFlagIsValidated parses each bad value of every flag of the
// server, as the binary does, and wants an error that names the flag and
// the value; each good value must pass. The flags come from kingpin's model:
// a flag added without a rule (flagcheck.Rules.Flag) and a case here fails.
func TestEveryFlagIsValidated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	expand := func(v string) string {
		return strings.NewReplacer("FILE", file, "DIR", dir).Replace(v)
	}
	if err := newServeApp().parse(nil); err != nil {
		t.Fatalf("the defaults do not pass: %v", err)
	}
	seen := map[string]bool{}
	sa := newServeApp()
	rules := sa.rules
	for _, f := range sa.app.Model().Flags {
		if kingpinOwn[f.Name] {
			continue
		}
		seen[f.Name] = true
		if !rules.Has(f.Name) {
			t.Errorf("--%s has no rule: define it with flagcheck.Rules.Flag in its package's AddFlags", f.Name)
		}
		tc, ok := flagCases[f.Name]
		if !ok {
			t.Errorf("--%s has no case in flagCases: give it values it must refuse and one it accepts", f.Name)
			continue
		}
		if len(tc.bad) == 0 {
			t.Errorf("--%s: no bad value", f.Name)
		}
		for _, bad := range tc.bad {
			bad = expand(bad)
			arg := "--" + f.Name + "=" + bad
			err := newServeApp().parse([]string{arg})
			if err == nil {
				t.Errorf("%q accepted", arg)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, "--"+f.Name) || !strings.Contains(msg, "expected") {
				t.Errorf("%q: error %q does not name the flag and what it expects", arg, msg)
			}
			if !strings.Contains(msg, strconv.Quote(bad)) && !strings.Contains(msg, "="+bad) {
				t.Errorf("%q: error %q does not quote the value", arg, msg)
			}
		}
		arg := "--" + f.Name
		if tc.good != "" {
			arg += "=" + expand(tc.good)
		}
		if err := newServeApp().parse([]string{arg}); err != nil {
			t.Errorf("%q refused: %v", arg, err)
		}
	}
	for name := range flagCases {
		if !seen[name] {
			t.Errorf("flagCases has --%s, which the server does not define", name)
		}
	}
	for _, name := range rules.Names() {
		if !seen[name] {
			t.Errorf("a rule names --%s, which the server does not define", name)
		}
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain removes the binary buildBinary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		_ = os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// buildBinary builds the exporter once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hccl_exporter-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "hccl_exporter")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestRenamedFlagsAreValidated: the 0.3 spellings are rewritten before the
// parse, so their values meet the same rules.
func TestRenamedFlagsAreValidated(t *testing.T) {
	args, _ := renameFlags([]string{"--hccn-tool.interval=0s"})
	err := newServeApp().parse(args)
	if err == nil || !strings.Contains(err.Error(), "--hccn.interval") {
		t.Errorf("--hccn-tool.interval=0s: %v, want an error naming --hccn.interval", err)
	}
	args, _ = renameFlags([]string{"--npu-smi.timeout=5s", "--kubelet.max-pods=10"})
	if err := newServeApp().parse(args); err != nil {
		t.Errorf("old spellings with good values refused: %v", err)
	}
}

// TestBadFlagExitsTwo runs the binary: --web.telemetry-path= panicked in
// the HTTP mux in 0.4.0; now each bad value exits 2 at once with the flag's
// name on stderr, without serving.
func TestBadFlagExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildBinary(t)
	for _, arg := range []string{"--web.telemetry-path=", "--web.scrape-timeout=0s", "--cannlog.max-pids=0", "--web.listen-address=:99999", "--npusmi.timeout=5"} {
		cmd := exec.Command(bin, arg, "--web.listen-address=127.0.0.1:0", "--no-collector.npusmi", "--no-collector.headroom",
			"--no-collector.npuhealth", "--no-collector.hccn", "--no-collector.pods", "--no-collector.cannlog")
		if arg == "--web.listen-address=:99999" {
			cmd.Args = append(cmd.Args[:1], cmd.Args[3:]...)
			cmd.Args = append(cmd.Args, arg)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%s: still running after 10s (it was accepted)", arg)
		}
		name, _, _ := strings.Cut(arg, "=")
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), name) || strings.Contains(stderr.String(), "panic") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and a message naming %s", arg, code, stderr.String(), name)
		}
	}
}

// kingpinOwn are kingpin's own flags, which need no rule.
var kingpinOwn = map[string]bool{
	"help": true, "help-long": true, "help-man": true, "version": true,
	"completion-bash": true, "completion-script-bash": true, "completion-script-zsh": true,
}
