package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// addHeadroomFlags registers the headroom flags on app. The returned Config is filled
// in when app parses its arguments; call Validate after parsing.
func addHeadroomFlags(app *kingpin.Application) *headroom.Config {
	cfg := headroom.DefaultConfig()
	var highSet bool
	// No kingpin Default: --help would print --headroom.qp-bytes-low=256KiB
	// as if every QP had that size, while unset each mode has its own.
	app.Flag("headroom.qp-bytes-low",
		"Override: the NPU memory of one HCCL QP for the low bound, in every mode, with a unit: 256KiB, 0.25MiB (KiB = 1024 bytes). "+
			"Unset (the default): derived from the QP mode of each process (docs/headroom.md); where the logs do not tell the mode, 256KiB.").
		PlaceHolder("SIZE").IsSetByUser(&cfg.QPBytesSetByUser).SetValue(&bytesValue{dst: &cfg.QPBytesLow})
	app.Flag("headroom.qp-bytes-high",
		"Override: the NPU memory of one HCCL QP for the expected and high bounds, in every mode, with a unit: 3MiB. "+
			"Unset (the default): derived from the QP mode of each process (HCCL's QP depths, docs/headroom.md); where the logs do not tell the mode, 3MiB with one QP per link, 1.5MiB per QP with N + 1 (the largest a mode makes).").
		PlaceHolder("SIZE").IsSetByUser(&highSet).SetValue(&bytesValue{dst: &cfg.QPBytesHigh})
	app.Flag("headroom.capture-window",
		"How long after its latest ACL graph capture re-created RoCE QPs a process counts as capturing: its next capture's QPs are then link setup ahead.").
		Default("5m").DurationVar(&cfg.CaptureWindow)
	// Either flag given makes the pair apply to every mode.
	app.Action(func(*kingpin.ParseContext) error {
		cfg.QPBytesSetByUser = cfg.QPBytesSetByUser || highSet
		return nil
	})
	return &cfg
}

// bytesValue is a kingpin flag value holding a byte size written with a
// base-2 unit (256KiB, 3MiB, 0.25MiB; KB is also read as 1024 bytes).
type bytesValue struct{ dst *float64 }

func (b *bytesValue) Set(s string) error {
	n, err := units.ParseBase2Bytes(s)
	if err != nil {
		return fmt.Errorf("parse byte size %q (use a unit such as 256KiB or 3MiB): %w", s, err)
	}
	if n <= 0 {
		return fmt.Errorf("byte size %q must be positive", s)
	}
	*b.dst = float64(n)
	return nil
}

func (b *bytesValue) String() string {
	if b.dst == nil {
		return ""
	}
	return units.Base2Bytes(*b.dst).String()
}
