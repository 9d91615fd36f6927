package exporter

import "github.com/hccl-exporter/hccl_exporter/internal/helptext"

// DroppedLabelValuesHelp is the help of hccl_exporter_label_values_dropped_total
// (see helptext.DroppedLabelValues, where it lives so that the log state
// links no HTTP code).
const DroppedLabelValuesHelp = helptext.DroppedLabelValues
