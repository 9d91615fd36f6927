// Package model owns the Report of `hccl_exporter diagnose` and the types
// it is made of: what analysis produces and the only thing rendering sees
// (package analyse builds a Report from a bundle, package render writes it
// as text, JSON and HTML; neither knows the other). It also owns how the
// report spells its quantities in words (bytes, counts, seconds, process
// lists, a process's name), since analysis writes sentences (summaries,
// reasons, remedies) that the renderers print beside their own, and both
// must say a number the same way. It imports nothing of the project.
// docs/diagnose.md describes every field of the JSON form.
package model
