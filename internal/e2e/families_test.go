package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// npuExporterFamily is one row of testdata/npu-exporter-families.tsv:
// a metric family of MindCluster's npu-exporter, where its source declares
// it, and how this exporter serves it (kind promql, exported or none; what
// is the query, the metric or the reason).
type npuExporterFamily struct {
	Family, Source string
	Kind, What     string
}

func npuExporterFamilies(t *testing.T) []npuExporterFamily {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "npu-exporter-families.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []npuExporterFamily
	for i, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("npu-exporter-families.tsv:%d: %d fields, want family, source, ours", i+1, len(f))
		}
		kind, what, _ := strings.Cut(f[2], ": ")
		out = append(out, npuExporterFamily{Family: f[0], Source: f[1], Kind: kind, What: what})
	}
	if len(out) < 100 {
		t.Fatalf("npu-exporter-families.tsv: %d families, the read is broken", len(out))
	}
	return out
}

// linkOrLane is the link or lane number of a per-link family's rewrite:
// docs/migrating.md writes it once, as X.
var linkOrLane = regexp.MustCompile(`(link|lane)="\d"`)

// TestNPUExporterFamiliesMapped: every family of npu-exporter (the table
// lists them from its source) is either rewritten in PromQL that
// docs/migrating.md states (TestMigrationQueriesReturnData runs each against
// the demo), exported under a name README's metric table lists (on products
// other than the demo's), or docs/migrating.md says why no tool the exporter
// runs has it. A family with none of these fails.
func TestNPUExporterFamiliesMapped(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range npuExporterFamilies(t) {
		if seen[f.Family] {
			t.Errorf("%s listed twice", f.Family)
		}
		seen[f.Family] = true
		if !strings.HasPrefix(f.Source, "collector/") {
			t.Errorf("%s: source %q is not a path of npu-exporter's collectors", f.Family, f.Source)
		}
		switch f.Kind {
		case "promql":
			if _, err := parser.ParseExpr(f.What); err != nil {
				t.Errorf("%s: rewrite %q: %v", f.Family, f.What, err)
			}
			if doc := linkOrLane.ReplaceAllString(f.What, `$1="X"`); !strings.Contains(string(md), doc) {
				t.Errorf("%s: docs/migrating.md does not state its rewrite %q", f.Family, doc)
			}
		case "exported":
			metric, _, _ := strings.Cut(f.What, " ")
			if !readmeMentions(string(readme), metric) {
				t.Errorf("%s: exported as %s, which README's metric table does not list", f.Family, metric)
			}
			if !strings.Contains(string(md), "`"+metric) {
				t.Errorf("%s: docs/migrating.md does not map it to %s", f.Family, metric)
			}
		case "none":
			if !strings.Contains(string(md), f.What) {
				t.Errorf("%s: docs/migrating.md does not say why it is not served (%q)", f.Family, f.What)
			}
		default:
			t.Errorf("%s: neither exported nor rewritten (%q)", f.Family, f.Kind+": "+f.What)
		}
	}
	// The families the first migration guide missed (issue 47).
	for _, f := range []string{"machine_healthy_npu_nums", "machine_unhealthy_npu_nums", "machine_unknown_npu_nums",
		"npu_chip_info_process_info_num", "container_npu_total_memory", "container_npu_used_memory", "container_npu_utilization",
		"npu_container_info", "node_base_info", "npu_exporter_version_info", "npu_chip_mac_rx_bad_oct_num", "npu_chip_mac_tx_bad_oct_num",
		"npu_chip_info_hccs_bandwidth_info_profiling_time"} {
		if !seen[f] {
			t.Errorf("%s: not in the table", f)
		}
	}
}

// readmeMentions: README's metric table names the metric, literally or in
// its {rx,tx} / {transmit,receive} shorthand.
func readmeMentions(readme, metric string) bool {
	if strings.Contains(readme, "`"+metric+"`") {
		return true
	}
	for _, pair := range [][2]string{{"rx", "tx"}, {"transmit", "receive"}} {
		for _, side := range pair {
			for _, alt := range []string{pair[0] + "," + pair[1], pair[1] + "," + pair[0]} {
				short := strings.Replace(metric, "_"+side+"_", "_{"+alt+"}_", 1)
				if short != metric && strings.Contains(readme, "`"+short+"`") {
					return true
				}
			}
		}
	}
	return false
}
