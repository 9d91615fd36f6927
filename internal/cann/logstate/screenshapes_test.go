package logstate

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestScreenShapesCountOnce: each real screen-log shape (testdata/screen-log,
// README.md there cites the capture of each) is one report, with its pid
// and time: torch_npu's watchdog line carrying the only EI0013 report
// (vllm-ascend #7384), the untitled CODE[PID: n] <time> (CODE): form after
// its `Inner Error!` header (#5493), a header and its older-layout detail
// line (#516 behind vLLM's older logger prefix, lmdeploy #2855), and
// aclGetRecentErrMsg() behind `[ERROR] RecentErrMsg: `. 0.5.0 missed the
// first three shapes and counted the last header and detail twice.
func TestScreenShapesCountOnce(t *testing.T) {
	type event struct {
		code string
		pid  int
		at   string // the printed time, UTC; "" for the time read
		hccl bool
	}
	tests := []struct {
		file string
		want []event
	}{
		{"train-ei0013-watchdog.log", []event{{"EI0013", 335, "2026-03-13 06:55:06.896", true}}},
		{"train-eh9999-untitled.log", []event{{"EH9999", 366, "2025-12-29 13:22:34.092", false}}},
		{"train-ek9999-header-detail.log", []event{{"EK9999", 13319, "2025-04-14 19:47:39.308", false}}},
		{"train-ez9999-header-detail-older.log", []event{{"EZ9999", 6140, "2024-12-04 15:32:53.009", false}}},
		{"train-recenterrmsg.log", []event{{"EZ1001", 646612, "2026-01-24 11:53:44.671", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			o := testOptions(&fakeClock{t: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)})
			o.Location = time.UTC
			var got []event
			o.OnFault = func(ev FaultEvent) {
				got = append(got, event{ev.Code, ev.PID, ev.Time.Format("2006-01-02 15:04:05.000"), ev.HCCL})
			}
			st := NewState(o)
			path := filepath.Join("testdata/screen-log", tc.file)
			ingestFile(t, st, &Source{Path: path, Kind: SourceScreen}, path)
			_ = exposition(t, st) // a scrape: held reports are counted
			if !slices.Equal(got, tc.want) {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			var n uint64
			for k, fc := range st.faults {
				if k.code == tc.want[0].code {
					n += fc.count
				}
			}
			if n != 1 {
				t.Errorf("%s counted %d times, want once", tc.want[0].code, n)
			}
		})
	}
}

// TestScreenHeaderWithoutDetail: a header no detail line follows is a
// report of its own, counted once, after headerLines lines, at the next
// report of another code, or at the scrape; FaultEvent.Lag says how many
// lines after its own line it was reported.
func TestScreenHeaderWithoutDetail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		lag   int
	}{
		{"window", []string{"EZ9999: Inner Error!", "a", "b", "c", "d"}, 3},
		{"other-code", []string{"EZ9999: Inner Error!", "a", "[PID: 7] 2026-01-07-10:00:01.500.000 Resource_Error_Insufficient_Device_Memory(EI0011): x"}, 2},
		{"scrape", []string{"EZ9999: Inner Error!", "a"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(identClock())
			var lags []int
			o.OnFault = func(ev FaultEvent) {
				if ev.Code == "EZ9999" {
					lags = append(lags, ev.Lag)
				}
			}
			st := NewState(o)
			src := &Source{Path: "/data/train.log", Kind: SourceScreen}
			for _, l := range tc.lines {
				st.Ingest(src, []byte(l))
			}
			if v := metricValue(t, st, `ascend_cann_fault_events_total{code="EZ9999",container="",namespace="",pod="",reason="",source="screen"}`); v != "1" {
				t.Errorf("EZ9999 counted %s, want 1", v)
			}
			if fmt.Sprint(lags) != fmt.Sprint([]int{tc.lag}) {
				t.Errorf("lags %v, want [%d]", lags, tc.lag)
			}
		})
	}
}
