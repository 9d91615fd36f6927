package logstate

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/hccl-exporter/hccl_exporter/internal/golden"
)

// fakeClock is a settable clock for TTL tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// testOptions pins the zone and the clock so golden outputs do not depend
// on the machine.
func testOptions(clock *fakeClock) Options {
	o := DefaultOptions()
	o.Location = time.UTC
	o.Now = clock.Now
	// The fixtures' clock is hours after some of their events: keep their
	// pod series (TestFaultSeriesExpire tests expiry).
	o.FaultTTL = 30 * 24 * time.Hour
	return o
}

// onlyProcess returns the process with pid, failing the test when several
// log directories have one.
func onlyProcess(t *testing.T, st *State, pid int) (ProcessView, bool) {
	t.Helper()
	keys := st.Keys(pid)
	if len(keys) > 1 {
		t.Fatalf("pid %d is in %d log directories: %v", pid, len(keys), keys)
	}
	if len(keys) == 0 {
		return ProcessView{}, false
	}
	return st.Process(keys[0])
}

// sourceFor classifies a testdata file like the follower does.
func sourceFor(path string) *Source {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(base, "plog-"):
		return &Source{Path: path, Kind: SourcePlog, Dir: LogDir(path)}
	case strings.HasPrefix(base, "device-"):
		return &Source{Path: path, Kind: SourceDevicePlog, Dir: LogDir(path)}
	}
	return &Source{Path: path, Kind: SourceScreen}
}

// ingestTree feeds every file under root to st, in name order.
func ingestTree(t *testing.T, st *State, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ingestFile(t, st, sourceFor(path), path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ingestFile(t *testing.T, st *State, src *Source, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		st.Ingest(src, sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// golden compares got with testdata/golden/<name>, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Compare(t, filepath.Join("testdata", "golden", name), got)
}
