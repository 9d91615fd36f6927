package cannlog

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/follow"
)

func TestFlags(t *testing.T) {
	t.Setenv("ASCEND_PROCESS_LOG_PATH", "")
	t.Setenv("ASCEND_WORK_PATH", "/work/x")
	app := kingpin.New("test", "")
	cfg := AddFlags(app, nil)
	if _, err := app.Parse([]string{"--cannlog.screen-log-path=/a/*.log", "--cannlog.screen-log-path=/b/*.log", "--cannlog.process-ttl=30m"}); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Roots) != 1 || cfg.Roots[0] != "/work/x/log" || len(cfg.ScreenGlobs) != 2 || cfg.ProcessTTL != 30*time.Minute ||
		cfg.PollInterval != time.Second || cfg.MaxPIDs != 1024 {
		t.Errorf("cfg = %+v", cfg)
	}
	app = kingpin.New("test", "")
	cfg = AddFlags(app, nil)
	if _, err := app.Parse([]string{"--cannlog.root=/r1", "--cannlog.root=/r2"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Roots, ",") != "/r1,/r2" {
		t.Errorf("roots = %v", cfg.Roots)
	}
	for env, want := range map[[3]string]string{
		{"/p", "/w", "/h"}: "/p",
		{"", "/w", "/h"}:   "/w/log",
		{"", "", "/h"}:     "/h/ascend/log",
	} {
		get := func(k string) string {
			return map[string]string{"ASCEND_PROCESS_LOG_PATH": env[0], "ASCEND_WORK_PATH": env[1], "HOME": env[2]}[k]
		}
		if got := follow.DefaultRoot(get); got != want {
			t.Errorf("DefaultRoot(%v) = %q, want %q", env, got, want)
		}
	}
}
