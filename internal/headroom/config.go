package headroom

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds the model's constants. The QP sizes come from flags
// (cmd/hccl_exporter registers them: this package links no flag parser, so
// that diagnose can use the model); the HCCL
// defaults are HCCL's own (they change only if HCCL changes them).
type Config struct {
	// QPBytesLow and QPBytesHigh bound the device memory of one QP. EI0011
	// reports "[size: [0.25MB, 3MB], Affected by QP depth configuration.]"
	// and HCCL's adapter uses "262144~3145728".
	QPBytesLow, QPBytesHigh float64
	// DefaultQPsPerConnection is assumed where the logs do not print
	// HCCL_RDMA_QPS_PER_CONNECTION.
	DefaultQPsPerConnection float64
	// DefaultBuffSizeBytes is assumed where the logs do not print
	// HCCL_BUFFSIZE.
	DefaultBuffSizeBytes float64
	// QPBytesSetByUser: --headroom.qp-bytes-low or -high was given; the
	// pair then applies to every mode.
	QPBytesSetByUser bool
	// CaptureWindow: a process whose latest ACL graph capture re-created
	// QPs less than this long ago (by the time its log printed) is
	// capturing, and its next capture's QPs are ahead.
	CaptureWindow time.Duration
	// Now is the time the model compares capture times with; the
	// collector sets it each scrape. Zero: no capture is projected.
	Now time.Time
	// Learned, when set, holds the QP sizes learned on the node per
	// product and QP mode (estimator.go) that have enough observations;
	// the collector sets it each scrape. Nil: HCCL's sizes only.
	Learned *LearnedSizes
}

// DefaultConfig is the configuration with every flag at its default.
func DefaultConfig() Config {
	return Config{
		QPBytesLow:              256 << 10,
		QPBytesHigh:             3 << 20,
		DefaultQPsPerConnection: HCCLDefaultQPsPerConnection,
		DefaultBuffSizeBytes:    HCCLDefaultBuffSizeBytes,
		CaptureWindow:           5 * time.Minute,
	}
}

// Validate reports a configuration the model cannot use as given.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"--headroom.qp-bytes-low", c.QPBytesLow},
		{"--headroom.qp-bytes-high", c.QPBytesHigh},
		{"default HCCL_BUFFSIZE", c.DefaultBuffSizeBytes},
	} {
		if !(f.v > 0 && f.v <= maxPlausibleBytes) {
			errs = append(errs, fmt.Errorf("%s must be between 1 byte and 4EiB, got %v", f.name, f.v))
		}
	}
	if c.QPBytesLow > c.QPBytesHigh {
		errs = append(errs, fmt.Errorf("--headroom.qp-bytes-low (%v bytes) must not exceed --headroom.qp-bytes-high (%v bytes)",
			c.QPBytesLow, c.QPBytesHigh))
	}
	if !(c.DefaultQPsPerConnection >= 1 && c.DefaultQPsPerConnection <= HCCLMaxQPsPerConnection) {
		errs = append(errs, fmt.Errorf("default HCCL_RDMA_QPS_PER_CONNECTION must be in [1,%d], got %v",
			HCCLMaxQPsPerConnection, c.DefaultQPsPerConnection))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("headroom config: %w", err)
	}
	return nil
}

// sanitized returns a configuration Model can always compute with: invalid
// values fall back to the defaults and the high QP bound is at least the low
// one. Validate reports the same problems to the user at startup.
func (c Config) sanitized() Config {
	d := DefaultConfig()
	usable := func(v float64) bool { return v > 0 && v <= maxPlausibleBytes }
	if !usable(c.QPBytesLow) {
		c.QPBytesLow = d.QPBytesLow
	}
	if !usable(c.QPBytesHigh) {
		c.QPBytesHigh = d.QPBytesHigh
	}
	c.QPBytesHigh = math.Max(c.QPBytesHigh, c.QPBytesLow)
	if !usable(c.DefaultBuffSizeBytes) {
		c.DefaultBuffSizeBytes = d.DefaultBuffSizeBytes
	}
	if !(c.DefaultQPsPerConnection >= 1 && c.DefaultQPsPerConnection <= HCCLMaxQPsPerConnection) {
		c.DefaultQPsPerConnection = d.DefaultQPsPerConnection
	}
	if c.CaptureWindow < 0 {
		c.CaptureWindow = 0
	}
	return c
}
