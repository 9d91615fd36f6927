package model

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestPairEndString covers the ends the bundle cannot resolve.
func TestPairEndString(t *testing.T) {
	for _, tc := range []struct {
		e    PairEnd
		want string
	}{
		{PairEnd{Rank: -1, Server: "10.0.0.2", Device: 4}, "server 10.0.0.2 (device 4, not in the bundle)"},
		{PairEnd{Rank: 7, Device: -1}, "rank 7 (not in the bundle)"},
		{PairEnd{Rank: -1, Device: -1}, "?"},
		{PairEnd{Rank: 2, Server: "a", Device: 2, Node: "n", PID: 9, InBundle: true}, "rank 2 on a (device 2, n pid 9)"},
	} {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	in := []string{"node-10", "node-2", "node-1", "node-100", "node-02", "a", "node-b", "node-"}
	want := []string{"a", "node-", "node-1", "node-2", "node-02", "node-10", "node-100", "node-b"}
	got := append([]string(nil), in...)
	sort.SliceStable(got, func(i, j int) bool { return NaturalLess(got[i], got[j]) })
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%v, want %v", got, want)
	}
}

// TestWhereBounded: the settings of 64 processes on 8 nodes name a few
// nodes and count the rest, instead of every pid.
func TestWhereBounded(t *testing.T) {
	var nodes []NodePIDs
	for n := range 8 {
		var pids []int
		for p := range 8 {
			pids = append(pids, 2100000+n*1000+p)
		}
		nodes = append(nodes, NodePIDs{Node: "node-" + string(rune('1'+n)), PIDs: pids})
	}
	got := Where(nodes)
	want := "8 nodes, 64 pids: node-1 (8 pids), node-2 (8 pids), node-3 (8 pids), node-4 (8 pids) and 4 more node(s) (all in --format=json)"
	if got != want {
		t.Errorf("where = %q\nwant    %q", got, want)
	}
	if got := Where(nodes[:1]); got != "node-1 (8 pids: 2100000, 2100001, 2100002, 2100003 and 4 more)" {
		t.Errorf("where(one node) = %q", got)
	}
	if got := Where([]NodePIDs{{Node: "a", PIDs: []int{1, 2}}, {Node: "b", PIDs: []int{3}}}); got != "a (pids 1, 2), b (pid 3)" {
		t.Errorf("where(small) = %q", got)
	}
}

// TestTimestampJSON: a time prints in RFC 3339 with its zone and reads
// back to the same instant and zone offset; no time prints null.
func TestTimestampJSON(t *testing.T) {
	loc := time.FixedZone("", 8*3600)
	ts := Timestamp{Time: time.Date(2025, 11, 3, 20, 17, 2, 882069000, loc)}
	b, err := json.Marshal(struct{ A, B Timestamp }{A: ts})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"A":"2025-11-03T20:17:02.882069+08:00","B":null}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back struct{ A, B Timestamp }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.A.Equal(ts.Time) || !back.B.IsZero() {
		t.Errorf("read back %v, %v", back.A, back.B)
	}
	if _, off := back.A.Zone(); off != 8*3600 {
		t.Errorf("zone offset %d, want 28800", off)
	}
	if err := json.Unmarshal([]byte(`{"A":"yesterday"}`), &back); err == nil {
		t.Error("a time that is not RFC 3339 read without an error")
	}
}
