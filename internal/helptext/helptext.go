// Package helptext owns the help texts of metric families that several
// packages export, each with its own label values: one text, so that the
// families merge. It imports nothing, so that packages which must not link
// the HTTP stack (the log state, diagnose) can use it.
package helptext

// DroppedLabelValues is the help of hccl_exporter_label_values_dropped_total
// (cannlog: log-derived labels at their caps; podresources: kubelet_pod,
// assignments past --pods.max-assignments or the per-chip cap, and
// kubelet_label_length, values cut to the length cap). The text predates
// the kubelet's labels and is kept as it was, since golden outputs and
// dashboards carry it.
const DroppedLabelValues = "Label values from logs dropped because the distinct values of the label reached the cap."
