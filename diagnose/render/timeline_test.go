package render

import "testing"

func TestFmtTick(t *testing.T) {
	for _, c := range []struct {
		s, step float64
		want    string
	}{
		{0, 0.02, "0 ms"},
		{0.04, 0.02, "40 ms"},
		{0.0015, 0.0005, "1.5 ms"},
		{0.2, 0.1, "200 ms"},
		{2, 1, "2 s"},
		{90, 30, "90 s"},
	} {
		if got := fmtTick(c.s, c.step); got != c.want {
			t.Errorf("fmtTick(%g, %g) = %q, want %q", c.s, c.step, got, c.want)
		}
	}
}
