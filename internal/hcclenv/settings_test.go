package hcclenv

import (
	"regexp"
	"sort"
	"testing"
)

func TestSettingsIDStable(t *testing.T) {
	a := map[string]string{BuffSize: "209715200", QPsPerConnection: "1", ConnectTimeout: "120"}
	// The id is part of the contract across nodes and exporter versions:
	// a changed hash would make mixed-version fleets look inconsistent.
	// python3 -c 'import hashlib; print(hashlib.sha256(b"HCCL_BUFFSIZE\x00209715200\x00HCCL_CONNECT_TIMEOUT\x00120\x00HCCL_RDMA_QPS_PER_CONNECTION\x001\x00").hexdigest()[:8])'
	const want = "a3c26ec6"
	if got := SettingsID(a); got != want {
		t.Fatalf("SettingsID(%v) = %q, want %q (the hash must not change between versions)", a, got, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(want) {
		t.Fatalf("id %q is not 8 hex digits", want)
	}
	// Order of insertion, variables outside the set and their values do
	// not matter.
	b := map[string]string{ConnectTimeout: "120", "HCCL_IF_IP": "10.0.0.1", QPsPerConnection: "1", BuffSize: "209715200", RDMATC: "132"}
	if got := SettingsID(b); got != want {
		t.Errorf("extra non-consistent variables changed the id: %q, want %q", got, want)
	}
	for _, change := range []struct{ name, value string }{
		{BuffSize, "419430400"}, {QPsPerConnection, "16"}, {ConnectTimeout, "600"},
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
	// A variable missing is another set than one printed empty.
	d := map[string]string{BuffSize: "209715200", QPsPerConnection: "1", ConnectTimeout: "120", Algo: ""}
	if SettingsID(d) == want {
		t.Error("an unset HCCL_ALGO printed did not change the id")
	}
	// Pairs cannot run into each other.
	if SettingsID(map[string]string{Algo: "1" + "\x00" + BuffSize}) == SettingsID(map[string]string{Algo: "1", BuffSize: ""}) {
		t.Error("pair boundaries are ambiguous")
	}
	if got := SettingsID(map[string]string{"HCCL_IF_IP": "x"}); got != "" {
		t.Errorf("no consistent variable: id %q, want empty", got)
	}
	if got := SettingsID(nil); got != "" {
		t.Errorf("nil: id %q, want empty", got)
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
		if id != "" && len(id) != 2*SettingsIDBytes {
			t.Fatalf("id %q has the wrong length", id)
		}
		if (id == "") != (!IsConsistent(n1) && !IsConsistent(n2)) {
			t.Fatalf("id %q for %q, %q", id, n1, n2)
		}
	})
}
