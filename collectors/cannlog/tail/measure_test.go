package tail

// Measurements behind docs/tailing.md. They take minutes and need a quiet
// machine, so they only run with HCCL_TAIL_MEASURE=1:
//
//	HCCL_TAIL_MEASURE=1 go test -run 'TestMeasure' -v -timeout 30m ./collectors/cannlog/tail/
//
// The follower runs in a child process (this test binary re-executed), so
// its CPU time and peak RSS are its own, apart from the writer's.

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const measureEnv = "HCCL_TAIL_MEASURE"

func skipUnlessMeasure(t *testing.T) {
	if os.Getenv(measureEnv) != "1" {
		t.Skip("set " + measureEnv + "=1 to run the measurements")
	}
}

// plogLine is a realistic plog line (~150 bytes).
func plogLine(i int) string {
	lv := "INFO"
	if i%50 == 0 {
		lv = "ERROR"
	}
	return fmt.Sprintf("[%s] HCCL(1234,python3):2025-12-10-19:53:27.%06d [hccl_communicator.cc:%d] [%d][InitChannelStage] transport link %d ready\n",
		lv, i%1000000, 100+i%900, 1234, i)
}

// childMain is the follower side: it runs when the test binary is
// re-executed with HCCL_TAIL_CHILD set, and prints its measurements.
func TestMeasureChild(t *testing.T) {
	mode := os.Getenv("HCCL_TAIL_CHILD")
	if mode == "" {
		t.Skip("child process only")
	}
	root := os.Getenv("HCCL_TAIL_ROOT")
	cfg := Config{Roots: []string{root}, DisableNotify: os.Getenv("HCCL_TAIL_NOTIFY") == "0",
		StateFile: os.Getenv("HCCL_TAIL_STATE")}
	if d, err := time.ParseDuration(os.Getenv("HCCL_TAIL_RESCAN")); err == nil {
		cfg.RescanInterval = d
	}
	f, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var lines, errs int
	handle := func(_ *File, line []byte) {
		lines++
		if bytes.Contains(line, []byte("ERROR")) {
			errs++
		}
	}
	start := time.Now()
	if err := f.Poll(handle); err != nil {
		t.Fatal(err)
	}
	ingest := time.Since(start)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintf(out, "INGEST_SECONDS=%f LINES=%d ERRORS=%d VmHWM_KiB=%d\n", ingest.Seconds(), lines, errs, vmHWM())
	if mode != "steady" {
		return
	}
	dur, _ := time.ParseDuration(os.Getenv("HCCL_TAIL_DURATION"))
	// Say we are ready, then measure the steady state: a Poll a second and
	// a Checkpoint every ten, as the collector does.
	fmt.Fprintln(out, "READY")
	out.Flush()
	if p := os.Getenv("HCCL_TAIL_CPUPROFILE"); p != "" {
		fh, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(fh); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	before := cpuTime()
	t0 := time.Now()
	winCPU, winT := before, t0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	n := 0
	for time.Since(t0) < dur {
		<-tick.C
		if err := f.Poll(handle); err != nil {
			t.Fatal(err)
		}
		n++
		if n%30 == 0 {
			now := cpuTime()
			fmt.Fprintf(out, "WINDOW_%d_CPU_PERCENT=%.3f\n", n, 100*(now-winCPU).Seconds()/time.Since(winT).Seconds())
			winCPU, winT = now, time.Now()
		}
		if n%10 == 0 {
			if err := f.Checkpoint([]byte(strconv.Itoa(lines))); err != nil {
				t.Fatal(err)
			}
		}
	}
	cpu := cpuTime() - before
	st := f.Stats()
	fmt.Fprintf(out, "CPU_PERCENT=%f LINES=%d FILES=%d OPEN=%d WATCHES=%d VmHWM_KiB=%d\n",
		100*cpu.Seconds()/time.Since(t0).Seconds(), lines, st.FilesTracked, st.FilesOpen, st.Watches, vmHWM())
}

// vmHWM is the process's own peak RSS (ru_maxrss of a child started with
// vfork also counts the parent's memory before exec).
func vmHWM() int {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return -1
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// makeTree writes files plog files of 150-byte lines totalling about
// totalBytes under root/run/plog, root/debug/plog and root/debug/device-N.
func makeTree(t *testing.T, root string, files int, totalBytes int64) []string {
	dirs := []string{"run/plog", "debug/plog", "debug/device-0", "debug/device-1", "run/device-0"}
	var paths []string
	per := totalBytes / int64(files)
	i := 0
	for n := range files {
		d := filepath.Join(root, dirs[n%len(dirs)])
		mkdir(t, d)
		p := filepath.Join(d, plogName(10000+n, n))
		var b strings.Builder
		for int64(b.Len()) < per {
			b.WriteString(plogLine(i))
			i++
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o640); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func startChild(t *testing.T, env ...string) (*exec.Cmd, *bufio.Scanner) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestMeasureChild$", "-test.v=false")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

func TestMeasureIngest(t *testing.T) {
	skipUnlessMeasure(t)
	for _, size := range []int64{100 << 20, 1 << 30} {
		root := t.TempDir()
		makeTree(t, root, int(size/(20<<20)), size) // 20 MB files, as CANN writes
		grep := func() time.Duration {
			start := time.Now()
			out, err := exec.Command("grep", "-rcE", "ERROR|EI[0-9]{4}", root).Output()
			if err != nil && len(out) == 0 {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		grep() // warm the page cache for both
		g := grep()
		start := time.Now()
		cmd, sc := startChild(t, "HCCL_TAIL_CHILD=ingest", "HCCL_TAIL_ROOT="+root)
		var line string
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "INGEST") {
				line = sc.Text()
			}
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		wall := time.Since(start)
		t.Logf("%4d MiB: grep -rcE %.2fs; follower %s (process wall %.2fs, %.2f× grep)",
			size>>20, g.Seconds(), line, wall.Seconds(), wall.Seconds()/g.Seconds())
		_ = os.RemoveAll(root)
	}
}

func TestMeasureSteadyState(t *testing.T) {
	skipUnlessMeasure(t)
	dur := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("HCCL_TAIL_DURATION")); err == nil {
		dur = d
	}
	root := t.TempDir()
	paths := makeTree(t, root, 10000, 10000*300)
	notifies, rates := []string{"1", "0"}, []int{0, 100}
	if m := os.Getenv("HCCL_TAIL_ONLY"); m != "" { // e.g. "1:0" = inotify, idle
		n, r, _ := strings.Cut(m, ":")
		rr, _ := strconv.Atoi(r)
		notifies, rates = []string{n}, []int{rr}
	}
	for _, notify := range notifies {
		for _, rate := range rates {
			state := filepath.Join(t.TempDir(), "state")
			cmd, sc := startChild(t, "HCCL_TAIL_CHILD=steady", "HCCL_TAIL_ROOT="+root,
				"HCCL_TAIL_NOTIFY="+notify, "HCCL_TAIL_DURATION="+dur.String(), "HCCL_TAIL_STATE="+state)
			for sc.Scan() && sc.Text() != "READY" {
			}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				if rate == 0 {
					<-stop
					return
				}
				rng := rand.New(rand.NewPCG(1, 2))
				tick := time.NewTicker(time.Second / time.Duration(rate))
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					p := paths[rng.IntN(len(paths))]
					fh, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
					if err == nil {
						_, _ = fh.WriteString(plogLine(i))
						_ = fh.Close()
					}
				}
			}()
			var result string
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "CPU_PERCENT") {
					result = sc.Text()
				}
				if strings.HasPrefix(sc.Text(), "WINDOW") {
					t.Log(sc.Text())
				}
			}
			close(stop)
			<-done
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			mode := map[string]string{"1": "inotify", "0": "polling"}[notify]
			t.Logf("10000 files, %s, %d lines/s appended, %v: %s", mode, rate, dur, result)
		}
	}
}
