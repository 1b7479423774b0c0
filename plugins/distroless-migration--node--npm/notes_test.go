package nodenpm_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// TestNoteNeverContradictsABlocker: on every fixture, an OS package that a
// note calls unused at run time installs no program that a blocker says
// the image runs (issue 21: a report called wget unused while a blocker
// said the HEALTHCHECK runs it).
func TestNoteNeverContradictsABlocker(t *testing.T) {
	t.Parallel()
	for _, dir := range fixtureDirs(t) {
		a := gatherStatic(t, dir).Assessments[readiness.Name]
		for _, n := range a.Notes {
			if n.ID != noderuntime.WarnOSPackage || !strings.Contains(n.Message, "nothing at run time uses") {
				continue
			}
			for _, e := range n.Evidence {
				_, pkg, _ := strings.Cut(e.Note, " ")
				for _, bin := range noderuntime.PackageBinaries(pkg) {
					word := regexp.MustCompile(`(^|[\s/"(])` + regexp.QuoteMeta(bin) + `($|[\s"),;:])`)
					for _, b := range a.Blockers {
						if b.ID == dockerfileprobe.WarnShellFormRunFinal {
							continue // the step that installs it, which runs nothing at run time
						}
						if word.MatchString(b.Title) {
							t.Errorf("%s: a note says nothing at run time uses %s (%s), but a blocker says %q", filepath.Base(dir), pkg, bin, b.Title)
						}
					}
				}
			}
		}
	}
}
