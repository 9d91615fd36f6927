package headroom

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"

	"github.com/hccl-exporter/hccl_exporter/internal/flagcheck"
	model "github.com/hccl-exporter/hccl_exporter/internal/headroom"
)

// Config holds the --headroom.* flags: the model's (qp-bytes-low/high,
// capture-window) and what it learns on the node (Learn).
type Config struct {
	Model model.Config
	Learn LearnConfig
}

// AddFlags registers the --headroom.* flags, in the order --help lists
// them.
func AddFlags(app *kingpin.Application, rules *flagcheck.Rules) *Config {
	c := &Config{}
	addHeadroomFlags(app, rules, &c.Model)
	addLearnFlags(app, rules, &c.Learn)
	return c
}

// Validate reports flag values that cannot work.
func (c *Config) Validate() error {
	if err := c.Model.Validate(); err != nil {
		return err
	}
	return c.Learn.Validate()
}

// addHeadroomFlags registers the model's flags on app, filling cfg when
// app parses its arguments; call Validate after parsing.
func addHeadroomFlags(app *kingpin.Application, rules *flagcheck.Rules, cfg *model.Config) {
	*cfg = model.DefaultConfig()
	var highSet bool
	// No kingpin Default: --help would print --headroom.qp-bytes-low=256KiB
	// as if every QP had that size, while unset each mode has its own.
	rules.Flag(app, "headroom.qp-bytes-low",
		"Override: the NPU memory of one HCCL QP for the low bound, in every mode, with a unit: 256KiB, 0.25MiB (KiB = 1024 bytes). "+
			"Unset (the default): derived from the QP mode of each process (docs/headroom.md); where the logs do not tell the mode, 256KiB.", flagcheck.ByteSize).
		PlaceHolder("SIZE").IsSetByUser(&cfg.QPBytesSetByUser).SetValue(&bytesValue{dst: &cfg.QPBytesLow})
	rules.Flag(app, "headroom.qp-bytes-high",
		"Override: the NPU memory of one HCCL QP for the expected and high bounds, in every mode, with a unit: 3MiB. "+
			"Unset (the default): derived from the QP mode of each process (HCCL's QP depths, docs/headroom.md); where the logs do not tell the mode, 3MiB with one QP per link, 1.5MiB per QP with N + 1 (the largest a mode makes).", flagcheck.ByteSize).
		PlaceHolder("SIZE").IsSetByUser(&highSet).SetValue(&bytesValue{dst: &cfg.QPBytesHigh})
	rules.Flag(app, "headroom.capture-window",
		"How long after its latest ACL graph capture re-created RoCE QPs a process counts as capturing: its next capture's QPs are then link setup ahead.", flagcheck.Positive(flagcheck.MaxInterval)).
		Default("5m").DurationVar(&cfg.CaptureWindow)
	// Either flag given makes the pair apply to every mode.
	app.Action(func(*kingpin.ParseContext) error {
		cfg.QPBytesSetByUser = cfg.QPBytesSetByUser || highSet
		return nil
	})
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
