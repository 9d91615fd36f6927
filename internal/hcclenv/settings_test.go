package hcclenv

import (
	"regexp"
	"sort"
	"testing"
)

func TestSettingsIDStable(t *testing.T) {
	a := map[string]string{BuffSize: "419430400", QPsPerConnection: "16", ConnectTimeout: "600"}
	// The id is part of the contract across nodes and exporters of one
	// version (its "2-" prefix): a changed hash without a new version
	// would make a rolling upgrade look like an inconsistent job.
	// python3 -c 'import hashlib; print(hashlib.sha256(b"HCCL_BUFFSIZE\x00419430400\x00HCCL_CONNECT_TIMEOUT\x00600\x00HCCL_RDMA_QPS_PER_CONNECTION\x0016\x00").hexdigest()[:8])'
	const want = "2-6124a314"
	if got := SettingsID(a); got != want {
		t.Fatalf("SettingsID(%v) = %q, want %q (the hash must not change within a version)", a, got, want)
	}
	if !regexp.MustCompile(`^[0-9]+-[0-9a-f]{8}$`).MatchString(want) {
		t.Fatalf("id %q is not <version>-<8 hex digits>", want)
	}
	// Order of insertion, variables outside the set and their values do
	// not matter.
	b := map[string]string{ConnectTimeout: "600", "HCCL_IF_IP": "10.0.0.1", QPsPerConnection: "16", BuffSize: "419430400", RDMATC: "100"}
	if got := SettingsID(b); got != want {
		t.Errorf("extra non-consistent variables changed the id: %q, want %q", got, want)
	}
	for _, change := range []struct{ name, value string }{
		{BuffSize, "209715201"}, {QPsPerConnection, "8"}, {ConnectTimeout, "601"},
	} {
		c := map[string]string{}
		for k, v := range a {
			c[k] = v
		}
		c[change.name] = change.value
		if SettingsID(c) == want {
			t.Errorf("changing %s to %s kept the id", change.name, change.value)
		}
	}
	// Pairs cannot run into each other.
	if SettingsID(map[string]string{Algo: "1" + "\x00" + BuffSize}) == SettingsID(map[string]string{Algo: "1", BuffSize: "419430400"}) {
		t.Error("pair boundaries are ambiguous")
	}
	if got := SettingsID(map[string]string{"HCCL_IF_IP": "x"}); got != "" {
		t.Errorf("no consistent variable: id %q, want empty", got)
	}
	if got := SettingsID(nil); got != "" {
		t.Errorf("nil: id %q, want empty", got)
	}
}

// TestSettingsIDUnsetIsDefault: a variable HCCL runs at its default is
// one set whether the process left it unset (not printed, or printed "is
// not set") or set it to the default; HCCL_EXEC_TIMEOUT compares in
// effect: in AIV mode its default and cap are 1091 s.
func TestSettingsIDUnsetIsDefault(t *testing.T) {
	base := map[string]string{QPsPerConnection: "16"}
	same := []map[string]string{
		{QPsPerConnection: "16", BuffSize: "209715200", ConnectTimeout: "120", ExecTimeout: "1836"},
		{QPsPerConnection: "16", Algo: "", Deterministic: ""},
		{QPsPerConnection: "16", IntraRoCEEnable: "0", InterHCCSDisable: "0"},
	}
	want := SettingsID(base)
	for _, m := range same {
		if got := SettingsID(m); got != want {
			t.Errorf("SettingsID(%v) = %q, want %q (defaults are the unset set)", m, got, want)
		}
	}
	aiv := map[string]string{OpExpansionMode: "AIV"}
	for _, m := range []map[string]string{
		{OpExpansionMode: "AIV", ExecTimeout: "1091"},
		{OpExpansionMode: "AIV", ExecTimeout: "1836"},
		{OpExpansionMode: "aiv", ExecTimeout: "3600"},
	} {
		if got, want := SettingsID(m), SettingsID(aiv); got != want && m[OpExpansionMode] == "AIV" {
			t.Errorf("AIV: SettingsID(%v) = %q, want %q (1091 s is the default and the cap)", m, got, want)
		}
	}
	if SettingsID(map[string]string{OpExpansionMode: "AIV", ExecTimeout: "600"}) == SettingsID(aiv) {
		t.Error("AIV with HCCL_EXEC_TIMEOUT=600 looks like the default")
	}
	if SettingsID(map[string]string{ExecTimeout: "1091"}) == SettingsID(map[string]string{ExecTimeout: "1836"}) {
		t.Error("outside AIV mode 1091 s is not the default")
	}
	// Every variable at its default still names a set (known, not "").
	if got := SettingsID(map[string]string{BuffSize: "209715200"}); got != "2-e3b0c442" {
		t.Errorf("all defaults: %q, want the empty set's id", got)
	}
}

func TestEffectiveExecTimeout(t *testing.T) {
	for _, tc := range []struct {
		v       float64
		printed bool
		mode    string
		want    float64
	}{
		{0, false, "", 1836}, {600, true, "HOST", 600}, {0, false, "AIV", 1091}, {3600, true, "AIV", 1091}, {600, true, "AIV", 600},
	} {
		if got := EffectiveExecTimeout(tc.v, tc.printed, tc.mode); got != tc.want {
			t.Errorf("EffectiveExecTimeout(%v, %v, %q) = %v, want %v", tc.v, tc.printed, tc.mode, got, tc.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		printed string
		n       float64
		has     bool
		want    string
	}{
		{"600.00", 600, true, "600"},
		{"600", 600, true, "600"},
		{"TRUE", 1, true, "1"},
		{"200", 200 << 20, true, "209715200"},
		{"true", 0, false, "TRUE"},
		{" host ", 0, false, "HOST"},
		{"", 0, false, ""},
	} {
		if got := Canonical(tc.printed, tc.n, tc.has); got != tc.want {
			t.Errorf("Canonical(%q, %v, %v) = %q, want %q", tc.printed, tc.n, tc.has, got, tc.want)
		}
	}
}

func TestConsistentList(t *testing.T) {
	// The minimum: these must be in every settings set.
	for _, n := range []string{BuffSize, QPsPerConnection, ConnectTimeout, ExecTimeout, IntraRoCEEnable,
		InterHCCSDisable, Deterministic, OpExpansionMode} {
		if !IsConsistent(n) {
			t.Errorf("%s is not a consistent variable", n)
		}
	}
	for _, n := range []string{"HCCL_IF_IP", "HCCL_SOCKET_IFNAME", "HCCL_IF_BASE_PORT", RDMATC, RDMASL} {
		if IsConsistent(n) {
			t.Errorf("%s differs legitimately between ranks but is in the settings set", n)
		}
	}
	cs := Consistent()
	if !sort.SliceIsSorted(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name }) {
		t.Error("Consistent() is not sorted by name")
	}
	for _, c := range cs {
		if c.Why == "" {
			t.Errorf("%s: no reason given", c.Name)
		}
	}
}

func FuzzSettingsID(f *testing.F) {
	f.Add(BuffSize, "209715200", QPsPerConnection, "1")
	f.Add(Algo, "level0:NA;level1:H-D_R", "HCCL_IF_IP", "\xff")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		m := map[string]string{n1: v1, n2: v2}
		id := SettingsID(m)
		if id != SettingsID(map[string]string{n2: v2, n1: v1}) && n1 != n2 {
			t.Fatalf("id depends on insertion order")
		}
		if id != "" && len(id) != len(settingsIDPrefix)+2*SettingsIDBytes {
			t.Fatalf("id %q has the wrong length", id)
		}
		if (id == "") != (!IsConsistent(n1) && !IsConsistent(n2)) {
			t.Fatalf("id %q for %q, %q", id, n1, n2)
		}
	})
}
