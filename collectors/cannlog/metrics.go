package cannlog

import (
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collectors/cannlog/parse"
	"github.com/hccl-exporter/hccl_exporter/exporter"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

var faultLabels = []string{"code", "stage", "source", "namespace", "pod", "container"}

var (
	faultEventsDesc = prometheus.NewDesc("hccl_fault_events_total",
		"HCCL-related fault events: fault codes printed in screen logs (source=screen) and plog ERROR lines the fault catalog maps to a code (source=plog).",
		faultLabels, nil)
	faultLastDesc = prometheus.NewDesc("hccl_fault_last_event_timestamp_seconds",
		"Time printed in the log line of the latest fault event, in seconds since the epoch.",
		[]string{"code", "source", "namespace", "pod", "container"}, nil)
	plogErrorsDesc = prometheus.NewDesc("hccl_plog_errors_total",
		"ERROR lines of HCCL and HCCP in CANN plogs by the HCCL multi-level keyword: stage from the level-1 word, reason the level-2 word (unknown where the line has none).",
		[]string{"stage", "reason"}, nil)
	envInfoDesc = prometheus.NewDesc("hccl_env_info",
		"Effective HCCL setting of a process, from its settings lines in run/plog ([HCCL_ENV] and the untagged wordings of older CANN).",
		[]string{"pid", "process", "variable", "value", "set_by"}, nil)
	envBuffsizeDesc = prometheus.NewDesc("hccl_env_buffsize_bytes",
		"Effective HCCL_BUFFSIZE of a process in bytes (each communicator allocates 2 x this).",
		[]string{"pid"}, nil)
	envQPsDesc = prometheus.NewDesc("hccl_env_rdma_qps_per_connection",
		"Effective HCCL_RDMA_QPS_PER_CONNECTION of a process: RoCE queue pairs per rank pair.",
		[]string{"pid"}, nil)
	envConnectTimeoutDesc = prometheus.NewDesc("hccl_env_connect_timeout_seconds",
		"Effective HCCL_CONNECT_TIMEOUT of a process (link setup waits this plus 20 s).",
		[]string{"pid"}, nil)
	envExecTimeoutDesc = prometheus.NewDesc("hccl_env_exec_timeout_seconds",
		"Effective HCCL_EXEC_TIMEOUT of a process.",
		[]string{"pid"}, nil)
	commRanksDesc = prometheus.NewDesc("hccl_communicator_ranks",
		"Ranks of a communicator of a process ([Communicator Key Info] rankSize).",
		[]string{"pid", "communicator"}, nil)
	commServersDesc = prometheus.NewDesc("hccl_communicator_servers",
		"Servers of a communicator of a process ([Communicator Key Info] serverNum).",
		[]string{"pid", "communicator"}, nil)
	commQPsDesc = prometheus.NewDesc("hccl_communicator_established_qps",
		"RoCE QPs a communicator of a process has created, from its `create hccl transport:` run-log lines with `rdma qpn[` (one per QP, over every link set it built).",
		[]string{"pid", "communicator"}, nil)
	commBufferDesc = prometheus.NewDesc("hccl_communicator_ccl_buffer_bytes",
		"cclBuffer a communicator of a process has allocated (`Create ccl buffer success` lines); 0 until its first collective, when HCCL allocates 2 x its buffer size + 1 MiB together with link setup.",
		[]string{"pid", "communicator"}, nil)
	logLinesDesc = prometheus.NewDesc("ascend_log_lines_total",
		"CANN plog lines read, by module and level.",
		[]string{"module", "level"}, nil)
	unparsableDesc = prometheus.NewDesc("ascend_log_unparsable_lines_total",
		"Lines that did not follow their format (plog grammar, Kubernetes CRI, Docker json-file).",
		[]string{"format"}, nil)
	rejectedDesc = prometheus.NewDesc("hccl_env_values_rejected_total",
		"HCCL settings lines whose value HCCL itself refuses (outside its documented range, NaN, infinite): the value is kept in hccl_env_info but not exported as a number. variable is the HCCL variable, other for variables without a known range.",
		[]string{"variable"}, nil)
	droppedDesc = prometheus.NewDesc("hccl_exporter_label_values_dropped_total",
		exporter.DroppedLabelValuesHelp,
		[]string{"label"}, nil)
)

// envGauges are the per-process numeric settings exported as their own series.
var envGauges = []struct {
	variable string
	desc     *prometheus.Desc
}{
	{"HCCL_BUFFSIZE", envBuffsizeDesc},
	{"HCCL_RDMA_QPS_PER_CONNECTION", envQPsDesc},
	{"HCCL_CONNECT_TIMEOUT", envConnectTimeoutDesc},
	{"HCCL_EXEC_TIMEOUT", envExecTimeoutDesc},
}

// rejectedVariables are the label values of hccl_env_values_rejected_total,
// sorted as the registry sorts them; all start at 0.
var rejectedVariables = func() []string {
	var out []string
	for _, st := range hcclenv.All() {
		out = append(out, st.Name)
	}
	out = append(out, rejectedOther)
	sort.Strings(out)
	return out
}()

var faultSources = []string{FaultSourcePlog, FaultSourceScreen}

// metrics builds the const metrics of the current state. It holds the lock
// only while building, never while sending to a scrape.
func (s *State) metrics() []prometheus.Metric {
	out, _, procs := s.metricsSplit()
	return append(out, procs...)
}

// metricsSplit returns the state's metrics in two parts taken under one
// lock: those that change with every line (counters), and the per-process
// series (settings and communicators) with their version, which changes
// whenever they do (exporter.SendStable).
func (s *State) metricsSplit() (out []prometheus.Metric, procVersion uint64, procs []prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	add := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		// Label values are sanitised when stored; a metric that still
		// fails is left out rather than failing the scrape.
		if m, err := prometheus.NewConstMetric(desc, t, v, labels...); err == nil {
			out = append(out, m)
		}
	}

	// Catalog codes start at 0 for both sources so increase() sees the first event.
	for _, code := range s.cat.order {
		for _, src := range faultSources {
			if _, ok := s.faults[faultKey{code: code, source: src}]; !ok {
				add(faultEventsDesc, prometheus.CounterValue, 0, code, s.cat.stage(code), src, "", "", "")
			}
		}
	}
	for k, fc := range s.faults {
		add(faultEventsDesc, prometheus.CounterValue, float64(fc.count), k.code, s.cat.stage(k.code), k.source, k.namespace, k.pod, k.container)
		add(faultLastDesc, prometheus.GaugeValue, float64(fc.last.UnixNano())/1e9, k.code, k.source, k.namespace, k.pod, k.container)
	}
	for k, n := range s.plogErrors {
		add(plogErrorsDesc, prometheus.CounterValue, float64(n), k.stage, k.reason)
	}
	if !s.procMetricsOK {
		s.procMetrics = s.buildProcMetrics()
		s.procMetricsOK = true
	}
	for module, counts := range s.lines {
		for lvl, n := range counts {
			if n > 0 {
				add(logLinesDesc, prometheus.CounterValue, float64(n), module, parse.Level(lvl).String())
			}
		}
	}
	for _, f := range unparsableFormats {
		add(unparsableDesc, prometheus.CounterValue, float64(s.unparsable[f]), f)
	}
	for _, v := range rejectedVariables {
		add(rejectedDesc, prometheus.CounterValue, float64(s.rejected[v]), v)
	}
	for _, l := range droppedLabels {
		add(droppedDesc, prometheus.CounterValue, float64(s.dropped[l]), l)
	}
	return out, s.procVersion, s.procMetrics
}

// buildProcMetrics builds the per-process series (settings and
// communicators). They change only when a process's settings, communicators
// or name do, or a process comes or goes, so the state keeps them between
// scrapes (const metrics are immutable) and rebuilds them on such a change.
// They are sorted as the registry sorts them (family, then label values in
// label-name order), which makes the registry's own sort a linear pass.
func (s *State) buildProcMetrics() []prometheus.Metric {
	type keyed struct {
		fam int
		key []string
		m   prometheus.Metric
	}
	var ks []keyed
	add := func(fam int, desc *prometheus.Desc, v float64, key []string, labels ...string) {
		// Label values are sanitised when stored; a metric that still
		// fails is left out rather than failing the scrape.
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...); err == nil {
			ks = append(ks, keyed{fam, key, m})
		}
	}
	for _, pr := range s.procs {
		p := pr.label
		for name, st := range pr.env {
			// Label names sorted: pid, process, set_by, value, variable.
			add(0, envInfoDesc, 1, []string{p, pr.name, st.SetBy, st.Value, name}, p, pr.name, name, st.Value, st.SetBy)
		}
		for i, g := range envGauges {
			if st, ok := pr.env[g.variable]; ok && st.HasNumber {
				add(1+i, g.desc, st.Number, []string{p}, p)
			}
		}
		for _, c := range pr.comms {
			// Label names sorted: communicator, pid.
			add(1+len(envGauges), commRanksDesc, float64(c.RankSize), []string{c.Name, p}, p, c.Name)
			if c.ServerNum >= 0 {
				add(2+len(envGauges), commServersDesc, float64(c.ServerNum), []string{c.Name, p}, p, c.Name)
			}
			add(3+len(envGauges), commQPsDesc, float64(c.EstablishedQPs), []string{c.Name, p}, p, c.Name)
			add(4+len(envGauges), commBufferDesc, float64(c.CCLBufferBytes), []string{c.Name, p}, p, c.Name)
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.fam != b.fam {
			return a.fam < b.fam
		}
		return slices.Compare(a.key, b.key) < 0
	})
	out := make([]prometheus.Metric, len(ks))
	for i, k := range ks {
		out[i] = k.m
	}
	return out
}

// procsChanged drops the cached per-process series and gives the next ones
// a new version; the caller holds s.mu.
func (s *State) procsChanged() {
	s.procMetricsOK = false
	s.procVersion++
}

// Describe and Collect make a State a prometheus.Collector on its own, for
// tests and for tools that want its metrics without the follower.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range stateDescs {
		ch <- d
	}
}

var stateDescs = []*prometheus.Desc{
	faultEventsDesc, faultLastDesc, plogErrorsDesc, envInfoDesc, envBuffsizeDesc, envQPsDesc,
	envConnectTimeoutDesc, envExecTimeoutDesc, commRanksDesc, commServersDesc, commQPsDesc, commBufferDesc, logLinesDesc,
	unparsableDesc, droppedDesc, rejectedDesc,
}

// Collect sends the state's metrics.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.metrics() {
		ch <- m
	}
}
