// Package cli is the command line of `hccl_exporter diagnose`: its own
// parsers (so that `hccl_exporter diagnose --help` lists its flags rather
// than the server's), their validation, and running the report or the
// HCCL_BUFFSIZE computation over package diagnose.
package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/bundle"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"

	"github.com/hccl-exporter/hccl_exporter/diagnose"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
)

// Command is the offline `hccl_exporter diagnose` command. It has
// its own parsers, so that `hccl_exporter diagnose --help` lists its flags
// rather than the server's: `diagnose [flags] PATH...` reports (the word
// `report` may follow `diagnose`, as in earlier versions), and
// `diagnose buffsize [flags]` computes HCCL_BUFFSIZE. A bundle whose path is
// literally "report" or "buffsize" must be written ./report.
type Command struct {
	format   string
	layout   string
	timezone string
	nodeTZ   []string
	workers  int
	detail   bool
	paths    []string

	microBatch, seqLen, hidden uint64
	dtype                      string

	buffsizeSelected bool
	// Log is the --log.* flags' configuration, for the logger of Run.
	Log *promslog.Config

	stdout, stderr io.Writer
	// Terminate ends the process after --help or --version (kingpin's
	// default, os.Exit); tests replace it.
	Terminate func(int)
}

// New returns the command writing to stdout and stderr.
func New(stdout, stderr io.Writer) *Command {
	return &Command{stdout: stdout, stderr: stderr, Terminate: os.Exit, Log: &promslog.Config{}}
}

// Args returns the arguments of the diagnose command when args
// select it: "diagnose" is the first argument that is not a flag. Flags
// before it (--log.level=debug) are kept for the diagnose parser.
func Args(args []string) ([]string, bool) {
	for i, a := range args {
		if a == "diagnose" {
			return append(append([]string(nil), args[:i]...), args[i+1:]...), true
		}
		if !strings.HasPrefix(a, "-") {
			return nil, false
		}
	}
	return nil, false
}

// Help is the command's line in the server's --help.
const Help = "Analyse a bundle of CANN logs and screen logs collected from the nodes of a failed job, offline " +
	"(docs/diagnose.md). Its own flags: hccl_exporter diagnose --help, hccl_exporter diagnose buffsize --help."

// Parse reads the diagnose command's arguments (after "diagnose").
func (d *Command) Parse(args []string) error {
	rest := make([]string, 0, len(args))
	for _, a := range args {
		if a == "buffsize" && !d.buffsizeSelected {
			d.buffsizeSelected = true
			continue
		}
		rest = append(rest, a)
	}
	if !d.buffsizeSelected {
		// "diagnose report PATH..." as in earlier versions.
		for i, a := range rest {
			if a == "report" {
				rest = append(rest[:i:i], rest[i+1:]...)
				break
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
		}
	}
	app := d.App()
	if err := flagcheck.MisusedSwitch(app, rest); err != nil {
		return err
	}
	if _, err := app.Parse(rest); err != nil {
		return (*flagcheck.Rules)(nil).NameFlag(func() *kingpin.Application {
			nd := New(io.Discard, io.Discard)
			nd.buffsizeSelected = d.buffsizeSelected
			return nd.App()
		}, rest, err)
	}
	return d.validate()
}

// maxDiagnoseWorkers bounds --workers: each reads one file at a time.
const maxDiagnoseWorkers = 4096

// validate checks what the parser let through (as the server's flags are,
// internal/flagcheck): the error names the flag, the value and what it takes.
func (d *Command) validate() error {
	if d.buffsizeSelected {
		for _, f := range []struct {
			name string
			v    uint64
		}{{"micro-batch-size", d.microBatch}, {"seq-len", d.seqLen}, {"hidden-size", d.hidden}} {
			if f.v == 0 {
				return fmt.Errorf("--%s=0: expected a whole number above 0", f.name)
			}
		}
		return nil
	}
	if d.workers < 0 || d.workers > maxDiagnoseWorkers {
		return fmt.Errorf("--workers=%d: expected 0 (GOMAXPROCS) or a number of files read at once up to %d", d.workers, maxDiagnoseWorkers)
	}
	if d.timezone != "auto" {
		if _, err := logstate.ParseZone(d.timezone); err != nil {
			return fmt.Errorf("--timezone=%q: %v", d.timezone, err)
		}
	}
	if _, err := diagnose.ParseNodeZones(d.nodeTZ); err != nil {
		return fmt.Errorf("--node-timezone=%q: %v", strings.Join(d.nodeTZ, ","), err)
	}
	return nil
}

// App defines the parser of the command selected (report or buffsize).
func (d *Command) App() *kingpin.Application {
	var app *kingpin.Application
	formatHelp := "Output format: text (for a person), json (for a program; docs/diagnose.md), or html (one self-contained page: " +
		"incidents with a timeline per node, and the text report's tables)."
	if d.buffsizeSelected {
		app = kingpin.New(exporterName+" diagnose buffsize", "Print the HCCL_BUFFSIZE the troubleshooting guide recommends for a "+
			"large language model: ceil(micro-batch size × sequence length × hidden size × sizeof(dtype) / 1 MiB) MB.")
		formatHelp = "Output format: text (the value, the formula and the export line) or json (the same fields for a program)."
		app.Flag("format", formatHelp).Default("text").EnumVar(&d.format, "text", "json")
		app.Flag("micro-batch-size", "Micro-batch size.").Required().Uint64Var(&d.microBatch)
		app.Flag("seq-len", "Sequence length.").Required().Uint64Var(&d.seqLen)
		app.Flag("hidden-size", "Hidden size.").Required().Uint64Var(&d.hidden)
		app.Flag("dtype", "Data type of the communicated activations: "+strings.Join(diagnose.DTypes(), ", ")+".").Required().EnumVar(&d.dtype, diagnose.DTypes()...)
	} else {
		app = kingpin.New(exporterName+" diagnose", "Analyse a bundle of CANN logs and screen logs collected from the nodes of a failed job, "+
			"offline: fault codes, the first failing rank of each incident and its consequences, effective HCCL settings, settings that "+
			"disagree between nodes, and the EI0011 remedies with the bundle's numbers (docs/diagnose.md). Exit status, as linters: 0 healthy "+
			"(no finding), 1 findings (the report says what), 2 error (bad flags, unreadable input; the report is incomplete). To compute HCCL_BUFFSIZE for a model: "+exporterName+" diagnose buffsize --help.")
		app.Flag("format", formatHelp).Default("text").EnumVar(&d.format, "text", "json", "html")
		app.Flag("layout", "How files map to nodes: auto (node directories are detected), nodes (each first-level directory of a PATH is a node), node (each PATH is one node).").
			Default(string(bundle.LayoutAuto)).EnumVar(&d.layout, string(bundle.LayoutAuto), string(bundle.LayoutNodes), string(bundle.LayoutNode))
		app.Flag("timezone", "Zone the nodes printed their log times in (CANN prints local time without a zone): Local, UTC, an "+
			"IANA name such as Asia/Shanghai, an offset such as +08:00, or auto (each node's zone from its communicators' "+
			"identifiers, which carry the root's creation time in UTC; this machine's local zone where they show none).").
			Default("auto").StringVar(&d.timezone)
		app.Flag("node-timezone", "NODE=ZONE: a node that printed its times in another zone than --timezone (repeatable). The "+
			"report's CLOCKS section names nodes whose clocks are off by whole quarter-hours.").
			PlaceHolder("NODE=ZONE").StringsVar(&d.nodeTZ)
		app.Flag("workers", "Files read concurrently; 0 means GOMAXPROCS.").Default("0").IntVar(&d.workers)
		app.Flag("detail", "Text format: list every process with its communicators, every node, clock and failing link, instead of "+
			"one line per settings set and communicators (the JSON and HTML reports always hold every process).").BoolVar(&d.detail)
		app.Arg("path", "Directories (one per node, or a root holding one directory per node) and .tar.gz/.tgz/.tar archives of them.").
			Required().StringsVar(&d.paths)
	}
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageWriter(d.stdout)
	app.ErrorWriter(d.stderr)
	app.Terminate(d.Terminate)
	flag.AddFlags(app, d.Log)
	return app
}

// Run runs the parsed command and returns its exit status.
func (d *Command) Run(logger *slog.Logger) int {
	if d.buffsizeSelected {
		return d.runBuffSize()
	}
	return d.runReport(logger)
}

func (d *Command) runBuffSize() int {
	mb, err := diagnose.BuffSizeMB(d.microBatch, d.seqLen, d.hidden, d.dtype)
	if err != nil {
		fmt.Fprintf(d.stderr, "%s diagnose buffsize: %v\n", exporterName, err)
		return 2
	}
	size := diagnose.DTypeSizes[d.dtype]
	if d.format == "json" {
		fmt.Fprintf(d.stdout, "{\"micro_batch_size\": %d, \"seq_len\": %d, \"hidden_size\": %d, \"dtype\": %s, \"dtype_bytes\": %d, \"hccl_buffsize_mb\": %d, \"export\": %s}\n",
			d.microBatch, d.seqLen, d.hidden, strconv.Quote(d.dtype), size, mb, strconv.Quote(fmt.Sprintf("export HCCL_BUFFSIZE=%d", mb)))
		return 0
	}
	fmt.Fprintf(d.stdout, "HCCL_BUFFSIZE = ceil(%d × %d × %d × %d bytes (%s) / 1048576) = %d MB\n", d.microBatch, d.seqLen, d.hidden, size, d.dtype, mb)
	fmt.Fprintf(d.stdout, "Each communicator then holds 2 × %d MB of NPU memory. Set it on every node:\n", mb)
	fmt.Fprintf(d.stdout, "export HCCL_BUFFSIZE=%d\n", mb)
	return 0
}

func (d *Command) runReport(logger *slog.Logger) int {
	loc, infer := time.Local, d.timezone == "auto"
	if !infer {
		var err error
		if loc, err = logstate.ParseZone(d.timezone); err != nil {
			fmt.Fprintf(d.stderr, "%s diagnose: --timezone: %v\n", exporterName, err)
			return 2
		}
	}
	nodeLocs, err := diagnose.ParseNodeZones(d.nodeTZ)
	if err != nil {
		fmt.Fprintf(d.stderr, "%s diagnose: --node-timezone: %v\n", exporterName, err)
		return 2
	}
	start := time.Now()
	rep, err := diagnose.Run(d.paths, diagnose.Options{Layout: bundle.Layout(d.layout), Location: loc, Workers: d.workers, NodeLocations: nodeLocs, InferZones: infer})
	if err != nil {
		fmt.Fprintf(d.stderr, "%s diagnose: %v\n", exporterName, err)
		return 2
	}
	logger.Debug("diagnose done", "nodes", len(rep.Nodes), "duration", time.Since(start))
	for _, e := range rep.Errors {
		fmt.Fprintf(d.stderr, "%s diagnose: %s\n", exporterName, e)
	}
	switch d.format {
	case "json":
		err = diagnose.WriteJSON(d.stdout, rep)
	case "html":
		err = diagnose.WriteHTML(d.stdout, rep)
	default:
		err = diagnose.WriteTextWith(d.stdout, rep, diagnose.TextOptions{Detail: d.detail})
	}
	if err != nil {
		fmt.Fprintf(d.stderr, "%s diagnose: write report: %v\n", exporterName, err)
		return 2
	}
	return rep.ExitCode
}

// exporterName names the program in usage and errors.
const exporterName = "hccl_exporter"
