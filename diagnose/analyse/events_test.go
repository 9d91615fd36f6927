package analyse

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Each era's wording of a rank line (cann-log-eras.md §4).
func TestParseRankLine(t *testing.T) {
	cases := []struct {
		msg  string
		want rankInfo
		ok   bool
	}{
		{"[status:init] [hcom.cc:194][hccl-12337-0-1688478416-hccl_world_group][76]hcom init by file success,take time [248118]us, rankTablePath[/x.json], rankNum[128], rank[76],server[192.168.102.141], device[4]",
			rankInfo{rank: 76, size: 128, device: 4, server: "192.168.102.141"}, true},
		{"Entry-HcclCommInitRootInfo:ranks[2048], rank[0], rootinfo: host ip[172.16.13.183] port[64000] nicDeploy[1] identifier[172.16.13.183%eth0_64000_0_1721821172092650], deviceLogicId[0]",
			rankInfo{comm: "172.16.13.183%eth0_64000_0_1721821172092650", rank: 0, size: 2048, device: 0}, true},
		{"[HCCL_TRACE][Flat]SetupAgent rankNum[3], rank[0], rootInfo identifier[1.1.1.1%enp189s0f0_60000_0_1750325244673428], server[1.1.1.1%enp189s0f0], serverPort[60000]deviceType[2], logicDevId[0], phydevId[5], deviceIp[1.1.1.11]",
			rankInfo{comm: "1.1.1.1%enp189s0f0_60000_0_1750325244673428", rank: 0, size: 3, device: 5, physical: true, server: "1.1.1.1"}, true},
		{"hcclCommInitInfo:commId[hccl-1382-5-1754394529-hccl_world_group], rank[1], totalRanks[2], serverId[%bond4.24], deviceType[4],logicDevId[11], identifier[group_name_17271]",
			rankInfo{comm: "group_name_17271", rank: 1, size: 2, device: 11}, true},
		{"Entry-HcclCreateSubCommConfig: rankNum[4], rank[3], deviceLogicId[6]", rankInfo{rank: 3, size: 4, device: 6}, true},
		{"[LocalRank Key Info]userRank[6] hostIp[127.0.0.1] devicePhyId[6]", rankInfo{}, false}, // read by the key-info parser
		{"Entry-HcclAllReduce: tag[x], localRank[0]", rankInfo{}, false},
		{"rank[99999999999]", rankInfo{}, false},
	}
	for _, c := range cases {
		got, ok := parseRankLine([]byte(c.msg))
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("parseRankLine(%q) = %+v %v, want %+v %v", c.msg, got, ok, c.want, c.ok)
		}
	}
}

func TestPeersAndScreenRank(t *testing.T) {
	cases := []struct {
		text  string
		peers []string
		rank  int
	}{
		{"[rank3]:[PID: 9] 2026-03-18-16:50:00.000.000 Communication_Error_Timeout(EI0002): A timeout occurs when the Notify register waits for execution. Waiting peer rank: 27; task information: …", []string{"rank 27"}, 3},
		{"EI0002: [PID: 9] ts The wait execution of the Notify register times out. Reason: The Notify register has not received the Notify record from remote rank: [4]", []string{"rank 4"}, -1},
		{"[ERROR] HCCL(1,x):ts [heartbeat.cc:951] [8970][TaskExecStage][HeartbeatAbnormal]Cluster Exception Location[IP/ID]:[127.10.0.1/1], Arrival Time:[…]", []string{"127.10.0.1/1"}, -1},
		{"Reason: No rank in the communicator can connect to the root node within the timeout period. List of unconnected ranks: \"[1,3,]\".", []string{"rank 1", "rank 3"}, -1},
		{"[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:5) ERR01100 OPS call acl api failed", nil, 5},
		{"[rankX]: nothing", nil, -1},
	}
	for _, c := range cases {
		if got := peersOf(c.text); !slices.Equal(got, c.peers) {
			t.Errorf("peersOf(%q) = %q, want %q", c.text, got, c.peers)
		}
		if got := screenRank([]byte(c.text)); got != c.rank {
			t.Errorf("screenRank(%q) = %d, want %d", c.text, got, c.rank)
		}
	}
}

func TestParseNodeZones(t *testing.T) {
	got, err := ParseNodeZones([]string{"node-1=+08:00", "node-2=Asia/Kolkata"})
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]int{"node-1": 8 * 3600, "node-2": 5*3600 + 30*60} {
		if _, off := time.Date(2026, 3, 18, 0, 0, 0, 0, got[node]).Zone(); off != want {
			t.Errorf("%s: offset %d, want %d", node, off, want)
		}
	}
	for _, bad := range [][]string{{"=UTC"}, {"node-1"}, {"node-1=+15:00"}, {"node-1=Mars/Olympus"}} {
		if _, err := ParseNodeZones(bad); err == nil {
			t.Errorf("ParseNodeZones(%q) accepted", bad)
		}
	}
}

// FuzzEventParsers: the rank, peer and screen-rank readers never panic and
// keep their results in range.
func FuzzEventParsers(f *testing.F) {
	for _, s := range []string{
		"Entry-HcclCommInitRootInfo:ranks[2048], rank[0], identifier[x], deviceLogicId[0]",
		"Waiting peer rank: 27; List of unconnected ranks: \"[1,3,]\" crimer rank [1.2.3.4/5]",
		"[rank3]: RankID: 9 rank[ rank[] rank[-1] identifier[",
		"\xff\xfe[rank",
		"[LocalRank Key Info]userRank[6] hostIp[10.20.1.12] devicePhyId[6] server[10.20.1.12]",
		"server[%bond4.24] serverId[a b] hostIp[] server[10.0.0.1%enp189s0f0]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ri, ok := parseRankLine([]byte(s)); ok && (ri.rank < 0 || ri.size < 0 || ri.device < -1) {
			t.Fatalf("parseRankLine(%q) = %+v", s, ri)
		}
		if ps := peersOf(s); len(ps) > maxPeersPerLine {
			t.Fatalf("peersOf(%q): %d peers", s, len(ps))
		}
		if r := screenRank([]byte(s)); r < -1 {
			t.Fatalf("screenRank(%q) = %d", s, r)
		}
		if srv := serverOf([]byte(s)); srv != "" && (!plausibleServer(srv) || strings.ContainsRune(srv, '%')) {
			t.Fatalf("serverOf(%q) = %q", s, srv)
		}
	})
}

// The captured sample: the identifier was created at 2025-12-10 11:53:27.599
// UTC and the rank printed its [Communicator Key Info] at 19:53:28.131 on
// its wall clock: UTC+8.
func TestInferNodeZone(t *testing.T) {
	printed := time.Date(2025, 12, 10, 19, 53, 28, 131e6, time.UTC)
	cases := []struct {
		sync   map[string]time.Time
		offset int
		ok     bool
	}{
		{map[string]time.Time{"127.0.0.1%enp_60000_0_1765367607599032": printed}, 8 * 3600, true},
		{map[string]time.Time{"127.0.0.1%enp_60000_0_1765367607599032": printed.Add(-8 * time.Hour)}, 0, true},
		{map[string]time.Time{"127.0.0.1%enp_60000_0_1765367607599032": printed.Add(-8*time.Hour - 20*time.Minute)}, 0, false}, // before its creation
		{map[string]time.Time{"hccl_world_group": printed}, 0, false},
		{map[string]time.Time{"x_99999999999999999": printed}, 0, false},
	}
	for i, c := range cases {
		loc, _, ok := inferNodeZone(c.sync, time.UTC)
		if ok != c.ok {
			t.Errorf("case %d: ok %v", i, ok)
			continue
		}
		if ok {
			if _, off := printed.In(loc).Zone(); off != c.offset {
				t.Errorf("case %d: offset %d, want %d", i, off, c.offset)
			}
		}
	}
}
