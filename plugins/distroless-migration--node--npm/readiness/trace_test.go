package readiness

import (
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// TestTraceEvidenceByLine: a traced build step's shells confirm that
// step's own blocker, found by its line, not the first RUN blocker (the
// voting app's line-11 and line-15 shells once landed on line 4's); a
// step with no blocker (a builder stage's) is a builder shell.
func TestTraceEvidenceByLine(t *testing.T) {
	t.Parallel()
	b := &builder{}
	for _, line := range []int{4, 11, 15} {
		b.blockers = append(b.blockers, probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild,
			Evidence: []probe.Evidence{{File: "Dockerfile", Line: line}}})
	}
	inv := func(line int, argv ...string) shelltrace.Invocation {
		return shelltrace.Invocation{Phase: "build", Argv: argv, Cause: shelltrace.Cause{Kind: "instruction", File: "Dockerfile", Line: line}}
	}
	b.trace(&shelltrace.Facts{Invocations: []shelltrace.Invocation{
		inv(11, "/bin/sh", "-c", "npm install -g nodemon"),
		inv(15, "/bin/sh", "-c", "npm ci"),
		inv(15, "sh", "-c", "node-gyp rebuild"),
		inv(30, "/bin/sh", "-c", "npm run build"),
	}})
	traced := map[int][]string{}
	for _, bl := range b.blockers {
		for _, e := range bl.Evidence[1:] {
			if e.Line != bl.Evidence[0].Line {
				t.Errorf("the blocker at line %d holds the trace of line %d: %s", bl.Evidence[0].Line, e.Line, e.Note)
			}
			traced[bl.Evidence[0].Line] = append(traced[bl.Evidence[0].Line], e.Note)
		}
	}
	if len(traced[4]) != 0 || len(traced[11]) != 1 || len(traced[15]) != 2 {
		t.Errorf("trace evidence by blocker line: %v; want none at 4, one at 11, two at 15", traced)
	}
	if len(b.notes) != 1 || b.notes[0].ID != NoteBuilderShells || !strings.Contains(b.notes[0].Message, "1 shell(s)") {
		t.Errorf("notes %+v, want one builder-shells note for line 30's shell", b.notes)
	}
}
