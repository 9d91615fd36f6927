// Package hcclexporter holds the release version of hccl_exporter, read from
// the VERSION file next to it. It lives at the module root because go:embed
// reads only files at or below the package: embedding VERSION here is what
// makes a plain `go build` or `go install` report the release, while the
// Makefile, the release tarballs, the image tag and the Helm chart read the
// same file (a test checks they agree).
package hcclexporter

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the release version, e.g. "0.3.0" (no leading "v").
func Version() string {
	return strings.TrimSpace(versionFile)
}
