package npusmi

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

func mb(n float64) ascend.Value { return ascend.Value{V: n * mib, OK: true} }
func v(n float64) ascend.Value  { return ascend.Value{V: n, OK: true} }

var na ascend.Value // placeholder: no sample

// wantChip lists the fields a table test checks for one chip; Name, BusID,
// Health and PhyID are compared as strings.
type wantChip struct {
	npu, chip, phy, name, bus, health    string
	hbmUsed, hbmTotal, memUsed, memTotal ascend.Value
	hugeUsed, hugeTotal                  ascend.Value
	aicore, power, temp                  ascend.Value
}

type wantProc struct {
	npu, chip string
	pid       int
	name      string
	mem       ascend.Value
	cpid      string
}

func TestParseLayouts(t *testing.T) {
	for _, tc := range []struct {
		file              string
		version, driver   string
		chips             int
		check             []wantChip
		procs             []wantProc
		warnings, notices int
	}{
		{
			file: "info-910a-8npu-v24.1.0.txt", version: "24.1.0", driver: "24.1.0", chips: 8,
			check: []wantChip{
				{npu: "0", chip: "0", name: "910B", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: mb(1365), hbmTotal: mb(32768), memUsed: mb(1197), memTotal: mb(13553),
					hugeUsed: na, hugeTotal: na, aicore: v(0), power: v(70), temp: v(34)},
				{npu: "7", chip: "0", name: "910B", bus: "0000:02:00.0", health: "OK",
					hbmUsed: mb(4), hbmTotal: mb(32768), memUsed: mb(1777), memTotal: mb(15567),
					aicore: v(0), power: v(65.6), temp: v(33)},
			},
		},
		{
			file: "info-910a-warning-v23.0.rc1-all-npus.txt", version: "23.0.rc1.b070", driver: "23.0.rc1.b070", chips: 4,
			check: []wantChip{
				{npu: "2", chip: "0", name: "910A", bus: "0000:41:00.0", health: "Warning",
					hbmUsed: mb(30750), hbmTotal: mb(32768), memUsed: mb(1667), memTotal: mb(15137),
					aicore: v(0), power: v(70.8), temp: v(37)},
				{npu: "3", chip: "0", name: "910A", bus: "0000:01:00.0", health: "Warning",
					hbmUsed: mb(0), hbmTotal: mb(32768), memUsed: mb(2777), memTotal: mb(15039),
					aicore: v(0), power: v(68.8), temp: v(39)},
			},
		},
		{
			file: "info-910-hugepages-procs-excerpt.txt", version: "23.0.rc3", driver: "23.0.rc2.3", chips: 2,
			check: []wantChip{
				{npu: "0", chip: "0", name: "xxx", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: mb(30710), hbmTotal: mb(32768), memUsed: mb(4565), memTotal: mb(15137),
					hugeUsed: v(1123), hugeTotal: v(1123), aicore: v(0), power: v(73.4), temp: v(44)},
			},
			procs: []wantProc{
				{npu: "0", chip: "0", pid: 139667, name: "python", mem: mb(30780)},
				{npu: "1", chip: "0", pid: 139577, name: "python", mem: mb(30782)},
				{npu: "2", chip: "0", pid: 139446, name: "python", mem: mb(30780)},
			},
		},
		{
			file: "info-910b1-excerpt-v23.0.rc2.txt", version: "23.0.rc2", driver: "23.0.rc2", chips: 3,
			check: []wantChip{
				{npu: "7", chip: "0", name: "910B1", bus: "0000:42:00.0", health: "OK",
					hbmUsed: mb(4174), hbmTotal: mb(65536), memUsed: na, memTotal: na,
					aicore: v(0), power: v(92.7), temp: v(48)},
			},
		},
		{
			file: "info-910b4-procs-v24.1.rc3.txt", version: "24.1.rc3", driver: "24.1.rc3", chips: 8,
			check: []wantChip{
				{npu: "0", chip: "0", name: "910B4", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: mb(22283), hbmTotal: mb(32768), aicore: v(0), power: v(85), temp: v(36)},
				{npu: "6", chip: "0", name: "910B4", bus: "0000:82:00.0", health: "OK",
					hbmUsed: mb(30759), hbmTotal: mb(32768), aicore: v(0.82), power: v(263.2), temp: v(46)},
			},
			procs: []wantProc{
				{npu: "0", chip: "0", pid: 582939, mem: mb(19502)},
				{npu: "1", chip: "0", pid: 695171, mem: mb(19498)},
				{npu: "6", chip: "0", pid: 99910, mem: mb(27977)},
				{npu: "7", chip: "0", pid: 99976, mem: mb(27977)},
			},
		},
		{
			file: "info-310-v23.0.0.txt", version: "23.0.0", driver: "23.0.0", chips: 1,
			check: []wantChip{
				{npu: "0", chip: "0", name: "310", bus: "0000:01:00.0", health: "OK",
					hbmUsed: na, hbmTotal: na, memUsed: mb(577), memTotal: mb(7759),
					hugeUsed: v(0), hugeTotal: v(969), aicore: v(0), power: v(12.8), temp: v(61)},
			},
		},
		{
			file: "info-310p3-npu6-v25.3.rc1.txt", version: "25.3.rc1", driver: "25.3.rc1", chips: 1,
			check: []wantChip{
				{npu: "6", chip: "0", name: "310P3", bus: "0000:84:00.0", health: "OK",
					memUsed: mb(1839), memTotal: mb(21525), aicore: v(0), power: na, temp: v(50)},
			},
		},
		{
			// Two chips per NPU sharing a Bus-Id, dash-only separators everywhere.
			file: "info-310p3-duo-dash-separators.txt", version: "23.0.3", driver: "23.0.3", chips: 4,
			check: []wantChip{
				{npu: "1792", chip: "0", name: "310P3", bus: "0000:3B:00.0", health: "OK",
					memUsed: mb(11943), memTotal: mb(44280), aicore: v(0.12), power: na, temp: v(52)},
				{npu: "1792", chip: "1", name: "310P3", bus: "0000:3B:00.0", health: "OK",
					memUsed: mb(1263), memTotal: mb(44280), aicore: v(0), power: na, temp: v(50)},
				{npu: "2048", chip: "0", name: "310P3", bus: "0000:86:00.0", health: "Alarm",
					memUsed: mb(1270), memTotal: mb(44280), aicore: v(0), power: na, temp: v(49)},
				{npu: "2048", chip: "1", name: "310P3", bus: "0000:86:00.0", health: "OK",
					memUsed: mb(1259), memTotal: mb(44280), aicore: v(0), power: na, temp: v(48)},
			},
			procs: []wantProc{{npu: "1792", chip: "0", pid: 40211, name: "mindie_llm_back", mem: mb(10676)}},
		},
		{
			// Atlas A3: two dies per NPU, Phy-ID column, die 1 prints power "-".
			file: "info-a3-910_93-2die.txt", version: "24.1.rc2.3", driver: "24.1.rc2.3", chips: 4,
			check: []wantChip{
				{npu: "0", chip: "0", phy: "0", name: "Ascend910", bus: "0000:9D:00.0", health: "OK",
					hbmUsed: mb(52358), hbmTotal: mb(65536), aicore: v(0.15), power: v(171.3), temp: v(38)},
				{npu: "0", chip: "1", phy: "1", name: "Ascend910", bus: "0000:9F:00.0", health: "OK",
					hbmUsed: mb(49720), hbmTotal: mb(65536), aicore: v(0.12), power: na, temp: v(39)},
				{npu: "1", chip: "1", phy: "3", name: "Ascend910", bus: "0000:9B:00.0", health: "OK",
					hbmUsed: mb(2876), hbmTotal: mb(65536), aicore: v(0), power: na, temp: v(37)},
			},
			procs: []wantProc{
				{npu: "0", chip: "0", pid: 3229095, name: "pt_main_thread", mem: mb(49207)},
				{npu: "0", chip: "1", pid: 3229101, name: "pt_main_thread", mem: mb(46590)},
			},
		},
		{
			file: "info-a3-container-pid.txt", version: "25.0.rc1", driver: "25.0.rc1", chips: 2,
			check: []wantChip{
				{npu: "4", chip: "1", phy: "9", name: "Ascend910", bus: "0000:1F:00.0", health: "OK",
					hbmUsed: mb(51990), hbmTotal: mb(65536), aicore: v(0.33), power: na, temp: v(40)},
			},
			procs: []wantProc{
				{npu: "4", chip: "0", pid: 2871543, name: "mindie_llm_back", mem: mb(49207), cpid: "NA"},
				{npu: "4", chip: "1", pid: 2871544, name: "", mem: mb(48801), cpid: "213"},
			},
		},
		{
			// Ascend 950: separate NPU ID and Name columns, NPU Util, Bus-Id NA,
			// process rows without a chip column.
			file: "info-950-a5.txt", version: "25.5.0", driver: "25.5.0", chips: 2,
			check: []wantChip{
				{npu: "0", chip: "0", name: "Ascend950DT", bus: "", health: "OK",
					hbmUsed: mb(81920), hbmTotal: mb(98304), aicore: v(0.63), power: v(412.6), temp: v(47)},
				{npu: "1", chip: "0", name: "Ascend950DT", bus: "", health: "OK",
					hbmUsed: mb(3410), hbmTotal: mb(98304), aicore: v(0), power: v(398.1), temp: v(46)},
			},
			procs: []wantProc{{npu: "0", chip: "0", pid: 77031, name: "VLLMEngineCor", mem: mb(78002)}},
		},
		{
			// Wider columns, numbers in odd spacing, HBM used NA, trailing driver warning.
			file: "info-wide-910b3-warning.txt", version: "25.2.0", driver: "25.2.0", chips: 3, notices: 1,
			check: []wantChip{
				{npu: "0", chip: "0", name: "910B3", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: mb(58154), hbmTotal: mb(65536), aicore: v(0), power: v(97.3), temp: v(44)},
				{npu: "1", chip: "0", name: "910B3", bus: "0000:01:00.0", health: "Critical",
					hbmUsed: na, hbmTotal: mb(65536), aicore: v(0), power: v(93), temp: v(43)},
			},
			procs: []wantProc{{npu: "0", chip: "0", pid: 207795, name: "VLLMEngineCor", mem: mb(55436)}},
		},
		{
			// "Process memory(B)": the process column is already in bytes.
			file: "info-910a-process-memory-bytes.txt", version: "23.0.rc1.b070", driver: "23.0.rc1.b070", chips: 1,
			check: []wantChip{
				{npu: "0", chip: "0", name: "910A", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: mb(3075), hbmTotal: mb(32768), memUsed: mb(938), memTotal: mb(15137),
					aicore: v(0.14), power: v(72), temp: v(39)},
			},
			procs: []wantProc{{npu: "0", chip: "0", pid: 41234, name: "python", mem: v(3221225472)}},
		},
		{
			// Rows that must be dropped with a counted warning, never exported.
			file: "info-bad-rows.txt", version: "24.1.rc3", driver: "24.1.rc3", chips: 2, warnings: 9,
			check: []wantChip{
				{npu: "0", chip: "0", name: "910B4", bus: "0000:C1:00.0", health: "OK",
					hbmUsed: na, hbmTotal: na, aicore: v(0), power: v(85), temp: v(36)}, // 40000 > 32768
				{npu: "1", chip: "0", name: "910B4", bus: "0000:01:00.0", health: "Degraded",
					hbmUsed: mb(22267), hbmTotal: mb(32768), hugeUsed: na, hugeTotal: na,
					aicore: na, power: v(84.2), temp: v(36)}, // "5.s" and 150% dropped
			},
			procs: []wantProc{
				{npu: "0", chip: "0", pid: 582939, name: "python", mem: mb(19502)},
				{npu: "1", chip: "0", pid: 695171, name: "python", mem: na},
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Parse(readFile(t, filepath.Join("testdata", tc.file)))
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != tc.version || s.DriverVersion != tc.driver {
				t.Errorf("version %q driver %q, want %q %q", s.Version, s.DriverVersion, tc.version, tc.driver)
			}
			if len(s.Chips) != tc.chips {
				t.Errorf("%d chips, want %d", len(s.Chips), tc.chips)
			}
			if len(s.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", s.Warnings, tc.warnings)
			}
			if len(s.Notices) != tc.notices {
				t.Errorf("notices %q, want %d", s.Notices, tc.notices)
			}
			for _, w := range tc.check {
				c := findChip(s, w.npu, w.chip)
				if c == nil {
					t.Errorf("no chip npu=%s chip=%s", w.npu, w.chip)
					continue
				}
				gotS := [...]string{c.PhyID, c.Name, c.BusID, c.Health}
				wantS := [...]string{w.phy, w.name, w.bus, w.health}
				if gotS != wantS {
					t.Errorf("npu %s chip %s: phy/name/bus/health %q, want %q", w.npu, w.chip, gotS, wantS)
				}
				for _, f := range []struct {
					name      string
					got, want ascend.Value
				}{
					{"hbm used", c.HBMUsedBytes, w.hbmUsed}, {"hbm total", c.HBMTotalBytes, w.hbmTotal},
					{"memory used", c.MemoryUsedBytes, w.memUsed}, {"memory total", c.MemoryTotalBytes, w.memTotal},
					{"hugepages used", c.HugepagesUsed, w.hugeUsed}, {"hugepages total", c.HugepagesTotal, w.hugeTotal},
					{"aicore", c.AICoreRatio, w.aicore}, {"power", c.PowerWatts, w.power}, {"temp", c.TemperatureCelsius, w.temp},
				} {
					if f.got != f.want {
						t.Errorf("npu %s chip %s %s = %+v, want %+v", w.npu, w.chip, f.name, f.got, f.want)
					}
				}
			}
			if tc.procs != nil && len(s.Processes) != len(tc.procs) {
				t.Errorf("%d processes, want %d: %+v", len(s.Processes), len(tc.procs), s.Processes)
			}
			for i, w := range tc.procs {
				if i >= len(s.Processes) {
					break
				}
				p := s.Processes[i]
				got := wantProc{p.NPU, p.Chip, p.PID, p.Name, p.MemoryBytes, p.ContainerPID}
				if got != w {
					t.Errorf("process %d = %+v, want %+v", i, got, w)
				}
			}
		})
	}
}

func findChip(s *Snapshot, npu, chip string) *Chip {
	for i := range s.Chips {
		if s.Chips[i].NPU == npu && s.Chips[i].Chip == chip {
			return &s.Chips[i]
		}
	}
	return nil
}

// TestParseFailures: outputs without a usable table are errors that say why.
func TestParseFailures(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		is       error
		want     string
	}{
		{"dcmi", "dcmi module initialize failed. ret is -8005\n", ErrDCMIInit, "-8005"},
		{"dcmi as non-root", "DrvMngGetConsoleLogLevel failed. (ret=4)\ndcmi module initialize failed. ret is -8005\n", ErrDCMIInit, "reboot"},
		{"no card", "There is no NPU card on this server.\n", ErrNoCard, "no NPU card"},
		{"empty", "", ErrNoTable, "empty"},
		{"blank", "\n\n  \n", ErrNoTable, "empty"},
		{"garbage", "\x00\x01\xff\xfegarbage\n", ErrNoTable, "garbage"},
		{"usage text", "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n", ErrNoTable, "Usage"},
		{"header only", "| NPU   Name | Health | Power(W)    Temp(C)  Hugepages-Usage(page)|\n" +
			"| Chip | Bus-Id | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB) |\n+---+\n", ErrNoChips, ""},
		{"all rows bad", "| NPU   Name | Health | Power(W)    Temp(C)  Hugepages-Usage(page)|\n" +
			"| Chip | Bus-Id | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB) |\n" +
			"| x 910B | OK | 1 2 0 / 0 |\n| 0 | 0000:01:00.0 | 0 0 / 0 1 / 2 |\n+---+\n", ErrNoChips, "rows dropped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.in))
			if !errors.Is(err, tc.is) {
				t.Fatalf("Parse = %v, %v; want %v", s, err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should mention %q", err, tc.want)
			}
		})
	}
	// A header without its second row is a layout Parse does not know.
	if _, err := Parse([]byte("| NPU   Name | Health | Power(W) Temp(C) |\n| 0 910B | OK | 1 2 |\n")); err == nil ||
		!strings.Contains(err.Error(), "Bus-Id") {
		t.Errorf("missing second header row: err = %v", err)
	}
}

// checkSnapshot asserts what Parse promises whatever its input: sane
// numbers, used ≤ total, unique keys (the registry rejects duplicates).
func checkSnapshot(t *testing.T, s *Snapshot) {
	t.Helper()
	chips := map[ascend.ChipID]bool{}
	for _, c := range s.Chips {
		k := c.ChipID
		if chips[k] {
			t.Fatalf("chip %v twice", k)
		}
		chips[k] = true
		for _, val := range []ascend.Value{c.HBMUsedBytes, c.HBMTotalBytes, c.MemoryUsedBytes, c.MemoryTotalBytes,
			c.HugepagesUsed, c.HugepagesTotal, c.AICoreRatio, c.PowerWatts, c.TemperatureCelsius} {
			if val.OK && (val.V < 0 || math.IsNaN(val.V) || math.IsInf(val.V, 0)) {
				t.Fatalf("chip %v: bad value %v", k, val.V)
			}
			if !val.OK && val.V != 0 {
				t.Fatalf("chip %v: placeholder carries %v", k, val.V)
			}
		}
		for _, p := range [][2]ascend.Value{{c.HBMUsedBytes, c.HBMTotalBytes}, {c.MemoryUsedBytes, c.MemoryTotalBytes},
			{c.HugepagesUsed, c.HugepagesTotal}} {
			if p[0].OK && p[1].OK && p[0].V > p[1].V {
				t.Fatalf("chip %v: used %v > total %v", k, p[0].V, p[1].V)
			}
		}
		if c.AICoreRatio.OK && c.AICoreRatio.V > 1 {
			t.Fatalf("chip %v: aicore ratio %v", k, c.AICoreRatio.V)
		}
	}
	procs := map[procKey]bool{}
	for _, p := range s.Processes {
		k := procKey{p.NPU, p.Chip, p.PID}
		if procs[k] {
			t.Fatalf("process %v twice", k)
		}
		procs[k] = true
		if p.PID <= 0 || (p.MemoryBytes.OK && (p.MemoryBytes.V < 0 || math.IsInf(p.MemoryBytes.V, 0))) {
			t.Fatalf("process %+v", p)
		}
	}
}

// TestParseInvariantsOnTestdata checks the snapshot invariants on every
// captured and written output that must parse, and that the others fail as
// failingInputs says; an empty glob or no parsed file fails the test rather
// than checking nothing.
func TestParseInvariantsOnTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.txt: the invariants would be checked on nothing")
	}
	parsed := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Parse(readFile(t, f))
			if want, bad := failingInputs[filepath.Base(f)]; bad {
				if !errors.Is(err, want) {
					t.Fatalf("Parse err = %v, want %v", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkSnapshot(t, s)
			parsed++
		})
	}
	if parsed == 0 {
		t.Fatal("no testdata file parsed")
	}
}
