package tail

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/testtools"
)

// budgetLine is line n of the file of pid.
func budgetLine(pid, n int) string { return fmt.Sprintf("pid %d line %d", pid, n) }

// TestFDBudget20000Files is the attack of issue 24: 20,000 followed log
// files under a descriptor limit of 4,096 (plus the reserve) exhausted the
// process's descriptors — "too many open files" — and the HTTP server
// answered no scrape for minutes. With --cannlog.max-open-files at 4,096
// every line of every file is counted exactly once, files written again
// after they were closed are re-opened and read, and scrapes (here a
// handler serving Stats over a real listener) are answered throughout.
func TestFDBudget20000Files(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 files: skipped under -short")
	}
	const (
		files  = 20000
		budget = 4096
		slack  = 200 // the reserve: listener, connections, test binary
	)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if old.Max < budget+slack {
		testtools.NeedsKernel(t, "RLIMIT_NOFILE hard limit %d below %d", old.Max, budget+slack)
	}
	lim := syscall.Rlimit{Cur: budget + slack, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })

	root := t.TempDir()
	dir := plogDir(t, root)
	for pid := range files {
		p := filepath.Join(dir, plogName(100000+pid, 1))
		if err := os.WriteFile(p, []byte(budgetLine(pid, 0)+"\n"+budgetLine(pid, 1)+"\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	f := newTestFollower(t, Config{Roots: []string{root}, RescanInterval: time.Hour, MaxOpenFiles: budget})

	// The "scrape": a real listener serving the follower's Stats.
	var maxOpen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := f.Stats()
		maxOpen.Store(max(maxOpen.Load(), int64(st.FilesOpen)))
		_ = json.NewEncoder(w).Encode(st)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var scrapes, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for ctx.Err() == nil {
			resp, err := client.Get(srv.URL)
			scrapes.Add(1)
			if err != nil {
				failed.Add(1)
				t.Logf("scrape: %v", err)
			} else {
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	got := make(map[string]int, 3*files)
	handle := func(_ *File, line []byte) { got[string(line)]++ }
	pollAll := func(want int) {
		t.Helper()
		// Give up after 30 s without progress, not after 30 s in all:
		// under -race on a loaded 2-core machine a reading of 20,000
		// files at the budget takes 20-55 s while every Poll delivers
		// lines; a lost line shows as no progress at all.
		for deadline := time.Now().Add(30 * time.Second); len(got) < want && time.Now().Before(deadline); {
			before := len(got)
			if err := f.Poll(handle); err != nil {
				t.Fatal(err)
			}
			if len(got) > before {
				deadline = time.Now().Add(30 * time.Second)
			}
			if len(got) < want {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	began := time.Now()
	pollAll(2 * files)
	first := time.Since(began)
	st := f.Stats()
	if st.FilesOpen > budget {
		t.Errorf("%d files open, budget %d", st.FilesOpen, budget)
	}
	if st.OpenFilesLimitReached == 0 {
		t.Errorf("limit never reached: %+v", st)
	}
	// Write again to every file: most were closed to stay in the budget
	// and are re-opened by path and identity when inotify says so.
	for pid := range files {
		appendFile(t, filepath.Join(dir, plogName(100000+pid, 1)), budgetLine(pid, 2)+"\n")
	}
	began = time.Now()
	pollAll(3 * files)
	t.Logf("first reading %v, reading again after the writes %v (limit: 30s without progress)", first.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	cancel()
	wg.Wait()

	missing, dup := 0, 0
	for pid := range files {
		for n := range 3 {
			switch got[budgetLine(pid, n)] {
			case 0:
				missing++
			case 1:
			default:
				dup++
			}
		}
	}
	if missing > 0 || dup > 0 || len(got) != 3*files {
		t.Errorf("%d lines missing, %d delivered more than once, %d distinct (want %d)", missing, dup, len(got), 3*files)
	}
	st = f.Stats()
	if st.FilesOpen > budget || maxOpen.Load() > budget {
		t.Errorf("files open %d (max seen %d), budget %d", st.FilesOpen, maxOpen.Load(), budget)
	}
	if n := st.ReadErrors["open"]; n > 0 {
		t.Errorf("%d open errors", n)
	}
	if scrapes.Load() == 0 || failed.Load() > 0 {
		t.Errorf("scrapes: %d, %d failed", scrapes.Load(), failed.Load())
	}
	t.Logf("%d scrapes answered; %d files open at the end, limit reached %d times", scrapes.Load(), st.FilesOpen, st.OpenFilesLimitReached)
}
