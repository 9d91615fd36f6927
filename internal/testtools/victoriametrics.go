package testtools

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartVictoriaMetrics starts single-node VictoriaMetrics (Debian package
// victoria-metrics) on loopback with its storage in a temporary directory.
// It accepts Prometheus remote write at URL+"/api/v1/write" and answers the
// Prometheus query API, so the returned value's Query, WaitQuery and
// QueryRange work against it.
//
// Queries see samples at once: -search.latencyOffset (30s by default, to
// hide samples still in flight from vmagent) is 0 and the rollup cache is
// off, since the test writes and reads within seconds.
func StartVictoriaMetrics(t testing.TB) *Prometheus {
	t.Helper()
	bin := EnsureTool(t, "victoria-metrics", "victoria-metrics")
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	p := StartProcess(t, dir, bin,
		"-storageDataPath="+filepath.Join(dir, "data"),
		"-httpListenAddr="+addr,
		"-search.latencyOffset=0s",
		"-search.disableCache",
		"-retentionPeriod=1d",
		"-loggerLevel=WARN",
	)
	vm := &Prometheus{URL: "http://" + addr, Dir: dir, Process: p, client: &http.Client{Timeout: 10 * time.Second}}
	waitHTTPReady(t, p, vm.URL+"/health", 60*time.Second)
	return vm
}

// VMAlertConfig is what StartVMAlert needs.
type VMAlertConfig struct {
	RuleFiles       []string
	DatasourceURL   string // the Prometheus query API the rules run against
	RemoteWriteURL  string // where recording-rule results and alert state go ("" = nowhere)
	AlertmanagerURL string
	// EvaluationInterval defaults to 1s.
	EvaluationInterval time.Duration
	// ExternalLabels are added to every alert and recorded series.
	ExternalLabels map[string]string
}

// StartVMAlert starts vmalert (Debian package victoria-metrics). The returned
// value answers the Prometheus alerts and rules API (Alerts works; queries do
// not: vmalert has no TSDB).
func StartVMAlert(t testing.TB, cfg VMAlertConfig) *Prometheus {
	t.Helper()
	bin := EnsureTool(t, "vmalert", "victoria-metrics")
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	interval := orDuration(cfg.EvaluationInterval, time.Second)
	args := []string{
		"-httpListenAddr=" + addr,
		"-datasource.url=" + cfg.DatasourceURL,
		"-evaluationInterval=" + interval.String(),
		// Query at the evaluation time itself (the default step of 5m lets
		// a series linger that long after it is gone).
		"-datasource.queryStep=" + interval.String(),
		"-notifier.url=" + cfg.AlertmanagerURL,
		"-loggerLevel=WARN",
	}
	for _, f := range cfg.RuleFiles {
		args = append(args, "-rule="+f)
	}
	if cfg.RemoteWriteURL != "" {
		args = append(args, "-remoteWrite.url="+cfg.RemoteWriteURL, "-remoteWrite.flushInterval=500ms")
	}
	var ext []string
	for k, v := range cfg.ExternalLabels {
		ext = append(ext, k+"="+v)
	}
	if len(ext) > 0 {
		args = append(args, "-external.label="+strings.Join(ext, ","))
	}
	p := StartProcess(t, dir, bin, args...)
	vma := &Prometheus{URL: "http://" + addr, Dir: dir, Process: p, client: &http.Client{Timeout: 10 * time.Second}}
	waitHTTPReady(t, p, vma.URL+"/health", 60*time.Second)
	return vma
}
