package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"

	"github.com/hccl-exporter/hccl_exporter/alerts"
	"github.com/hccl-exporter/hccl_exporter/dashboards"
)

// usedMetrics returns every metric name an expression of the shipped rules
// (alerts and recording rules) or of a dashboard panel selects, by where it
// is used, read with Prometheus's own PromQL parser. Names the rules record
// themselves are left out: they are the rules' output, not the exporter's.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	used := map[string][]string{}
	recorded := map[string]bool{}
	add := func(where, expr string) { addUse(t, used, where, expr) }
	var file struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Record, Expr string
			}
		}
	}
	if err := yaml.Unmarshal(alerts.Rules, &file); err != nil {
		t.Fatal(err)
	}
	groups := file.Groups
	// npu-exporter's names (off by default, but a user who switches them
	// on must get every one from a default run).
	if err := yaml.Unmarshal(alerts.CompatRules, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Groups) == 0 {
		t.Fatal("alerts.CompatRules: no group")
	}
	file.Groups = append(groups, file.Groups...)
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
				add("recording rule "+r.Record, r.Expr)
			} else {
				add("alert "+r.Alert, r.Expr)
			}
		}
	}
	qs, err := dashboards.Queries("hccl_exporter", "127.0.0.1:9842")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		add("dashboard "+q.Dashboard+" panel "+q.Panel, q.Expr)
	}
	for name := range recorded {
		delete(used, name)
	}
	return used
}

// addUse records every metric name expr selects as used by where.
func addUse(t *testing.T, used map[string][]string, where, expr string) {
	t.Helper()
	e, err := parser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v\n%s", where, err, expr)
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			if name != "" && !slices.Contains(used[name], where) {
				used[name] = append(used[name], where)
			}
		}
		return nil
	})
}

// runbookQueries returns the PromQL of docs/runbooks.md's ```promql blocks:
// one expression per line, indented lines continuing the one above (a
// trailing # comment dropped).
func runbookQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	blocks := strings.Split(string(b), "```promql\n")
	for _, blk := range blocks[1:] {
		body, _, _ := strings.Cut(blk, "```")
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if i := strings.Index(l, "#"); i >= 0 {
				l = l[:i]
			}
			if strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		// A line that starts at column 0 begins a new expression once the
		// one before it parses; an indented line continues it.
		cur := ""
		for _, l := range lines {
			if cur != "" && l[0] != ' ' && l[0] != '\t' {
				if _, err := parser.ParseExpr(cur); err == nil {
					out, cur = append(out, cur), ""
				}
			}
			cur += l + "\n"
		}
		if cur != "" {
			out = append(out, cur)
		}
	}
	if len(out) < 20 {
		t.Fatalf("found %d runbook queries: the scan is broken", len(out))
	}
	return out
}

// TestDefaultSetServesRulesDashboardsRunbooks: every metric an alert, a
// recording rule, a dashboard panel or a runbook query selects (read with
// Prometheus's PromQL parser) is served by a default run: no switched-off
// family group holds it. And every group's families are real families
// (README's metric table lists them).
func TestDefaultSetServesRulesDashboardsRunbooks(t *testing.T) {
	used := usedMetrics(t)
	for i, q := range runbookQueries(t) {
		addUse(t, used, fmt.Sprintf("runbook query %d", i+1), q)
	}
	if len(used) < 60 {
		t.Fatalf("found %d metrics used: the scan is broken", len(used))
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, g := range familyGroups {
		if g.Default {
			t.Errorf("--%s is on by default: a group exists to be switched on", g.Flag())
		}
		if !slices.Contains(collectorNames(), g.Collector) {
			t.Errorf("--%s: no collector %q", g.Flag(), g.Collector)
		}
		for _, f := range g.Families {
			if by, ok := used[f]; ok {
				t.Errorf("%s is behind --%s (off by default) but %s uses it", f, g.Flag(), strings.Join(by, ", "))
			}
			if other, dup := seen[f]; dup {
				t.Errorf("%s is in two groups, --%s and --%s", f, other, g.Flag())
			}
			seen[f] = g.Flag()
			if !readmeMentions(string(readme), f) {
				t.Errorf("--%s lists %s, which README's metric table does not", g.Flag(), f)
			}
		}
	}
}

// readmeMentions: README's metric table names the family, literally or in
// its {a,b} shorthand.
func readmeMentions(readme, family string) bool {
	if strings.Contains(readme, "`"+family+"`") {
		return true
	}
	for _, pair := range [][2]string{{"rx", "tx"}, {"transmit", "receive"}} {
		for _, side := range pair {
			for _, alt := range []string{pair[0] + "," + pair[1], pair[1] + "," + pair[0]} {
				short := strings.Replace(family, "_"+side+"_", "_{"+alt+"}_", 1)
				if short != family && strings.Contains(readme, "`"+short+"`") {
					return true
				}
			}
		}
	}
	return false
}

func collectorNames() []string {
	var out []string
	for _, s := range collectorSpecs {
		out = append(out, s.Name)
	}
	return out
}

// TestUsedMetricsScan: the scan finds the selectors of a rule the way the
// PromQL parser reads it (a metric name, {__name__="…"}, not label names or
// functions).
func TestUsedMetricsScan(t *testing.T) {
	used := map[string][]string{}
	addUse(t, used, "x", `sum by (npu) (rate(a_total{npu="0"}[5m])) / on (npu) group_left (pod) {__name__="b_info"} and absent(c)`)
	if got := slices.Sorted(maps.Keys(used)); !slices.Equal(got, []string{"a_total", "b_info", "c"}) {
		t.Errorf("scan found %v, want [a_total b_info c]", got)
	}
}
