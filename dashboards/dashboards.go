// Package dashboards ships hccl_exporter's Grafana dashboards (the *.json files
// here, importable as is) and lists their panel queries with the dashboard
// variables filled in, so tests can run every query against a real
// Prometheus.
package dashboards

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
)

//go:embed *.json
var files embed.FS

// Files returns the dashboards' JSON by file name.
func Files() (map[string][]byte, error) {
	names, err := fs.Glob(files, "*.json")
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("read dashboard %s: %w", n, err)
		}
		out[n] = b
	}
	return out, nil
}

// Dashboard is the part of a Grafana dashboard the checks and Queries need.
type Dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []Panel `json:"panels"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Query      any            `json:"query"`
	Datasource *DatasourceRef `json:"datasource"`
	AllValue   string         `json:"allValue"`
}

// DatasourceRef points a panel, target or variable at a data source.
type DatasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a dashboard panel.
type Panel struct {
	ID          int            `json:"id"`
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Datasource  *DatasourceRef `json:"datasource"`
	Targets     []Target       `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
			// NoValue is the text Grafana shows in place of "No data":
			// why the panel is empty where it can be.
			NoValue string `json:"noValue"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string         `json:"refId"`
	Datasource *DatasourceRef `json:"datasource"`
	Expr       string         `json:"expr"`
	Instant    bool           `json:"instant"`
	Format     string         `json:"format"`
}

// Parse decodes a dashboard.
func Parse(b []byte) (Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("decode dashboard: %w", err)
	}
	return d, nil
}

// Vars are the values Grafana substitutes into a query.
type Vars struct {
	Job, Instance string // literal values; regex-escaped on substitution as Grafana does
	// Cluster filters by the rules' cluster label; Namespace and Pod by
	// the pod the kubelet assigned a chip to, Container by its container.
	// Empty means All (".*", the variables' allValue, which also matches
	// series without the label).
	Cluster, Namespace, Pod, Container string
	RateInterval                       string // $__rate_interval, e.g. "1m"
	Range                              string // $__range, e.g. "1h"
}

// Expand substitutes v into expr. Job and Instance are escaped for the
// `=~` matchers they appear in.
func Expand(expr string, v Vars) string {
	r := strings.NewReplacer(
		"$__rate_interval", v.RateInterval,
		"$__range", v.Range,
		"${cluster}", allOr(v.Cluster),
		"$cluster", allOr(v.Cluster),
		"${job}", promRegex(v.Job),
		"$job", promRegex(v.Job),
		"${instance}", promRegex(v.Instance),
		"$instance", promRegex(v.Instance),
		"${namespace}", allOr(v.Namespace),
		"$namespace", allOr(v.Namespace),
		"${pod}", allOr(v.Pod),
		"$pod", allOr(v.Pod),
		"${container}", allOr(v.Container),
		"$container", allOr(v.Container),
	)
	return r.Replace(expr)
}

// allOr is a filter variable's value: All (".*") when empty.
func allOr(s string) string {
	if s == "" {
		return ".*"
	}
	return promRegex(s)
}

// promRegex quotes s as a regular expression inside a PromQL string literal,
// where a backslash must itself be escaped.
func promRegex(s string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`)
}

// Query is one panel query with the variables filled in.
type Query struct {
	Dashboard string // file name
	Panel     string // panel title
	RefID     string
	Expr      string
	Instant   bool // an instant query (stat, table); otherwise a range query
	// NoValue is the panel's text for no data (fieldConfig.defaults.noValue).
	NoValue string
}

// Queries lists every panel query of every dashboard for the given job and
// instance, with $__rate_interval = 1m and $__range = 1h, sorted by
// dashboard, panel and refId.
func Queries(job, instance string) ([]Query, error) {
	return QueriesWith(Vars{Job: job, Instance: instance, RateInterval: "1m", Range: "1h"})
}

// QueriesWith is Queries with every variable chosen by the caller.
func QueriesWith(v Vars) ([]Query, error) {
	all, err := Files()
	if err != nil {
		return nil, err
	}
	var out []Query
	for name, b := range all {
		d, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, p := range d.Panels {
			for _, t := range p.Targets {
				out = append(out, Query{Dashboard: name, Panel: p.Title, RefID: t.RefID, Expr: Expand(t.Expr, v), Instant: t.Instant,
					NoValue: p.FieldConfig.Defaults.NoValue})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Dashboard != b.Dashboard {
			return a.Dashboard < b.Dashboard
		}
		if a.Panel != b.Panel {
			return a.Panel < b.Panel
		}
		return a.RefID < b.RefID
	})
	return out, nil
}
