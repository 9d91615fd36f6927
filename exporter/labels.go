package exporter

// DroppedLabelValuesHelp is the help of hccl_exporter_label_values_dropped_total,
// which several collectors export, each with its own label values (cannlog:
// log-derived labels at their caps; podresources: kubelet_pod, assignments
// past --pods.max-assignments or the per-chip cap, and kubelet_label_length,
// values cut to the length cap): one text, so that the families merge. The
// text predates the kubelet's labels and is kept as it was, since golden
// outputs and dashboards carry it.
const DroppedLabelValuesHelp = "Label values from logs dropped because the distinct values of the label reached the cap."
