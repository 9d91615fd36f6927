// Package diagnose is the offline analysis behind `hccl_exporter
// diagnose`: it reads a bundle of CANN logs and training screen logs
// collected from the nodes of a failed job (directories, tar and zip
// archives, streamed, never extracted) and builds one Report, written as
// text, JSON or one self-contained HTML page. docs/diagnose.md describes
// the command and every field of its JSON output.
//
// This package is the door callers use (Run, WriteText, WriteJSON,
// WriteHTML and the Report's types); the work is done by four packages,
// each importing only those before it:
//
//   - model: the Report and the types it is made of, the only thing that
//     crosses from analysis to rendering;
//   - bundle: reading the inputs into per-group line sinks (file kinds,
//     collection tools' layouts, node assignment);
//   - analyse: bundle → model.Report (events, clocks, zones, incidents,
//     remedies);
//   - render: model.Report → text, JSON, HTML.
//
// render imports neither analyse nor bundle, and analyse does not import
// render (TestDiagnoseLayers).
package diagnose
