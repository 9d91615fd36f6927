// Command tail measures the CANN log follower alone (internal/cann/tail),
// the numbers behind docs/tailing.md:
//
//	go run ./bench/tail ingest [-sizes 100M,1G]          # one Poll over a tree, against grep -rcE
//	go run ./bench/tail steady [-duration 30s] [-files 10000] [-rates 0,100] [-notify both]
//
// The follower runs in a child process (this program re-executed with
// -child), so that its CPU time and peak RSS (VmHWM) are its own, apart from
// the writer's. Each result is printed next to its baseline measured in the
// same run: grep on the same tree for ingest, the idle follower for the
// steady state. The whole exporter is measured by bench/ingest and bench/node.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hccl-exporter/hccl_exporter/bench/internal/probe"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/tail"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		if err := child(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "ingest":
		err = cmdIngest(os.Args[2:])
	case "steady":
		err = cmdSteady(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tail bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./bench/tail ingest [-sizes 100M,1G] | steady [-duration 30s] [-files 10000] [-rates 0,100] [-notify both|inotify|polling]")
	os.Exit(2)
}

func cmdIngest(args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ExitOnError)
	sizes := fs.String("sizes", "100M,1G", "tree sizes (20 MB files, as CANN writes)")
	_ = fs.Parse(args)
	for _, s := range strings.Split(*sizes, ",") {
		size, err := probe.ParseSize(s)
		if err != nil {
			return err
		}
		root, err := os.MkdirTemp("", "tail-bench-")
		if err != nil {
			return err
		}
		if _, err := makeTree(root, max(1, int(size/(20<<20))), size); err != nil {
			return err
		}
		grep := func() time.Duration {
			start := time.Now()
			_ = exec.Command("grep", "-rcE", "ERROR|EI[0-9]{4}", root).Run()
			return time.Since(start)
		}
		grep() // warm the page cache for both
		g := grep()
		start := time.Now()
		out, err := exec.Command(os.Args[0], "-child", "ingest", root).Output()
		if err != nil {
			return fmt.Errorf("follower child: %w", err)
		}
		wall := time.Since(start)
		fmt.Printf("%5d MiB: grep -rcE %.2fs; follower process %.2fs (%.2f× grep); %s",
			size>>20, g.Seconds(), wall.Seconds(), wall.Seconds()/g.Seconds(), out)
		_ = os.RemoveAll(root)
	}
	return nil
}

func cmdSteady(args []string) error {
	fs := flag.NewFlagSet("steady", flag.ExitOnError)
	dur := fs.Duration("duration", 30*time.Second, "how long each mode is measured")
	files := fs.Int("files", 10000, "plog files followed")
	rates := fs.String("rates", "0,100", "lines per second appended to random files; 0 is the idle baseline")
	notify := fs.String("notify", "both", "inotify, polling or both")
	_ = fs.Parse(args)
	root, err := os.MkdirTemp("", "tail-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	paths, err := makeTree(root, *files, int64(*files)*300)
	if err != nil {
		return err
	}
	modes := map[string][]string{"both": {"inotify", "polling"}, "inotify": {"inotify"}, "polling": {"polling"}}[*notify]
	if modes == nil {
		return fmt.Errorf("-notify %q: want inotify, polling or both", *notify)
	}
	for _, mode := range modes {
		var idle float64
		for _, r := range strings.Split(*rates, ",") {
			rate, err := strconv.Atoi(r)
			if err != nil {
				return fmt.Errorf("-rates %q: %w", *rates, err)
			}
			cpu, line, err := steadyRun(root, paths, mode, rate, *dur)
			if err != nil {
				return err
			}
			ratio := ""
			if rate == 0 {
				idle = cpu
			} else if idle > 0 {
				ratio = fmt.Sprintf(" (%.1f× idle)", cpu/idle)
			}
			fmt.Printf("%d files, %s, %d lines/s, %v: %s%s\n", *files, mode, rate, *dur, line, ratio)
		}
	}
	return nil
}

func steadyRun(root string, paths []string, mode string, rate int, dur time.Duration) (float64, string, error) {
	state := filepath.Join(root, "..", filepath.Base(root)+".state")
	defer os.Remove(state)
	cmd := exec.Command(os.Args[0], "-child", "steady", root, mode, dur.String(), state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "READY" {
	}
	stop, done := make(chan struct{}), make(chan struct{})
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
			if fh, err := os.OpenFile(paths[rng.IntN(len(paths))], os.O_WRONLY|os.O_APPEND, 0); err == nil {
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
	}
	close(stop)
	<-done
	if err := cmd.Wait(); err != nil {
		return 0, "", fmt.Errorf("follower child: %w", err)
	}
	var cpu float64
	_, _ = fmt.Sscanf(result, "CPU_PERCENT=%f", &cpu)
	return cpu, result, nil
}

// child is the follower side: "ingest ROOT" or "steady ROOT MODE DURATION STATE".
func child(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("child needs a mode and a root")
	}
	mode, root := args[0], args[1]
	cfg := tail.Config{Roots: []string{root}}
	var dur time.Duration
	if mode == "steady" {
		if len(args) < 5 {
			return fmt.Errorf("steady child needs ROOT MODE DURATION STATE")
		}
		cfg.DisableNotify = args[2] == "polling"
		var err error
		if dur, err = time.ParseDuration(args[3]); err != nil {
			return err
		}
		cfg.StateFile = args[4]
	} else {
		cfg.DisableNotify = true
	}
	f, err := tail.New(cfg, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	var lines, errs int
	handle := func(_ *tail.File, line []byte) {
		lines++
		if bytes.Contains(line, []byte("ERROR")) {
			errs++
		}
	}
	start := time.Now()
	if err := f.Poll(handle); err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintf(out, "in process %.3fs, %d lines, %d ERROR, peak RSS %d KiB\n", time.Since(start).Seconds(), lines, errs, peakRSS())
	if mode != "steady" {
		return nil
	}
	// Ready; then the steady state as the collector drives it: a Poll a
	// second and a Checkpoint every ten.
	fmt.Fprintln(out, "READY")
	out.Flush()
	before, t0 := cpuTime(), time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 1; time.Since(t0) < dur; n++ {
		<-tick.C
		if err := f.Poll(handle); err != nil {
			return err
		}
		if n%10 == 0 {
			if err := f.Checkpoint([]byte(strconv.Itoa(lines))); err != nil {
				return err
			}
		}
	}
	st := f.Stats()
	fmt.Fprintf(out, "CPU_PERCENT=%f LINES=%d FILES=%d OPEN=%d WATCHES=%d VmHWM_KiB=%d\n",
		100*(cpuTime()-before).Seconds()/time.Since(t0).Seconds(), lines, st.FilesTracked, st.FilesOpen, st.Watches, peakRSS())
	return nil
}

// plogLine is a realistic plog line (~150 bytes), an ERROR every 50.
func plogLine(i int) string {
	lv := "INFO"
	if i%50 == 0 {
		lv = "ERROR"
	}
	return fmt.Sprintf("[%s] HCCL(1234,python3):2025-12-10-19:53:27.%06d [hccl_communicator.cc:%d] [%d][InitChannelStage] transport link %d ready\n",
		lv, i%1000000, 100+i%900, 1234, i)
}

// makeTree writes files plog files of ~150-byte lines totalling about
// totalBytes under CANN's run/, debug/ and device-N directories.
func makeTree(root string, files int, totalBytes int64) ([]string, error) {
	dirs := []string{"run/plog", "debug/plog", "debug/device-0", "debug/device-1", "run/device-0"}
	var paths []string
	per := totalBytes / int64(files)
	i := 0
	for n := range files {
		d := filepath.Join(root, dirs[n%len(dirs)])
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(d, fmt.Sprintf("plog-%d_%017d.log", 10000+n, 20250101000000000+n))
		var b strings.Builder
		for int64(b.Len()) < per {
			b.WriteString(plogLine(i))
			i++
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o640); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is this process's own peak RSS (VmHWM) in KiB.
func peakRSS() int {
	_, hwm := probe.Memory(os.Getpid())
	return hwm
}
