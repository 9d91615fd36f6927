package backtest

import (
	"strings"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/alerts"
)

func TestCompressRules(t *testing.T) {
	in := `groups:
  - name: g
    rules:
      - alert: "A"
        expr: |
          rate(x[5m]) > 0 unless y offset 10m and max_over_time(z[1h:1m]) > 0 and w[30s:]
        for: "2m"
        labels:
          resource: qp
        annotations:
          description: "for 2m the value [1] of x{resource=\"qp\"}"
      - alert: B
        expr: v > 0
        for: 0m
`
	got, err := CompressRules(in, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x[5s]", "offset 10s", "z[1m:1s]", "w[500ms:]", `for: "2s"`, "for: 0s",
		// Text that is not a rule duration is left alone.
		`description: "for 2m the value [1] of x{resource=\"qp\"}"`} {
		if !strings.Contains(got, want) {
			t.Errorf("compressed rules lack %q:\n%s", want, got)
		}
	}
	if _, err := CompressRules("      for: 7s\n", 60); err == nil {
		t.Error("7s / 60 is not whole milliseconds: want an error")
	}
	if _, err := CompressRules(in, 0); err == nil {
		t.Error("factor 0: want an error")
	}
}

// TestCompressShippedRules: the shipped rules compress without any change
// but their durations.
func TestCompressShippedRules(t *testing.T) {
	got, err := CompressRules(string(alerts.Rules), 60)
	if err != nil {
		t.Fatal(err)
	}
	if got == string(alerts.Rules) {
		t.Error("nothing was compressed")
	}
	if masked(got) != masked(string(alerts.Rules)) {
		t.Error("more than durations changed")
	}
}
