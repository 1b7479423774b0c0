package recipe

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// ShellForm returns the first instruction of stage i of f that needs
// /bin/sh: a shell-form RUN anywhere in the stage's FROM chain, or a
// shell-form CMD, ENTRYPOINT or HEALTHCHECK (CMD-SHELL) in effect. ok is
// false when there is none.
func ShellForm(f *dockerfile.File, i int) (in dockerfile.Instruction, ok bool) {
	if i < 0 || i >= len(f.Stages) {
		return dockerfile.Instruction{}, false
	}
	for j := i; j >= 0; j = f.Stages[j].BaseStage {
		for _, in := range f.Stages[j].Instructions {
			if in.Command == "run" && in.Form == dockerfile.FormShell {
				return in, true
			}
		}
		if j == f.Stages[j].BaseStage {
			break
		}
	}
	for _, cmd := range []string{"entrypoint", "cmd", "healthcheck"} {
		if in, found := f.Effective(i, cmd); found && in.Form == dockerfile.FormShell {
			return in, true
		}
	}
	return dockerfile.Instruction{}, false
}

// selfCheck refuses a rewrite that would leave a shell-form instruction in
// its runtime stage on a distroless (shell-less) image: the recipe never
// emits one, whatever the plan said. It returns nil when there is none.
func (r *rewriter) selfCheck(nf *dockerfile.File, stage int) *Refusal {
	if stage < 0 || stage >= len(nf.Stages) {
		return nil
	}
	root := nf.RootBase(stage)
	if dockerfile.ClassifyBase(root) != dockerfile.BaseDistroless && (r.target.Shell || !sameRepo(root, r.target.Ref)) {
		return nil
	}
	in, ok := ShellForm(nf, stage)
	if !ok {
		return nil
	}
	what := strings.ToUpper(in.Command)
	if in.Command == "healthcheck" {
		what = "HEALTHCHECK CMD-SHELL"
	}
	return &Refusal{Rule: readiness.RuleUnclassified, Title: "the rewrite would leave a shell-form " + what + " in the distroless stage",
		Why: fmt.Sprintf("line %d of the rewritten Dockerfile (%s) runs through /bin/sh, which the target lacks; rewrite it in exec form by hand", in.Line, clipText(in.Source, 120))}
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
