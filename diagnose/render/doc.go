// Package render writes a diagnose Report (package model) for people and
// programs: text (one writer per section, text.go), JSON (json.go) and
// one self-contained HTML page (html.go, report.html.tmpl). It sees the
// Report only: it imports neither the analysis nor the bundle reader, so
// a report read back from its JSON renders the same.
package render
