package npuhealth

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
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
	// perCard: on an NPU of several chips (an A3 card's two dies), asked
	// once per NPU without -c, whose answer holds every chip's block as
	// the chip form prints it (card.go); with -c per chip elsewhere.
	perCard bool
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
	{typ: "ecc", perCard: true, parse: func(r *Reading, b []byte) error {
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
	{typ: "pcie-err", perCard: true, parse: func(r *Reading, b []byte) error {
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
	{typ: "memory", perCard: true, parse: func(r *Reading, b []byte) error {
		v, ok, err := ParseMemory(b)
		r.HBMTemp = ascend.Value{V: v, OK: ok}
		return err
	}, carry: func(r, p *Reading) { r.HBMTemp = p.HBMTemp }},
	{typ: "usages", perCard: true, parse: func(r *Reading, b []byte) error {
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
		r.Volts = ascend.Value{V: v, OK: ok}
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
	HBMTemp    ascend.Value
	Usages     *Usages
	VDie       string
	HasBoard   bool
	Inventory  *Inventory        // card-board, the NPU's
	Volts      ascend.Value      // volt
	Common     map[string]Common // common, the NPU's chips by Chip ID
}

// Sweep is one pass over the chips of the last accepted npu-smi table.
// Sweeps handed out are shared and read-only.
type Sweep struct {
	Started, Finished time.Time
	// Chips is the number of chips in the last accepted `npu-smi info`
	// table, HasChips false when there has been none.
	Chips    int
	HasChips bool
	// Readings holds the chips this sweep asked, in table order; a chip
	// skipped (hung, or not reached within the budget) has none.
	Readings []Reading
	// Skipped counts the chips of the table this sweep did not ask.
	Skipped int
	// Err lists the calls that failed (busy and unsupported are not
	// failures) and the chips skipped.
	Err error
}

// How a sweep is bounded, and why mostly one call at a time.
//
// npu-smi initialises DCMI on every call and DCMI answers a second caller
// busy (-8020), so the sweep makes one call at a time while calls answer, as
// before. What it must not do is let hung chips (a chip in reset holds its
// call until the timeout, or for good when the process is stuck in the
// driver) hold the others back:
//
//   - Each chip's reading carries the time it was read, and a scrape serves
//     each chip whose reading is at most two intervals old: a hung chip
//     costs its own series only (hccl_exporter_npu_smi_detail_stale_chips).
//   - A call still running after slowAfter (a fifth of the timeout, at least
//     1 s: a detail call that answers takes well under that) stops holding
//     the sweep: the next chip starts while it runs to its end. At most
//     maxParallel chips are read at once, so at most that many npu-smi
//     processes run, slow ones included; DCMI busy answers from the
//     overlap are counted busy and asked again next sweep.
//   - Chips whose last call timed out are asked after all the others, and
//     among equals the chip asked longest ago goes first: a responsive
//     chip is read at the start of every sweep whatever the number of hung
//     ones, and the hung ones take turns with what is left.
//   - No chip is started once the sweep's budget (the interval minus one
//     call's timeout, at least half the interval) is spent, so a sweep ends
//     within about one interval; the chips it did not reach go first next.
//   - A call that has not returned abandonAfter past its timeout (a process
//     the kernel cannot kill, stuck in the driver) is left behind and
//     counted as a timeout; it no longer takes one of the maxParallel
//     places. Its chip is not asked again while that process lives (one
//     process per chip at most), and while maxStuck such processes live,
//     chips whose last call timed out are not probed; responsive chips
//     still are.
const (
	maxParallel = 4
	maxStuck    = 4
)

// abandonAfter is how long past its timeout a call is waited for: vendorcli
// kills the process group at the timeout and waits vendorcli.WaitDelay for
// its pipes.
const abandonAfter = vendorcli.WaitDelay + time.Second

// chipEntry is one chip's latest answered reading and its series, built
// once when it was read.
type chipEntry struct {
	reading Reading
	metrics []prometheus.Metric
	// read is when the chip last answered; zero when it never has.
	read time.Time
	// since is when the chip first appeared in a table: one that never
	// answered counts as stale once two intervals have passed since.
	since time.Time
}

// chipTurn is the sweep's bookkeeping of one chip.
type chipTurn struct {
	hung  bool // its last call timed out
	asked int  // the sweep it was last asked in
}

// budget is how long after its start a sweep may begin a chip.
func (c *Collector) budget() time.Duration {
	return max(c.cfg.Interval-c.cfg.Timeout, c.cfg.Interval/2)
}

// order sorts chips for a sweep: responsive chips first, then those whose
// last call timed out; among equals the one asked longest ago, then table
// order.
func (c *Collector) order(chips []ascend.ChipID) []ascend.ChipID {
	out := append([]ascend.ChipID(nil), chips...)
	turn := func(ch ascend.ChipID) chipTurn {
		if t := c.turns[ch]; t != nil {
			return *t
		}
		return chipTurn{}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := turn(out[i]), turn(out[j])
		if a.hung != b.hung {
			return !a.hung
		}
		return a.asked < b.asked
	})
	return out
}

// sweep reads the chips within the budget (see above) and publishes each
// chip's reading as soon as it is read.
func (c *Collector) sweep(ctx context.Context) *Sweep {
	s := &Sweep{Started: c.now()}
	budgetEnd := time.Now().Add(c.budget())
	chips, err := c.table.Chips(ctx)
	c.mu.Lock()
	if err != nil {
		c.logger.Debug("npu-smi info table unavailable; sweeping the chips of the last accepted one", "err", err)
		chips = c.lastChips
	} else {
		c.lastChips = chips
		c.hasTable = true
	}
	s.Chips, s.HasChips = len(c.lastChips), c.hasTable
	c.forget(chips)
	c.publishView(ctx)
	c.sweeps++
	sweepNo := c.sweeps
	refreshStatic := sweepNo%staticEvery == 0
	order := c.order(chips)
	c.mu.Unlock()

	run := &chipRun{readings: map[ascend.ChipID]Reading{}, cardDone: map[string]*Reading{}, cardBy: map[string]ascend.ChipID{},
		chipsOf: map[string]int{}, cards: map[cardKey]*cardCall{}}
	for _, ch := range chips {
		run.chipsOf[ch.NPU]++
	}
	lanes := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
chips:
	for _, ch := range order {
		key := ch
		c.mu.Lock()
		turn := *c.turns[key]
		var old *Reading
		if e := c.entries[key]; e != nil && !e.read.IsZero() {
			r := e.reading
			old = &r
		}
		c.mu.Unlock()
		switch {
		case c.isStuck(key):
			run.problem(fmt.Sprintf("npu %s chip %s: skipped, its last call is still hung", ch.NPU, ch.Chip))
			continue
		case turn.hung && c.stuckCount() >= maxStuck:
			run.problem(fmt.Sprintf("npu %s chip %s: skipped, %d hung npu-smi processes still live", ch.NPU, ch.Chip, maxStuck))
			continue
		}
		select {
		case lanes <- struct{}{}:
		case <-ctx.Done():
			break chips
		}
		if time.Now().After(budgetEnd) {
			<-lanes
			run.problem(fmt.Sprintf("npu %s chip %s: not reached within the sweep's budget of %s", ch.NPU, ch.Chip, c.budget()))
			continue
		}
		slow, done := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-lanes }()
			defer close(done)
			r, answered, timedOut := c.readChip(ctx, ch, old, refreshStatic, run, sync.OnceFunc(func() { close(slow) }))
			now := c.now()
			run.mu.Lock()
			run.readings[key] = r
			run.mu.Unlock()
			c.mu.Lock()
			defer c.mu.Unlock()
			if t := c.turns[key]; t != nil {
				t.hung, t.asked = timedOut, sweepNo
			}
			if e := c.entries[key]; e != nil && answered {
				e.reading, e.read = r, now
				e.metrics = c.publish(&Sweep{Readings: []Reading{r}}).metrics
				c.publishView(ctx)
			}
		}()
		select {
		case <-done:
		case <-slow: // the next chip goes on while this call runs out
		}
	}
	wg.Wait()
	for _, ch := range chips {
		if r, ok := run.readings[ch]; ok {
			s.Readings = append(s.Readings, r)
		} else {
			s.Skipped++
		}
	}
	s.Finished = c.now()
	problems := run.problems
	if ctx.Err() != nil {
		problems = append(problems, "sweep cancelled: "+ctx.Err().Error())
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		s.Err = fmt.Errorf("%d npu-smi detail call(s) failed or chip(s) skipped: %s", len(problems), strings.Join(problems, "; "))
	}
	return s
}

// chipRun is what the chips read at once in a sweep share.
type chipRun struct {
	mu       sync.Mutex
	chipsOf  map[string]int // npu → its chips in the table
	cards    map[cardKey]*cardCall
	readings map[ascend.ChipID]Reading
	cardDone map[string]*Reading      // npu → the reading that holds its card-level answers
	cardBy   map[string]ascend.ChipID // npu → the chip that asked them
	problems []string
}

func (r *chipRun) problem(p string) {
	r.mu.Lock()
	r.problems = append(r.problems, p)
	r.mu.Unlock()
}

// forget drops the chips no longer in the table and starts the new ones;
// c.mu is held.
func (c *Collector) forget(chips []ascend.ChipID) {
	in := make(map[ascend.ChipID]bool, len(chips))
	for _, ch := range chips {
		key := ch
		in[key] = true
		if c.entries[key] == nil {
			c.entries[key] = &chipEntry{since: c.now()}
			c.turns[key] = &chipTurn{}
		}
	}
	for key := range c.entries {
		if !in[key] {
			delete(c.entries, key)
			delete(c.turns, key)
		}
	}
}

// readChip asks one chip's queries, one after the other; slow is called
// when a call runs past slowAfter. answered: at least one call answered
// (the reading replaces the chip's last); timedOut: a call timed out, and
// the chip's other queries were skipped.
func (c *Collector) readChip(ctx context.Context, ch ascend.ChipID, old *Reading, refreshStatic bool, run *chipRun, slow func()) (r Reading, answered, timedOut bool) {
	key := ch
	r = Reading{NPU: ch.NPU, Chip: ch.Chip, Results: map[string]string{}}
	for _, q := range queries {
		if ctx.Err() != nil {
			break
		}
		c.mu.Lock()
		unsupported := c.unsupported[key][q.typ]
		c.mu.Unlock()
		if unsupported || c.cfg.Skip[q.typ] {
			continue
		}
		if q.card {
			run.mu.Lock()
			first, ok := run.cardDone[ch.NPU]
			ok = ok && run.cardBy[ch.NPU] != key // not the chip that asked them
			if ok {
				q.carry(&r, first)
			}
			run.mu.Unlock()
			if ok {
				continue
			}
		}
		if q.static && !refreshStatic && old != nil && hasStatic(q, old) {
			q.carry(&r, old) // answered before: not asked again yet
			continue
		}
		if q.perCard && run.chipsOf[ch.NPU] > 1 && !c.cardIsOff(ch.NPU, q.typ) {
			if result, own, ok := c.fromCard(ctx, q, ch, &r, old, run, slow); ok {
				r.Results[q.typ] = result
				switch {
				case result == sweep.Success || (own && result != sweep.Busy && result != sweep.Timeout):
					answered = true
				case own && result == sweep.Timeout:
					timedOut = true
				}
				if timedOut {
					break // as below: a hung chip costs one timeout per sweep
				}
				continue
			}
			// No block for this chip: the chip form is asked below.
		}
		result, err := c.ask(ctx, q, ch, &r, slow)
		r.Results[q.typ] = result
		c.calls.Add(q.typ, result, 1)
		switch result {
		case sweep.Success:
			answered = true
		case sweep.Unsupported:
			answered = true
			c.mu.Lock()
			if c.unsupported[key] == nil {
				c.unsupported[key] = map[string]bool{}
			}
			c.unsupported[key][q.typ] = true
			c.mu.Unlock()
			c.logger.Debug("npu-smi detail query not supported on this chip; not asked again until restart", "npu", ch.NPU, "chip", ch.Chip, "type", q.typ, "err", err)
		case sweep.Busy:
			if old != nil {
				q.carry(&r, old)
			}
			c.logger.Debug("npu-smi detail query answered busy; asked again next sweep", "npu", ch.NPU, "chip", ch.Chip, "type", q.typ, "err", err)
		default:
			answered = answered || result != sweep.Timeout
			run.problem(fmt.Sprintf("npu %s chip %s -t %s: %s: %v", ch.NPU, ch.Chip, q.typ, result, err))
		}
		if q.card {
			run.mu.Lock()
			// The chip that asks the NPU's card-level queries keeps its copy
			// current, so a second card-level query is asked, not carried.
			if by, ok := run.cardBy[ch.NPU]; !ok || by == key {
				cp := r
				run.cardDone[ch.NPU] = &cp
				run.cardBy[ch.NPU] = key
			}
			run.mu.Unlock()
		}
		// A chip that hangs (a reset) costs one timeout per sweep,
		// not one per query: the other chips are read on time.
		if result == sweep.Timeout {
			timedOut = true
			break
		}
	}
	return r, answered, timedOut
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
func (c *Collector) ask(ctx context.Context, q query, ch ascend.ChipID, r *Reading, slow func()) (string, error) {
	typ := q.typ
	if q.arg != "" {
		typ = q.arg
	}
	c.mu.Lock()
	if q.alt != "" && c.altWorks[q.typ] {
		typ = q.alt
	}
	c.mu.Unlock()
	key := ch
	out := c.call(ctx, key, args(typ, q.card, ch), slow)
	result, err := classify(out)
	if result == sweep.Error && q.alt != "" && typ != q.alt && bytes.Contains(out.Stdout, []byte("Error parameter of -t")) {
		// A BUILD_CH binary: hccs is spelled xlink.
		alt := c.call(ctx, key, args(q.alt, q.card, ch), slow)
		if ar, aerr := classify(alt); ar != sweep.Error {
			out, result, err = alt, ar, aerr
			c.mu.Lock()
			c.altWorks[q.typ] = true
			c.mu.Unlock()
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

func args(typ string, card bool, ch ascend.ChipID) []string {
	if card {
		return []string{"info", "-t", typ, "-i", ch.NPU}
	}
	return []string{"info", "-t", typ, "-i", ch.NPU, "-c", ch.Chip}
}

// call waits until no `npu-smi info` run of the npusmi collector is in
// flight (it serves scrapes: the sweep yields, never the scrape), then runs
// npu-smi once for chip key, waiting for it no longer than its timeout plus
// abandonAfter (or shutdown). slow is called once the call has run for
// slowAfter.
func (c *Collector) call(ctx context.Context, key ascend.ChipID, args []string, slow func()) vendorcli.Result {
	if done := c.table.InFlight(); done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(c.cfg.Timeout):
			// A hung table run is killed at its own timeout; do not wait
			// longer than one call would take.
		}
	}
	begin := time.Now()
	done := make(chan vendorcli.Result, 1)
	go func() { done <- c.exec(ctx, args) }()
	slowT := time.AfterFunc(c.slowAfter, slow)
	defer slowT.Stop()
	t := time.NewTimer(c.cfg.Timeout + c.abandonAfter)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
	case <-ctx.Done():
	}
	// Left behind: its chip is not asked again while it lives.
	c.stuckMu.Lock()
	c.stuck[key]++
	c.stuckMu.Unlock()
	go func() {
		<-done
		c.stuckMu.Lock()
		if c.stuck[key]--; c.stuck[key] <= 0 {
			delete(c.stuck, key)
		}
		c.stuckMu.Unlock()
	}()
	c.logger.Warn("npu-smi detail call did not return after its timeout was killed; left behind, its chip is not asked again while it lives",
		"args", strings.Join(args, " "), "waited", time.Since(begin).Round(time.Millisecond))
	return vendorcli.Result{TimedOut: true, ExitCode: -1, Duration: time.Since(begin)}
}

// isStuck: a call of key's chip was left behind and still runs.
func (c *Collector) isStuck(key ascend.ChipID) bool {
	c.stuckMu.Lock()
	defer c.stuckMu.Unlock()
	return c.stuck[key] > 0
}

// stuckCount is how many chips have a call left behind.
func (c *Collector) stuckCount() int {
	c.stuckMu.Lock()
	defer c.stuckMu.Unlock()
	return len(c.stuck)
}

// view is what scrapes serve: each chip of the last table with its own
// latest reading, the last finished sweep and the chip count. A new view is
// published after every chip read, so a chip's reading is served as soon as
// it is taken, not when the sweep ends.
type view struct {
	sweep *Sweep // the last finished sweep; nil while the first runs
	head  []prometheus.Metric
	chips []chipEntry // copies, in table order
}

// publishView publishes the chips' latest readings; c.mu is held.
func (c *Collector) publishView(ctx context.Context) {
	c.latest.Publish(ctx, func() *view {
		v := &view{sweep: c.finished, chips: make([]chipEntry, 0, len(c.lastChips))}
		// Each chip's identity (its VDie ID, its board's inventory) for
		// the npusmi collector's ascend_npu_info.
		ids := make(map[ascend.ChipID]ascend.Identity, len(c.lastChips))
		if c.hasTable {
			v.head = append(v.head, prometheus.MustNewConstMetric(chipsDesc, prometheus.GaugeValue, float64(len(c.lastChips))))
		}
		for _, ch := range c.lastChips {
			e := c.entries[ch]
			if e == nil {
				continue
			}
			v.chips = append(v.chips, *e)
			id := ascend.Identity{VDieID: e.reading.VDie}
			if inv := e.reading.Inventory; inv != nil {
				id.SerialNumber, id.ProductName = inv.SerialNumber, inv.ProductName
			}
			if id != (ascend.Identity{}) {
				ids[ch] = id
			}
		}
		c.ids.Publish(ids)
		return v
	})
}
