package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

func TestRenameFlags(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
		warnings int
	}{
		{[]string{"--npu-smi.path=/x/npu-smi", "--web.listen-address", ":1"}, []string{"--npusmi.path=/x/npu-smi", "--web.listen-address", ":1"}, 1},
		{[]string{"--hccn-tool.interval", "1m", "--kubelet.max-pods=3"}, []string{"--hccn.interval", "1m", "--pods.max-assignments=3"}, 2},
		{[]string{"--screenlog.path", "/var/log/pods/*/*/*.log", "--cannlog.max-pods=9"}, []string{"--cannlog.screen-log-path", "/var/log/pods/*/*/*.log", "--cannlog.max-fault-pods=9"}, 2},
		{[]string{"--npusmi.path=x", "--no-collector.hccn"}, []string{"--npusmi.path=x", "--no-collector.hccn"}, 0},
		{[]string{"--", "--npu-smi.path=x"}, []string{"--", "--npu-smi.path=x"}, 0},
		{[]string{"--kubelet.pod-resources-socket="}, []string{"--pods.kubelet-socket="}, 1},
		{[]string{"--npusmi.detail-interval=2m", "--npusmi.fault-code-file", "/f.json"}, []string{"--npuhealth.interval=2m", "--npuhealth.fault-code-file", "/f.json"}, 2},
	} {
		got, warnings := renameFlags(tc.in)
		if !slices.Equal(got, tc.want) || len(warnings) != tc.warnings {
			t.Errorf("renameFlags(%q) = %q, %q; want %q and %d warnings", tc.in, got, warnings, tc.want, tc.warnings)
		}
		for _, w := range warnings {
			if !strings.Contains(w, "deprecated") {
				t.Errorf("warning %q does not say deprecated", w)
			}
		}
	}
}

// Every new name is a flag the exporter defines, and no old name is: a
// rename of a flag without its entry here (or the reverse) fails.
func TestRenamedFlagsExist(t *testing.T) {
	app := kingpin.New("t", "")
	addCollectorFlags(app, nil)
	defined := map[string]bool{}
	for _, fl := range app.Model().Flags {
		defined[fl.Name] = true
	}
	for old, name := range renamedFlags {
		if !defined[name] {
			t.Errorf("renamed flag --%s (was --%s) is not defined", name, old)
		}
		if defined[old] {
			t.Errorf("old flag --%s is still defined", old)
		}
	}
}
