package main

import (
	"log/slog"

	"github.com/alecthomas/kingpin/v2"
)

// diagnoseCommand is the offline `hccl_exporter diagnose` subcommand.
type diagnoseCommand struct {
	cmd *kingpin.CmdClause
}

func addDiagnoseCommand(app *kingpin.Application) *diagnoseCommand {
	return nil
}

func (d *diagnoseCommand) matches(cmd string) bool { return d.cmd != nil && cmd == d.cmd.FullCommand() }

func (d *diagnoseCommand) run(logger *slog.Logger) int { return 0 }
