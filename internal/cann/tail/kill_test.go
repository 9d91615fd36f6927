package tail

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKill9Child is the follower process of TestKill9ExactlyOnce: it
// restores, polls and checkpoints (blob = the lines it has seen) until it
// is SIGKILLed, or, in final mode, until the logs are quiet.
func TestKill9Child(t *testing.T) {
	root := os.Getenv("HCCL_TAIL_KILL_ROOT")
	if root == "" {
		t.Skip("child process only")
	}
	cfg := Config{
		Roots:          []string{root},
		ScreenGlobs:    []string{os.Getenv("HCCL_TAIL_KILL_GLOB")},
		StateFile:      os.Getenv("HCCL_TAIL_KILL_STATE"),
		RescanInterval: 20 * time.Millisecond,
		MaxLineBytes:   200,
	}
	f, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := f.Restore()
	if err != nil {
		t.Fatal(err)
	}
	got := delivered{}
	if blob != nil {
		if err := json.Unmarshal(blob, &got); err != nil {
			t.Fatal(err)
		}
	}
	handle := func(_ *File, line []byte) {
		id, n, ok := parseStreamLine(string(line))
		if !ok {
			fmt.Fprintf(os.Stderr, "corrupt line delivered: %.80q\n", line)
			os.Exit(3)
		}
		c := got[id]
		for len(c) <= n {
			c = append(c, 0)
		}
		c[n]++
		got[id] = c
	}
	final := os.Getenv("HCCL_TAIL_KILL_FINAL") == "1"
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
	quiet := 0
	for {
		before := f.Stats().LinesRead
		if err := f.Poll(handle); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(2) == 0 || final {
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Checkpoint(b); err != nil {
				t.Fatal(err)
			}
		}
		if final {
			if f.Stats().LinesRead == before {
				quiet++
			}
			if quiet > 5 {
				return
			}
		}
		time.Sleep(time.Duration(rng.IntN(5000)) * time.Microsecond)
	}
}

// TestKill9ExactlyOnce runs the follower in a child process, SIGKILLs it at
// random moments (inside a Poll, a Checkpoint's write, anywhere) while
// writers append and rotate, restarts it from its state file, and checks
// that the last checkpoint's blob has seen every written line exactly once.
func TestKill9ExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	kills := 4
	if longTests() {
		kills = 60
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	base := t.TempDir()
	root := filepath.Join(base, "log")
	state := filepath.Join(base, "tail.state")
	glob := filepath.Join(base, "pods", "*", "*", "*.log")
	var streams []*stream
	for id := range 4 {
		s := &stream{id: id, kube: id == 3, rng: rand.New(rand.NewPCG(seed, uint64(id+10))), state: state, t: t}
		if s.kube {
			s.dir = filepath.Join(base, "pods", "ns_pod_uid", "c")
		} else {
			s.dir = filepath.Join(root, []string{"run/plog", "debug/plog", "debug/device-0"}[id])
		}
		mkdir(t, s.dir)
		s.start()
		streams = append(streams, s)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Add(1)
		go s.run(stop, &wg)
	}
	env := append(os.Environ(), "HCCL_TAIL_KILL_ROOT="+root, "HCCL_TAIL_KILL_STATE="+state, "HCCL_TAIL_KILL_GLOB="+glob)
	child := func(final bool) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$")
		cmd.Env = env
		if final {
			cmd.Env = append(cmd.Env, "HCCL_TAIL_KILL_FINAL=1")
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	for range kills {
		cmd := child(false)
		time.Sleep(time.Duration(20+rng.IntN(300)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child ended before it was killed: %v", err)
		}
	}
	close(stop)
	wg.Wait()
	for _, s := range streams {
		_ = s.cur.Close()
	}
	if err := child(true).Wait(); err != nil {
		t.Fatalf("final child: %v", err)
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := decodeState(data)
	if err != nil {
		t.Fatal(err)
	}
	got := delivered{}
	if err := json.Unmarshal(saved.blob, &got); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range streams {
		c := got[s.id]
		if len(c) != s.next {
			t.Errorf("stream %d: %d lines written, highest seen %d", s.id, s.next, len(c))
		}
		for n := range min(len(c), s.next) {
			if c[n] != 1 {
				t.Errorf("stream %d line %d seen %d times", s.id, n, c[n])
			}
		}
		total += s.next
	}
	t.Logf("%d lines over %d kills", total, kills)
}
