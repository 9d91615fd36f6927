package analyse

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

func TestParseLinkFailure(t *testing.T) {
	for _, tc := range linkLines {
		if !isLinkFailureLine([]byte(tc.line), tc.screen) {
			t.Errorf("%s: pre-check rejects the line", tc.name)
			continue
		}
		got, ok := parseLinkFailure([]byte(tc.line))
		if !ok {
			t.Errorf("%s: not parsed", tc.name)
			continue
		}
		if got.Source != tc.want.Source || got.SrcRank != tc.want.SrcRank || got.DstRank != tc.want.DstRank ||
			got.SrcServer != tc.want.SrcServer || got.DstServer != tc.want.DstServer || got.SrcDevice != tc.want.SrcDevice ||
			!slices.Equal(got.DstDevices, tc.want.DstDevices) || got.LinkType != tc.want.LinkType {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		if p := got.Pair(); p != tc.pair {
			t.Errorf("%s: Pair() = %q, want %q", tc.name, p, tc.pair)
		}
	}
	for _, bad := range []string{
		"[INFO] HCCL(1,p):2026-01-01-00:00:00.000.000 [x.cc:1] [1]createLink para:rank[1]-localUserrank[1]-localIpAddr[a], remoteRank[0]-remoteUserrank[0]-remoteIpAddr[b]",
		"[ERROR] HCCL(1,p):2026-01-01-00:00:00.000.000 [x.cc:1] [1]createLink para:rank[1]-localUserrank[1]",
		"[ERROR] HCCL(1,p):2026-01-01-00:00:00.000.000 [x.cc:1] [1]detects that srcRank (server a b, device ID 1) fails to connect to dstRank (server c, device ID [x]).",
	} {
		if isLinkFailureLine([]byte(bad), false) {
			if l, ok := parseLinkFailure([]byte(bad)); ok {
				t.Errorf("parsed %q as %+v", bad, l)
			}
		}
	}
}

// TestObserveLinkDedupes keeps one entry per process and pair, counting
// the repeats, and reads the pid and time of plog and screen lines.
func TestObserveLinkDedupes(t *testing.T) {
	w := newEventWatch(time.UTC)
	w.file = "f"
	for i := 0; i < 3; i++ {
		w.lineNo++
		w.observeLink([]byte(linkLines[0].line), false)
	}
	w.observeLink([]byte(linkLines[4].line), true)
	if len(w.links) != 2 || w.links[0].Count != 3 || w.links[0].PID != 17528 || w.links[1].PID != 2225827 {
		t.Fatalf("links %+v", w.links)
	}
	if got := w.links[0].Time.Time; !got.Equal(time.Date(2026, 3, 18, 10, 34, 43, 141966000, time.UTC)) {
		t.Errorf("time %v", got)
	}
}

func FuzzParseLinkFailure(f *testing.F) {
	for _, tc := range linkLines {
		f.Add([]byte(tc.line))
	}
	f.Add([]byte("createLink para:rank[]-localIpAddr[/], remoteRank[0]-remoteIpAddr[/9]"))
	f.Add([]byte("detects that srcRank (server , device ID ) fails to connect to dstRank (server x, device ID [,,])"))
	f.Fuzz(func(t *testing.T, line []byte) {
		l, ok := parseLinkFailure(line)
		if !ok {
			return
		}
		if !plausibleServer(l.SrcServer) || !plausibleServer(l.DstServer) || len(l.DstDevices) > maxDstDevices {
			t.Fatalf("implausible %+v", l)
		}
		if l.Source == model.LinkSourceTransport && (l.SrcRank < 0 || l.DstRank < 0) {
			t.Fatalf("transport line without ranks: %+v", l)
		}
		if l.Source == model.LinkSourceDetector && (l.SrcDevice < 0 || len(l.DstDevices) == 0) {
			t.Fatalf("detector line without devices: %+v", l)
		}
		if p := l.Pair(); !strings.Contains(p, "→") || bytes.ContainsRune([]byte(p), '\n') {
			t.Fatalf("pair %q", p)
		}
	})
}

// Link-failure lines: real ones from HCCL's param_link_stage.md (the EI0006
// sequence in testdata/bundle, node-a pid 17528) and vllm-ascend #3162 /
// #2754, the rest built from HCOMM-HEAD's format strings
// (detect_connect_anomalies.cc:161 grouped form, transport_manager.cc:1432).
var linkLines = []struct {
	name   string
	line   string
	screen bool
	want   model.LinkFailure
	pair   string
}{
	{"detector, real", "[ERROR] HCCL(17528,python3):2026-03-18-10:34:43.141.966 [detect_connect_anomalies.cc:132] [18744]This node (server 192.168.200.100, device ID 1) detects that srcRank (server 192.168.200.100, device ID 1) fails to connect to dstRank (server 192.168.200.100, device ID 0). Continue to analyze the fault based on the logs of srcRank and dstRank.", false,
		model.LinkFailure{Source: model.LinkSourceDetector, SrcRank: -1, DstRank: -1, SrcServer: "192.168.200.100", DstServer: "192.168.200.100", SrcDevice: 1, DstDevices: []int{0}},
		"server 192.168.200.100, device 1 → server 192.168.200.100, device 0"},
	{"detector, grouped devices (format string)", "[ERROR] HCCL(9,python3):2026-08-15-10:00:00.000.000 [detect_connect_anomalies.cc:161] [9]This node (server 10.0.0.1, device ID 3) detects that srcRank (server 10.0.0.1, device ID 3) fails to connect to dstRank (server 10.0.0.2, device ID [0,4,7]). Continue to analyze the fault based on the logs of srcRank and dstRank.", false,
		model.LinkFailure{Source: model.LinkSourceDetector, SrcRank: -1, DstRank: -1, SrcServer: "10.0.0.1", DstServer: "10.0.0.2", SrcDevice: 3, DstDevices: []int{0, 4, 7}},
		"server 10.0.0.1, device 3 → server 10.0.0.2, devices 0,4,7"},
	{"createLink HEAD, real", "[ERROR] HCCL(17528,python3):2026-03-18-10:34:43.142.013 [transport_manager.cc:1325] [18744][InitChannelStage][Timeout]Transport init error! createLink para:rank[1]-localUserrank[1]-localIpAddr[192.168.200.100/1], remoteRank[0]-remoteUserrank[0]-remoteIpAddr[192.168.200.100/0], machineType[1], linkMode[1], isUsedRdma[0], tag[HcomAllReduce_6629421139219749105_0]", false,
		model.LinkFailure{Source: model.LinkSourceTransport, SrcRank: 1, DstRank: 0, SrcServer: "192.168.200.100", DstServer: "192.168.200.100", SrcDevice: 1, DstDevices: []int{0}, LinkType: model.LinkTypeHCCS},
		"rank 1, server 192.168.200.100, device 1 → rank 0, server 192.168.200.100, device 0 (HCCS/PCIe)"},
	{"createLink RoCE (format string)", "[ERROR] HCCL(9,python3):2026-08-15-10:00:00.000.000 [transport_manager.cc:1432] [9][InitChannelStage][RunFailed]Transport init error! createLink para:rank[6]-localUserrank[6]-localIpAddr[10.0.0.1/6], remoteRank[10]-remoteUserrank[10]-remoteIpAddr[10.0.0.2/2], machineType[1], linkMode[1], isUsedRdma[1], tag[AllReduce_x]", false,
		model.LinkFailure{Source: model.LinkSourceTransport, SrcRank: 6, DstRank: 10, SrcServer: "10.0.0.1", DstServer: "10.0.0.2", SrcDevice: 6, DstDevices: []int{2}, LinkType: model.LinkTypeRoCE},
		"rank 6, server 10.0.0.1, device 6 → rank 10, server 10.0.0.2, device 2 (RoCE)"},
	{"EI0009 screen, old layout, real (vllm-ascend #3162)", "[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: [Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[172.16.0.114]", true,
		model.LinkFailure{Source: model.LinkSourceTransport, SrcRank: 1, DstRank: 0, SrcServer: "172.16.0.114", DstServer: "172.16.0.114", SrcDevice: -1, DstDevices: []int{}},
		"rank 1, server 172.16.0.114 → rank 0, server 172.16.0.114"},
	{"EI0007 traceback, creakLink, real (vllm-ascend #2754)", "        Transport init error. Reason: [Create][DestLink]Create Dest error! creakLink para:rank[7]-localUserrank[7]-localIpAddr[192.168.1.3], dst_rank[1]-remoteUserrank[1]-remote_ip_addr[192.168.1.3]", true,
		model.LinkFailure{Source: model.LinkSourceTransport, SrcRank: 7, DstRank: 1, SrcServer: "192.168.1.3", DstServer: "192.168.1.3", SrcDevice: -1, DstDevices: []int{}},
		"rank 7, server 192.168.1.3 → rank 1, server 192.168.1.3"},
}
