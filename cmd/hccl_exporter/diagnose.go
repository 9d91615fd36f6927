package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
	"github.com/hccl-exporter/hccl_exporter/diagnose"
)

// diagnoseCommand is the offline `hccl_exporter diagnose` command. It has
// two subcommands: `report` (the default, so `diagnose PATH...` works: kingpin
// cannot mix positional arguments and subcommands on one command, but it
// hands the arguments of a command to its default subcommand) and
// `buffsize`. A bundle whose path is literally "report" or "buffsize" must
// be written ./report.
type diagnoseCommand struct {
	cmd      *kingpin.CmdClause
	report   *kingpin.CmdClause
	buffsize *kingpin.CmdClause

	format   string
	layout   string
	timezone string
	nodeTZ   []string
	workers  int
	paths    []string

	microBatch, seqLen, hidden uint64
	dtype                      string

	buffsizeSelected bool

	stdout, stderr io.Writer
}

func addDiagnoseCommand(app *kingpin.Application) *diagnoseCommand {
	d := &diagnoseCommand{stdout: os.Stdout, stderr: os.Stderr}
	d.cmd = app.Command("diagnose", "Analyse a bundle of CANN logs and screen logs collected from the nodes of a failed job, offline (docs/diagnose.md).")
	d.cmd.Flag("format", "Output format: text (for a person), json (for a program; docs/diagnose.md), or html (one self-contained page: incidents with a timeline per node, and the text report's tables; the buffsize subcommand prints text).").Default("text").EnumVar(&d.format, "text", "json", "html")

	d.report = d.cmd.Command("report", "Report fault codes, effective HCCL settings, settings that disagree between nodes and the EI0011 remedies with the bundle's numbers (the default: `diagnose PATH...`). Exit 0 clean, 1 findings, 2 bad input.").Default()
	d.report.Flag("layout", "How files map to nodes: auto (node directories are detected), nodes (each first-level directory of a PATH is a node), node (each PATH is one node).").
		Default(string(diagnose.LayoutAuto)).EnumVar(&d.layout, string(diagnose.LayoutAuto), string(diagnose.LayoutNodes), string(diagnose.LayoutNode))
	d.report.Flag("timezone", "Zone the nodes printed their log times in (CANN prints local time without a zone): Local, UTC, an IANA name such as Asia/Shanghai, an offset such as +08:00, or auto (each node's zone from its communicators' identifiers, which carry the root's creation time in UTC; Local where they show none).").
		Default("auto").StringVar(&d.timezone)
	d.report.Flag("node-timezone", "NODE=ZONE: a node that printed its times in another zone than --timezone (repeatable). The report's CLOCKS section names nodes whose clocks are off by whole quarter-hours.").
		PlaceHolder("NODE=ZONE").StringsVar(&d.nodeTZ)
	d.report.Flag("workers", "Files read concurrently; 0 means GOMAXPROCS.").Default("0").IntVar(&d.workers)
	d.report.Arg("path", "Directories (one per node, or a root holding one directory per node) and .tar.gz/.tgz/.tar archives of them.").
		Required().StringsVar(&d.paths)

	d.buffsize = d.cmd.Command("buffsize", "Print the HCCL_BUFFSIZE the troubleshooting guide recommends for a large language model: ceil(micro-batch size × sequence length × hidden size × sizeof(dtype) / 1 MiB) MB.")
	d.buffsize.Flag("micro-batch-size", "Micro-batch size.").Required().Uint64Var(&d.microBatch)
	d.buffsize.Flag("seq-len", "Sequence length.").Required().Uint64Var(&d.seqLen)
	d.buffsize.Flag("hidden-size", "Hidden size.").Required().Uint64Var(&d.hidden)
	d.buffsize.Flag("dtype", "Data type of the communicated activations: "+strings.Join(diagnose.DTypes(), ", ")+".").Required().EnumVar(&d.dtype, diagnose.DTypes()...)
	d.buffsize.Action(func(*kingpin.ParseContext) error { d.buffsizeSelected = true; return nil })
	return d
}

func (d *diagnoseCommand) matches(cmd string) bool {
	return d != nil && d.cmd != nil && (cmd == d.report.FullCommand() || cmd == d.buffsize.FullCommand() || cmd == d.cmd.FullCommand())
}

func (d *diagnoseCommand) run(logger *slog.Logger) int {
	if d.buffsizeSelected {
		return d.runBuffSize()
	}
	return d.runReport(logger)
}

func (d *diagnoseCommand) runBuffSize() int {
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

func (d *diagnoseCommand) runReport(logger *slog.Logger) int {
	loc, infer := time.Local, d.timezone == "auto"
	if !infer {
		var err error
		if loc, err = cannlog.ParseZone(d.timezone); err != nil {
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
	rep, err := diagnose.Run(d.paths, diagnose.Options{Layout: diagnose.Layout(d.layout), Location: loc, Workers: d.workers, NodeLocations: nodeLocs, InferZones: infer})
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
		err = diagnose.WriteText(d.stdout, rep)
	}
	if err != nil {
		fmt.Fprintf(d.stderr, "%s diagnose: write report: %v\n", exporterName, err)
		return 2
	}
	return rep.ExitCode
}
