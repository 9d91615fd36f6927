package diagnose

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"
	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	goldenfile "github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// A bundle whose nodes run different HCCL_BUFFSIZE values reports the
// disagreement, between nodes, with who runs which value; HCCL_IF_IP, which
// differs per node by design, is not reported.
func TestSettingsDisagreeBetweenNodes(t *testing.T) {
	dir := t.TempDir()
	ip := func(a string) string { return "HCCL_IF_IP is set to [" + a + "], ip[" + a + "]." }
	writeTree(t, dir, map[string]string{
		"job/node1/log/run/plog/plog-100_20251103201702000.log": envPlog("100", "200", "", ip("10.0.0.1")),
		"job/node1/log/run/plog/plog-101_20251103201702000.log": envPlog("101", "200", "", ip("10.0.0.1")),
		"job/node2/log/run/plog/plog-100_20251103201702000.log": envPlog("100", "200", "", ip("10.0.0.2")),
		"job/node3/log/run/plog/plog-300_20251103201702000.log": envPlog("300", "400", "", ip("10.0.0.3")),
	})
	r := run(t, dir)
	if got := nodeNames(r); !slices.Equal(got, []string{"node1", "node2", "node3"}) {
		t.Fatalf("nodes %v, want node1..3 (job/ is a wrapper)", got)
	}
	if !slices.Equal(r.InconsistentVariables, []string{"HCCL_BUFFSIZE"}) {
		t.Fatalf("inconsistent %v, want [HCCL_BUFFSIZE]", r.InconsistentVariables)
	}
	if r.ExitCode != 1 {
		t.Errorf("exit %d, want 1 (settings disagree)", r.ExitCode)
	}
	s := r.Setting("HCCL_BUFFSIZE")
	if s.Consistent || !s.AcrossNodes {
		t.Errorf("HCCL_BUFFSIZE consistent=%v across=%v", s.Consistent, s.AcrossNodes)
	}
	want := []model.SettingGroup{
		{Value: "200", SetBy: []string{"environment"}, Processes: 3, Nodes: []model.NodePIDs{{Node: "node1", PIDs: []int{100, 101}}, {Node: "node2", PIDs: []int{100}}}},
		{Value: "400", SetBy: []string{"environment"}, Processes: 1, Nodes: []model.NodePIDs{{Node: "node3", PIDs: []int{300}}}},
	}
	if !reflect.DeepEqual(s.Values, want) {
		t.Errorf("values\n got %+v\nwant %+v", s.Values, want)
	}
	if ipS := r.Setting("HCCL_IF_IP"); ipS == nil || ipS.Consistent || !ipS.PerNode {
		t.Errorf("HCCL_IF_IP: %+v, want inconsistent but per-node", ipS)
	}
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"SETTINGS THAT DISAGREE", "HCCL_BUFFSIZE, between nodes:", "400 (environment): node3 (pid 300)"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text report lacks %q", w)
		}
	}

	// Processes of one node that disagree are reported too, but not as
	// a difference between nodes.
	dir2 := t.TempDir()
	writeTree(t, dir2, map[string]string{
		"plog/plog-1_20251103201702000.log": envPlog("1", "200", ""),
		"plog/plog-2_20251103201702000.log": envPlog("2", "100", ""),
	})
	r2 := run(t, dir2)
	s2 := r2.Setting("HCCL_BUFFSIZE")
	if s2.Consistent || s2.AcrossNodes || len(r2.Nodes) != 1 {
		t.Errorf("one node: consistent=%v across=%v nodes=%d", s2.Consistent, s2.AcrossNodes, len(r2.Nodes))
	}
}

func nodeNames(r *model.Report) []string {
	var out []string
	for _, n := range r.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// An archive of the bundle gives the same report as the directory, with
// and without a wrapper directory, and with .tgz and .tar.gz names.
func TestArchiveMatchesDirectory(t *testing.T) {
	dirReport := run(t, "testdata/bundle")
	tmp := t.TempDir()
	plain := filepath.Join(tmp, "bundle.tar.gz")
	wrapped := filepath.Join(tmp, "job.tgz")
	if err := os.WriteFile(plain, tarGz(t, "testdata/bundle", ""), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapped, tarGz(t, "testdata/bundle", "./bundle/"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{plain, wrapped} {
		r := run(t, p)
		if r.Inputs[0].Type != "archive" {
			t.Errorf("%s: type %s", p, r.Inputs[0].Type)
		}
		got, want := reportJSON(t, r), reportJSON(t, dirReport)
		if p == wrapped {
			// File paths in evidence and events are relative to the
			// input: strip the wrapper.
			got = strings.ReplaceAll(got, "bundle/node-", "node-")
		}
		if got != want {
			t.Errorf("%s: report differs from the directory's:\n%s", p, goldenfile.FirstDifference([]byte(got), []byte(want)))
		}
	}
}

// reportJSON is the report without its inputs (paths differ).
func reportJSON(t *testing.T, r *model.Report) string {
	t.Helper()
	c := *r
	c.Inputs = nil
	b, err := json.MarshalIndent(&c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExitCodes(t *testing.T) {
	clean := t.TempDir()
	writeTree(t, clean, map[string]string{
		"run/plog/plog-7_20251103201702000.log": envPlog("7", "200", ""),
		"train.log":                             "epoch 1 loss 2.3\nepoch 2 loss 1.9\n",
	})
	if r := run(t, clean); r.ExitCode != 0 || r.Status != model.StatusClean {
		t.Errorf("clean bundle: exit %d status %s", r.ExitCode, r.Status)
	}
	if r := run(t, "testdata/bundle"); r.ExitCode != 1 {
		t.Errorf("sample bundle: exit %d, want 1", r.ExitCode)
	}

	// Bad input: nothing reported at all.
	missing := filepath.Join(clean, "no-such-dir")
	_, err := Run([]string{clean, missing}, testOptions())
	var ie *bundle.InputError
	if !errors.As(err, &ie) || ie.Path != missing {
		t.Errorf("missing path: err %v, want InputError for %s", err, missing)
	}
	if _, err := Run(nil, testOptions()); !errors.As(err, &ie) {
		t.Errorf("no path: err %v", err)
	}

	// Corrupt and truncated archives: exit 2, with what could be read.
	tmp := t.TempDir()
	garbage := filepath.Join(tmp, "garbage.tar.gz")
	if err := os.WriteFile(garbage, []byte("this is not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := tarGz(t, "testdata/bundle", "")
	truncated := filepath.Join(tmp, "truncated.tgz")
	if err := os.WriteFile(truncated, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{garbage, truncated} {
		r := run(t, p)
		if r.ExitCode != 2 || r.Status != model.StatusIncomplete || len(r.Errors) == 0 || !strings.Contains(r.Errors[0], filepath.Base(p)) {
			t.Errorf("%s: exit %d status %s errors %q", p, r.ExitCode, r.Status, r.Errors)
		}
	}

	// A directory without a single log is bad input too.
	empty := t.TempDir()
	writeTree(t, empty, map[string]string{"notes.md": "nothing here"})
	if r := run(t, empty); r.ExitCode != 2 || r.Inputs[0].SkippedFiles != 1 {
		t.Errorf("no logs: exit %d skipped %d", r.ExitCode, r.Inputs[0].SkippedFiles)
	}

	// An unreadable file inside a tree (not as root, who reads anyway).
	if os.Geteuid() != 0 {
		un := t.TempDir()
		writeTree(t, un, map[string]string{"run/plog/plog-7_20251103201702000.log": envPlog("7", "200", "")})
		p := filepath.Join(un, "run/plog/plog-7_20251103201702000.log")
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		if r := run(t, un); r.ExitCode != 2 {
			t.Errorf("unreadable file: exit %d", r.ExitCode)
		}
	}
}

// EI0011 (QP memory at link setup) and a driver-reported cclBuffer OOM
// (EL0004 while HCCL allocates its buffer) are told apart.
func TestEI0011VersusBufferOOM(t *testing.T) {
	ei0011 := "[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n"
	el0004HCCL := "EL0004: [PID: 316198] 2025-09-28-07:22:29.827.496 Failed to allocate memory.\n" +
		"        Possible Cause: Available memory is insufficient.\n" +
		"        TraceBack (most recent call last):\n" +
		"        Failed to allocate resource[DeviceMemory] with info [size:2147483648]. Reason: Memory resources are exhausted.\n" +
		"        Nnopbase fails to invoke the HcclAllocComResourceByTiling function of the hccl module. ret = 2\n"
	el0004Other := "EL0004: [PID: 316198] 2025-09-28-07:22:29.827.496 Failed to allocate memory.\n" +
		"        Possible Cause: Available memory is insufficient.\n" +
		"        TraceBack (most recent call last):\n" +
		"        Failed to allocate resource[DeviceMemory] with info [size:1048576]. Reason: Memory resources are exhausted.\n" +
		"        aclnnMatmul failed.\n"
	cclPlog := "[ERROR] HCCL(316198,python3):2025-09-28-07:22:29.827.001 [mem_device.cc:52] [316198][DeviceMem][Alloc]rt_malloc error, ret[207001], size[2147483648 Byte]\n"
	env := envPlog("316198", "1024", "")

	cases := []struct {
		name       string
		files      map[string]string
		wantEI0011 bool
		wantOOM    bool // a BufferOOM section
		wantHCCL   bool // attributed to HCCL's buffer
		wantSize   int64
	}{
		{"ei0011 only", map[string]string{"train.log": ei0011, "run/plog/plog-316198_20250928072229000.log": env}, true, false, false, 0},
		{"cclBuffer oom in screen", map[string]string{"train.log": el0004HCCL, "run/plog/plog-316198_20250928072229000.log": env}, false, true, true, 2147483648},
		{"cclBuffer oom in plog", map[string]string{"debug/plog/plog-316198_20250928072229000.log": cclPlog, "run/plog/plog-316198_20250928072229000.log": env}, false, true, true, 0},
		{"other component oom", map[string]string{"train.log": el0004Other}, false, true, false, 1048576},
		{"both", map[string]string{"train.log": ei0011 + el0004HCCL, "run/plog/plog-316198_20250928072229000.log": env}, true, true, true, 2147483648},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			r := run(t, dir)
			if (r.EI0011 != nil) != tc.wantEI0011 {
				t.Fatalf("EI0011 section %v, want %v", r.EI0011 != nil, tc.wantEI0011)
			}
			if (r.BufferOOM != nil) != tc.wantOOM {
				t.Fatalf("buffer OOM section %v, want %v", r.BufferOOM != nil, tc.wantOOM)
			}
			if r.BufferOOM != nil {
				if r.BufferOOM.HCCL != tc.wantHCCL {
					t.Errorf("HCCL %v, want %v", r.BufferOOM.HCCL, tc.wantHCCL)
				}
				var size int64
				for _, ev := range r.BufferOOM.Evidence {
					size = max(size, ev.SizeBytes)
				}
				if size != tc.wantSize {
					t.Errorf("size %d, want %d", size, tc.wantSize)
				}
				joined := strings.Join(r.BufferOOM.Findings, "\n")
				if tc.wantHCCL && !strings.Contains(joined, "lower HCCL_BUFFSIZE") {
					t.Errorf("HCCL buffer OOM findings lack the HCCL_BUFFSIZE remedy:\n%s", joined)
				}
				if !tc.wantHCCL && !strings.Contains(joined, "HCCL_BUFFSIZE is not the lever") {
					t.Errorf("non-HCCL OOM findings:\n%s", joined)
				}
			}
			if r.EI0011 != nil {
				if r.EI0011.BufferOOMPresent != tc.wantHCCL {
					t.Errorf("EI0011 buffer_oom_present %v, want %v", r.EI0011.BufferOOMPresent, tc.wantHCCL)
				}
				ids := []string{}
				for _, rem := range r.EI0011.Remedies {
					ids = append(ids, rem.ID)
				}
				if !slices.Equal(ids, []string{model.RemedyReduceMemoryUse, model.RemedyFewerRoCELinks, model.RemedyFreeNPUMemory, model.RemedyHCCLBuffSize}) {
					t.Errorf("remedies %v", ids)
				}
				buff := strings.Join(r.EI0011.Remedies[3].Findings, "\n")
				if !strings.Contains(buff, "HCCL_BUFFSIZE = 1024 MB (environment)") {
					t.Errorf("remedy 4 lacks the HCCL_BUFFSIZE in force:\n%s", buff)
				}
				wantNote := "No driver-reported cclBuffer out-of-memory"
				if tc.wantHCCL {
					wantNote = "ALSO holds a driver-reported out-of-memory"
				}
				if !strings.Contains(buff, wantNote) {
					t.Errorf("remedy 4 lacks %q:\n%s", wantNote, buff)
				}
			}
		})
	}
}

// The EI0011 remedies carry the bundle's numbers: QPs per connection above
// the recommended range, and the links a communicator implies.
func TestEI0011Numbers(t *testing.T) {
	dir := t.TempDir()
	keyInfo := "[INFO] HCCL(9,python3):2025-11-03-20:18:40.131.350 [hccl_communicator_attrs.cc:327] [9][Communicator Key Info]identifier[10.0.0.1%enp_60000_0_1] rankSize[32] serverNum[4] moduleNum[1] superPodNum[0]\n"
	writeTree(t, dir, map[string]string{
		"run/plog/plog-9_20251103201702000.log": envPlog("9", "200", "12",
			"environmental variable HCCL_RDMA_QP_PORT_CONFIG_PATH is set to [/etc/hccl/qp.cfg]") + keyInfo,
		"train.log": "[PID: 9] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n",
	})
	r := run(t, dir)
	if r.EI0011 == nil {
		t.Fatal("no EI0011 section")
	}
	p := r.Nodes[0].Processes[0]
	// 32 ranks on 4 servers: 8 per server; full mesh 24 remote peers,
	// ring min(4-1, 2) = 2; × 13 QPs per connection (HCCL creates N + 1
	// for HCCL_RDMA_QPS_PER_CONNECTION = 12).
	wantLinks := model.Links{PeersLow: 2, PeersHigh: 24, QPsLow: 26, QPsHigh: 312,
		QPMemoryLowBytes: 26 * 256 << 10, QPMemoryHighBytes: 312 * 3 << 20}
	if got := p.Communicators[0].Links; got != wantLinks {
		t.Errorf("links %+v, want %+v", got, wantLinks)
	}
	if !p.QPs.AboveRecommended || p.QPs.QPsPerConnection != 12 || p.QPs.QPsPerConnectionSetBy != "environment" {
		t.Errorf("qps %+v", p.QPs)
	}
	fewer := strings.Join(r.EI0011.Remedies[1].Findings, "\n")
	for _, w := range []string{
		"HCCL_RDMA_QPS_PER_CONNECTION = 12 (environment)", "ABOVE the recommended range [1, 8]",
		"hccn_tool -s multi_qp (management plane) > NSLB QP configuration (hccn_tool -t nslb-dp) > HCCL_RDMA_QP_PORT_CONFIG_PATH > HCCL_RDMA_QPS_PER_CONNECTION",
		"HCCL_RDMA_QP_PORT_CONFIG_PATH is /etc/hccl/qp.cfg",
		"rankSize 32, serverNum 4 → each rank links to 2 (ring) to 24 (full mesh) peers over RoCE × 13 QPs per connection = 26 to 312 QPs → 6.50 MiB to 936 MiB",
	} {
		if !strings.Contains(fewer, w) {
			t.Errorf("remedy 2 lacks %q:\n%s", w, fewer)
		}
	}
	if s := strings.Join(r.EI0011.Remedies[0].Findings, "\n"); !strings.Contains(s, "up to 936 MiB") {
		t.Errorf("remedy 1:\n%s", s)
	}
}

func TestBuffSizeMB(t *testing.T) {
	cases := []struct {
		mbs, seq, hidden uint64
		dtype            string
		want             uint64
		err              bool
	}{
		{1, 4096, 8192, "bf16", 64, false}, // 64 MiB exactly
		{1, 4096, 8192, "fp16", 64, false},
		{1, 4096, 8192, "fp32", 128, false},
		{1, 4096, 8192, "int8", 32, false},
		{1, 4096, 4096, "bf16", 32, false},
		{2, 2048, 5120, "bf16", 40, false},
		{1, 1000, 1000, "bf16", 2, false},   // 2,000,000 B = 1.91 MiB → 2
		{1, 1, 1, "int8", 1, false},         // HCCL's minimum is 1
		{1, 1 << 20, 1, "int8", 1, false},   // exactly 1 MiB
		{1, 1<<20 + 1, 1, "int8", 2, false}, // one byte more rounds up
		{4, 8192, 12288, "fp32", 1536, false},
		{0, 4096, 8192, "bf16", 0, true},
		{1, 4096, 8192, "fp64", 0, true},
		{1 << 40, 1 << 20, 1 << 10, "fp32", 0, true}, // overflows uint64
	}
	for _, c := range cases {
		got, err := BuffSizeMB(c.mbs, c.seq, c.hidden, c.dtype)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("BuffSizeMB(%d, %d, %d, %s) = %d, %v; want %d, err %v", c.mbs, c.seq, c.hidden, c.dtype, got, err, c.want, c.err)
		}
	}
}

// Kubelet's gzipped rotations are read; symlinks are skipped (they would
// count the same lines twice).
func TestGzipRotationAndSymlinks(t *testing.T) {
	dir := t.TempDir()
	line := "[PID: 9] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(line))
	_ = zw.Close()
	writeTree(t, dir, map[string]string{
		"pods/ns_pod_uid/trainer/0.log.20251103-201900.gz": gz.String(),
		"pods/ns_pod_uid/trainer/0.log":                    line,
	})
	if err := os.Symlink(filepath.Join(dir, "pods/ns_pod_uid/trainer/0.log"), filepath.Join(dir, "pods/link.log")); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir)
	if len(r.Faults) != 1 || r.Faults[0].Count != 2 || r.Nodes[0].Files.Screen != 2 || r.Inputs[0].SkippedFiles != 1 {
		t.Errorf("faults %+v, files %+v, skipped %d; want EI0011 twice from 2 screen files, 1 symlink skipped",
			r.Faults, r.Nodes[0].Files, r.Inputs[0].SkippedFiles)
	}
}
