package hcclenv

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValueRanges(t *testing.T) {
	tests := []struct {
		name, printed, unit string
		want                float64
		ok, rejected        bool
	}{
		{BuffSize, "200", "M", 200 << 20, true, false},
		{BuffSize, "200", "", 200 << 20, true, false}, // untagged lines may omit the unit
		{BuffSize, "1", "M", 1 << 20, true, false},
		{BuffSize, "0", "M", 0, false, true},
		{BuffSize, "-5", "M", 0, false, true},
		{BuffSize, "1e26", "M", 0, false, true},
		{BuffSize, "NaN", "M", 0, false, true},
		{BuffSize, "+Inf", "M", 0, false, true},
		{BuffSize, "1e400", "M", 0, false, true},
		{BuffSize, "EmptyString", "", 0, false, false},
		{QPsPerConnection, "16", "", 16, true, false},
		{QPsPerConnection, "32", "", 32, true, false},
		{QPsPerConnection, "33", "", 0, false, true},
		{QPsPerConnection, "0", "", 0, false, true},
		{ConnectTimeout, "600", "s", 600, true, false},
		{ConnectTimeout, "60", "s", 0, false, true},
		{ExecTimeout, "600.00", "s", 600, true, false},
		{MultiQPThreshold, "512", "KB", 512 << 10, true, false},
		{IntraRoCEEnable, "1", "", 1, true, false},
		{IntraRoCEEnable, "2", "", 0, false, true},
		{InterHCCSDisable, "TRUE", "", 1, true, false},
		{InterHCCSDisable, "false", "", 0, true, false},
		{QPPortConfigPath, "/a/b", "", 0, false, false},
		{"HCCL_UNKNOWN_NUMBER", "1e26", "", 1e26, true, false}, // no range known: converted
		{"HCCL_UNKNOWN_NUMBER", "NaN", "", 0, false, true},
	}
	for _, tc := range tests {
		v, ok, err := Value(tc.name, tc.printed, tc.unit)
		var oor *ErrOutOfRange
		if got := errors.As(err, &oor); got != tc.rejected {
			t.Errorf("%s=%q%s: rejected %v (err %v), want %v", tc.name, tc.printed, tc.unit, got, err, tc.rejected)
		}
		if ok != tc.ok || ok && v != tc.want {
			t.Errorf("%s=%q%s: got %v, %v; want %v, %v", tc.name, tc.printed, tc.unit, v, ok, tc.want, tc.ok)
		}
		if ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Errorf("%s=%q: non-finite %v accepted", tc.name, tc.printed, v)
		}
	}
}

func TestTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range All() {
		if seen[s.Name] {
			t.Errorf("%s defined twice", s.Name)
		}
		seen[s.Name] = true
		if s.Effective == "" || len(s.Wordings) == 0 {
			t.Errorf("%s: say what makes it effective and how it is printed", s.Name)
		}
		if s.Kind == Text {
			continue
		}
		if s.Min > s.Max {
			t.Errorf("%s: min %v > max %v", s.Name, s.Min, s.Max)
		}
		// HCCL's default must itself be in HCCL's range.
		own := s.Default / unitScale[s.Unit]
		if own < s.Min || own > s.Max {
			t.Errorf("%s: default %v outside [%v, %v]", s.Name, own, s.Min, s.Max)
		}
	}
}

func TestQPsPerLinkAndBuffer(t *testing.T) {
	for n, want := range map[float64]float64{1: 1, 2: 3, 4: 5, 16: 17, 32: 33} {
		if got := QPsPerLink(n); got != want {
			t.Errorf("QPsPerLink(%v) = %v, want %v", n, got, want)
		}
	}
	if got := CCLBufferBytes(200 << 20); got != 420478976 {
		t.Errorf("CCLBufferBytes(200 MiB) = %v, want 420478976 (HCOMM's one block)", got)
	}
}

// FuzzValue: whatever a log prints, Value never panics, never returns a
// non-finite number, and a value of a defined variable it accepts lies in
// HCCL's range.
func FuzzValue(f *testing.F) {
	for _, s := range All() {
		f.Add(s.Name, "1", s.Unit)
	}
	for _, v := range []string{"200", "NaN", "-5", "1e26", "+Inf", "1e400", "0x10", "TRUE", "", "3600.00", "512"} {
		f.Add(BuffSize, v, "M")
		f.Add(QPsPerConnection, v, "")
	}
	f.Fuzz(func(t *testing.T, name, printed, unit string) {
		v, ok, err := Value(name, printed, unit)
		if err != nil && ok {
			t.Fatalf("Value(%q, %q, %q) = %v with both ok and %v", name, printed, unit, v, err)
		}
		if !ok {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Value(%q, %q, %q) = %v", name, printed, unit, v)
		}
		if s, defined := Lookup(name); defined && s.Kind != Text {
			own := v / unitScale[s.Unit]
			if own < s.Min*(1-1e-9) || own > s.Max*(1+1e-9) {
				t.Fatalf("Value(%q, %q, %q) = %v outside [%v, %v]", name, printed, unit, own, s.Min, s.Max)
			}
		}
	})
}

// TestMultiQPThresholdInBytes: Ascend 950 prints HCCL_MULTI_QP_THRESHOLD
// in bytes (`[HCCL_ENV] HCCL_MULTI_QP_THRESHOLD set by %s to [%u]B`,
// HCOMM-HEAD ascend950 base_config_legacy.cc:133); the range stays in KB.
func TestMultiQPThresholdInBytes(t *testing.T) {
	if v, ok, err := Value(MultiQPThreshold, "524288", "B"); !ok || err != nil || v != 512<<10 {
		t.Errorf("512 KiB printed in bytes: %v %v %v", v, ok, err)
	}
	if v, ok, err := Value(MultiQPThreshold, "512", "KB"); !ok || err != nil || v != 512<<10 {
		t.Errorf("512 KB: %v %v %v", v, ok, err)
	}
	if _, ok, err := Value(MultiQPThreshold, "9000000000", "B"); ok || err == nil {
		t.Error("a threshold above 8192 KB printed in bytes must be refused")
	}
}

// TestRDMATCMultipleOf4: HCCL requires HCCL_RDMA_TC to be a multiple of 4
// in [0, 255] (HCCL docs HCCL_RDMA_TC.md); others are refused at init.
func TestRDMATCMultipleOf4(t *testing.T) {
	for printed, ok := range map[string]bool{"132": true, "100": true, "0": true, "252": true, "130": false, "255": false, "256": false} {
		v, got, err := Value(RDMATC, printed, "")
		if got != ok || (err == nil) != ok {
			t.Errorf("Value(HCCL_RDMA_TC, %s) = %v, %v, %v; want accepted %v", printed, v, got, err, ok)
		}
		if printed == "130" {
			var e *ErrOutOfRange
			if !errors.As(err, &e) || e.Step != 4 || !strings.Contains(err.Error(), "multiple of 4") {
				t.Errorf("130: error %v does not say it must be a multiple of 4", err)
			}
		}
	}
}
