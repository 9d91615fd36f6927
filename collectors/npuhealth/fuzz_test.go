package npuhealth

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// seeds are every answer of the 910B fixture plus shapes the parsers must
// survive: messages, cut lines, arrays of unequal length.
func seeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "910b", "*.txt"))
	cards, _ := filepath.Glob(filepath.Join("testdata", "card", "*.txt"))
	files = append(files, cards...)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "\n\n", " : ", "\tError Code                     :\n",
		"This device does not support querying hccs.\n",
		"dcmi model initialized failed, because the device is used. ret is -8020\n",
		"\thccs lane mode : [4 4]\n\thccs error count : [0]\n",
		"\thccs tx packets : [NA    1   ]\n", "\thccs tx packets : [\n",
		"\tHBM Double Bit Next-Isolated Pages Count : 4294967295\n",
		"\tVDie ID : 42C711D4 20B03704\n", "\tAicore Usage Rate(%) : 101\n",
		"\tVoltage(V) : NA\n", "\tVoltage(V) : 1e309\n", "\tChip ID : x\n\tAicore Freq(MHZ) : 1800\n",
		"\tSerial Number : a\x01b\n",
		"\tA : 1\nFailed to query npu chip: 0 info.\n\tB : 2\n\tChip ID : 0\n",
	} {
		f.Add([]byte(s))
	}
}

// FuzzParsers: no parser panics, and what one accepts is sane.
func FuzzParsers(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := ParseHealth(b); err == nil {
			for _, c := range h.Codes {
				if !isHexCode(c) {
					t.Fatalf("code %q accepted", c)
				}
			}
		}
		if e, err := ParseECC(b); err == nil {
			for _, p := range e.Pending {
				if p.OK && p.V >= pendingMax {
					t.Fatalf("pending %v accepted", p.V)
				}
			}
		}
		_, _ = ParseECCEnable(b)
		_, _ = ParsePCIeErr(b)
		_, _ = ParseSIO(b)
		if h, err := ParseHCCS(b); err == nil {
			for _, a := range [][]float64{h.Lanes, h.TxPackets, h.RxPackets, h.Retries, h.Errors} {
				if a != nil && len(a) != h.Links {
					t.Fatalf("array of %d links, Links %d", len(a), h.Links)
				}
			}
		}
		_, _, _ = ParseMemory(b)
		if u, err := ParseUsages(b); err == nil {
			for e, v := range u.Engines {
				if v < 0 || v > 1 {
					t.Fatalf("engine %s ratio %v", e, v)
				}
			}
		}
		_, _ = ParseBoard(b)
		if v, ok, err := ParseVolt(b); err == nil && ok && (v < 0 || v > 100) {
			t.Fatalf("voltage %v accepted", v)
		}
		if m, err := ParseCommon(b); err == nil {
			for chip := range m {
				if chip == "" {
					t.Fatal("a chip without an id")
				}
			}
		}
		a, _ := SplitCard(b) // the chips it closed stand even with an error
		for id, block := range a.Chips {
			if _, err := strconv.Atoi(id); err != nil || len(block) == 0 || a.Failed[id] {
				t.Fatalf("chip %q: block %q (failed %v)", id, block, a.Failed[id])
			}
		}
		if inv, err := ParseCardBoard(b); err == nil && (len(inv.SerialNumber) > maxInventoryLen || len(inv.ProductName) > maxInventoryLen) {
			t.Fatalf("inventory %+v accepted", inv)
		}
	})
}
