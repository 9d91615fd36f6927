// Command hccl_exporter serves Prometheus metrics on Ascend NPU memory, the
// effective HCCL settings of training processes and HCCL fault codes, and
// (subcommand diagnose) analyses CANN log bundles of failed jobs offline.
//
// main only wires flags, logging and HTTP; every source lives in its own
// package under collectors/.
package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	hcclexporter "github.com/hccl-exporter/hccl_exporter"
	"github.com/hccl-exporter/hccl_exporter/diagnose/cli"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
)

const exporterName = "hccl_exporter"

func main() {
	os.Exit(run(os.Args[1:]))
}

// init sets the version every build reports (--version, the landing page,
// hccl_exporter_build_info) from the embedded VERSION file, so that a plain
// `go build` or `go install` says 0.6.0 rather than nothing; the Makefile and
// the Dockerfile add only the revision, branch, user and date by ldflags.
func init() {
	version.Version = hcclexporter.Version()
}

func run(args []string) int {
	// diagnose has its own parser, so that its --help shows its flags.
	if dargs, ok := cli.Args(args); ok {
		d := cli.New(os.Stdout, os.Stderr)
		if err := d.Parse(dargs); err != nil {
			fmt.Fprintf(os.Stderr, "%s diagnose: %v (try %s diagnose --help)\n", exporterName, err, exporterName)
			return 2
		}
		return d.Run(promslog.New(d.Log))
	}

	sa := newServeApp()
	args, deprecated := renameFlags(args)
	if err := sa.parse(args); err != nil {
		// The error names the new spelling of a renamed flag: say which
		// old one it came from.
		for _, w := range deprecated {
			fmt.Fprintf(os.Stderr, "%s: %s\n", exporterName, w)
		}
		fmt.Fprintf(os.Stderr, "%s: %v (try --help)\n", exporterName, err)
		return 2
	}
	wiring, srvOpts, toolkitFlags, promslogConfig := sa.wiring, *sa.srvOpts, sa.toolkitFlags, sa.promslogConfig
	metricsPath, maxRequests, disableExporterMetrics := sa.metricsPath, sa.maxRequests, sa.disableExporterMetrics
	scrapeCacheTTL, scrapeTimeout, scrapeTimeoutOffset := sa.scrapeCacheTTL, sa.scrapeTimeout, sa.scrapeTimeoutOffset
	logger := promslog.New(promslogConfig)
	for _, w := range deprecated {
		logger.Warn(w)
	}

	// SIGTERM (Kubernetes, systemd) and SIGINT stop the exporter
	// gracefully: requests in flight finish and the log state is
	// checkpointed, so a restart neither recounts nor skips a line. A
	// second signal kills at once.
	ctx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	go func() {
		<-ctx.Done()
		stopSignals()
	}()

	setGCDefault()
	logger.Info("starting "+exporterName, "version", version.Info())
	logger.Info("build context", "build_context", version.BuildContext())

	// The collectors run until closed: a signal lets requests in flight
	// finish while the logs are still read.
	collectors, started, err := wiring.build(context.Background(), logger)
	if err != nil {
		logger.Error("cannot start collectors", "err", err)
		return 1
	}
	// Stopped in reverse order of starting: the collectors, then the log
	// follower (its last checkpoint), then the kubelet connection.
	defer func() {
		if err := started.Close(); err != nil {
			logger.Warn("stopping the collectors", "err", err)
		}
	}()
	scraper := exporter.NewScraper(logger, collectors)
	scraper.SetFamiliesOff(wiring.familiesOff())
	logger.Info("enabled collectors", "collectors", scraper.Names(), "families_off", scraper.FamiliesOff())

	server := exporter.NewServer(nil, srvOpts, logger)
	handler, err := exporter.NewMetricsHandler(scraper, logger, exporter.HandlerOpts{
		Own:                 []prometheus.Collector{server},
		MaxRequests:         *maxRequests,
		WithRuntimeMetrics:  !*disableExporterMetrics,
		CacheTTL:            *scrapeCacheTTL,
		ScrapeTimeout:       *scrapeTimeout,
		ScrapeTimeoutOffset: *scrapeTimeoutOffset,
	})
	if err != nil {
		logger.Error("cannot build metrics handler", "err", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle(*metricsPath, handler)
	mux.HandleFunc(healthzPath, healthz)
	if *metricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "HCCL Exporter",
			Description: "Ascend NPU memory, HCCL settings and HCCL fault codes for Prometheus",
			Version:     version.Info(),
			Links: []web.LandingLinks{
				{Address: *metricsPath, Text: "Metrics"},
				{Address: healthzPath, Text: "Health"},
			},
			// The toolkit links /debug/pprof/ by default; this exporter
			// serves no pprof handlers (they would expose the heap of a
			// process that reads job logs), so the links would 404.
			Profiling: "false",
		})
		if err != nil {
			logger.Error("cannot build landing page", "err", err)
			return 1
		}
		mux.Handle("/", landing)
	}

	server.Handler = mux
	if err := server.ListenAndServe(ctx, toolkitFlags); err != nil {
		logger.Error("cannot serve", "err", err)
		return 1
	}
	logger.Info("stopped serving; writing the last checkpoint")
	return 0
}

// healthzPath serves liveness: 200 "ok" while the HTTP server answers. It
// runs no collector and takes no lock a scrape holds, so a hung npu-smi or
// a slow file system never fails a liveness probe (which would restart the
// exporter and lose nothing but its uptime); whether the sources work is
// what hccl_exporter_collector_success says.
const healthzPath = "/healthz"

func healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// serveGCPercent is the GOGC the server runs with unless GOGC is set. An
// uncached scrape allocates a few times its series' size over a small live
// heap, so at Go's default of 100 a collection overlapped every few scrapes
// and slowed them; at 200 it runs half as often, for a heap goal of three
// times the live heap, which GOMEMLIMIT still caps where it is set
// (docs/benchmarks.md has the figures).
const serveGCPercent = 200

func setGCDefault() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}

// serveApp is the server's command line: the parser and where each flag's
// value lands. newServeApp defines it, parse reads and validates it.
type serveApp struct {
	app                    *kingpin.Application
	metricsPath            *string
	maxRequests            *int
	disableExporterMetrics *bool
	scrapeCacheTTL         *time.Duration
	scrapeTimeout          *time.Duration
	scrapeTimeoutOffset    *time.Duration
	srvOpts                *exporter.ServerOpts
	toolkitFlags           *web.FlagConfig
	wiring                 *collectorFlags
	promslogConfig         *promslog.Config
	rules                  *flagcheck.Rules
}

func newServeApp() *serveApp {
	app := kingpin.New(exporterName, "Prometheus exporter for Huawei Ascend NPU clusters: NPU memory from npu-smi, "+
		"effective HCCL settings and HCCL fault codes from CANN logs and training screen logs, and the NPU memory "+
		"headroom left before HCCL link setup (to warn before EI0011). Run without a command to serve metrics.")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')

	app.Command("serve", "Serve metrics (the default when no command is given).").Default()
	rules := &flagcheck.Rules{}
	metricsPath := rules.Flag(app, "web.telemetry-path", "Path under which to expose metrics.", telemetryPath).Default("/metrics").String()
	maxRequests := rules.Flag(app, "web.max-requests", "Maximum number of parallel scrape requests, those waiting for a shared answer included; one beyond gets 503. Use 0 to disable.", flagcheck.IntIn(0, 1<<20, "0 (no bound) or a number of parallel requests up to 1048576")).Default("40").Int()
	disableExporterMetrics := rules.Flag(app, "web.disable-exporter-metrics", "Exclude the exporter's own go_* and process_* metrics.", flagcheck.Switch).Bool()
	scrapeCacheTTL := rules.Flag(app, "web.scrape-cache-ttl", "How long one answer is served again to the scrapes that follow with the same "+
		"Accept and Accept-Encoding headers (a Prometheus HA pair, several scrapers). Scrapes arriving while it is gathered always share it; "+
		"0 gathers anew for every other scrape. The default equals the default --cannlog.poll-interval: the log state changes no faster.", flagcheck.DurationIn(0, 5*time.Minute, "0 (no cache) or a duration up to 5m (Prometheus's look-back), such as 1s")).
		Default(exporter.DefaultScrapeCacheTTL.String()).Duration()
	scrapeTimeout := rules.Flag(app, "web.scrape-timeout", "Time budget of a scrape whose request does not carry Prometheus's "+
		"X-Prometheus-Scrape-Timeout-Seconds header (with the header, its value is used). A collector that cannot finish "+
		"within the budget (a hung npu-smi) fails for that scrape; the others, the log-derived series among them, are served.", flagcheck.Positive(time.Hour)).
		Default(exporter.DefaultScrapeTimeout.String()).Duration()
	scrapeTimeoutOffset := rules.Flag(app, "web.scrape-timeout-offset", "Kept back from the scrape's timeout to encode and send the "+
		"answer: collectors must finish by timeout minus this (but get at least half the timeout).", flagcheck.DurationIn(0, time.Hour, "0 or a duration below --web.scrape-timeout, such as 500ms")).
		Default(exporter.DefaultScrapeTimeoutOffset.String()).Duration()
	srvOpts := exporter.ServerOpts{ShutdownTimeout: exporter.DefaultShutdownTimeout}
	rules.Flag(app, "web.read-header-timeout", "Close a connection whose request headers have not arrived in full this long after it opened, "+
		"or after a request on a kept-alive connection began (silent and header-dripping clients; also bounds the TLS handshake).", flagcheck.Positive(time.Hour)).
		Default(exporter.DefaultReadHeaderTimeout.String()).DurationVar(&srvOpts.ReadHeaderTimeout)
	rules.Flag(app, "web.idle-timeout", "Close a keep-alive connection idle this long. Keep it above the scrape interval so that "+
		"Prometheus reuses one connection (and TLS session).", flagcheck.Positive(flagcheck.MaxInterval)).
		Default(exporter.DefaultIdleTimeout.String()).DurationVar(&srvOpts.IdleTimeout)
	rules.Flag(app, "web.write-timeout", "Give up a request this long after its headers were read, however slowly the client reads "+
		"the answer. Keep it above scrape_timeout.", flagcheck.Positive(time.Hour)).
		Default(exporter.DefaultWriteTimeout.String()).DurationVar(&srvOpts.WriteTimeout)
	rules.Flag(app, "web.max-header-bytes", "Largest request header accepted, in bytes; larger ones get 431.", flagcheck.IntIn(1<<10, 1<<20, "a number of bytes from 1024 to 1048576 (Go's own default is 1 MiB)")).
		Default(strconv.Itoa(exporter.DefaultMaxHeaderBytes)).IntVar(&srvOpts.MaxHeaderBytes)
	rules.Flag(app, "web.max-connections", "Most connections open at once; one beyond is closed on arrival and counted in "+
		"hccl_exporter_http_connections_refused_total; at the cap, a client address holding more than a quarter of the slots loses its oldest connection "+
		"to a newcomer from another address, so a local scraper keeps a slot. 0 disables the cap.", flagcheck.IntIn(0, 1<<20, "0 (no cap) or a number of connections up to 1048576")).
		Default(strconv.Itoa(exporter.DefaultMaxConnections)).IntVar(&srvOpts.MaxConnections)
	toolkitFlags := kingpinflag.AddFlags(app, ":9842")
	rules.Add("web.systemd-socket", flagcheck.Switch)
	rules.Add("web.listen-address", listenAddress)
	rules.Add("web.config.file", flagcheck.FileOrEmpty)

	wiring := addCollectorFlags(app, rules)

	promslogConfig := &promslog.Config{}
	flag.AddFlags(app, promslogConfig)
	rules.Add("log.level", flagcheck.ParsedAs("one of debug, info, warn, error"))
	rules.Add("log.format", flagcheck.ParsedAs("one of logfmt, json"))

	// Listed in --help; run() dispatches it before this parser.
	app.Command("diagnose", cli.Help)

	return &serveApp{
		app: app, metricsPath: metricsPath, maxRequests: maxRequests, disableExporterMetrics: disableExporterMetrics,
		scrapeCacheTTL: scrapeCacheTTL, scrapeTimeout: scrapeTimeout, scrapeTimeoutOffset: scrapeTimeoutOffset,
		srvOpts: &srvOpts, toolkitFlags: toolkitFlags, wiring: wiring, promslogConfig: promslogConfig, rules: rules,
	}
}

// parse reads args (renamed flags already rewritten) and validates every
// flag's value once, against the rule it was defined with and the checks
// that relate flags: a value the exporter cannot work with is an error
// naming the flag, the value and what is expected.
func (sa *serveApp) parse(args []string) error {
	if err := flagcheck.MisusedSwitch(sa.app, args); err != nil {
		return err
	}
	if _, err := sa.app.Parse(args); err != nil {
		return sa.rules.NameFlag(func() *kingpin.Application { return newServeApp().app }, args, err)
	}
	vs, err := sa.rules.Check(sa.app, args)
	if err != nil {
		return err
	}
	for _, r := range []struct {
		name   string
		bad    bool
		expect string
	}{
		{"web.scrape-timeout-offset", vs.Duration("web.scrape-timeout-offset") >= vs.Duration("web.scrape-timeout"),
			"a duration below --web.scrape-timeout (" + vs.Duration("web.scrape-timeout").String() + ")"},
		{"web.write-timeout", vs.Duration("web.write-timeout") < vs.Duration("web.scrape-timeout"),
			"a duration not below --web.scrape-timeout (" + vs.Duration("web.scrape-timeout").String() + "): the answer of a slow scrape would be cut"},
		{"cannlog.rescan-interval", vs.Duration("cannlog.rescan-interval") < vs.Duration("cannlog.poll-interval"),
			"a duration not below --cannlog.poll-interval (" + vs.Duration("cannlog.poll-interval").String() + ")"},
		{"hccn.slow-interval", vs.Duration("hccn.slow-interval") != 0 && vs.Duration("hccn.slow-interval") < vs.Duration("hccn.interval"),
			"0 or a duration not below --hccn.interval (" + vs.Duration("hccn.interval").String() + ")"},
		{"npusmi.timeout", vs.Duration("npusmi.timeout") > vs.Duration("npuhealth.interval"),
			"a duration not above --npuhealth.interval (" + vs.Duration("npuhealth.interval").String() + ")"},
	} {
		if r.bad {
			return vs.Error(r.name, r.expect)
		}
	}
	if len(*sa.toolkitFlags.WebListenAddresses) == 0 && !*sa.toolkitFlags.WebSystemdSocket {
		return errors.New("--web.listen-address: expected at least one address (or --web.systemd-socket)")
	}
	if m := sa.wiring.headroom.Model; m.QPBytesLow > m.QPBytesHigh {
		return fmt.Errorf("--headroom.qp-bytes-low=%q with --headroom.qp-bytes-high=%q: expected the low bound not above the high one "+
			"(one of them alone is checked against the other's default: 256KiB low, 3MiB high)",
			vs.Shown("headroom.qp-bytes-low"), vs.Shown("headroom.qp-bytes-high"))
	}
	return sa.wiring.validate()
}

// telemetryPath: a path the HTTP mux accepts as a pattern without a method
// or wildcards, and not one of the exporter's own pages.
var telemetryPathRE = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,;=:@/-]*$`)

var telemetryPath = flagcheck.StringRule("a URL path starting with / such as /metrics (no blanks, %, { or }; not /healthz)", func(s string) bool {
	return telemetryPathRE.MatchString(s) && s != healthzPath
})

// listenAddress: host:port with a port from 0 to 65535, or exporter-toolkit's
// vsock://[CID]:PORT.
var listenAddress = flagcheck.StringRule("host:port (such as :9842, 127.0.0.1:9842 or [::1]:9842) with a port from 0 to 65535, or vsock://:PORT", func(s string) bool {
	if rest, ok := strings.CutPrefix(s, "vsock://"); ok {
		s = rest
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || !flagcheck.Clean(host) {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= math.MaxUint16
})
