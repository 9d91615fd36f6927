package render

// Internals the external tests (report_test.go, which read real incident
// bundles through package diagnose) look at.
var (
	TimelineSVG = timelineSVG
	TextWidth   = textWidth
)
