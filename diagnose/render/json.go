package render

import (
	"encoding/json"
	"io"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"
)

// WriteJSON writes the report as indented JSON (docs/diagnose.md).
func WriteJSON(w io.Writer, r *model.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
