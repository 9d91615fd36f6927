package hccn

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/prometheus/client_golang/prometheus"
)

// seeds adds every capture and the full -stat dump to a fuzz corpus.
func seeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.txt"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	files = append(files, filepath.Join("testdata", "stat-full-from-format.txt"))
	for _, file := range files {
		b := readFile(f, file)
		f.Add(b)
		f.Add(dropElisions(b))
	}
}

// exportable checks that a reading built from fuzzed output exports
// through a pedantic registry (valid label values, no duplicate series).
func exportable(t *testing.T, r *Reading) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(readingAdapter{r})
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
}

var fuzzDevice = Device{PhyID: 0, ChipID: ascend.ChipID{NPU: "0", Chip: "0"}}

func FuzzParseLink(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		up, err := ParseLink(in)
		if err != nil && up {
			t.Fatal("up with an error")
		}
		exportable(t, &Reading{Device: fuzzDevice, LinkUp: up, HasLink: err == nil})
	})
}

func FuzzParseLinkStat(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseLinkStat(in, time.UTC)
		if err != nil {
			if s.UpCount != 0 || s.Records != nil {
				t.Fatal("values returned with an error")
			}
			return
		}
		if len(s.Records) > len(in) || s.DownRecords() > len(s.Records) {
			t.Fatalf("records %d from %d bytes", len(s.Records), len(in))
		}
		c := newCollector(Config{}, Deps{}, nil)
		v := c.downEvents(0, s)
		if v < 0 || (s.HasDownCount && v != float64(s.DownCount)) {
			t.Fatalf("down events %v from %+v", v, s)
		}
		exportable(t, &Reading{Device: fuzzDevice, LinkStat: &s, LinkDownEvents: v})
	})
}

func FuzzParseNetHealth(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, raw, err := ParseNetHealth(in)
		if err != nil {
			return
		}
		if raw == "" || NormalizeNetHealth(raw) != s {
			t.Fatalf("status %q from raw %q", s, raw)
		}
		found := false
		for _, st := range NetHealthStates {
			found = found || st == s
		}
		if !found {
			t.Fatalf("status %q outside the state set", s)
		}
		exportable(t, &Reading{Device: fuzzDevice, NetHealth: s})
	})
}

func FuzzParseQPInfo(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		qps, err := ParseQPInfo(in)
		if err != nil {
			if qps != nil {
				t.Fatal("rows returned with an error")
			}
			return
		}
		for _, q := range qps {
			if q.IP == "" {
				t.Fatalf("row without a peer: %+v", q)
			}
		}
		exportable(t, &Reading{Device: fuzzDevice, QPs: qps, HasQPs: true})
	})
}

func FuzzParseStat(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := ParseStat(in)
		if err != nil {
			if s != nil {
				t.Fatal("counters returned with an error")
			}
			return
		}
		if len(s) == 0 {
			t.Fatal("no counters and no error")
		}
		exportable(t, &Reading{Device: fuzzDevice, Stat: s})
	})
}

// FuzzParseWire: -optical, -tls and -speed answers never panic, give
// finite values and lanes that are one digit, and export cleanly.
func FuzzParseWire(f *testing.F) {
	seeds(f)
	f.Add([]byte("Tx Power9 : 1e308 mW\nRx Power : NaN mW\ntemperature : -0 C\n"))
	f.Add([]byte("Speed: 4294967295 Mb/s"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &Reading{Device: fuzzDevice}
		if o, err := ParseOptical(in); err == nil {
			for _, m := range []map[string]float64{o.TxPowerW, o.RxPowerW, o.TxBiasA} {
				for lane, v := range m {
					if len(lane) != 1 || lane[0] < '0' || lane[0] > '9' || v != v || math.IsInf(v, 0) {
						t.Fatalf("lane %q value %v", lane, v)
					}
				}
			}
			r.Optical = &o
		}
		if on, err := ParseTLS(in); err == nil {
			r.TLSEnabled, r.HasTLS = on, true
		}
		if v, known, err := ParseSpeed(in); err == nil && known {
			if v < 0 || v > 1e15 {
				t.Fatalf("speed %v", v)
			}
			r.SpeedBytesPerSecond, r.HasSpeed = v, true
		}
		exportable(t, r)
	})
}
