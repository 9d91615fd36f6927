package diagnose

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

func runIncidents(t *testing.T, name string) *model.Report {
	t.Helper()
	return run(t, filepath.Join("testdata", "incidents", name))
}

func groupOf(in model.Incident, part, code string) *model.EventGroup {
	for i := range in.Groups {
		if in.Groups[i].Part == part && in.Groups[i].Code == code {
			return &in.Groups[i]
		}
	}
	return nil
}

func textOf(t *testing.T, r *model.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func wantRoot(t *testing.T, in model.Incident, code, node string, rank, device int) {
	t.Helper()
	if in.Root == nil {
		t.Fatalf("incident %d has no root: %s", in.ID, in.Summary)
	}
	r := in.Root
	if r.Code != code || r.Node != node || r.Rank != rank || r.Device != device || !in.RootInBundle {
		t.Errorf("root %s on %s rank %d device %d (in bundle %v), want %s on %s rank %d device %d",
			r.Code, r.Node, r.Rank, r.Device, in.RootInBundle, code, node, rank, device)
	}
}

// Every fault event with a time is in exactly one incident: the incidents
// explain the whole fault table.
func checkAccounted(t *testing.T, r *model.Report) {
	t.Helper()
	var faults uint64
	for _, f := range r.Faults {
		faults += f.Count
	}
	var inc int
	for _, in := range r.Incidents {
		inc += len(in.Events)
	}
	if uint64(inc-r.HeartbeatEvents+r.UntimedEvents+r.DroppedEvents) != faults {
		t.Errorf("incidents hold %d events (%d heartbeat reports), %d untimed, %d dropped; the fault table counts %d", inc, r.HeartbeatEvents, r.UntimedEvents, r.DroppedEvents, faults)
	}
}

// EI0011 on node-3 rank 20 at link setup; 55 ranks of the 7 other nodes time
// out after their own HCCL_CONNECT_TIMEOUT (1180 s) + 20 s.
func TestIncidentEI0011WithTimeouts(t *testing.T) {
	r := runIncidents(t, "ei0011")
	checkAccounted(t, r)
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents, want 1", len(r.Incidents))
	}
	in := r.Incidents[0]
	wantRoot(t, in, "EI0011", "node-3", 20, 4)
	if in.Root.PID != 2103004 || !in.Root.DevicePhysical || in.Root.RankSize != 64 {
		t.Errorf("root %+v", in.Root)
	}
	if in.Root.Aligned.Format(model.TextTime) != "2026-03-18 20:18:46.447000" {
		t.Errorf("root time %s", in.Root.Aligned.Format(model.TextTime))
	}
	if in.Confidence != model.ConfidenceHigh {
		t.Errorf("confidence %s: %q", in.Confidence, in.Reasons)
	}
	g := groupOf(in, model.PartConsequence, "EI0006")
	if g == nil || g.Processes != 55 || len(g.Nodes) != 7 || g.TimerSeconds != 1200 || g.Timer != "HCCL_CONNECT_TIMEOUT" {
		t.Fatalf("EI0006 group %+v", g)
	}
	if g.FirstAfterSeconds < 1200 || g.LastAfterSeconds > 1203 {
		t.Errorf("EI0006 %v..%v s after the root", g.FirstAfterSeconds, g.LastAfterSeconds)
	}
	if len(in.Groups) != 1 {
		t.Errorf("groups %+v: the root's screen report is the same failure, not another", in.Groups)
	}
	// The link lines after each timeout name the peer: the root's rank.
	if !strings.Contains(strings.Join(in.Reasons, "\n"), "55 of the 55 consequence(s) name rank 20, the root's rank") {
		t.Errorf("reasons %q", in.Reasons)
	}
	if len(in.SuspectedPeers) != 1 || in.SuspectedPeers[0].Peer != "rank 20" || !in.SuspectedPeers[0].InBundle {
		t.Errorf("peers %+v", in.SuspectedPeers)
	}
	if !strings.Contains(in.Summary, "55 process(es) on 7 node(s) reported EI0006 within 1202 s after it (their HCCL_CONNECT_TIMEOUT timer: up to 1200 s)") {
		t.Errorf("summary %q", in.Summary)
	}
	for _, e := range in.Events {
		if e.Code == "EI0006" && !strings.Contains(e.TimerBasis, "HCCL_CONNECT_TIMEOUT 1180 s + 20 s (the process's own setting)") {
			t.Fatalf("timer basis %q", e.TimerBasis)
		}
	}
	// The remedy starts from the root: the four EI0011 remedies with the
	// failed process's numbers (QPS 16 → 56 peers × 17 QPs: N + 1).
	if len(in.Remedy) != 4 || in.Remedy[0].ID != model.RemedyReduceMemoryUse {
		t.Fatalf("remedy %+v", in.Remedy)
	}
	for i, w := range []string{"952 QPs × 3 MiB", "HCCL_RDMA_QPS_PER_CONNECTION = 16 (environment) in the failed process: ABOVE", "each connection creates 17 QPs (N + 1)", "look at device 4", "HCCL_BUFFSIZE is not the lever"} {
		joined := ""
		for _, rem := range in.Remedy {
			joined += strings.Join(rem.Findings, "\n")
		}
		if !strings.Contains(joined, w) {
			t.Errorf("remedy %d lacks %q", i, w)
		}
	}
	text := textOf(t, r)
	if !strings.Contains(text, "ROOT CAUSE EI0011 (link_setup) on node-3 pid 2103004 (rank 20 of 64, device 4); confidence high") {
		t.Errorf("text report lacks the root cause:\n%s", text[:min(len(text), 2000)])
	}
	if strings.Index(text, "INCIDENTS") > strings.Index(text, "FAULT CODES") {
		t.Error("the incidents must come before the fault table")
	}
}

// A port down (EJ0002) at link setup, then the peers' timeouts after HCCL's
// default 120 s + 20 s (2024 wording: ranks from Entry-HcclCommInitRootInfo
// and SetupAgent).
func TestIncidentPortDown(t *testing.T) {
	r := runIncidents(t, "portdown")
	checkAccounted(t, r)
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents", len(r.Incidents))
	}
	in := r.Incidents[0]
	wantRoot(t, in, "EJ0002", "node-2", 13, 5)
	if !strings.Contains(strings.Join(in.Reasons, "\n"), "of the 27 consequence(s) name rank 13, the root's rank") {
		t.Errorf("reasons %q", in.Reasons)
	}
	g := groupOf(in, model.PartConsequence, "EI0006")
	if g == nil || g.Processes != 24 || len(g.Nodes) != 3 || g.TimerSeconds != 140 {
		t.Fatalf("EI0006 group %+v", g)
	}
	if len(in.Remedy) != 1 || in.Remedy[0].ID != "port_down" || !strings.Contains(strings.Join(in.Remedy[0].Findings, " "), "`hccn_tool -i 5 -link -g`") {
		t.Errorf("remedy %+v", in.Remedy)
	}
	for _, e := range in.Events {
		if e.Code == "EI0006" && !strings.Contains(e.TimerBasis, "HCCL's default") {
			t.Fatalf("timer basis %q: the 2024 bundle prints no HCCL_CONNECT_TIMEOUT", e.TimerBasis)
		}
	}
}

// Two independent incidents in one bundle (2025 wording): a port bind
// failure at 09:00 with its root-info timeouts, and an EI0011 at 11:30 after
// a restart, with its link-setup timeouts.
func TestIncidentTwoIndependent(t *testing.T) {
	r := runIncidents(t, "two-incidents")
	checkAccounted(t, r)
	if len(r.Incidents) != 2 {
		t.Fatalf("%d incidents, want 2", len(r.Incidents))
	}
	wantRoot(t, r.Incidents[0], "EI0019", "node-1", 0, 0)
	if g := groupOf(r.Incidents[0], model.PartConsequence, "EI0015"); g == nil || g.Processes != 8 || g.Nodes[0] != "node-2" || g.TimerSeconds != 320 {
		t.Errorf("incident 1 EI0015 %+v", g)
	}
	wantRoot(t, r.Incidents[1], "EI0011", "node-2", 10, 2)
	if g := groupOf(r.Incidents[1], model.PartConsequence, "EI0006"); g == nil || g.Processes != 8 || g.Nodes[0] != "node-1" {
		t.Errorf("incident 2 EI0006 %+v", g)
	}
	for _, in := range r.Incidents {
		if in.Confidence != model.ConfidenceHigh || len(in.Groups) != 1 {
			t.Errorf("incident %d: confidence %s groups %+v", in.ID, in.Confidence, in.Groups)
		}
	}
}

// node-2's clock runs 200 s ahead: printed as is, its EI0011 comes after the
// EI0006 it caused. The communicator's initialisation, printed by every rank
// at the same moment, measures the offset and puts the root first.
func TestIncidentSkewedClocks(t *testing.T) {
	r := runIncidents(t, "skew")
	checkAccounted(t, r)
	// As printed, the consequence comes first: a naive order is wrong.
	if ei6, ei11 := faultOf(r, "EI0006"), faultOf(r, "EI0011"); !ei6.First.Before(ei11.First.Time) {
		t.Fatalf("the bundle does not test skew: EI0006 first %v, EI0011 first %v", ei6.First, ei11.First)
	}
	if !r.Clock.SkewDetected || r.Clock.Reference != "node-1" {
		t.Fatalf("clock %+v", r.Clock)
	}
	for _, nc := range r.Clock.Nodes {
		want := 0.0
		if nc.Node == "node-2" {
			want = 200
		}
		if nc.OffsetSeconds == nil || math.Abs(*nc.OffsetSeconds-want) > 0.1 || nc.Corrected != (want != 0) {
			t.Errorf("clock of %s: %+v", nc.Node, nc)
		}
	}
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents, want 1", len(r.Incidents))
	}
	in := r.Incidents[0]
	wantRoot(t, in, "EI0011", "node-2", 9, 1)
	if g := groupOf(in, model.PartConsequence, "EI0006"); g == nil || g.Processes != 24 || g.FirstAfterSeconds < 139 || g.FirstAfterSeconds > 141.5 {
		t.Errorf("EI0006 %+v", g)
	}
	if got := in.Root.Time.Format(model.TextTime); got != "2026-03-18 14:08:20.000000" {
		t.Errorf("printed time %s", got)
	}
	if d := in.Root.Aligned.Sub(day(14, 5, 0, 0)); d.Abs() > 100*time.Millisecond {
		t.Errorf("aligned time %s, want 14:05:00 within the measurement's jitter", in.Root.Aligned)
	}
	if !strings.Contains(in.Summary, "(printed 2026-03-18 14:08:20.000000 by node-2's clock)") {
		t.Errorf("summary %q", in.Summary)
	}
	if !strings.Contains(strings.Join(in.Reasons, "\n"), "node-2's clock was 200 s ahead of the reference's; its times were corrected") {
		t.Errorf("reasons %q", in.Reasons)
	}
	if !strings.Contains(textOf(t, r), "node-2's clock is 200 s ahead of node-1's") {
		t.Error("text report does not state the skew")
	}
}

// node-4 failed and its logs are missing: only the peers' notify-wait
// timeouts are there (2023 wording), and they name the ranks of node-4.
func TestIncidentOnlyConsequences(t *testing.T) {
	r := runIncidents(t, "only-consequences")
	checkAccounted(t, r)
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents", len(r.Incidents))
	}
	in := r.Incidents[0]
	if in.Root != nil || in.RootInBundle || in.Confidence != model.ConfidenceLow {
		t.Fatalf("root %+v in bundle %v confidence %s", in.Root, in.RootInBundle, in.Confidence)
	}
	if !strings.HasPrefix(in.Summary, "The first failing rank is not in the bundle") {
		t.Errorf("summary %q", in.Summary)
	}
	if g := groupOf(in, model.PartWaiting, "EI0002"); g == nil || g.Processes != 24 || len(g.Nodes) != 3 {
		t.Errorf("EI0002 %+v", g)
	}
	if len(in.SuspectedPeers) != 8 || in.SuspectedPeers[0].Peer != "rank 24" || in.SuspectedPeers[0].InBundle {
		t.Errorf("peers %+v", in.SuspectedPeers)
	}
	if in.Remedy[0].ID != "find_root" {
		t.Errorf("remedy %+v", in.Remedy)
	}
	// 2023 ranks come from `hcom init by file success … rank[N]`.
	if in.Events[0].Rank != 0 || in.Events[len(in.Events)-1].Rank < 0 {
		t.Errorf("ranks of the waiting events: %d … %d", in.Events[0].Rank, in.Events[len(in.Events)-1].Rank)
	}
	if !strings.Contains(textOf(t, r), "FIRST FAILING RANK NOT IN THE BUNDLE; confidence low") {
		t.Error("text report")
	}
}

// Two ranks on different nodes fail on their own 0.3 s apart, and the
// clocks cannot be compared: the report names the first but says that it is
// ambiguous.
func TestIncidentAmbiguous(t *testing.T) {
	dir := t.TempDir()
	line := func(pid, ts string) string {
		return "[PID: " + pid + "] 2026-03-18-10:00:" + ts + " Resource_Error_Insufficient_Device_Memory(EI0011): Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.\n"
	}
	writeTree(t, dir, map[string]string{
		"node-a/train.log": line("11", "00.500.000"),
		"node-b/train.log": line("22", "00.200.000"),
	})
	r := run(t, dir)
	if len(r.Incidents) != 1 {
		t.Fatalf("%d incidents", len(r.Incidents))
	}
	in := r.Incidents[0]
	wantRoot(t, in, "EI0011", "node-b", -1, -1)
	if in.Confidence != model.ConfidenceMedium || len(in.Alternatives) != 1 || in.Alternatives[0].Node != "node-a" {
		t.Errorf("confidence %s alternatives %+v", in.Confidence, in.Alternatives)
	}
	if !strings.Contains(strings.Join(in.Reasons, "\n"), "Ambiguous: EI0011 on node-a pid 11") {
		t.Errorf("reasons %q", in.Reasons)
	}
	if !strings.Contains(strings.Join(r.Clock.Notes, "\n"), "could not be compared") {
		t.Errorf("clock notes %q", r.Clock.Notes)
	}
}

// A node that prints its times in another zone shows as an offset of whole
// hours; the report says so, and --node-timezone reads it right.
func TestNodeTimezone(t *testing.T) {
	dir := t.TempDir()
	key := func(pid, ts string) string {
		return "[INFO] HCCL(" + pid + ",python3):2026-03-18-" + ts + " [hccl_communicator_attrs.cc:327] [" + pid + "][Communicator Key Info]identifier[10.0.0.1%eth0_60000_0_1] rankSize[2] serverNum[2] moduleNum[2] superPodNum[0]\n"
	}
	writeTree(t, dir, map[string]string{
		"node-a/run/plog/plog-11_20260318100000000.log": key("11", "10:00:00.000.000"),
		"node-b/run/plog/plog-22_20260318180000000.log": key("22", "18:00:00.200.000"),
	})
	r := run(t, dir)
	notes := strings.Join(r.Clock.Notes, "\n")
	if !strings.Contains(notes, "node-b's clock is 8 h 0 m ahead of node-a's") || !strings.Contains(notes, "--node-timezone node-b=<zone>") {
		t.Errorf("notes %q", notes)
	}
	opts := testOptions()
	opts.NodeLocations = map[string]*time.Location{"node-b": time.FixedZone("UTC+8", 8*3600)}
	r2, err := Run([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Clock.SkewDetected {
		t.Errorf("with the zone given: %+v", r2.Clock)
	}
	if r2.Clock.Nodes[1].Zone != "UTC+8" {
		t.Errorf("zone %q", r2.Clock.Nodes[1].Zone)
	}
}

// The incidents survive the JSON round trip.
func TestIncidentsJSON(t *testing.T) {
	r := runIncidents(t, "ei0011")
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Incidents []model.Incident  `json:"incidents"`
		Clock     model.ClockReport `json:"clock"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Incidents) != 1 || back.Incidents[0].Root.Rank != 20 || back.Incidents[0].Root.Aligned.IsZero() || back.Clock.Reference != "node-1" {
		t.Errorf("JSON incidents %+v", back.Incidents)
	}
}

// The same skew without node-2's run/plog: its clock cannot be measured.
// The report does not guess an order; it says that the EI0011 may be the
// root of the earlier timeouts.
func TestIncidentSkewUnmeasured(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for rel, content := range incidentBundles()["skew"] {
		if strings.HasPrefix(rel, "node-2/ascend/log/run/") {
			continue
		}
		files[rel] = content
	}
	writeTree(t, dir, files)
	r := run(t, dir)
	if len(r.Incidents) != 2 {
		t.Fatalf("%d incidents, want 2", len(r.Incidents))
	}
	a, b := r.Incidents[0], r.Incidents[1]
	if a.RootInBundle || b.Root == nil || b.Root.Code != "EI0011" || b.Root.Node != "node-2" {
		t.Fatalf("incidents %q / %q", a.Summary, b.Summary)
	}
	if b.Confidence != model.ConfidenceMedium || !strings.Contains(strings.Join(b.Reasons, "\n"), "if node-2's clock runs more than 60 s ahead, this failure is their root") {
		t.Errorf("incident 2: %s %q", b.Confidence, b.Reasons)
	}
	if !strings.Contains(a.Summary, "Possibly caused by incident #2 (EI0011 on node-2; clocks not compared)") {
		t.Errorf("incident 1 summary %q", a.Summary)
	}
}

// Newer HCCL raises EI0011 for any failed device allocation with its exact
// size: a buffer-sized one puts HCCL_BUFFSIZE first, with the failed
// process's own buffer arithmetic; a QP-sized report keeps the QP remedies
// first.
func TestIncidentEI0011BufferSized(t *testing.T) {
	cases := []struct {
		msg       string
		first     string
		wantFound string
	}{
		{"Failed to allocate 420478976 bytes of NPU memory.", model.RemedyHCCLBuffSize, "2 × HCCL_BUFFSIZE 200 MiB (environment) + 1 MiB = 401 MiB at its first collective: exactly the failed allocation"},
		{"Failed to allocate 262144~3145728 bytes of NPU memory.", model.RemedyReduceMemoryUse, "the failed allocation was QP-sized"},
		{"Failed to allocate [size: [0.25MB, 3MB], Affected by QP depth configuration.] bytes of NPU memory.", model.RemedyReduceMemoryUse, "the failed allocation was QP-sized"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{
			"run/plog/plog-9_20260318100000000.log": envPlog("9", "200", ""),
			"train.log":                             "[PID: 9] 2026-03-18-10:00:00.000.000 Resource_Error_Insufficient_Device_Memory(EI0011): " + c.msg + "\n",
		})
		r := run(t, dir)
		if len(r.Incidents) != 1 || r.Incidents[0].Root == nil {
			t.Fatalf("%s: incidents %+v", c.msg, r.Incidents)
		}
		rem := r.Incidents[0].Remedy
		var all []string
		for _, x := range rem {
			all = append(all, x.Findings...)
		}
		if rem[0].ID != c.first || !strings.Contains(strings.Join(all, "\n"), c.wantFound) {
			t.Errorf("%s: first remedy %s, findings:\n%s", c.msg, rem[0].ID, strings.Join(all, "\n"))
		}
	}
}

// A heartbeat report (no fault code; a run/plog INFO line) is a waiting
// event that names the rank that stopped (the captured sample line).
func TestIncidentHeartbeat(t *testing.T) {
	r := run(t, "testdata/bundle")
	checkAccounted(t, r)
	if r.HeartbeatEvents != 1 {
		t.Fatalf("%d heartbeat events", r.HeartbeatEvents)
	}
	for _, in := range r.Incidents {
		if g := groupOf(in, model.PartWaiting, model.CodeHeartbeat); g != nil {
			if in.RootInBundle || len(in.SuspectedPeers) != 1 || in.SuspectedPeers[0].Peer != "127.10.0.2/2" || g.Stage != "execution" {
				t.Errorf("heartbeat incident %+v", in)
			}
			return
		}
	}
	t.Error("no incident holds the heartbeat report")
}

// --timezone auto: the ei0011 bundle's communicator identifier carries the
// root's creation time (2026-03-18 12:16:02 UTC) and the ranks printed the
// end of its initialisation at 20:16:05 wall-clock time: UTC+8. The skew
// bundle's identifier does not fit any zone: it stays in the default zone,
// and the report says why.
func TestTimezoneAuto(t *testing.T) {
	opts := testOptions()
	opts.InferZones = true
	r, err := Run([]string{filepath.Join("testdata", "incidents", "ei0011")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range r.Clock.Nodes {
		if _, off := time.Date(2026, 3, 18, 0, 0, 0, 0, mustZone(t, nc.Zone)).Zone(); off != 8*3600 || !strings.HasPrefix(nc.ZoneBasis, "inferred from 1 communicator") {
			t.Errorf("%s: zone %s (%s)", nc.Node, nc.Zone, nc.ZoneBasis)
		}
	}
	root := r.Incidents[0].Root
	if got := root.Aligned.UTC().Format(model.TextTime); got != "2026-03-18 12:18:46.447000" {
		t.Errorf("root at %s UTC, want 12:18:46.447", got)
	}
	if got := root.Time.Format(model.TextTime); got != "2026-03-18 20:18:46.447000" {
		t.Errorf("root printed %s, want the node's wall clock 20:18:46.447", got)
	}

	// A node without a communicator line of its own takes the zone the
	// others showed, and says so.
	dir := t.TempDir()
	files := map[string]string{}
	for rel, content := range incidentBundles()["ei0011"] {
		if !strings.HasPrefix(rel, "node-2/ascend/log/run/") {
			files[rel] = content
		}
	}
	writeTree(t, dir, files)
	r1, err := Run([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if nc := r1.Clock.Nodes[1]; nc.Node != "node-2" || !strings.HasPrefix(nc.Zone, "UTC+08") || nc.ZoneBasis != model.ZoneBasisAssumed {
		t.Errorf("node-2: %+v", nc)
	}

	r2, err := Run([]string{filepath.Join("testdata", "incidents", "skew")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range r2.Clock.Nodes {
		if nc.Zone != "UTC" || nc.ZoneBasis != model.ZoneBasisNoEvidence {
			t.Errorf("skew %s: zone %s (%s)", nc.Node, nc.Zone, nc.ZoneBasis)
		}
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	if strings.HasPrefix(name, "UTC+") || strings.HasPrefix(name, "UTC-") {
		loc, err := logstate.ParseZone(name[3:])
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
