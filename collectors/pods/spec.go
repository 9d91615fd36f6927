package pods

import "github.com/hccl-exporter/hccl_exporter/collector"

// Spec is the collector's --collector.pods switch.
var Spec = collector.Spec{Name: "pods", Help: "which pod holds each NPU, from the kubelet's PodResources API (--pods.kubelet-socket).", DefaultEnabled: true}
