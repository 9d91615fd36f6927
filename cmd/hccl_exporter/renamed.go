package main

import (
	"fmt"
	"strings"
)

// renamedFlags maps old flag names to their current ones: those of 0.3 to
// their 0.4 names, where every collector's flags were named after the
// collector (--npusmi.*, --hccn.*, --pods.*, --cannlog.*) and the two pod
// caps were told apart, and the npuhealth collector's of 0.4 to theirs
// (--npuhealth.*, like its switch, package and family switches). The old
// names keep working until 1.0, with a warning, so that a DaemonSet
// upgraded before its arguments is not broken.
var renamedFlags = map[string]string{
	"npu-smi.path":                   "npusmi.path",
	"npu-smi.timeout":                "npusmi.timeout",
	"npu-smi.min-interval":           "npusmi.min-interval",
	"hccn-tool.path":                 "hccn.path",
	"hccn-tool.timeout":              "hccn.timeout",
	"hccn-tool.interval":             "hccn.interval",
	"kubelet.pod-resources-socket":   "pods.kubelet-socket",
	"kubelet.pod-resources-interval": "pods.kubelet-interval",
	"kubelet.pod-resources-timeout":  "pods.kubelet-timeout",
	"kubelet.max-pods":               "pods.max-assignments",
	"screenlog.path":                 "cannlog.screen-log-path",
	"cannlog.max-pods":               "cannlog.max-fault-pods",
	"npusmi.detail-interval":         "npuhealth.interval",
	"npusmi.fault-code-file":         "npuhealth.fault-code-file",
}

// renameFlags rewrites the old spellings of renamed flags in args (--old,
// --old=value, --no-old) to the new ones and returns a warning per flag
// rewritten. Arguments after a bare "--" are left alone.
func renameFlags(args []string) ([]string, []string) {
	out := make([]string, len(args))
	var warnings []string
	for i, a := range args {
		out[i] = a
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		prefix := "--"
		if old, ok := strings.CutPrefix(name, "no-"); ok {
			if _, renamed := renamedFlags[old]; renamed {
				name, prefix = old, "--no-"
			}
		}
		newName, ok := renamedFlags[name]
		if !ok {
			continue
		}
		out[i] = prefix + newName
		if hasValue {
			out[i] += "=" + value
		}
		warnings = append(warnings, fmt.Sprintf("--%s is deprecated and will be removed in 1.0: use --%s", name, newName))
	}
	return out, warnings
}
