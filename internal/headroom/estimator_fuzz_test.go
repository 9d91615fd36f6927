package headroom

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
)

// FuzzEstimatorState: a state-file blob either loads or is refused; what
// loads is inside its mode's band and survives another round trip.
func FuzzEstimatorState(f *testing.F) {
	f.Add([]byte(`{"version":1,"observations":{"910B3|910b_op_base|24.1":{"values":[2097152,2097152,2097152],"total":3}},"refused":{"capture":2}}`))
	f.Add([]byte(`{"version":1,"observations":{"no-separators":{"values":[1]}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"observations":{"a|b|c":{"values":[-1,0,1e300]}}}`))
	f.Add([]byte(`{"version":2,"learned":[{"owner":"pod:a","kernel":true,"product":"910B3","mode":"910b_op_base","driver":"24.1",` +
		`"values":[4194304,1e300,-1],"at":[1800000000],"total":3},{"owner":"","product":"910B3","mode":"graph","driver":"24.1",` +
		`"values":[1],"at":[1,2,3]}],"refused":{"below_band":2,"nope":1}}`))
	f.Add([]byte(`{"version":2,"learned":[{"owner":"pod:a","product":"p","mode":"no_such_mode","driver":"d","values":[1]}]}`))
	f.Add([]byte(`{"version":3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e := NewEstimator(EstimatorConfig{MinObservations: 1})
		if err := e.UnmarshalJSON(b); err != nil {
			return
		}
		keys, _ := e.Snapshot()
		for _, k := range keys {
			lo, hi, known := bandOf(k.Key.Mode)
			if !known || k.Inlier > 0 && (k.Median < lo || k.Median > hi) {
				t.Fatalf("loaded %+v outside its band [%v, %v] (known mode %v)", k, lo, hi, known)
			}
		}
		l := e.Learned("24.1")
		for k, v := range l.owner {
			if lo, hi, _ := bandOf(k[2]); !(v >= lo && v <= hi) {
				t.Fatalf("owner size %v for %v outside [%v, %v]", v, k, lo, hi)
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
// learns a size outside the mode's band.
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
			e.Observe(ChipSample{ChipID: ascend.ChipID{NPU: "0", Chip: "0"}, Product: "p", Driver: "d", At: at, HBMUsedBytes: ascend.Value{V: hbm, OK: true},
				QPsByMode: map[string]float64{QPModeGraph.Name: qps}, Processes: "1", Owner: "uid:1000", OwnerKernel: true})
		}
		lo, hi := QPBand(QPModeGraph)
		if v, _, ok := e.Estimate("uid:1000", LearnKey{"p", QPModeGraph.Name, "d"}); ok && (!(v >= lo && v <= hi) || math.IsInf(v, 0)) {
			t.Fatalf("learned %v, outside [%v, %v]", v, lo, hi)
		}
	})
}
