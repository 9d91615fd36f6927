package headroom

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.headroom switch.
var Spec = collector.Spec{Name: "headroom", Help: "NPU memory headroom before HCCL link setup (joins npu-smi's process table with the CANN logs).", DefaultEnabled: true}
