package diagnose

import "github.com/hccl-exporter/hccl_exporter/diagnose/model"

// The Report and its types live in package model; these names keep the
// API callers of package diagnose use.
type (
	Report          = model.Report
	Input           = model.Input
	Node            = model.Node
	FileCounts      = model.FileCounts
	Process         = model.Process
	SettingValue    = model.SettingValue
	Communicator    = model.Communicator
	Links           = model.Links
	ProcessQPs      = model.ProcessQPs
	Fault           = model.Fault
	Sources         = model.Sources
	FaultNode       = model.FaultNode
	Setting         = model.Setting
	SettingGroup    = model.SettingGroup
	NodePIDs        = model.NodePIDs
	Timestamp       = model.Timestamp
	QPModel         = model.QPModel
	EI0011Report    = model.EI0011Report
	Remedy          = model.Remedy
	BufferOOMReport = model.BufferOOMReport
	OOMEvidence     = model.OOMEvidence
	SkippedGroup    = model.SkippedGroup
	ReadDir         = model.ReadDir
	Event           = model.Event
	Incident        = model.Incident
	EventGroup      = model.EventGroup
	PeerCount       = model.PeerCount
	PairEnd         = model.PairEnd
	FailingPair     = model.FailingPair
	SilentRank      = model.SilentRank
	LinkFailure     = model.LinkFailure
	ClockReport     = model.ClockReport
	NodeClock       = model.NodeClock
)

// Constants of the report (model).
const (
	SchemaVersion = model.SchemaVersion

	StatusClean      = model.StatusClean
	StatusFindings   = model.StatusFindings
	StatusIncomplete = model.StatusIncomplete

	PartRoot        = model.PartRoot
	PartConsequence = model.PartConsequence
	PartConcurrent  = model.PartConcurrent
	PartWaiting     = model.PartWaiting
	PartSame        = model.PartSame

	ConfidenceHigh   = model.ConfidenceHigh
	ConfidenceMedium = model.ConfidenceMedium
	ConfidenceLow    = model.ConfidenceLow

	RoleLocal   = model.RoleLocal
	RoleWaiting = model.RoleWaiting
	RoleEither  = model.RoleEither

	RemedyReduceMemoryUse = model.RemedyReduceMemoryUse
	RemedyFewerRoCELinks  = model.RemedyFewerRoCELinks
	RemedyFreeNPUMemory   = model.RemedyFreeNPUMemory
	RemedyHCCLBuffSize    = model.RemedyHCCLBuffSize
	RemedyCheckLink       = model.RemedyCheckLink
	RemedySilentRank      = model.RemedySilentRank

	CodeHeartbeat = model.CodeHeartbeat
)
