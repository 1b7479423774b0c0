package portfolio

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"
)

//go:embed report.html.tmpl
var reportHTML string

var reportTmpl = template.Must(template.New("report").Parse(reportHTML))

// EncodeHTML writes report.html: one self-contained page (no network, no
// external script or style) with the totals by verdict, the blockers by
// kind and how many services fixing each would unblock, and a sortable,
// filterable table of services with a drill-down to each one's evidence,
// trace events and fixes. The document is embedded as JSON, escaped by
// html/template, and rendered by a small script.
func EncodeHTML(w io.Writer, d *Document) error {
	err := reportTmpl.Execute(w, struct {
		Doc       *Document
		Generated string
	}{d, d.Generated.Format(time.RFC3339)})
	if err != nil {
		return fmt.Errorf("encoding %s: %w", HTMLFile, err)
	}
	return nil
}
