package cannlog

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/logstate"
	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/tail"
)

// TestThroughput follows and ingests a large CANN log root, as the exporter
// does at startup, and reports the rate. It runs only when
// CANNLOG_THROUGHPUT_DIR names such a root; compare with
// `time grep -rcE 'EI[0-9]{4}|HCCL_ENV|ERROR' $CANNLOG_THROUGHPUT_DIR`.
func TestThroughput(t *testing.T) {
	dir := os.Getenv("CANNLOG_THROUGHPUT_DIR")
	if dir == "" {
		t.Skip("set CANNLOG_THROUGHPUT_DIR to a CANN log root")
	}
	var size int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	f, err := tail.New(tail.Config{Roots: []string{dir}, DisableNotify: true}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := newCollector(Config{}, allAlive, nil, f, logstate.NewState(logstate.DefaultOptions()))
	defer c.Close()
	start := time.Now()
	c.pollOnce(start)
	d := time.Since(start)
	st := f.Stats()
	t.Logf("%d lines, %.0f MB in %v: %.0f MB/s, %.0f ns/line", st.LinesRead, float64(size)/1e6, d,
		float64(size)/1e6/d.Seconds(), float64(d.Nanoseconds())/float64(st.LinesRead))
}
