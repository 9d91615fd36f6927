package diagnose

import (
	"bytes"
	"encoding/json"
	"html"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// silentBundle printed its times in UTC+8 (gen_bundles_test.go, 6.): rank
// 3 on 10.20.1.11 fails to connect to rank 11 on 10.20.1.12, whose logs
// stop at 10:30:04 without an error.
var silentBundle = filepath.Join("testdata", "incidents", "silent-peer-utc8")

const silentPair = "rank 3 on 10.20.1.11 (device 3, node-1 pid 669003) → rank 11 on 10.20.1.12 (device 3, node-2 pid 670003) (RoCE)"

// checkSilentIncident: the bundle's one incident carries the resolved pair
// and names rank 11 as the likely root cause, in the JSON, text and HTML.
func checkSilentIncident(t *testing.T, r *model.Report) {
	t.Helper()
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents, want 1: %+v", len(r.Incidents), r.Incidents)
	}
	in := r.Incidents[0]
	p := in.FailingPair
	if p == nil {
		t.Fatalf("no failing pair; link failures of the bundle: %+v, of the incident: %+v", r.LinkFailures, in.LinkFailures)
	}
	want := model.FailingPair{Source: model.LinkSourceDetector, LinkType: model.LinkTypeRoCE,
		Src: model.PairEnd{Rank: 3, Server: "10.20.1.11", Device: 3, Node: "node-1", PID: 669003, InBundle: true},
		Dst: model.PairEnd{Rank: 11, Server: "10.20.1.12", Device: 3, Node: "node-2", PID: 670003, InBundle: true}}
	if *p != want {
		t.Errorf("failing pair\n got %+v\nwant %+v", *p, want)
	}
	if len(in.SuspectedPeers) == 0 || in.SuspectedPeers[0].Peer != "rank 11" || !in.SuspectedPeers[0].InBundle {
		t.Errorf("suspected peers %+v, want rank 11 (in the bundle) first", in.SuspectedPeers)
	}
	if len(in.SilentRanks) != 1 {
		t.Fatalf("silent ranks %+v, want rank 11", in.SilentRanks)
	}
	s := in.SilentRanks[0]
	if s.Rank != 11 || s.Node != "node-2" || s.PID != 670003 || s.Confidence != model.ConfidenceMedium {
		t.Errorf("silent rank %+v", s)
	}
	// Its last line is its [LocalRank Key Info] at 10:30:04.2 (+08:00).
	cst := time.FixedZone("", 8*3600)
	if got := s.LastLog.In(cst); got.Hour() != 10 || got.Minute() != 30 || got.Second() != 4 {
		t.Errorf("last log %v, want 10:30:04 in UTC+8", got)
	}
	if s.SilentSeconds < 139 || s.SilentSeconds > 141 {
		t.Errorf("silent for %.3f s before the incident, want ~140 s", s.SilentSeconds)
	}
	collect := strings.Join(s.Collect, "\n")
	for _, w := range []string{"screen log", "dmesg", "OOM killer"} {
		if !strings.Contains(collect, w) {
			t.Errorf("collect list lacks %q: %s", w, collect)
		}
	}
	if in.Confidence != model.ConfidenceMedium || !strings.HasPrefix(in.Summary, "Likely root cause: rank 11 (node-2 pid 670003") ||
		!strings.Contains(in.Summary, "suspended or exited early") || !strings.Contains(in.Summary, silentPair) {
		t.Errorf("confidence %s, summary %q", in.Confidence, in.Summary)
	}
	if len(in.Remedy) == 0 || in.Remedy[0].ID != model.RemedySilentRank {
		t.Errorf("first remedy %+v, want %s", in.Remedy, model.RemedySilentRank)
	}

	// The JSON fields, as a program reads them.
	var js bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Incidents []struct {
			FailingPair struct {
				Src pairEnd `json:"src"`
				Dst pairEnd `json:"dst"`
			} `json:"failing_pair"`
			SilentRanks []struct {
				Rank int    `json:"rank"`
				Node string `json:"node"`
			} `json:"silent_ranks"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	fp := doc.Incidents[0].FailingPair
	if fp.Src.Rank != 3 || fp.Src.Server != "10.20.1.11" || fp.Dst.Rank != 11 || fp.Dst.Server != "10.20.1.12" {
		t.Errorf("JSON failing_pair %+v", fp)
	}

	// The text names the pair and the silent rank in the incident's first
	// lines.
	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text.String(), "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "  #1  ") {
			head = i
			break
		}
	}
	if head < 0 {
		t.Fatalf("no incident heading:\n%s", text.String())
	}
	first := strings.Join(lines[head:head+4], "\n")
	for _, w := range []string{"LIKELY ROOT CAUSE rank 11 on node-2 pid 670003", "failing pair: " + silentPair} {
		if !strings.Contains(first, w) {
			t.Errorf("the incident's first lines lack %q:\n%s", w, first)
		}
	}
	page := htmlOf(t, r)
	for _, w := range []string{"Failing pair:</b> " + html.EscapeString(silentPair), `Likely root cause: <span class="rootname">rank 11 on node-2 pid 670003</span>`} {
		if !strings.Contains(page, w) {
			t.Errorf("HTML lacks %q", w)
		}
	}
}

// TestSilentPeerAnyZone reads the UTC+8 bundle with the zone inferred,
// whatever zone the reader's machine is in: the link failures move with
// the events into the nodes' zone (they were left behind once and fell
// outside their incident).
func TestSilentPeerAnyZone(t *testing.T) {
	for _, z := range []string{"UTC", "America/New_York", "Asia/Kolkata", "Asia/Shanghai", "Pacific/Kiritimati"} {
		t.Run(z, func(t *testing.T) {
			loc, err := time.LoadLocation(z)
			if err != nil {
				t.Skipf("zone data: %v", err)
			}
			r, err := Run([]string{silentBundle}, Options{Location: loc, InferZones: true, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			checkSilentIncident(t, r)
		})
	}
}

// TestSilentPeerMachineZone runs as the command does, in the machine's
// local zone (time.Local, set here as TZ would set it), and with the zone
// given.
func TestSilentPeerMachineZone(t *testing.T) {
	saved := time.Local
	t.Cleanup(func() { time.Local = saved })
	for _, off := range []int{0, -5 * 3600, 8 * 3600, 13 * 3600} {
		time.Local = time.FixedZone("machine", off)
		r, err := Run([]string{silentBundle}, Options{Location: time.Local, InferZones: true, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		checkSilentIncident(t, r)
	}
	time.Local = time.UTC
	r, err := Run([]string{silentBundle}, Options{Location: time.FixedZone("+08:00", 8*3600), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	checkSilentIncident(t, r)
}

// TestNoSilentRankWhenPeerFailed: a named peer whose logs show a failure of
// its own is not silent (the ei0011 bundle: the peers name rank 20, which
// reported EI0011 itself and is the root).
func TestNoSilentRankWhenPeerFailed(t *testing.T) {
	r := runIncidents(t, "ei0011")
	for _, in := range r.Incidents {
		if len(in.SilentRanks) > 0 {
			t.Errorf("incident #%d names silent ranks %+v", in.ID, in.SilentRanks)
		}
	}
	// only-consequences: the named ranks 24-31 are not in the bundle.
	r = runIncidents(t, "only-consequences")
	for _, in := range r.Incidents {
		if len(in.SilentRanks) > 0 || in.Root != nil {
			t.Errorf("incident #%d: silent ranks %+v, root %+v", in.ID, in.SilentRanks, in.Root)
		}
	}
}

// TestSilentRankStillLogging: a named peer that kept printing after its
// peers failed (no error of its own) is named with low confidence: alive,
// perhaps stuck elsewhere, not exited.
func TestSilentRankStillLogging(t *testing.T) {
	files := incidentBundles()["silent-peer-utc8"]
	found := false
	for p := range files {
		if strings.HasPrefix(p, "node-2/ascend/log/run/plog/plog-670003_") {
			files[p] += "[INFO] HCCL(670003,python3):2026-03-18-10:40:00.000.000 [op_base.cc:1] [670003]Entry-HcclAllReduce: tag[x]\n"
			found = true
		}
	}
	if !found {
		t.Fatal("rank 11's run plog not in the bundle")
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	r, err := Run([]string{dir}, Options{Location: time.UTC, InferZones: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Incidents) != 1 || len(r.Incidents[0].SilentRanks) != 1 {
		t.Fatalf("incidents %+v", r.Incidents)
	}
	s := r.Incidents[0].SilentRanks[0]
	if s.Rank != 11 || s.Confidence != model.ConfidenceLow || s.SilentSeconds >= 0 || !strings.Contains(s.Reason, "alive") {
		t.Errorf("silent rank %+v", s)
	}
	if r.Incidents[0].Confidence != model.ConfidenceLow {
		t.Errorf("incident confidence %s", r.Incidents[0].Confidence)
	}
}

// pairEnd is one end of a failing pair in the report's JSON, as a program
// reads it.
type pairEnd struct {
	Rank   int    `json:"rank"`
	Server string `json:"server"`
}
