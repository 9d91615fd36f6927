package diagnose

import (
	"io"

	"github.com/hccl-exporter/hccl_exporter/diagnose/model"

	"github.com/hccl-exporter/hccl_exporter/diagnose/render"
)

// TextOptions select what the text report details.
type TextOptions = render.TextOptions

// WriteJSON writes the report as indented JSON (docs/diagnose.md).
func WriteJSON(w io.Writer, r *model.Report) error { return render.WriteJSON(w, r) }

// WriteText writes the report for a person, processes summarised by
// settings set and communicators.
func WriteText(w io.Writer, r *model.Report) error { return render.WriteText(w, r) }

// WriteTextWith writes the report for a person.
func WriteTextWith(w io.Writer, r *model.Report, opts TextOptions) error {
	return render.WriteTextWith(w, r, opts)
}

// WriteHTML writes the report as one self-contained HTML page.
func WriteHTML(w io.Writer, r *model.Report) error { return render.WriteHTML(w, r) }
