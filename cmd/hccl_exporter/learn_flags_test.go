package main

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

func TestLearnFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    learnFlags
		invalid string // part of Validate's error; "" valid
	}{
		{args: nil, want: learnFlags{qpSize: true, minObservations: 3, ttl: 7 * 24 * time.Hour, workloadTTL: 7 * 24 * time.Hour, maxWorkloads: 256}},
		{args: []string{"--no-headroom.learn-qp-size", "--headroom.learn-min-observations=5", "--headroom.workload-memory-ttl=48h",
			"--headroom.workload-memory-max=10", "--headroom.learn-ttl=24h", "--headroom.learn-reset"},
			want: learnFlags{qpSize: false, minObservations: 5, ttl: 24 * time.Hour, reset: true, workloadTTL: 48 * time.Hour, maxWorkloads: 10}},
		{args: []string{"--headroom.learn-min-observations=0"}, invalid: "learn-min-observations"},
		{args: []string{"--headroom.learn-ttl=0s"}, invalid: "learn-ttl"},
		{args: []string{"--headroom.workload-memory-ttl=0s"}, invalid: "workload-memory-ttl"},
		{args: []string{"--headroom.workload-memory-max=0"}, invalid: "workload-memory-max"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			app := kingpin.New("test", "")
			f := addLearnFlags(app)
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
