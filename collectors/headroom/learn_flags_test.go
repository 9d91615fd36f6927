package headroom

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

func TestLearnFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    LearnConfig
		invalid string // part of Validate's error; "" valid
	}{
		{args: nil, want: LearnConfig{QPSize: true, MinObservations: 3, WorkloadTTL: 7 * 24 * time.Hour, MaxWorkloads: 256}},
		{args: []string{"--no-headroom.learn-qp-size", "--headroom.learn-min-observations=5", "--headroom.workload-memory-ttl=48h",
			"--headroom.workload-memory-max=10"}, want: LearnConfig{QPSize: false, MinObservations: 5, WorkloadTTL: 48 * time.Hour, MaxWorkloads: 10}},
		{args: []string{"--headroom.learn-min-observations=0"}, invalid: "learn-min-observations"},
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
