package npuhealth

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

// maxOutputBytes caps one detail answer: the largest, a health block with
// 128 codes and their strings, is about 40 KiB.
const maxOutputBytes = 1 << 20

// staticEvery: board (VDie ID) and ecc-enable change only with new hardware
// or a reset, so after they answered they are asked again only every this
// many sweeps (an hour at the default interval), not at every sweep.
const staticEvery = 60

// query is one `npu-smi info -t <typ>` the sweep makes.
type query struct {
	typ string // label value of hccl_exporter_npu_smi_detail_calls_total{type}
	// arg is the -t argument where it is not typ (card-board is -t board
	// without -c).
	arg string
	// alt is the spelling of BUILD_CH builds (`-t xlink` for hccs), tried
	// when the type itself is unknown to the binary.
	alt string
	// card: asked once per NPU without -c (ecc-enable has no chip form).
	card bool
	// static: asked until it answered, then only every staticEvery sweeps.
	static bool
	parse  func(r *Reading, b []byte) error
	// carry copies this query's fields from the previous sweep's reading
	// (a busy answer is asked again next sweep; meanwhile the last reading
	// stands).
	carry func(r, prev *Reading)
}

// queries run in this order per chip; the card-level ones once per NPU.
var queries = []query{
	{typ: "health", parse: func(r *Reading, b []byte) error {
		h, err := ParseHealth(b)
		if err == nil {
			r.Health = &h
		}
		return err
	}, carry: func(r, p *Reading) { r.Health = p.Health }},
	{typ: "ecc", parse: func(r *Reading, b []byte) error {
		e, err := ParseECC(b)
		if err == nil {
			r.ECC = &e
		}
		return err
	}, carry: func(r, p *Reading) { r.ECC = p.ECC }},
	{typ: "ecc-enable", card: true, static: true, parse: func(r *Reading, b []byte) error {
		on, err := ParseECCEnable(b)
		if err == nil {
			r.ECCEnabled = &on
		}
		return err
	}, carry: func(r, p *Reading) { r.ECCEnabled = p.ECCEnabled }},
	{typ: "pcie-err", parse: func(r *Reading, b []byte) error {
		m, err := ParsePCIeErr(b)
		r.PCIe = m
		return err
	}, carry: func(r, p *Reading) { r.PCIe = p.PCIe }},
	{typ: "hccs", alt: "xlink", parse: func(r *Reading, b []byte) error {
		h, err := ParseHCCS(b)
		if err == nil {
			r.HCCS = &h
		}
		return err
	}, carry: func(r, p *Reading) { r.HCCS = p.HCCS }},
	{typ: "sio-info", parse: func(r *Reading, b []byte) error {
		m, err := ParseSIO(b)
		r.SIO = m
		return err
	}, carry: func(r, p *Reading) { r.SIO = p.SIO }},
	{typ: "memory", parse: func(r *Reading, b []byte) error {
		v, ok, err := ParseMemory(b)
		r.HBMTemp = Opt{v, ok}
		return err
	}, carry: func(r, p *Reading) { r.HBMTemp = p.HBMTemp }},
	{typ: "usages", parse: func(r *Reading, b []byte) error {
		u, err := ParseUsages(b)
		if err == nil {
			r.Usages = &u
		}
		return err
	}, carry: func(r, p *Reading) { r.Usages = p.Usages }},
	{typ: "board", static: true, parse: func(r *Reading, b []byte) error {
		v, err := ParseBoard(b)
		r.VDie, r.HasBoard = v, err == nil
		return err
	}, carry: func(r, p *Reading) { r.VDie, r.HasBoard = p.VDie, p.HasBoard }},
	// The queries below feed families that are off by default
	// (Config.Skip leaves them out; cmd/hccl_exporter's family groups).
	{typ: "card-board", arg: "board", card: true, static: true, parse: func(r *Reading, b []byte) error {
		inv, err := ParseCardBoard(b)
		if err == nil {
			r.Inventory = &inv
		}
		return err
	}, carry: func(r, p *Reading) { r.Inventory = p.Inventory }},
	{typ: "volt", parse: func(r *Reading, b []byte) error {
		v, ok, err := ParseVolt(b)
		r.Volts = Opt{v, ok}
		return err
	}, carry: func(r, p *Reading) { r.Volts = p.Volts }},
	{typ: "common", card: true, parse: func(r *Reading, b []byte) error {
		m, err := ParseCommon(b)
		r.Common = m
		return err
	}, carry: func(r, p *Reading) { r.Common = p.Common }},
}

// Reading is what one sweep read of one chip. A query that failed leaves
// its fields unset, so nothing stale is exported; one answered busy keeps
// the previous sweep's fields.
type Reading struct {
	NPU, Chip string
	// Results: the result of every query asked this sweep, by type.
	Results map[string]string

	Health     *Health
	ECC        *ECC
	ECCEnabled *bool
	PCIe       map[string]float64
	HCCS       *HCCS
	SIO        map[string]float64
	HBMTemp    Opt
	Usages     *Usages
	VDie       string
	HasBoard   bool
	Inventory  *Inventory        // card-board, the NPU's
	Volts      Opt               // volt
	Common     map[string]Common // common, the NPU's chips by Chip ID
}

// Sweep is one pass over every chip of the last accepted npu-smi table.
// Sweeps handed out are shared and read-only.
type Sweep struct {
	Started, Finished time.Time
	// Chips is the number of chips in the last accepted `npu-smi info`
	// table, HasChips false when there has been none.
	Chips    int
	HasChips bool
	Readings []Reading
	// Err lists the calls that failed (busy and unsupported are not failures).
	Err error
}

type chipKey struct{ npu, chip string }

// sweep reads every chip once, one call at a time.
func (c *Collector) sweep(ctx context.Context) *Sweep {
	s := &Sweep{Started: c.now()}
	chips, err := c.table.Chips(ctx)
	if err != nil {
		c.logger.Debug("npu-smi info table unavailable; sweeping the chips of the last accepted one", "err", err)
		chips = c.lastChips
	} else {
		c.lastChips = chips
		c.hasTable = true
	}
	s.Chips, s.HasChips = len(c.lastChips), c.hasTable
	prev := map[chipKey]*Reading{}
	if p := c.latest.Load(); p != nil {
		for i := range p.sweep.Readings {
			r := &p.sweep.Readings[i]
			prev[chipKey{r.NPU, r.Chip}] = r
		}
	}
	c.sweeps++
	refreshStatic := c.sweeps%staticEvery == 0
	var problems []string
	cardDone := map[string]*Reading{} // npu → the reading that holds its card-level answers
	for _, ch := range chips {
		key := chipKey{ch.NPU, ch.Chip}
		r := Reading{NPU: ch.NPU, Chip: ch.Chip, Results: map[string]string{}}
		old := prev[key]
		for _, q := range queries {
			if ctx.Err() != nil {
				break
			}
			if c.unsupported[key][q.typ] || c.cfg.Skip[q.typ] {
				continue
			}
			if q.card {
				if first, ok := cardDone[ch.NPU]; ok && first != &r { // not the chip that asked it
					q.carry(&r, first)
					continue
				}
			}
			if q.static && !refreshStatic && old != nil && hasStatic(q, old) {
				q.carry(&r, old) // answered before: not asked again yet
				continue
			}
			result, err := c.ask(ctx, q, ch, &r)
			r.Results[q.typ] = result
			c.calls.Add(q.typ, result, 1)
			switch result {
			case sweep.Success:
			case sweep.Unsupported:
				if c.unsupported[key] == nil {
					c.unsupported[key] = map[string]bool{}
				}
				c.unsupported[key][q.typ] = true
				c.logger.Debug("npu-smi detail query not supported on this chip; not asked again until restart", "npu", ch.NPU, "chip", ch.Chip, "type", q.typ, "err", err)
			case sweep.Busy:
				if old != nil {
					q.carry(&r, old)
				}
				c.logger.Debug("npu-smi detail query answered busy; asked again next sweep", "npu", ch.NPU, "chip", ch.Chip, "type", q.typ, "err", err)
			default:
				problems = append(problems, fmt.Sprintf("npu %s chip %s -t %s: %s: %v", ch.NPU, ch.Chip, q.typ, result, err))
			}
			if q.card {
				cardDone[ch.NPU] = &r
			}
			// A chip that hangs (a reset) costs one timeout per sweep,
			// not one per query: the other chips are read on time.
			if result == sweep.Timeout {
				break
			}
		}
		s.Readings = append(s.Readings, r)
	}
	s.Finished = c.now()
	if ctx.Err() != nil {
		problems = append(problems, "sweep cancelled: "+ctx.Err().Error())
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		s.Err = fmt.Errorf("%d npu-smi detail call(s) failed: %s", len(problems), strings.Join(problems, "; "))
	}
	return s
}

// hasStatic: the previous reading holds the static query's answer (carried
// or asked).
func hasStatic(q query, old *Reading) bool {
	switch q.typ {
	case "board":
		return old.HasBoard
	case "ecc-enable":
		return old.ECCEnabled != nil
	case "card-board":
		return old.Inventory != nil
	}
	return false
}

// ask makes one call (and, for a type the binary does not know, its BUILD_CH
// spelling) and parses it into r.
func (c *Collector) ask(ctx context.Context, q query, ch ChipID, r *Reading) (string, error) {
	typ := q.typ
	if q.arg != "" {
		typ = q.arg
	}
	if q.alt != "" && c.altWorks[q.typ] {
		typ = q.alt
	}
	out := c.call(ctx, args(typ, q.card, ch))
	result, err := classify(out)
	if result == sweep.Error && q.alt != "" && typ != q.alt && bytes.Contains(out.Stdout, []byte("Error parameter of -t")) {
		// A BUILD_CH binary: hccs is spelled xlink.
		alt := c.call(ctx, args(q.alt, q.card, ch))
		if ar, aerr := classify(alt); ar != sweep.Error {
			out, result, err = alt, ar, aerr
			c.altWorks[q.typ] = true
		}
	}
	if result != sweep.Success {
		return result, err
	}
	if perr := q.parse(r, out.Stdout); perr != nil {
		return sweep.ParseError, perr
	}
	return sweep.Success, nil
}

func args(typ string, card bool, ch ChipID) []string {
	if card {
		return []string{"info", "-t", typ, "-i", ch.NPU}
	}
	return []string{"info", "-t", typ, "-i", ch.NPU, "-c", ch.Chip}
}

// call waits until no `npu-smi info` run of the npusmi collector is in
// flight (it serves scrapes: the sweep yields, never the scrape), then runs
// npu-smi once.
func (c *Collector) call(ctx context.Context, args []string) vendorcli.Result {
	if done := c.table.InFlight(); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(c.cfg.Timeout):
			// A hung table run is killed at its own timeout; do not wait
			// longer than one call would take.
		}
	}
	return c.exec(ctx, args)
}
