package exporter

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
)

// AddFamilyFlags registers one boolean flag per group and returns a
// function that, after parsing, gives the families the switched-off groups
// leave out.
func AddFamilyFlags(app *kingpin.Application, groups []collector.FamilyGroup) func() map[string]bool {
	on := make([]*bool, len(groups))
	for i, g := range groups {
		def, state := "false", "off"
		if g.Default {
			def, state = "true", "on"
		}
		on[i] = app.Flag(g.Flag(), fmt.Sprintf("Export %s (default %s): %s", strings.Join(g.Families, ", "), state, g.Help)).
			Default(def).Bool()
	}
	return func() map[string]bool {
		off := map[string]bool{}
		for i, g := range groups {
			if !*on[i] {
				for _, f := range g.Families {
					off[f] = true
				}
			}
		}
		return off
	}
}

// familyFilter drops the metrics of switched-off families. It decides once
// per descriptor (collectors build their metrics from a fixed set of
// package-level descriptors), so a scrape pays one map lookup per metric.
type familyFilter struct {
	off   map[string]bool
	cache sync.Map // *prometheus.Desc → bool (keep)
}

var fqNameOfDesc = regexp.MustCompile(`^Desc\{fqName: "([^"]*)"`)

func (f *familyFilter) keep(m prometheus.Metric) bool {
	if f == nil || len(f.off) == 0 {
		return true
	}
	d := m.Desc()
	if k, ok := f.cache.Load(d); ok {
		return k.(bool)
	}
	k := true
	if sm := fqNameOfDesc.FindStringSubmatch(d.String()); sm != nil {
		k = !f.off[sm[1]]
	}
	f.cache.Store(d, k)
	return k
}

// SetFamiliesOff leaves the named families out of every scrape. Call it
// before the first scrape.
func (s *Scraper) SetFamiliesOff(off map[string]bool) {
	if len(off) == 0 {
		s.filter = nil
		return
	}
	s.filter = &familyFilter{off: off}
}

// FamiliesOff lists the families left out, sorted.
func (s *Scraper) FamiliesOff() []string {
	if s.filter == nil {
		return nil
	}
	out := make([]string, 0, len(s.filter.off))
	for f := range s.filter.off {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
