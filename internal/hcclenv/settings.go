package hcclenv

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// Variables HCCL prints that this file names besides those of the table.
const (
	Deterministic   = "HCCL_DETERMINISTIC"
	OpExpansionMode = "HCCL_OP_EXPANSION_MODE"
	Algo            = "HCCL_ALGO"
)

// ConsistentVariable is a variable whose value must be the same on every
// rank of a communicator, and why.
type ConsistentVariable struct {
	Name string
	// Why says what goes wrong when ranks disagree, and the source.
	Why string
}

// consistent are the variables of a process's settings set: HCCL requires
// the ranks of one communicator to agree on them, so a communicator whose
// members run different values is misconfigured, whichever value is right.
// Variables that legitimately differ between ranks (HCCL_IF_IP,
// HCCL_SOCKET_IFNAME, HCCL_IF_BASE_PORT, the RoCE TC/SL of each NIC,
// HCCL_WHITELIST_*) are not here. Sorted by name.
var consistent = []ConsistentVariable{
	{Algo, "the algorithm of each level: ranks that choose different algorithms wait for steps their peers never take (HCCL docs, HCCL_ALGO)."},
	{BuffSize, "each rank's cclBuffer size goes into the consistency frame HCCL exchanges at link setup " +
		"(inCclBufferSize/outCclBufferSize, HCOMM rank_consistentcy_checker.h); a mismatch is EI0005, and the chunking " +
		"of every collective follows the buffer size."},
	{ConnectTimeout, "link setup is collective: a rank with a shorter timeout gives up (EI0006) while its peers still wait for it."},
	{Deterministic, "the deterministic flag goes into the consistency frame HCCL exchanges at link setup (deterministic, HCOMM " +
		"rank_consistentcy_checker.h): ranks that disagree fail with EI0005 or reduce in different orders."},
	{ExecTimeout, "the notify wait of a running collective: a rank with a shorter timeout aborts while its peers still wait, and a hang is reported by one side only."},
	{InterHCCSDisable, "chooses RoCE or HCCS between the servers of an A3 superpod (comm_base.cc IsSupportInterHccs): both ends of a link must choose the same transport."},
	{IntraRoCEEnable, "chooses RoCE instead of PCIe between the ranks of one server (PCIe-connected products): both ends of a link must choose the same transport."},
	{OpExpansionMode, "where collectives are expanded (host, AI CPU, AIV): ranks that expand differently run different algorithms and task sequences."},
	{QPsPerConnection, "both ends of a RoCE connection create their queue pairs in pairs: N + 1 on one end and 1 on the other cannot connect (transport_ibverbs.cc CreateQp)."},
}

var consistentIndex = func() map[string]bool {
	m := make(map[string]bool, len(consistent))
	for _, c := range consistent {
		m[c.Name] = true
	}
	return m
}()

// Consistent returns the variables HCCL requires to agree across the ranks
// of a communicator, sorted by name.
func Consistent() []ConsistentVariable {
	out := make([]ConsistentVariable, len(consistent))
	copy(out, consistent)
	return out
}

// IsConsistent says whether name is one of Consistent.
func IsConsistent(name string) bool { return consistentIndex[name] }

// Canonical is the value of a setting as it enters a settings set: the
// number in base units where the value is one (so "600" and "600.00" of
// HCCL_EXEC_TIMEOUT, or TRUE and 1, are one value), else the printed text
// trimmed and in upper case (HCCL reads these case-insensitively:
// "true"/"TRUE", "host"/"HOST").
func Canonical(printed string, number float64, hasNumber bool) string {
	if hasNumber {
		return strconv.FormatFloat(number, 'f', -1, 64)
	}
	return strings.ToUpper(strings.TrimSpace(printed))
}

// SettingsID is the id of a settings set, the `settings` label:
// "<SettingsIDVersion>-" and a short stable hash of the (variable,
// canonical value) pairs of the Consistent variables in values (other
// variables are ignored) that differ from what HCCL does without them. The
// same pairs give the same id on every node and in every exporter of one
// version; the version prefix changes whenever the pairs that go into the
// hash do, so that the rules compare ids of one version only
// (communicator:hccl_settings_sets:count) and a rolling upgrade of the
// exporter does not look like a job with two settings sets.
//
// Version 2 (hccl_exporter 0.4) leaves out what HCCL does anyway, so that
// an unset variable and the same variable set explicitly to its default
// are one set: a value printed empty ("X is not set"), and a value equal to
// HCCL's default — HCCL_EXEC_TIMEOUT compared in effect, capped at
// DefaultExecTimeoutAIV where HCCL_OP_EXPANSION_MODE is AIV. Version 1
// (no prefix) hashed every printed pair.
//
// It is "" when values holds none of the Consistent variables: nothing is
// known about the process's set.
func SettingsID(values map[string]string) string {
	names := make([]string, 0, len(consistent))
	known := false
	for n := range values {
		if !consistentIndex[n] {
			continue
		}
		known = true
		if _, ok := effectiveForID(n, values); ok {
			names = append(names, n)
		}
	}
	if !known {
		return ""
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		v, _ := effectiveForID(n, values)
		// NUL cannot occur in a name or a log-derived label value, so
		// the pairs cannot run into each other.
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return settingsIDPrefix + hex.EncodeToString(h.Sum(nil)[:SettingsIDBytes])
}

// SettingsIDVersion is the version of SettingsID (its prefix).
const SettingsIDVersion = 2

var settingsIDPrefix = strconv.Itoa(SettingsIDVersion) + "-"

// effectiveForID is the value of variable n that goes into the settings
// id, and false when it is what HCCL does without the variable.
func effectiveForID(n string, values map[string]string) (string, bool) {
	v := values[n]
	if v == "" {
		return "", false
	}
	def, ok := index[n]
	if !ok || def.Kind == Text {
		return v, true
	}
	dflt := def.Default
	if n == ExecTimeout && IsAIVMode(values[OpExpansionMode]) {
		dflt = DefaultExecTimeoutAIV
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > DefaultExecTimeoutAIV {
			v = strconv.FormatFloat(DefaultExecTimeoutAIV, 'f', -1, 64)
		}
	}
	if v == strconv.FormatFloat(dflt, 'f', -1, 64) {
		return "", false
	}
	return v, true
}

// DefaultExecTimeoutAIV is HCCL_EXEC_TIMEOUT's default, and its cap, when
// collectives are expanded on the AI Vector cores
// (HCCL_OP_EXPANSION_MODE=AIV): the collective runs as a vector kernel,
// bounded by the runtime's AI Core kernel timeout, 1091 s on A2 and A3
// (CANN acl docs, aclrtSetOpExecuteTimeOut: "AI Core算子的默认超时时间为1091秒").
const DefaultExecTimeoutAIV = 1091

// IsAIVMode says whether an HCCL_OP_EXPANSION_MODE value (canonical or as
// printed) expands collectives on the AI Vector cores.
func IsAIVMode(mode string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(mode)), "AIV")
}

// EffectiveExecTimeout is the notify-wait timeout HCCL applies for a
// process: the printed HCCL_EXEC_TIMEOUT (printed false: unset, HCCL's
// default), capped at DefaultExecTimeoutAIV in AIV mode.
func EffectiveExecTimeout(v float64, printed bool, opExpansionMode string) float64 {
	if IsAIVMode(opExpansionMode) {
		if !printed || v > DefaultExecTimeoutAIV {
			return DefaultExecTimeoutAIV
		}
		return v
	}
	if !printed {
		return Default(ExecTimeout)
	}
	return v
}

// SettingsIDBytes is the length of a settings id in bytes (twice that in
// hex digits): 2^-32 is the chance that two different sets of one
// communicator share an id.
const SettingsIDBytes = 4
