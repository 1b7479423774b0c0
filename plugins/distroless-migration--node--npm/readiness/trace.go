package readiness

// The traced build and boot, cross-checked with the static blockers.

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// trace cross-checks the static blockers with the traced build and boot.
// A boot shell confirms the static blocker that predicted it and lends it
// the trace event as evidence; a boot shell nothing predicted becomes a
// blocker of its own. A static shell use in app code that the boot never
// reached is reported as a disagreement. Shells in builder-stage steps do
// not block.
func (b *builder) trace(f *shelltrace.Facts) {
	bootChildProcess := false
	var builderShells []string
	for _, inv := range f.Invocations {
		ev := probe.Evidence{Trace: &probe.TraceRef{Phase: inv.Phase, PID: inv.PID, Index: inv.Index},
			Note: fmt.Sprintf("%s %q", pick(inv.Attempted, "tried", "ran"), strings.Join(inv.Argv, " "))}
		if inv.Errno != "" {
			ev.Note += ": " + inv.Errno
		}
		if inv.Phase != "boot" && inv.Phase != "healthcheck" && !strings.HasPrefix(inv.Phase, "request:") {
			finalStage := false
			if inv.Cause.Line > 0 {
				// The step's own blocker, found by its line: another RUN
				// step's blocker is not confirmed by this one's shells, and
				// a builder stage's step has none.
				finalStage = b.attachAt(probe.Evidence{File: inv.Cause.File, Line: inv.Cause.Line, Trace: ev.Trace, Note: ev.Note},
					dockerfileprobe.WarnShellFormRunFinal)
			}
			if !finalStage {
				builderShells = append(builderShells, inv.Phase)
			}
			continue
		}
		var ok bool
		switch inv.Cause.Kind {
		case "npm_script":
			ok = b.attach(ev, npmscripts.WarnPackageManagerStart)
		case "base_image_entrypoint":
			ok = b.attach(ev, entrypoints.WarnBaseEntry)
		case "instruction":
			ok = b.attach(ev, dockerfileprobe.WarnShellFormCmd, dockerfileprobe.WarnShellFormEntry, npmscripts.WarnShellFormStart)
		case "entrypoint_script":
			ok = b.attach(ev, entrypoints.WarnShellShebang, entrypoints.WarnShellShim)
		case "healthcheck":
			ok = b.attach(ev, dockerfileprobe.WarnShellFormHealth)
		case "child_process":
			bootChildProcess = true
			ok = b.attach(ev, childprocess.WarnShellInApp, childprocess.WarnShellInDependency)
		}
		if !ok {
			b.Add(probe.Blocker{ID: shelltrace.WarnShellAtBoot, Kind: probe.ShellAtRuntime, Rule: RuleTracedShell,
				Title:    fmt.Sprintf("the traced boot %s a shell: %s (under %s)", pick(inv.Attempted, "tried to run", "ran"), strings.Join(inv.Argv, " "), lastOr(inv.Ancestry)),
				Fix:      "find what starts it (cause: " + inv.Cause.Kind + ") and replace it with an exec-form command",
				Evidence: []probe.Evidence{ev}})
			b.Note(probe.Note{ID: NoteUnexplained, Message: fmt.Sprintf("no static finding explains the boot shell %q (pid %d)", strings.Join(inv.Argv, " "), inv.PID), Evidence: []probe.Evidence{ev}})
		}
	}
	if len(builderShells) > 0 {
		b.Note(probe.Note{ID: NoteBuilderShells, Message: fmt.Sprintf("%d shell(s) ran in builder-stage steps (%s); the runtime image does not need them", len(builderShells), strings.Join(dedupe(builderShells), ", "))})
	}
	// Static shell uses in the app that the boot did not reach.
	if !bootChildProcess {
		for _, bl := range b.blockers {
			if bl.ID == childprocess.WarnShellInApp && len(bl.Evidence) > 0 {
				b.Note(probe.Note{ID: NoteNotReached, Message: fmt.Sprintf("%s was not reached during the traced boot; it may still run on another path", bl.Title), Evidence: bl.Evidence[:1]})
			}
		}
	}
}
