package npuhealth

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
)

// A card-level answer (`npu-smi info -t <type> -i N`, no -c) runs the chip
// printer of the chip form for every chip of the card
// (show_ascend_card_info, npucli card_info.c:661-702) inside a wrapper
// (printf_ascend_card_info_header / printf_ascend_card_chip_id,
// card_info.c:589-615):
//
//	\tNPU ID                         : <card>     "%-30s", "%-40s" for -t ecc
//	\tChip Count                     : <n>        then an empty line
//	<chip 0's lines, as -c 0 prints them>
//	\tChip ID                        : 0          after the block (A2, A3, 310P)
//	Failed to query npu chip: 0 info.             only when its printer failed
//	<empty line>
//	… one block per chip …
//	<MCU's lines>\tChip Name : MCU <empty line>   when the MCU answers the type
//
// A chip whose printer answers "not supported" prints nothing, not even its
// Chip ID (card_info.c:682-694). On 310 and 310B the Chip ID comes before
// the block (card_info.c:678-680): SplitCard refuses that order.
//
// On a two-die A3 card one such call answers what two chip-form calls do,
// for the types whose card form runs the same printer as their chip form:
// ecc (card_info.c:946), pcie-err (:1062), memory (:734) and usages (:857).
// Not health: its card form prints only the Health word, no error code
// (show_ascend_chip_health_state, chip_info.c:1093); hccs and sio-info have
// no card form on A2/A3 ("Must input parameter of chip id").

// chipFailedText opens the line the card form prints after a chip whose
// printer failed: "Failed to query npu chip: <i> info." (card_info.c:689).
const chipFailedText = "Failed to query npu chip:"

// CardAnswer is a card-level answer split per chip.
type CardAnswer struct {
	// Chips holds each chip's lines (without the wrapper's), by Chip ID
	// as printed.
	Chips map[string][]byte
	// Failed lists the chips whose printer failed (their lines, if any,
	// are not in Chips).
	Failed map[string]bool
}

// SplitCard splits a card-level answer into its chips' blocks. It returns
// an error when lines are left that no Chip ID or Chip Name closes (a cut
// output), a Chip ID is not a number or comes before its chip's lines (310
// and 310B print it first: their answers are not split, the caller asks
// the chip form), along with the chips it did close: what was read whole
// is not lost.
func SplitCard(b []byte) (CardAnswer, error) {
	a := CardAnswer{Chips: map[string][]byte{}, Failed: map[string]bool{}}
	var block []string // the open block's lines
	header := true     // before the first block: NPU ID and Chip Count
	bare := ""         // a Chip ID that closed no line: only a failed chip's
	var errs []string
	for _, raw := range strings.Split(string(b), "\n") {
		l := strings.TrimRight(raw, "\r")
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if id, ok := strings.CutPrefix(t, chipFailedText); ok {
			id = strings.TrimSpace(strings.TrimSuffix(id, " info."))
			a.Failed[id] = true
			delete(a.Chips, id)
			if id == bare {
				bare = ""
			}
			continue
		}
		if bare != "" {
			errs = append(errs, fmt.Sprintf("Chip ID %s comes before its chip's lines (the 310/310B order)", bare))
			bare = ""
		}
		label, value, isKV := strings.Cut(t, " : ")
		if !isKV {
			// A message (`Failed to query "ecc" info.`, `Failed to query
			// mcu chip: 2 info.`), not a chip's line.
			continue
		}
		label, value = strings.TrimSpace(label), strings.TrimSpace(value)
		if header && (label == "NPU ID" || label == "Chip Count") {
			continue
		}
		header = false
		switch label {
		case "Chip ID":
			if _, err := strconv.Atoi(value); err != nil {
				errs = append(errs, fmt.Sprintf("Chip ID %q is not a number", value))
			} else if len(block) == 0 {
				bare = value
			} else if !a.Failed[value] {
				a.Chips[value] = []byte(strings.Join(block, "\n") + "\n")
			}
			block = nil
		case "Chip Name":
			block = nil // the MCU's or the CPU's lines
		default:
			block = append(block, l)
		}
	}
	if bare != "" {
		errs = append(errs, fmt.Sprintf("Chip ID %s closes no line", bare))
	}
	if len(block) > 0 {
		errs = append(errs, fmt.Sprintf("%d line(s) after the last Chip ID belong to no chip (a cut answer?)", len(block)))
	}
	if len(errs) > 0 {
		return a, fmt.Errorf("card answer: %s", strings.Join(errs, "; "))
	}
	if len(a.Chips) == 0 && len(a.Failed) == 0 {
		return a, fmt.Errorf("card answer: %w (no Chip ID closes a block)", ErrNoData)
	}
	return a, nil
}

// cardKey is one per-card query of one NPU.
type cardKey struct{ npu, typ string }

// cardCall is a per-card query of a sweep, asked by the first of the
// card's chips to reach it and read by the others.
type cardCall struct {
	done   chan struct{} // closed once asked
	result string        // the call's (sweep.Success, …)
	chips  map[string]*Reading
	failed map[string]bool
}

// cardIsOff: the card form of (npu, typ) gave a chip no block before; its
// chips are asked the chip form.
func (c *Collector) cardIsOff(npu, typ string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cardOff[cardKey{npu, typ}]
}

func (c *Collector) turnCardOff(k cardKey, why string) {
	c.mu.Lock()
	first := !c.cardOff[k]
	c.cardOff[k] = true
	c.mu.Unlock()
	if first {
		c.logger.Debug("npu-smi's card form does not answer for every chip; asking each chip with -c until restart",
			"npu", k.npu, "type", k.typ, "why", why)
	}
}

// fromCard serves chip ch's query q from its card's answer, asking it
// (once per sweep and card) when ch is the first of its chips to come.
// own: ch made the call; ok false: the answer holds no block for ch (the
// card form is not supported, not split, or leaves ch out), and the chip
// form is to be asked.
func (c *Collector) fromCard(ctx context.Context, q query, ch ascend.ChipID, r, old *Reading, run *chipRun, slow func()) (result string, own, ok bool) {
	k := cardKey{ch.NPU, q.typ}
	run.mu.Lock()
	cc := run.cards[k]
	own = cc == nil
	if own {
		cc = &cardCall{done: make(chan struct{})}
		run.cards[k] = cc
	}
	run.mu.Unlock()
	if own {
		c.askCard(ctx, q, ch, k, cc, run, slow)
		close(cc.done)
	} else {
		select {
		case <-cc.done:
		case <-ctx.Done():
			return sweep.Timeout, false, true
		}
	}
	switch {
	case cc.chips[ch.Chip] != nil:
		q.carry(r, cc.chips[ch.Chip])
		return sweep.Success, own, true
	case cc.failed[ch.Chip]:
		run.problem(fmt.Sprintf("npu %s chip %s -t %s: npu-smi's card form failed to query this chip", ch.NPU, ch.Chip, q.typ))
		return sweep.Error, own, true
	case cc.result == sweep.Busy || cc.result == sweep.Timeout || cc.result == sweep.Error:
		// Asked again next sweep; meanwhile the last reading stands.
		if old != nil {
			q.carry(r, old)
		}
		return cc.result, own, true
	case cc.result == sweep.Unsupported:
		return "", own, false // cardOff is set: the chip form answers for itself
	}
	// The answer left this chip out: its printer is not supported in the
	// card form (nothing printed), or the table and the card differ.
	c.turnCardOff(k, fmt.Sprintf("chip %s has no block in the card's answer", ch.Chip))
	return "", own, false
}

// askCard makes the per-card call and parses every chip's block.
func (c *Collector) askCard(ctx context.Context, q query, ch ascend.ChipID, k cardKey, cc *cardCall, run *chipRun, slow func()) {
	out := c.call(ctx, ch, args(q.typ, true, ch), slow)
	result, err := classify(out)
	chipFailed := result == sweep.Error && !out.Truncated && bytes.Contains(out.Stdout, []byte(chipFailedText))
	if result == sweep.Success || chipFailed {
		// A chip's printer failed (card_info.c:689): npu-smi then also
		// says the type failed and exits non-zero when that chip was the
		// last asked (card_info.c:1509), but the other chips' blocks stand.
		a, serr := SplitCard(out.Stdout)
		cc.chips, cc.failed = make(map[string]*Reading, len(a.Chips)), a.Failed
		for id, block := range a.Chips {
			var cr Reading
			if perr := q.parse(&cr, block); perr != nil {
				result, err = sweep.ParseError, fmt.Errorf("chip %s: %w", id, perr)
				chipFailed = false
				continue
			}
			cc.chips[id] = &cr
		}
		if serr != nil {
			result, err, chipFailed = sweep.ParseError, serr, false
			c.turnCardOff(k, serr.Error())
		}
	}
	if result == sweep.Unsupported {
		c.turnCardOff(k, "the card form answered not supported")
	}
	cc.result = result
	c.calls.Add(q.typ, result, 1)
	switch {
	case result == sweep.Success || result == sweep.Unsupported || result == sweep.Busy:
	case chipFailed: // each failed chip says so (fromCard)
	default:
		run.problem(fmt.Sprintf("npu %s -t %s (card form, asked by chip %s): %s: %v", ch.NPU, q.typ, ch.Chip, result, err))
	}
}
