package npusmi

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.npusmi switch.
var Spec = collector.Spec{Name: "npusmi", Help: "NPU memory, health, power and processes from npu-smi info.", DefaultEnabled: true}
