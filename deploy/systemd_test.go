package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

const unitPath = "systemd/hccl_exporter.service"

// unitDirectives returns key → values of the [Service] section.
func unitDirectives(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s: line without '=': %q", unitPath, line)
			continue
		}
		out[section+k] = append(out[section+k], v)
	}
	return out
}

// TestSystemdUnitVerify runs `systemd-analyze verify` on the unit. It prints
// unknown keys and unparsable values as warnings but still exits 0, so any
// line naming the unit counts as a failure. The unit's ExecStart binary must
// exist for verify: it is pointed at this test binary.
func TestSystemdUnitVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testtools.Unavailable(t, "systemd-analyze not installed (Debian package systemd); the unit is only checked structurally")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/hccl_exporter ") {
		t.Fatal("ExecStart does not run /usr/local/bin/hccl_exporter")
	}
	rewritten := strings.Replace(string(unit), "ExecStart=/usr/local/bin/hccl_exporter ", "ExecStart="+self+" ", 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "hccl_exporter.service")
	if err := os.WriteFile(path, []byte(rewritten), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sa, "verify", "--man=no", path)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "hccl_exporter.service") {
			t.Errorf("systemd-analyze verify warns: %s", line)
		}
	}
}

// TestSystemdUnitContract pins what docs and README promise about the unit.
func TestSystemdUnitContract(t *testing.T) {
	d := unitDirectives(t)
	want := map[string]string{
		"[Service]User":                "hccl_exporter",
		"[Service]SupplementaryGroups": "HwHiAiUser",
		"[Service]ProtectSystem":       "strict",
		"[Service]ProtectHome":         "read-only",
		"[Service]StateDirectory":      "hccl_exporter",
		"[Service]NoNewPrivileges":     "yes",
		"[Service]PrivateTmp":          "yes",
		"[Service]DevicePolicy":        "closed",
		"[Service]EnvironmentFile":     "-/etc/default/hccl_exporter",
	}
	for k, v := range want {
		if got := d[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	execStart := strings.Join(d["[Service]ExecStart"], "")
	if !strings.Contains(execStart, "--cannlog.state-file=/var/lib/hccl_exporter/state.json") || !strings.HasSuffix(execStart, "$ARGS") {
		t.Errorf("ExecStart %q must keep the state file in StateDirectory and pass $ARGS", execStart)
	}
	for _, k := range []string{"PrivateDevices", "ProtectProc", "DynamicUser"} {
		if _, ok := d["[Service]"+k]; ok {
			t.Errorf("%s is set: it hides NPU devices, other users' /proc entries or the fixed group membership", k)
		}
	}
	allowed := map[string]bool{}
	for _, v := range d["[Service]DeviceAllow"] {
		allowed[strings.Fields(v)[0]] = true
	}
	for _, dev := range []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/davinci0", "/dev/davinci7", "/dev/davinci15"} {
		if !allowed[dev] {
			t.Errorf("DeviceAllow lacks %s", dev)
		}
	}
	// The example environment file sets only ARGS.
	env, err := os.ReadFile("systemd/hccl_exporter.default")
	if err != nil {
		t.Fatal(err)
	}
	assign := regexp.MustCompile(`(?m)^([A-Za-z_]+)=`)
	for _, m := range assign.FindAllStringSubmatch(string(env), -1) {
		if m[1] != "ARGS" {
			t.Errorf("hccl_exporter.default sets %s; the unit reads only ARGS", m[1])
		}
	}
}
