package hccn

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

func capture(t testing.TB, name string) []byte {
	t.Helper()
	return readFile(t, filepath.Join("testdata", "captures", name))
}

func TestParseLinkCaptures(t *testing.T) {
	for _, tc := range []struct {
		file string
		up   bool
	}{
		{"link-910b3-down-no-optics.txt", false},
		{"link-up-mindcluster-doc.txt", true},
	} {
		up, err := ParseLink(capture(t, tc.file))
		if err != nil || up != tc.up {
			t.Errorf("%s: up=%v err=%v, want %v", tc.file, up, err, tc.up)
		}
	}
}

func TestParseLinkRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"\n\n",
		"link status: SLEEPING\n",
		"link status:\n",
		"link status: UP\nlink status: DOWN\n",
		"hccn_tool is busy, please try again.\n",
		"link status: UP\nsomething else\n",
	} {
		if up, err := ParseLink([]byte(in)); err == nil {
			t.Errorf("ParseLink(%q) = %v, want an error", in, up)
		}
	}
	if up, err := ParseLink([]byte("Link Status: up \r\n")); err != nil || !up {
		t.Errorf("case and CRLF: %v %v", up, err)
	}
}

func TestParseLinkStatCaptures(t *testing.T) {
	loc := time.UTC
	for _, tc := range []struct {
		file               string
		upCount, downCount uint64
		hasDown            bool
		records, downRecs  int
		newest             string
		newestUp           bool
	}{
		{"link_stat-2025-with-down-count.txt", 2, 1, true, 3, 1, "2025-10-05 10:13:51", true},
		{"link_stat-2023-device-prefix.txt", 2, 0, false, 3, 1, "2023-06-06 16:32:12", true},
		{"link_stat-910a-2022.txt", 2, 0, false, 3, 1, "2022-08-01 14:43:40", true},
		{"link_stat-3down-from-format.txt", 4, 3, true, 7, 3, "2026-03-01 22:41:37", true},
	} {
		s, err := ParseLinkStat(capture(t, tc.file), loc)
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if s.UpCount != tc.upCount || s.DownCount != tc.downCount || s.HasDownCount != tc.hasDown ||
			len(s.Records) != tc.records || s.DownRecords() != tc.downRecs {
			t.Errorf("%s: %+v", tc.file, s)
			continue
		}
		if got := s.Records[0].At.Format("2006-01-02 15:04:05"); got != tc.newest || s.Records[0].Up != tc.newestUp {
			t.Errorf("%s: newest record %s up=%v, want %s %v", tc.file, got, s.Records[0].Up, tc.newest, tc.newestUp)
		}
	}
}

func TestParseLinkStatRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"[devid 0]current time        : Tue Oct 28 21:46:46 2025\n", // cut before the counts
		"link up count : 2\n", // no prefix
		"[devid 0]link up count       : two\n",
		"[devid 0]link up count       : 2\n[devid 0]    Sun Oct  5 10:13:51 2025    LINK SIDEWAYS\n",
		"[devid 0]link up count       : 2\n[devid 0]    Sun Oct 45 10:13:51 2025    LINK UP\n",
		"[devid 0]link up count       : -1\n",
	} {
		if s, err := ParseLinkStat([]byte(in), time.UTC); err == nil {
			t.Errorf("ParseLinkStat(%q) = %+v, want an error", in, s)
		}
	}
}

func TestParseNetHealthCaptures(t *testing.T) {
	for _, tc := range []struct{ file, status, raw string }{
		{"net_health-910a-socket-failed-old.txt", "Socket fail", "Socket failed"},
		{"net_health-init-mindcluster-doc.txt", "Init", "Init"},
	} {
		s, raw, err := ParseNetHealth(capture(t, tc.file))
		if err != nil || s != tc.status || raw != tc.raw {
			t.Errorf("%s: %q %q %v, want %q %q", tc.file, s, raw, err, tc.status, tc.raw)
		}
	}
	// Every documented value maps onto itself; the unknown onto Unknown.
	for _, st := range NetHealthStates {
		if s, _, err := ParseNetHealth([]byte("net health status: " + st + "\n")); err != nil || s != st {
			t.Errorf("%q → %q %v", st, s, err)
		}
	}
	if s, raw, err := ParseNetHealth([]byte("net health status: Melted\n")); err != nil || s != "Unknown" || raw != "Melted" {
		t.Errorf("unknown value → %q %q %v", s, raw, err)
	}
	for _, in := range []string{"", "net health status:\n", "hccn_tool is busy, please try again.\n",
		"net health status: Success\nnet health status: Fault\n"} {
		if s, _, err := ParseNetHealth([]byte(in)); err == nil {
			t.Errorf("ParseNetHealth(%q) = %q, want an error", in, s)
		}
	}
}

func TestParseQPInfoCaptures(t *testing.T) {
	qps, err := ParseQPInfo(capture(t, "qp_info-mooncake-1qp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := QP{QPN: 1362, Status: 3, Type: 0, DstQPN: 2458, IP: "192.168.1.2", SrcPort: 54619, SendPSN: 12336228, RecvPSN: 11901074}
	if len(qps) != 1 || qps[0] != want {
		t.Errorf("mooncake: %+v, want %+v", qps, want)
	}
	qps, err = ParseQPInfo(capture(t, "qp_info-4qp-2peers-from-format.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qps) != 4 || qps[3].QPN != 1411 || qps[3].IP != "10.30.1.13" || qps[3].RecvPSN != 10203318 || qps[0].RecvPSN != 4870112 {
		t.Errorf("4 QPs: %+v", qps)
	}
	// No QP: the total alone (with or without the header).
	for _, in := range []string{"total_qp_count: 0\n", "qpn    status    type   dst_qpn          ip                                  src_port     send_psn        recv_psn\ntotal_qp_count: 0\n"} {
		if qps, err := ParseQPInfo([]byte(in)); err != nil || len(qps) != 0 {
			t.Errorf("%q: %v %v", in, qps, err)
		}
	}
	// IPv6 peers fit in the 40-character column and split on whitespace.
	v6 := "qpn    status    type   dst_qpn          ip                                  src_port     send_psn        recv_psn\n" +
		"7        3        0        9          fd00:10:30:1::12                         49731       5093218         4870112 \n" +
		"total_qp_count: 1\n"
	if qps, err := ParseQPInfo([]byte(v6)); err != nil || len(qps) != 1 || qps[0].IP != "fd00:10:30:1::12" {
		t.Errorf("IPv6 row: %+v %v", qps, err)
	}
}

func TestParseQPInfoRejects(t *testing.T) {
	full := string(capture(t, "qp_info-4qp-2peers-from-format.txt"))
	cut := full[:strings.Index(full, "total_qp_count")]
	for name, in := range map[string]string{
		"empty":           "",
		"no total":        cut,
		"cut mid-row":     full[:len(cut)-20],
		"total mismatch":  strings.Replace(full, "total_qp_count: 4", "total_qp_count: 5", 1),
		"bad total":       strings.Replace(full, "total_qp_count: 4", "total_qp_count: four", 1),
		"row before head": "1362     3        0        2458       192.168.1.2     54619       12336228        11901074\ntotal_qp_count: 1\n",
		"7 fields":        strings.Replace(full, "10.30.1.12 ", "", 1),
		"text field":      strings.Replace(full, "5093218", "5O93218", 1),
		"after total":     full + "junk\n",
		"busy":            "hccn_tool is busy, please try again.\n",
	} {
		if qps, err := ParseQPInfo([]byte(in)); err == nil {
			t.Errorf("%s: %d QPs, want an error", name, len(qps))
		}
	}
}

func TestParseStat(t *testing.T) {
	s, err := ParseStat(readFile(t, filepath.Join("testdata", "stat-full-from-format.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 46 || s["roce_new_pkt_rty_num"] != 412 || s["mac_tx_total_oct_num"] != 3761830649856 {
		t.Errorf("full dump: %d counters, %v", len(s), s)
	}
	// The real excerpts, without their authors' "..." lines.
	s, err = ParseStat(dropElisions(capture(t, "stat-mindcluster-doc-excerpt.txt")))
	if err != nil || len(s) != 8 || s["nic_rx_all_oct_num"] != 482237805 {
		t.Errorf("mindcluster excerpt: %v %v", s, err)
	}
	s, err = ParseStat(capture(t, "stat-910a-excerpt.txt"))
	if err != nil || len(s) != 2 {
		t.Errorf("910a excerpt: %v %v", s, err)
	}
	if s, err := ParseStat([]byte("roce_rx_err_pkt_num:18446744073709551615\n")); err != nil || s["roce_rx_err_pkt_num"] != 1<<64-1 {
		t.Errorf("max uint64: %v %v", s, err)
	}
	for _, in := range []string{
		"", "packet statistics:\n", "roce_rx_err_pkt_num:-1\n", "roce_rx_err_pkt_num:1.5\n",
		"roce_rx_err_pkt_num:1\nroce_rx_err_pkt_num:2\n", "...\n", "hccn_tool is busy, please try again.\n",
		"roce_rx_err_pkt_num:18446744073709551616\n",
	} {
		if s, err := ParseStat([]byte(in)); err == nil {
			t.Errorf("ParseStat(%q) = %v, want an error", in, s)
		}
	}
}

func TestParseLongLine(t *testing.T) {
	long := []byte("link status: " + strings.Repeat("U", 2*maxLineLen) + "\n")
	if _, err := ParseLink(long); err == nil || errors.Is(err, ErrEmpty) {
		t.Errorf("an over-long line: %v, want a line error", err)
	}
}

// dropElisions removes the "..." lines an excerpt's author put in.
func dropElisions(b []byte) []byte {
	var out []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if strings.TrimSpace(l) != "..." {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, ""))
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		o    output
		want string
	}{
		{output{ExitCode: 0}, sweep.Success},
		{output{TimedOut: true, ExitCode: -1}, sweep.Timeout},
		{output{ExitCode: 11, Stdout: []byte("hccn_tool is busy, please try again.\n")}, sweep.Busy},
		{output{ExitCode: 25, Stderr: []byte("Get lock failed. Please try again.\n")}, sweep.Busy},
		{output{ExitCode: 13, Stdout: []byte("The command is not supported on this product.\n")}, sweep.Unsupported},
		{output{ExitCode: 3, Stderr: []byte("Get invalid major cmd.\nEnter [ hccn_tool -h ] for more details.\n")}, sweep.Unsupported},
		{output{ExitCode: 3, Stderr: []byte("Get device health status failed!\n")}, sweep.Error},
		{output{ExitCode: 4, Stderr: []byte("The device is not exist!\n")}, sweep.Error},
		{output{ExitCode: 1}, sweep.Error},
		{output{ExitCode: -1, Err: errors.New("exec: permission denied")}, sweep.Error},
	} {
		got, err := classify(tc.o)
		if got != tc.want || (got == sweep.Success) != (err == nil) {
			t.Errorf("classify(%+v) = %s, %v; want %s", tc.o, got, err, tc.want)
		}
	}
	_, err := classify(output{ExitCode: 12, Stderr: []byte("permission denied: pls check this cmd run permission.\n")})
	if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), "12") {
		t.Errorf("error does not quote the tool: %v", err)
	}
}

func TestMapDevices(t *testing.T) {
	for _, tc := range []struct {
		name     string
		chips    []ascend.Chip
		nodes    []int
		want     []Device
		warnings int
	}{
		{"910B: NPU ID is the physical id", []ascend.Chip{chip("0", "0", ""), chip("1", "0", ""), chip("6", "0", "")}, []int{0, 1, 2},
			[]Device{{0, ascend.ChipID{NPU: "0", Chip: "0"}}, {1, ascend.ChipID{NPU: "1", Chip: "0"}}, {6, ascend.ChipID{NPU: "6", Chip: "0"}}}, 0},
		{"A3: two dies per NPU with Phy-ID", []ascend.Chip{chip("0", "0", "0"), chip("0", "1", "1"), chip("1", "0", "2"), chip("1", "1", "3")}, nil,
			[]Device{{0, ascend.ChipID{NPU: "0", Chip: "0"}}, {1, ascend.ChipID{NPU: "0", Chip: "1"}}, {2, ascend.ChipID{NPU: "1", Chip: "0"}}, {3, ascend.ChipID{NPU: "1", Chip: "1"}}}, 0},
		{"300I Duo: two chips, no Phy-ID", []ascend.Chip{chip("0", "0", ""), chip("0", "1", "")}, nil, nil, 2},
		{"bad Phy-ID", []ascend.Chip{chip("0", "0", "x"), chip("0", "1", "100")}, nil, nil, 2},
		{"duplicate physical id", []ascend.Chip{chip("0", "0", "3"), chip("1", "0", "3")}, nil, []Device{{3, ascend.ChipID{NPU: "0", Chip: "0"}}}, 1},
		{"no npu-smi: /dev/davinciN", nil, []int{0, 1, 15}, []Device{{0, ascend.ChipID{NPU: "0", Chip: "0"}}, {1, ascend.ChipID{NPU: "1", Chip: "0"}}, {15, ascend.ChipID{NPU: "15", Chip: "0"}}}, 0},
		{"nothing", nil, nil, nil, 0},
	} {
		got, w := MapDevices(tc.chips, tc.nodes)
		if len(got) != len(tc.want) || len(w) != tc.warnings {
			t.Errorf("%s: %v (warnings %q), want %v and %d warnings", tc.name, got, w, tc.want, tc.warnings)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: device %d = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestDavinciNodes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"davinci0", "davinci12", "davinci3", "davinci_manager", "davinci100", "hisi_hdc"} {
		if err := writeEmpty(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	got := davinciNodes(dir)
	if len(got) != 3 || got[0] != 0 || got[1] != 3 || got[2] != 12 {
		t.Errorf("davinciNodes = %v, want [0 3 12]", got)
	}
	if got := davinciNodes(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("missing dir: %v", got)
	}
}

// TestParseWire reads the -optical, -tls and -speed samples (captures:
// sources in the sample set's README; *-from-format: HT format strings).
func TestParseWire(t *testing.T) {
	o, err := ParseOptical(capture(t, "optical-910a-qsfp-4lane.txt"))
	if err != nil || !o.HasPresent || o.Present || o.TemperatureC != 47 || math.Abs(o.VccVolts-3.2629) > 1e-9 ||
		len(o.TxPowerW) != 4 || math.Abs(o.RxPowerW["1"]-0.0000054) > 1e-12 || math.Abs(o.TxBiasA["3"]-0.007924) > 1e-12 {
		t.Errorf("4-lane: %+v %v", o, err)
	}
	if o, err := ParseOptical(dropElisions(capture(t, "optical-single-lane-excerpt.txt"))); err != nil || len(o.RxPowerW) != 1 || math.Abs(o.RxPowerW["0"]-0.0010189) > 1e-12 {
		t.Errorf("single lane: %+v %v", o, err)
	}
	for _, f := range []string{"optical-910b3-not-present.txt", "optical-not-present-message-from-format.txt"} {
		if o, err := ParseOptical(capture(t, f)); err != nil || !o.HasPresent || o.Present {
			t.Errorf("%s: %+v %v", f, o, err)
		}
	}
	if _, err := ParseOptical([]byte("This device does not support optical cmd.\n")); err == nil {
		t.Error("an answer without optical keys must be an error")
	}
	for _, f := range []string{"batch-910b3-8dev-tls-grep-switch.txt", "tls-old-with-certs-excerpt.txt"} {
		if on, err := ParseTLS(capture(t, f)); err != nil || on {
			t.Errorf("%s: enabled %v %v", f, on, err)
		}
	}
	if on, err := ParseTLS([]byte("dev_id:3, tls switch[1](0:disable, 1:enable), tls alarm time threshold[60]days\n")); err != nil || !on {
		t.Errorf("tls on: %v %v", on, err)
	}
	if _, err := ParseTLS([]byte("dev_id:3, tls switch[7](0:disable, 1:enable)")); err == nil {
		t.Error("tls switch[7] accepted")
	}
	if v, known, err := ParseSpeed(capture(t, "speed-200g-from-format.txt")); err != nil || !known || v != 25e9 {
		t.Errorf("speed: %v %v %v", v, known, err)
	}
	if _, known, err := ParseSpeed(capture(t, "speed-unknown-from-format.txt")); err != nil || known {
		t.Errorf("speed unknown: %v %v", known, err)
	}
	for _, bad := range []string{"", "Speed: fast", "Speed: 100 Gb/s", "speed 100"} {
		if _, _, err := ParseSpeed([]byte(bad)); err == nil {
			t.Errorf("ParseSpeed(%q) accepted", bad)
		}
	}
}
