package parse

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParsePlog(t *testing.T) {
	tests := []struct {
		name, line                       string
		ok                               bool
		level                            Level
		module, pname, ts, src, tid, msg string
		pid                              int
		errToWarn                        bool
	}{
		{name: "hccl error",
			line: "[ERROR] HCCL(17528,python3):2026-03-18-10:33:52.113.403 [hccl_socket_manager.cc:797] [18744][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120 s]",
			ok:   true, level: LevelError, module: "HCCL", pid: 17528, pname: "python3", ts: "2026-03-18-10:33:52.113.403",
			src: "hccl_socket_manager.cc:797", tid: "18744", msg: "[Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120 s]"},
		{name: "no space after level, none before file",
			line: "[ERROR]HCCL(835695,all_reduce_test):2025-10-23-17:28:06.049.385[task_exception_handler.cc:610][835695][TaskExecStage][HeartbeatAbnormal]Cluster Exception",
			ok:   true, level: LevelError, module: "HCCL", pid: 835695, pname: "all_reduce_test", ts: "2025-10-23-17:28:06.049.385",
			src: "task_exception_handler.cc:610", tid: "835695", msg: "[TaskExecStage][HeartbeatAbnormal]Cluster Exception"},
		{name: "empty pname",
			line: "[INFO] HCCL(106335,):2025-10-21-07:56:47.198.454 [op_base.cc:1] [106335]Entry-HcclCommDestroy: op_base comm destroy begin",
			ok:   true, level: LevelInfo, module: "HCCL", pid: 106335, pname: "", ts: "2025-10-21-07:56:47.198.454",
			src: "op_base.cc:1", tid: "106335", msg: "Entry-HcclCommDestroy: op_base comm destroy begin"},
		{name: "space date",
			line: "[INFO] HCCL(1265,):2025-10-21 07:56:47.198.454 [a.cc:1] [1]x",
			ok:   true, level: LevelInfo, module: "HCCL", pid: 1265, ts: "2025-10-21 07:56:47.198.454", src: "a.cc:1", tid: "1", msg: "x"},
		{name: "hccp tid form",
			line: "[ERROR] HCCP(2040034,alltoall_test):2025-09-15-08:38:12.776.650 [ra_hdc_lite.c:794]tid:2040458,ra_hdc_lite_period_poll_cqe : [create][ra_hdc_period_poll]failed CQE status[12], wr[0]",
			ok:   true, level: LevelError, module: "HCCP", pid: 2040034, pname: "alltoall_test", ts: "2025-09-15-08:38:12.776.650",
			src: "ra_hdc_lite.c:794", tid: "2040458", msg: "ra_hdc_lite_period_poll_cqe : [create][ra_hdc_period_poll]failed CQE status[12], wr[0]"},
		{name: "roce without tid",
			line: "[ERROR] ROCE(2040034,alltoall_test):2025-09-15-08:38:12.776.612 [hns_roce_lite.c:630]hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15",
			ok:   true, level: LevelError, module: "ROCE", pid: 2040034, pname: "alltoall_test", ts: "2025-09-15-08:38:12.776.612",
			src: "hns_roce_lite.c:630", msg: "hns_roce_lite_handle_error_cqe(630) : error cqe status: 0x15"},
		{name: "path in file ref",
			line: "[ERROR] TEFUSION(12940,atc):2021-10-17-05:54:07.599.074 [tensor_engine/te_fusion/pywrapper.cc:33]InitPyLogger Failed to import te.platform.log_util",
			ok:   true, level: LevelError, module: "TEFUSION", pid: 12940, pname: "atc", ts: "2021-10-17-05:54:07.599.074",
			src: "tensor_engine/te_fusion/pywrapper.cc:33", msg: "InitPyLogger Failed to import te.platform.log_util"},
		{name: "ErrToWarn",
			line: "[WARNING] HCCL(7988,all_reduce_test):2025-03-19-04:16:13.978.979 [topoinfo_exchange_agent.cc:190] [7988]ErrToWarn: [InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! timeout[120]",
			ok:   true, level: LevelWarning, module: "HCCL", pid: 7988, pname: "all_reduce_test", ts: "2025-03-19-04:16:13.978.979",
			src: "topoinfo_exchange_agent.cc:190", tid: "7988", errToWarn: true, msg: "[InitGroupStage][RanktableDetect]topo exchange agent get socket timeout! timeout[120]"},
		{name: "numeric level and module",
			line: "[5] 45(12,proc):2025-03-19-04:16:13.978.979 [a.c:1]m",
			ok:   true, level: LevelOther, module: "45", pid: 12, pname: "proc", ts: "2025-03-19-04:16:13.978.979", src: "a.c:1", msg: "m"},
		{name: "event", line: "[EVENT] GE(1,p):2025-03-19-04:16:13.978.979 [GE_MS_TUNE][STEP] api=x",
			ok: true, level: LevelEvent, module: "GE", pid: 1, pname: "p", ts: "2025-03-19-04:16:13.978.979", msg: "[GE_MS_TUNE][STEP] api=x"},
		{name: "message bracket is not a tid", line: "[INFO] HCCL(1,p):2025-03-19-04:16:13.978.979 [a.cc:1] [HCCL_ENV] X",
			ok: true, level: LevelInfo, module: "HCCL", pid: 1, pname: "p", ts: "2025-03-19-04:16:13.978.979", src: "a.cc:1", msg: "[HCCL_ENV] X"},
		{name: "pname with comma and paren", line: "[INFO] HCCL(1,a,b(c)):2025-03-19-04:16:13.978.979 [a.cc:1] [2]m",
			ok: true, level: LevelInfo, module: "HCCL", pid: 1, pname: "a,b(c)", ts: "2025-03-19-04:16:13.978.979", src: "a.cc:1", tid: "2", msg: "m"},
		{name: "screen line", line: "[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource_Error_Insufficient_Device_Memory(EI0011): x"},
		{name: "torch_npu line", line: "[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed"},
		{name: "empty", line: ""},
		{name: "level only", line: "[INFO]"},
		{name: "no pid", line: "[INFO] HCCL(,p):2025-03-19-04:16:13.978.979 x"},
		{name: "pid too long", line: "[INFO] HCCL(12345678901,p):2025-03-19-04:16:13.978.979 x"},
		{name: "no close", line: "[INFO] HCCL(1,p 2025-03-19-04:16:13.978.979 x"},
		{name: "no time", line: "[INFO] HCCL(1,p):"},
		{name: "bad module", line: "[INFO] HC CL(1,p):2025-03-19-04:16:13.978.979 x"},
		{name: "word level", line: "[rank1] HCCL(1,p):2025-03-19-04:16:13.978.979 x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p PlogLine
			ok := ParsePlog([]byte(tc.line), &p)
			if ok != tc.ok {
				t.Fatalf("ParsePlog ok = %v, want %v (%+v)", ok, tc.ok, p)
			}
			if !ok {
				return
			}
			got := []string{p.Level.String(), string(p.Module), string(p.PName), string(p.Time), string(p.Source), string(p.TID), string(p.Msg)}
			want := []string{tc.level.String(), tc.module, tc.pname, tc.ts, tc.src, tc.tid, tc.msg}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d = %q, want %q", i, got[i], want[i])
				}
			}
			if p.PID != tc.pid || p.ErrToWarn != tc.errToWarn {
				t.Errorf("pid %d errToWarn %v, want %d %v", p.PID, p.ErrToWarn, tc.pid, tc.errToWarn)
			}
		})
	}
}

// TestParsePlogSamples parses every line of the captured plogs.
func TestParsePlogSamples(t *testing.T) {
	files, err := filepath.Glob("../logstate/testdata/cann-log/*/plog/*.log")
	if err != nil || len(files) < 17 {
		t.Fatalf("sample plogs: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
			var p PlogLine
			if !ParsePlog(line, &p) {
				t.Errorf("%s:%d: not parsed: %q", f, i+1, line)
				continue
			}
			if _, ok := ParsePlogTime(p.Time, time.UTC); !ok {
				t.Errorf("%s:%d: time %q not parsed", f, i+1, p.Time)
			}
			// The pid in the name is the pid of every line of the file.
			if !strings.Contains(filepath.Base(f), "-"+itoa(p.PID)+"_") {
				t.Errorf("%s:%d: pid %d not in file name", f, i+1, p.PID)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParsePlogTime(t *testing.T) {
	loc := time.FixedZone("CST", 8*3600)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2025-11-03-20:18:46.447.213", time.Date(2025, 11, 3, 20, 18, 46, 447213000, loc), true},
		{"2025-10-21 07:56:47.198.454", time.Date(2025, 10, 21, 7, 56, 47, 198454000, loc), true},
		{"2025-04-08-18:07:20", time.Date(2025, 4, 8, 18, 7, 20, 0, loc), true},
		{"2025-04-08-18:07:20.123", time.Date(2025, 4, 8, 18, 7, 20, 123000000, loc), true},
		{"2025-13-08-18:07:20.123.456", time.Time{}, false},
		{"2025-12-08-25:07:20.123.456", time.Time{}, false},
		{"2025-12-08", time.Time{}, false},
		{"abcd-12-08-21:07:20.123.456", time.Time{}, false},
	}
	for _, tc := range tests {
		got, ok := ParsePlogTime([]byte(tc.in), loc)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("ParsePlogTime(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestFindPlogTime(t *testing.T) {
	for in, want := range map[string]string{
		"[PID: 2103452] 2025-11-03-20:18:46.447.213 Resource(EI0011): x": "2025-11-03-20:18:46.447.213",
		"EI0005: 2024-04-24-06:32:27.781.599 The arguments":              "2024-04-24-06:32:27.781.599",
		"[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1)":            "2025-04-08-18:07:20",
		"no time here 2025-04-08":                                        "",
		"12025-04-08-18:07:20":                                           "",
	} {
		if got := string(FindPlogTime([]byte(in))); got != want {
			t.Errorf("FindPlogTime(%q) = %q, want %q", in, got, want)
		}
	}
}
