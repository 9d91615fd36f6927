package main

import (
	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog"
)

type cannlogFlags struct{ cfg *cannlog.Config }

func addCannlogFlags(app *kingpin.Application) *cannlogFlags {
	return &cannlogFlags{cfg: cannlog.AddFlags(app)}
}
