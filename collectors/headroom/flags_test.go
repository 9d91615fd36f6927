package headroom

import (
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

const kib = 1 << 10

func TestAddFlags(t *testing.T) {
	tests := []struct {
		args          []string
		low, high     float64
		wantParseFail bool
	}{
		{args: nil, low: 256 * kib, high: 3 * mib},
		{args: []string{"--headroom.qp-bytes-low=0.25MiB", "--headroom.qp-bytes-high=2MiB"}, low: 256 * kib, high: 2 * mib},
		// KB is read as 1024 bytes, like KiB.
		{args: []string{"--headroom.qp-bytes-low=512KB"}, low: 512 * kib, high: 3 * mib},
		{args: []string{"--headroom.qp-bytes-low=-1MiB"}, wantParseFail: true},
		{args: []string{"--headroom.qp-bytes-low=0"}, wantParseFail: true},
		{args: []string{"--headroom.qp-bytes-high=lots"}, wantParseFail: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			app := kingpin.New("test", "")
			cfg := &AddFlags(app, nil).Model
			_, err := app.Parse(tt.args)
			if tt.wantParseFail {
				if err == nil {
					t.Errorf("Parse(%q) succeeded, want an error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) = %v", tt.args, err)
			}
			if cfg.QPBytesLow != tt.low || cfg.QPBytesHigh != tt.high {
				t.Errorf("Parse(%q): low %v high %v, want %v %v", tt.args, cfg.QPBytesLow, cfg.QPBytesHigh, tt.low, tt.high)
			}
			if cfg.DefaultQPsPerConnection != 1 || cfg.DefaultBuffSizeBytes != 200*mib {
				t.Errorf("HCCL defaults = %v QPs, %v bytes, want 1, 200 MiB", cfg.DefaultQPsPerConnection, cfg.DefaultBuffSizeBytes)
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
}

// TestQPBytesFlagsSetByUser: giving either QP size flag makes the pair
// apply to every mode; the defaults leave graph mode its own size.
func TestQPBytesFlagsSetByUser(t *testing.T) {
	for _, tc := range []struct {
		args []string
		set  bool
	}{
		{nil, false},
		{[]string{"--headroom.qp-bytes-high=2MiB"}, true},
		{[]string{"--headroom.qp-bytes-low=128KiB"}, true},
	} {
		app := kingpin.New("x", "")
		cfg := &AddFlags(app, nil).Model
		if _, err := app.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if cfg.QPBytesSetByUser != tc.set {
			t.Errorf("%v: set by user %v, want %v", tc.args, cfg.QPBytesSetByUser, tc.set)
		}
	}
}

// TestQPBytesHelpShowsNoDefault: --help printed --headroom.qp-bytes-low=256KiB
// as if that were every QP's size; unset, each QP mode has its own.
func TestQPBytesHelpShowsNoDefault(t *testing.T) {
	var out strings.Builder
	app := kingpin.New("test", "")
	AddFlags(app, nil)
	app.UsageWriter(&out)
	app.Usage(nil)
	help := strings.Join(strings.Fields(out.String()), " ") // kingpin wraps lines
	for _, flag := range []string{"headroom.qp-bytes-low", "headroom.qp-bytes-high"} {
		if !strings.Contains(help, "--"+flag+"=SIZE") {
			t.Errorf("--help does not show --%s=SIZE", flag)
		}
	}
	for _, shown := range []string{"qp-bytes-low=256KiB", "qp-bytes-high=3MiB"} {
		if strings.Contains(help, shown) {
			t.Errorf("--help shows %s as if set", shown)
		}
	}
	if n := strings.Count(help, "derived from the QP mode"); n != 2 {
		t.Errorf("--help says %d times that the QP sizes are derived from the QP mode when unset, want 2", n)
	}
}
