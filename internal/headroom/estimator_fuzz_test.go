package headroom

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzEstimatorState: a state-file blob either loads or is refused; what
// loads gives finite, positive estimates and survives another round trip.
func FuzzEstimatorState(f *testing.F) {
	f.Add([]byte(`{"version":1,"observations":{"910B3|910b_op_base|24.1":{"values":[2097152,2097152,2097152],"total":3}},"refused":{"capture":2}}`))
	f.Add([]byte(`{"version":1,"observations":{"no-separators":{"values":[1]}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"observations":{"a|b|c":{"values":[-1,0,1e300]}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e := NewEstimator(EstimatorConfig{MinObservations: 1})
		if err := e.UnmarshalJSON(b); err != nil {
			return
		}
		keys, _ := e.Snapshot()
		for _, k := range keys {
			if v, _, ok := e.Estimate("", k.Key); ok && (!(v > 0) || math.IsInf(v, 0)) {
				t.Fatalf("estimate %v for %+v", v, k.Key)
			}
		}
		out, err := e.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := NewEstimator(EstimatorConfig{}).UnmarshalJSON(out); err != nil {
			t.Fatalf("a blob it wrote does not load: %v", err)
		}
	})
}

// FuzzEstimatorObserve: any sequence of samples never panics and never
// learns a size that is not a positive finite number.
func FuzzEstimatorObserve(f *testing.F) {
	f.Add([]byte{0, 10, 0, 10, 0, 10, 40, 74, 40, 74, 40, 74})
	f.Add([]byte{255, 255, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		e := NewEstimator(EstimatorConfig{MinObservations: 1})
		at := time.Unix(1_800_000_000, 0)
		for len(b) >= 2 {
			v := binary.BigEndian.Uint16(b)
			b = b[2:]
			at = at.Add(time.Duration(v%7) * 20 * time.Second)
			qps := float64(v >> 8)
			hbm := float64(v&0xff) * 64 * mib
			if v&1 == 1 {
				hbm = math.NaN()
			}
			e.Observe(ChipSample{NPU: "0", Chip: "0", Product: "p", Driver: "d", At: at, HBMUsedBytes: hbm,
				QPsByMode: map[string]float64{QPModeGraph.Name: qps}, Processes: "1", LiveQPs: -1, Owner: "uid:1000", OwnerKernel: true})
		}
		if v, _, ok := e.Estimate("uid:1000", LearnKey{"p", QPModeGraph.Name, "d"}); ok && (!(v > 0) || math.IsInf(v, 0)) {
			t.Fatalf("learned %v", v)
		}
	})
}
