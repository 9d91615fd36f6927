package diagnose

import "github.com/hccl-exporter/hccl_exporter/diagnose/bundle"

// Layout says how the files of an input are assigned to nodes (package
// bundle).
type Layout = bundle.Layout

// Layouts.
const (
	LayoutAuto  = bundle.LayoutAuto
	LayoutNodes = bundle.LayoutNodes
	LayoutNode  = bundle.LayoutNode
)

// InputError is a problem with an input as a whole: nothing is reported
// and the command exits 2.
type InputError = bundle.InputError

// Collection tools whose layouts a bundle may show.
const (
	ToolMindCluster   = bundle.ToolMindCluster
	ToolMsnpureport   = bundle.ToolMsnpureport
	ToolNPULogCollect = bundle.ToolNPULogCollect
)
