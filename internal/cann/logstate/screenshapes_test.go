package logstate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
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

// Two headers in a row are two reports: a header's detail line is one
// that prints the pid or time the header did not.
func TestScreenTwoHeadersTwoReports(t *testing.T) {
	st := NewState(testOptions(identClock()))
	src := &Source{Path: "/data/train.log", Kind: SourceScreen}
	ingestAll(st, src, "EZ9999: Inner Error!", "EZ9999: Inner Error!", "EZ9999: [PID: 6140] 2024-12-04-15:32:53.009.508 Op MatmulAllReduce has 1 uncontiguous input,")
	if n := countCANN(t, st, "EZ9999"); n != 2 {
		t.Errorf("EZ9999 counted %d times, want 2 (a lone header, then a header and its detail)", n)
	}
}

// FuzzScreenLines feeds a screen log of arbitrary lines to one source: a
// held header never panics, never counts a report twice, and is counted
// by the scrape.
func FuzzScreenLines(f *testing.F) {
	f.Add("EZ9999: Inner Error!\n  x\nEZ9999[PID: 1] 2025-12-29-13:22:34.092.455 (EZ9999):  y")
	f.Add("EZ9999: Inner Error!\nEI0011: x\nEZ9999: Inner Error!")
	f.Add("EI0011: a\nEI0011: b\n\n\n\nEI0011: [PID: 3] 2026-01-07-10:00:01.500.000 c")
	f.Add("[ERROR] RecentErrMsg: EH9999: Inner Error!\n[rank1]:[E313 06:55:06.5 x.ts:1] [Rank 1] HCCL watchdog thread terminated with exception: EH9999[PID: 2] 2026-03-13-06:55:06.896.485 (EH9999): z")
	f.Fuzz(func(t *testing.T, text string) {
		st := NewState(testOptions(identClock()))
		src := &Source{Path: "/data/train.log", Kind: SourceScreen}
		lines := strings.Split(text, "\n")
		reports := 0
		for _, l := range lines {
			if c, _ := parse.FindFaultCode([]byte(l)); c != nil {
				reports++
			}
			st.Ingest(src, []byte(l))
		}
		_ = exposition(t, st)
		st.mu.Lock()
		defer st.mu.Unlock()
		if len(st.pending) != 0 {
			t.Fatalf("held reports left after a scrape: %d", len(st.pending))
		}
		var n uint64
		for k, fc := range st.faults {
			if k.source == FaultSourceScreen {
				n += fc.count
			}
		}
		if n > uint64(reports) {
			t.Fatalf("%d screen events counted from %d report lines", n, reports)
		}
	})
}

func countCANN(t *testing.T, st *State, code string) uint64 {
	t.Helper()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushAllPending()
	var n uint64
	for k, fc := range st.faults {
		if k.code == code && k.cann {
			n += fc.count
		}
	}
	return n
}
