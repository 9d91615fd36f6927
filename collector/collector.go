// Package collector owns the contract between hccl_exporter's collectors
// and the code that runs them: the Collector interface every source
// implements, the errors a collector returns to say how its failure is
// counted and logged, the Spec of its --collector.<name> switch, the
// scrape a context belongs to, and the help texts of families that several
// collectors export. It is a leaf: it imports client_golang's prometheus
// package (for prometheus.Metric) and nothing of the HTTP stack or the flag
// parser, so that the log state, the headroom model's users and diagnose
// can name it. Running the collectors and serving them over HTTP is
// package exporter's.
package collector

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes the exporter's own metrics.
const Namespace = "hccl_exporter"

// Collector is one source of metrics. Update sends the metrics of one scrape
// on ch and returns an error when the source failed; metrics sent before the
// error are still served (a collector reports its own "up" gauge that way).
//
// ctx carries the scrape's deadline. A collector whose source may be slow (a
// vendor CLI) must not wait on it past ctx: it returns what it has with an
// error instead. The exporter stops waiting for a collector at the deadline
// anyway, drops whatever it sent and reports it failed, so a collector that
// ignores ctx costs only its own series.
type Collector interface {
	Update(ctx context.Context, ch chan<- prometheus.Metric) error
}

// ErrNoData tells the exporter that a collector had nothing to report this
// scrape; it is logged at debug level and still counts as success.
var ErrNoData = errors.New("collector returned no data")

// ErrDependency marks a failure caused by a source that another collector
// reads and reports itself (headroom failing because npu-smi failed): the
// scrape still counts as failed, but the exporter logs it at debug level so
// one broken npu-smi is not logged twice per scrape.
var ErrDependency = errors.New("a source this collector depends on failed")

// ErrLogged marks a failure the collector has logged itself when it began
// (an hccn_tool sweep that stays incomplete until the next one): the scrape
// still counts as failed, but the exporter logs it at debug level instead
// of repeating it at error level on every scrape until it ends.
var ErrLogged = errors.New("a failure the collector has logged")

// Spec names a collector and its default for the --collector.<name> flag.
type Spec struct {
	Name           string
	Help           string
	DefaultEnabled bool
}

type scrapeKey struct{}

// WithScrape returns ctx marked as the context of scrape id, which
// ScrapeOf returns: the collectors of one scrape share a source's answer
// meant for that scrape (an npu-smi run that landed late is served to one
// scrape only, to all of that scrape's collectors). The exporter numbers
// its scrapes from 1.
func WithScrape(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, scrapeKey{}, id)
}

// ScrapeOf returns the scrape ctx belongs to, 0 outside a scrape.
func ScrapeOf(ctx context.Context) uint64 {
	id, _ := ctx.Value(scrapeKey{}).(uint64)
	return id
}

// DroppedLabelValuesHelp is the help of
// hccl_exporter_label_values_dropped_total, which several collectors export
// with their own label values (cannlog: log-derived labels at their caps;
// pods: kubelet_pod, assignments past --pods.max-assignments or the
// per-chip cap, and kubelet_label_length, values cut to the length cap): one
// text, so that the families merge. The text predates the kubelet's labels
// and is kept as it was, since golden outputs and dashboards carry it.
const DroppedLabelValuesHelp = "Label values from logs dropped because the distinct values of the label reached the cap."

// FamilyGroup is a group of metric families of one collector that a flag
// switches on or off: --[no-]<Collector>.<Name>. The rule, node_exporter's:
// a collector is switched by --[no-]collector.<name>; a group of its
// families, named for what it adds, by --[no-]<collector>.<group>. Groups on
// by default are what the shipped alerts, dashboards and recording rules
// use; the others add detail a user asks for.
type FamilyGroup struct {
	Collector string
	Name      string
	Help      string
	Default   bool
	Families  []string
}

// Flag is the group's flag name, without dashes.
func (g FamilyGroup) Flag() string { return g.Collector + "." + g.Name }
