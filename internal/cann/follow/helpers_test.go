package follow

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/metrictest"
)

// stateTestdata holds the captured log trees and the golden outputs of the
// log state: the collector reads the same trees through the follower and
// must serve the same series.
const stateTestdata = "../logstate/testdata"

// fakeClock is a settable clock for TTL tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// testOptions pins the zone and the clock so outputs do not depend on the
// machine.
func testOptions(clock *fakeClock) logstate.Options {
	o := logstate.DefaultOptions()
	o.Location = time.UTC
	o.Now = clock.Now
	return o
}

// exposition renders a collector's metrics as the golden files hold them.
func exposition(t *testing.T, c prometheus.Collector) []byte {
	t.Helper()
	return metrictest.Exposition(t, c)
}

// onlyProcess returns the process with pid, failing the test when several
// log directories have one.
func onlyProcess(t *testing.T, st *logstate.State, pid int) (logstate.ProcessView, bool) {
	t.Helper()
	keys := st.Keys(pid)
	if len(keys) > 1 {
		t.Fatalf("pid %d is in %d log directories: %v", pid, len(keys), keys)
	}
	if len(keys) == 0 {
		return logstate.ProcessView{}, false
	}
	return st.Process(keys[0])
}

// countOf is how many fault events of code the state counted from source,
// read from its per-code summary.
func countOf(t *testing.T, st *logstate.State, code, source string) uint64 {
	t.Helper()
	for _, f := range st.Faults() {
		if f.Code == code {
			return f.BySource[source]
		}
	}
	return 0
}
