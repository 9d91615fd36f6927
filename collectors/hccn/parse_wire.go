package hccn

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// What to check on the wire when HCCL link setup fails (HCOMM's EI0009
// remedy, HCCL's TLS guide): the optical module (-optical -g), the TLS
// switch (-tls -g: ranks that disagree fail communicator init or time out
// at link setup) and the port speed (-speed -g). Formats: hccn-tool
// reference §3.6, §3.7, §3.9; samples in testdata/captures.

// Optical is what `-optical -g` says about the chip's optical module.
type Optical struct {
	// Present is false for `present : not present` and for `Optical
	// module is not present.`; HasPresent says the output told.
	Present, HasPresent bool
	// TemperatureC is `temperature : 47 C` (HasTemperature).
	TemperatureC   float64
	HasTemperature bool
	// VccVolts is `Vcc : 3262.90 mV` in volts (HasVcc).
	VccVolts float64
	HasVcc   bool
	// TxPowerW, RxPowerW and TxBiasA are per lane ("0".."3"; "0" for the
	// single-lane keys without a suffix), in watts and amperes.
	TxPowerW, RxPowerW, TxBiasA map[string]float64
}

// opticalNotPresent is the tool's whole answer for a port without module.
const opticalNotPresent = "Optical module is not present"

var opticalLane = regexp.MustCompile(`^(Tx Power|Rx Power|Tx Bias)(\d?)$`)

// ParseOptical reads `-optical -g`: `key : value` lines, key padded, split
// on the first ':'. Values carry units (C, mV, mW, mA); `not supported` and
// other texts are skipped. An output with none of the keys is an error.
func ParseOptical(b []byte) (Optical, error) {
	o := Optical{TxPowerW: map[string]float64{}, RxPowerW: map[string]float64{}, TxBiasA: map[string]float64{}}
	if bytes.Contains(b, []byte(opticalNotPresent)) {
		o.HasPresent = true
		return o, nil
	}
	known := false
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "present":
			// "present" or "not present"; some builds print the module
			// type: anything but "not present" is a module.
			o.Present, o.HasPresent, known = val != "not present", true, true
			continue
		case "temperature":
			if v, ok := withUnit(val, "C", 1); ok {
				o.TemperatureC, o.HasTemperature, known = v, true, true
			}
			continue
		case "Vcc":
			if v, ok := withUnit(val, "mV", 1e-3); ok {
				o.VccVolts, o.HasVcc, known = v, true, true
			}
			continue
		}
		m := opticalLane.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		lane := m[2]
		if lane == "" {
			lane = "0"
		}
		switch m[1] {
		case "Tx Power":
			if v, ok := withUnit(val, "mW", 1e-3); ok {
				o.TxPowerW[lane], known = v, true
			}
		case "Rx Power":
			if v, ok := withUnit(val, "mW", 1e-3); ok {
				o.RxPowerW[lane], known = v, true
			}
		case "Tx Bias":
			if v, ok := withUnit(val, "mA", 1e-3); ok {
				o.TxBiasA[lane], known = v, true
			}
		}
	}
	if !known {
		return Optical{}, errors.New("-optical: no present, temperature, Vcc, power or bias line")
	}
	return o, nil
}

// withUnit reads "<number> <unit>" and scales it to the base unit.
func withUnit(val, unit string, scale float64) (float64, bool) {
	num, u, ok := strings.Cut(val, " ")
	if !ok || strings.TrimSpace(u) != unit {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v != v || v > 1e9 || v < -1e9 {
		return 0, false
	}
	return v * scale, true
}

var tlsSwitch = regexp.MustCompile(`dev_id:(\d+), tls switch\[(\d)\]`)

// ParseTLS reads `-tls -g`: the first `dev_id:N, tls switch[S](…)` line
// (newer builds add `tls preconfigured[P]`; certificate blocks follow when
// installed). enabled is S == 1.
func ParseTLS(b []byte) (enabled bool, err error) {
	m := tlsSwitch.FindSubmatch(b)
	if m == nil {
		return false, errors.New("-tls: no `dev_id:N, tls switch[S]` line")
	}
	switch string(m[2]) {
	case "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("-tls: tls switch[%s] is neither 0 nor 1", m[2])
}

// ParseSpeed reads `-speed -g`: `Speed: N Mb/s` (HT format string; no
// capture is public), in bytes per second. `Speed: Unknown!` gives known
// false and no error: the port does not know its speed (link down).
func ParseSpeed(b []byte) (bytesPerSecond float64, known bool, err error) {
	line := strings.TrimSpace(string(b))
	rest, ok := strings.CutPrefix(line, "Speed:")
	if !ok {
		return 0, false, fmt.Errorf("-speed: %q is not `Speed: N Mb/s`", clip(line))
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "Unknown") {
		return 0, false, nil
	}
	num, unit, ok := strings.Cut(rest, " ")
	if !ok || strings.TrimSpace(unit) != "Mb/s" {
		return 0, false, fmt.Errorf("-speed: %q is not `Speed: N Mb/s`", clip(line))
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("-speed: %w", err)
	}
	return float64(n) * 1e6 / 8, true, nil
}
