package logstate

import (
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hccl-exporter/hccl_exporter/collector"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/parse"
	"github.com/hccl-exporter/hccl_exporter/internal/hcclenv"
)

var faultLabels = []string{"code", "resource", "stage", "source", "namespace", "pod", "container", "hccl_job"}

var (
	faultEventsDesc = prometheus.NewDesc("hccl_fault_events_total",
		"HCCL fault events: HCCL (EI) and HCCP (EJ) codes reported in screen logs (source=screen), an EL0004 whose report says "+
			"HCCL requested the memory, and plog ERROR lines the fault catalog maps to a code (source=plog). resource: "+
			"what an EI0007 failed to allocate (qp, device_memory, host_memory, other), empty otherwise. hccl_job: the "+
			"job, the communicator of the process (the same on every node) where the logs tie the fault to one, else "+
			"namespace/pod, else empty.",
		faultLabels, nil)
	faultLastDesc = prometheus.NewDesc("hccl_fault_last_event_timestamp_seconds",
		"Time printed in the log line of the latest fault event, in seconds since the epoch.",
		[]string{"code", "resource", "source", "namespace", "pod", "container", "hccl_job"}, nil)
	cannFaultEventsDesc = prometheus.NewDesc("ascend_cann_fault_events_total",
		"Error reports of other CANN components in screen logs (EZ operators, EE runtime, EH ACL, EL driver and runtime memory "+
			"where HCCL did not request it, E1-E9 GE and operators): never an HCCL fault. reason=comm_kernel_timeout: a "+
			"communication kernel timed out waiting for its peers (MC2 507014/507034, vector core timeout), a consequence "+
			"of a peer's failure.",
		[]string{"code", "reason", "source", "namespace", "pod", "container"}, nil)
	faultsExpiredDesc = prometheus.NewDesc("hccl_exporter_fault_series_expired_total",
		"Fault series of a pod or a job dropped because their latest event is older than the fault TTL (the pod is gone or the job is over).",
		nil, nil)
	plogErrorsDesc = prometheus.NewDesc("hccl_plog_errors_total",
		"ERROR lines of HCCL and HCCP in CANN plogs by the HCCL multi-level keyword: stage from the level-1 word, reason the level-2 word (unknown where the line has none).",
		[]string{"stage", "reason"}, nil)
	envInfoDesc = prometheus.NewDesc("hccl_env_info",
		"Effective HCCL setting of the node's processes of one settings set, from their settings lines in run/plog ([HCCL_ENV] and "+
			"the untagged wordings of older CANN): one series per variable and value per set, not per process, for the variables "+
			"the ranks of a communicator must agree on (the settings set's inputs) and every variable set explicitly "+
			"(set_by environment or ge_option). Another variable left at HCCL's default has no series.",
		[]string{"settings", "variable", "value", "set_by"}, nil)
	envBuffsizeDesc = prometheus.NewDesc("hccl_env_buffsize_bytes",
		"Effective HCCL_BUFFSIZE of a settings set in bytes (each communicator allocates 2 x this).",
		[]string{"settings"}, nil)
	envQPsDesc = prometheus.NewDesc("hccl_env_rdma_qps_per_connection",
		"Effective HCCL_RDMA_QPS_PER_CONNECTION of a settings set: RoCE queue pairs per rank pair.",
		[]string{"settings"}, nil)
	envConnectTimeoutDesc = prometheus.NewDesc("hccl_env_connect_timeout_seconds",
		"Effective HCCL_CONNECT_TIMEOUT of a settings set (link setup waits this plus 20 s).",
		[]string{"settings"}, nil)
	envExecTimeoutDesc = prometheus.NewDesc("hccl_env_exec_timeout_seconds",
		"Effective HCCL_EXEC_TIMEOUT of a settings set (capped at 1091 s where HCCL_OP_EXPANSION_MODE is AIV).",
		[]string{"settings"}, nil)
	commInfoDesc = prometheus.NewDesc("hccl_communicator_info",
		"1 for each communicator of the node's processes and each settings set its members on the node run: more than one settings per communicator, on any nodes, is a misconfigured job.",
		[]string{"communicator", "settings"}, nil)
	commRanksDesc = prometheus.NewDesc("hccl_communicator_ranks",
		"Ranks of a communicator ([Communicator Key Info] rankSize; the same on every node).",
		[]string{"communicator"}, nil)
	commServersDesc = prometheus.NewDesc("hccl_communicator_servers",
		"Servers of a communicator ([Communicator Key Info] serverNum; the same on every node).",
		[]string{"communicator"}, nil)
	commProcessesDesc = prometheus.NewDesc("hccl_communicator_processes",
		"Processes of the node that are members of a communicator.",
		[]string{"communicator"}, nil)
	commQPsDesc = prometheus.NewDesc("hccl_communicator_established_queue_pairs",
		"RoCE QPs the node's members of a communicator have created, from their `create hccl transport:` run-log lines with `rdma qpn[` (one per QP, over every link set they built).",
		[]string{"communicator"}, nil)
	commBufferDesc = prometheus.NewDesc("hccl_communicator_ccl_buffer_bytes",
		"cclBuffer the node's members of a communicator have allocated (`Create ccl buffer success` lines); 0 until its first "+
			"collective, when HCCL allocates 2 x its buffer size + 1 MiB per member together with link setup.",
		[]string{"communicator"}, nil)
	logLinesDesc = prometheus.NewDesc("hccl_exporter_log_lines_total",
		"CANN plog lines read, by module and level.",
		[]string{"module", "level"}, nil)
	unparsableDesc = prometheus.NewDesc("hccl_exporter_log_unparsable_lines_total",
		"Lines that did not follow their format (plog grammar, Kubernetes CRI, Docker json-file).",
		[]string{"format"}, nil)
	rejectedDesc = prometheus.NewDesc("hccl_env_values_rejected_total",
		"HCCL settings lines whose value HCCL itself refuses (outside its documented range, NaN, infinite): the value is kept in "+
			"hccl_env_info but not exported as a number. variable is the HCCL variable, other for variables without a "+
			"known range.",
		[]string{"variable"}, nil)
	refusedLinesDesc = prometheus.NewDesc("hccl_exporter_log_lines_refused_total",
		"Plog lines not read as anyone's: reason=foreign_pid, a line printing another pid than the process its file is named after "+
			"(CANN names a plog after the one process that writes it; a made-up line, or a forked child writing through "+
			"its parent's descriptor).",
		[]string{"reason"}, nil)
	screenUntiedDesc = prometheus.NewDesc("hccl_exporter_screen_reports_untied_total",
		"Screen-log reports printing a pid ([PID: n]) not tied to the process of that pid, so counted as the screen log's own "+
			"(its pod's, or on bare metal no hccl_job) and remembered under no workload: reason=other_owner, that pid's "+
			"process has another owner than the file's writer (a tenant printing another job's pid); several_jobs, processes "+
			"of two jobs have that pid; no_process, no process of the logs has it.",
		[]string{"reason"}, nil)
	contestedDesc = prometheus.NewDesc("hccl_exporter_communicators_contested",
		"Communicators claimed by the processes of more than one owner (the workload of the writer's pod, or its uid and "+
			"container, or a log directory without one): the first owner keeps it as its job's identity; the faults of "+
			"the others' processes carry their pod, or no hccl_job. A tenant naming another job's communicator, or two "+
			"jobs whose world groups cannot be told apart.",
		nil, nil)
	droppedDesc = prometheus.NewDesc("hccl_exporter_label_values_dropped_total",
		collector.DroppedLabelValuesHelp,
		[]string{"label"}, nil)
)

// envGauges are the numeric settings exported as series of their own, per
// settings set. All of them are variables of the set (hcclenv.Consistent),
// so every process of one set has the same value.
var envGauges = []struct {
	variable string
	desc     *prometheus.Desc
}{
	{hcclenv.BuffSize, envBuffsizeDesc},
	{hcclenv.QPsPerConnection, envQPsDesc},
	{hcclenv.ConnectTimeout, envConnectTimeoutDesc},
	{hcclenv.ExecTimeout, envExecTimeoutDesc},
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

// envExported says whether a printed setting gets an hccl_env_info series:
// the variables of the settings set (the consistency alert compares their
// values across sets, defaults included) and every variable set
// explicitly. The other variables print HCCL's default on every node (about
// 20 of the 28 of a CANN 8.x block): their rows were 20 series per set that
// say what the documentation says (docs/cannlog.md).
func envExported(name, setBy string) bool {
	return hcclenv.IsConsistent(name) || (setBy != parse.SetByDefault && setBy != parse.SetByUnset)
}

// metrics builds the const metrics of the current state. It holds the lock
// only while building, never while sending to a scrape.
func (s *State) metrics() (out []prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushAllPending()
	s.flushHeld(false)
	s.expireFaults(s.opts.Now())
	add := func(desc *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		// Label values are sanitised when stored; a metric that still
		// fails is left out rather than failing the scrape.
		if m, err := prometheus.NewConstMetric(desc, t, v, labels...); err == nil {
			out = append(out, m)
		}
	}

	// A code's series is born at its first event. The catalog's codes no
	// longer start at 0 for both sources (52 series per node, zeros on
	// almost every node for life): the fault alerts read
	// hccl:fault_events:new10m, whose `> 0 unless … offset 10m` term sees
	// a series born at its first event as increase() cannot
	// (alerts/tests/faults.yml tests the first event of an absent code).
	for k, fc := range s.faults {
		if k.cann {
			add(cannFaultEventsDesc, prometheus.CounterValue, float64(fc.count), k.code, k.reason, k.source, k.namespace, k.pod, k.container)
			continue
		}
		add(faultEventsDesc, prometheus.CounterValue, float64(fc.count), k.code, k.resource, s.cat.stage(k.code), k.source, k.namespace, k.pod, k.container, k.job)
		add(faultLastDesc, prometheus.GaugeValue, float64(fc.last.UnixNano())/1e9, k.code, k.resource, k.source, k.namespace, k.pod, k.container, k.job)
	}
	add(faultsExpiredDesc, prometheus.CounterValue, float64(s.faultsExpired))
	for k, n := range s.plogErrors {
		add(plogErrorsDesc, prometheus.CounterValue, float64(n), k.stage, k.reason)
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
	for _, r := range refusedReasons {
		add(refusedLinesDesc, prometheus.CounterValue, float64(s.refused[r]), r)
	}
	for _, r := range untiedReasons {
		add(screenUntiedDesc, prometheus.CounterValue, float64(s.untied[r]), r)
	}
	add(contestedDesc, prometheus.GaugeValue, float64(s.contestedCount()))
	return append(out, s.buildProcMetrics()...)
}

// SettingsID is the settings set of a process with the effective settings
// env (hcclenv.SettingsID over the canonical values of the variables of the
// set it printed): the settings label of its series. diagnose names the
// same sets.
func SettingsID(env map[string]EnvSetting) string {
	vals := make(map[string]string, len(env))
	for name, st := range env {
		if hcclenv.IsConsistent(name) {
			vals[name] = hcclenv.Canonical(st.Value, st.Number, st.HasNumber)
		}
	}
	return hcclenv.SettingsID(vals)
}

// buildProcMetrics builds the series of the processes, shaped per job
// rather than per process: all ranks of a job on a node print the same
// settings, and a communicator's size is the same for all its members, so
// the settings are exported once per distinct settings set and the
// communicators once per communicator (sums over the node's members where
// the members differ). Which process runs which set is
// hccl_process_info{pid,settings} (the cannlog collector). They are sorted as the
// registry sorts them (family, then label values in label-name order),
// which makes the registry's own sort a linear pass.
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
	type envKey struct{ settings, variable, value, setBy string }
	type comm struct {
		ranks, servers int
		processes      int
		qps, buffer    uint64
		settings       map[string]bool
	}
	envSeen := map[envKey]bool{}
	gauges := map[string]map[int]float64{} // settings → envGauges index → value
	comms := map[string]*comm{}
	for _, pr := range s.procs {
		set := pr.settings()
		for name, st := range pr.env {
			if !envExported(name, st.SetBy) {
				continue
			}
			envSeen[envKey{set, name, st.Value, st.SetBy}] = true
		}
		for i, g := range envGauges {
			if st, ok := pr.env[g.variable]; ok && st.HasNumber {
				if gauges[set] == nil {
					gauges[set] = map[int]float64{}
				}
				// One value per set: the variable is part of the set's
				// hash (or, for the set "", the first process's).
				if _, dup := gauges[set][i]; !dup {
					v := st.Number
					if g.variable == hcclenv.ExecTimeout {
						// In effect: capped at 1091 s in AIV mode.
						v = hcclenv.EffectiveExecTimeout(v, true, pr.env[hcclenv.OpExpansionMode].Value)
					}
					gauges[set][i] = v
				}
			}
		}
		for _, c := range pr.comms {
			cm := comms[c.Name]
			if cm == nil {
				cm = &comm{ranks: c.RankSize, servers: c.ServerNum, settings: map[string]bool{}}
				comms[c.Name] = cm
			}
			// Members print the same sizes; where one printed none (an
			// older era) take the one that did.
			cm.ranks = max(cm.ranks, c.RankSize)
			cm.servers = max(cm.servers, c.ServerNum)
			cm.processes++
			cm.qps += c.EstablishedQPs
			cm.buffer += c.CCLBufferBytes
			cm.settings[set] = true
		}
	}
	for k := range envSeen {
		// Label names sorted: set_by, settings, value, variable.
		add(0, envInfoDesc, 1, []string{k.setBy, k.settings, k.value, k.variable}, k.settings, k.variable, k.value, k.setBy)
	}
	for set, vals := range gauges {
		for i, v := range vals {
			add(1+i, envGauges[i].desc, v, []string{set}, set)
		}
	}
	f := 1 + len(envGauges)
	for name, cm := range comms {
		for set := range cm.settings {
			// Label names sorted: communicator, settings.
			add(f, commInfoDesc, 1, []string{name, set}, name, set)
		}
		add(f+1, commRanksDesc, float64(cm.ranks), []string{name}, name)
		if cm.servers >= 0 {
			add(f+2, commServersDesc, float64(cm.servers), []string{name}, name)
		}
		add(f+3, commProcessesDesc, float64(cm.processes), []string{name}, name)
		add(f+4, commQPsDesc, float64(cm.qps), []string{name}, name)
		add(f+5, commBufferDesc, float64(cm.buffer), []string{name}, name)
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

// Describe and Collect make a State a prometheus.Collector: the state owns
// its series. The cannlog collector serves them next to the follower's, and
// tools and tests collect a State on its own.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range stateDescs {
		ch <- d
	}
}

var stateDescs = []*prometheus.Desc{
	faultEventsDesc, faultLastDesc, cannFaultEventsDesc, faultsExpiredDesc, plogErrorsDesc, envInfoDesc, envBuffsizeDesc, envQPsDesc,
	envConnectTimeoutDesc, envExecTimeoutDesc, commInfoDesc, commRanksDesc, commServersDesc, commProcessesDesc, commQPsDesc,
	commBufferDesc, logLinesDesc,
	unparsableDesc, droppedDesc, rejectedDesc, refusedLinesDesc, screenUntiedDesc, contestedDesc,
}

// Collect sends the state's metrics.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.metrics() {
		ch <- m
	}
}
