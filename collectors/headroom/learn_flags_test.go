package headroom

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/hccl-exporter/hccl_exporter/internal/cann/logstate"
)

func TestLearnFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    LearnConfig
		invalid string // part of Validate's error; "" valid
	}{
		{args: nil, want: LearnConfig{QPSize: true, MinObservations: 3, TTL: 7 * 24 * time.Hour, WorkloadTTL: 7 * 24 * time.Hour, MaxWorkloads: 256}},
		{args: []string{"--no-headroom.learn-qp-size", "--headroom.learn-min-observations=5", "--headroom.workload-memory-ttl=48h",
			"--headroom.workload-memory-max=10", "--headroom.learn-ttl=24h", "--headroom.learn-reset"},
			want: LearnConfig{QPSize: false, MinObservations: 5, TTL: 24 * time.Hour, Reset: true, WorkloadTTL: 48 * time.Hour, MaxWorkloads: 10}},
		{args: []string{"--headroom.learn-min-observations=0"}, invalid: "learn-min-observations"},
		{args: []string{"--headroom.learn-ttl=0s"}, invalid: "learn-ttl"},
		{args: []string{"--headroom.workload-memory-ttl=0s"}, invalid: "workload-memory-ttl"},
		{args: []string{"--headroom.workload-memory-max=0"}, invalid: "workload-memory-max"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			app := kingpin.New("test", "")
			f := &AddFlags(app, nil).Learn
			if _, err := app.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := f.Validate()
			if tc.invalid != "" {
				if err == nil || !strings.Contains(err.Error(), tc.invalid) {
					t.Errorf("Validate() = %v, want an error naming %s", err, tc.invalid)
				}
				return
			}
			if err != nil || *f != tc.want {
				t.Errorf("flags %+v, %v; want %+v", *f, err, tc.want)
			}
		})
	}
}

// TestLearnResetDropsStateFile: --headroom.learn-reset drops the learned
// sizes a state file holds, with learning on or off, and the file is
// written again without them; without it they load.
func TestLearnResetDropsStateFile(t *testing.T) {
	now := time.Now().Unix()
	learned := fmt.Sprintf(`{"version":2,"learned":[{"owner":"pod:a","kernel":true,"product":"910B3","mode":"910b_op_base","driver":"24.1.rc3",`+
		`"values":[4194304],"at":[%d],"total":1}]}`, now)
	st := logstate.NewState(logstate.DefaultOptions())
	src := (&LearnConfig{QPSize: true, MinObservations: 1, TTL: time.Hour}).Estimator()
	if err := src.UnmarshalJSON([]byte(learned)); err != nil {
		t.Fatal(err)
	}
	if err := st.AttachExtension("headroom_qp_sizes", src); err != nil {
		t.Fatal(err)
	}
	file, err := st.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags LearnConfig
		kept  bool
	}{
		{LearnConfig{QPSize: true, MinObservations: 1, TTL: time.Hour}, true},
		{LearnConfig{QPSize: true, MinObservations: 1, TTL: time.Hour, Reset: true}, false},
		{LearnConfig{QPSize: false, MinObservations: 1, TTL: time.Hour, Reset: true}, false},
	} {
		t.Run(fmt.Sprintf("learn=%v,reset=%v", tc.flags.QPSize, tc.flags.Reset), func(t *testing.T) {
			st2 := logstate.NewState(logstate.DefaultOptions())
			if err := st2.UnmarshalBinary(file); err != nil {
				t.Fatal(err)
			}
			est := tc.flags.Estimator()
			if err := st2.AttachExtension("headroom_qp_sizes", est); err != nil {
				t.Fatal(err)
			}
			_, ok := est.Learned("24.1.rc3").LookupFor("pod:a", "910B3", "910b_op_base")
			out, err := st2.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			inFile := strings.Contains(string(out), `"pod:a"`)
			if ok != tc.kept || inFile != tc.kept {
				t.Errorf("learned size loaded %v, in the file written next %v; want %v", ok, inFile, tc.kept)
			}
		})
	}
	if (&LearnConfig{QPSize: false}).Estimator() != nil {
		t.Error("an estimator with learning off and no Reset: the state file's sizes would be rewritten, not kept")
	}
}
