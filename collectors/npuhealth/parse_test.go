package npuhealth

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hccl-exporter/hccl_exporter/internal/ascend"
	"github.com/hccl-exporter/hccl_exporter/internal/sweep"
	"github.com/hccl-exporter/hccl_exporter/internal/vendorcli"
)

func TestParseHealth(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Health
		wantErr  bool
	}{
		{"ok", "\tHealth Status                  : OK\n\tError Code                     : NA\n\tError Information              : NA\n", Health{Status: "OK"}, false},
		// Old builds: a status word with no code.
		{"warning no code", "\tHealth Status                  : Warning\n\tError Code                     : NA\n", Health{Status: "Warning"}, false},
		// A failed string lookup glued at column 0 is ignored.
		{"failed lookup", "\tHealth Status                  : Critical\n\tError Code                     : 80E01801\n\tError Information              : Failed to get error information for error code : 0x80e01801\n",
			Health{Status: "Critical", Codes: []string{"80E01801"}}, false},
		{"950 card label", "\tNPU ID                         : 0\n\tHealth                         : OK\n\tError Code                     : NA\n", Health{Status: "OK"}, false},
		{"bad code", "\tHealth Status                  : Alarm\n\tError Code                     : 80E0180Z\n", Health{}, true},
		{"message", "This device does not support querying health.\n", Health{}, true},
	} {
		got, err := ParseHealth([]byte(tc.in))
		if (err != nil) != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestParseECC910A: the real 910A card-level capture (DDR lines, %-40s
// wrapper, no Next-Isolated lines).
func TestParseECC910A(t *testing.T) {
	in := "\tNPU ID                                   : 0\n\tChip Count                               : 1\n\n" +
		"\tDDR Single Bit Error Count               : 0\n\tDDR Double Bit Error Count               : 0\n" +
		"\tHBM Single Bit Error Count               : 3\n\tHBM Double Bit Error Count               : 0\n" +
		"\tHBM Single Bit Aggregate Total Err Cnt   : 7\n\tHBM Double Bit Aggregate Total Err Cnt   : 1\n" +
		"\tHBM Single Bit Isolated Pages Count      : 0\n\tHBM Double Bit Isolated Pages Count      : 1\n" +
		"\tChip ID                                  : 0\n"
	e, err := ParseECC([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := ECC{Errors: [2]ascend.Value{{V: 3, OK: true}, {V: 0, OK: true}}, Lifetime: [2]ascend.Value{{V: 7, OK: true}, {V: 1, OK: true}}, Isolated: [2]ascend.Value{{V: 0, OK: true}, {V: 1, OK: true}}}
	if e != want {
		t.Errorf("got %+v\nwant %+v", e, want)
	}
}

func TestParsePCIe310P(t *testing.T) {
	in := "\tPcs Rx Error Count             : 1\n\tPhy Lane Error Count           : 2\n\tDl Lcrc Error Count            : 3\n\tDl Dcrc Error Count            : 4\n"
	got, err := ParsePCIeErr([]byte(in))
	want := map[string]float64{"pcs_rx": 1, "phy_lane": 2, "dl_lcrc": 3, "dl_dcrc": 4}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%v, %v", got, err)
	}
}

func TestParseSIO(t *testing.T) {
	got, err := ParseSIO([]byte("\tTX Error Count : 0\n\tRX Error Count : 17\n"))
	if err != nil || !reflect.DeepEqual(got, map[string]float64{"transmit": 0, "receive": 17}) {
		t.Errorf("%v, %v", got, err)
	}
}

// TestParseHCCS310P: one element, no health or lane lines.
func TestParseHCCS310P(t *testing.T) {
	in := "\thccs tx packets                : [88123                ]\n\thccs tx bytes                  : [1762460              ]\n" +
		"\thccs rx packets                : [87990                ]\n\thccs retry count               : [0                    ]\n\thccs error count               : [0                    ]\n"
	h, err := ParseHCCS([]byte(in))
	if err != nil || h.HasHealth || h.Links != 1 || h.TxPackets[0] != 88123 || h.Lanes != nil {
		t.Errorf("%+v, %v", h, err)
	}
	if _, err := ParseHCCS([]byte("\thccs tx packets : [1 2]\n\thccs rx packets : [1]\n")); err == nil {
		t.Error("arrays of unequal length accepted")
	}
}

func TestParseUsages23rc2(t *testing.T) {
	// The real 910B1 23.0.rc2 capture: no NPU Utilization, no Aicube.
	in := "        NPU ID                         : 0\n        Chip Count                     : 1\n\n" +
		"        HBM Usage Rate(%)              : 4\n        Aicore Usage Rate(%)           : 0\n        Aivector Usage Rate(%)         : 0\n" +
		"        Aicpu Usage Rate(%)            : 0\n        Ctrlcpu Usage Rate(%)          : 0\n        HBM Bandwidth Usage Rate(%)    : 0\n        Chip ID                        : 0\n"
	u, err := ParseUsages([]byte(in))
	if err != nil || len(u.Engines) != 4 || !u.HBMBandwidth.OK {
		t.Errorf("%+v, %v", u, err)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    vendorcli.Result
		want string
	}{
		{"data", vendorcli.Result{Stdout: []byte("\tHealth Status : OK\n")}, sweep.Success},
		{"unsupported exit 0", vendorcli.Result{Stdout: []byte("This device does not support querying sio-info.\n")}, sweep.Unsupported},
		{"busy", vendorcli.Result{ExitCode: 172, Stdout: []byte("DrvMngGetConsoleLogLevel failed. (g_conLogLevel=3)\ndcmi model initialized failed, because the device is used. ret is -8020\n")}, sweep.Busy},
		{"dcmi init", vendorcli.Result{ExitCode: 187, Stdout: []byte("dcmi module initialize failed. ret is -8005\n")}, sweep.Error},
		{"failed query", vendorcli.Result{ExitCode: 211, Stdout: []byte("Failed to query \"ecc\" result.\n")}, sweep.Error},
		{"root exit 0", vendorcli.Result{Stdout: []byte("This command can be executed only by the root user.\n")}, sweep.Error},
		{"timeout", vendorcli.Result{TimedOut: true, ExitCode: -1}, sweep.Timeout},
		{"exec", vendorcli.Result{Err: errors.New("permission denied"), ExitCode: -1}, sweep.Error},
	} {
		if got, _ := classify(tc.r); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
