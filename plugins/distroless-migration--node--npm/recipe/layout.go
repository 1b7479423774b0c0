package recipe

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// A layout is how the judged runtime stage becomes a stage on the target
// image. run picks one of three: swap (the stage moves to the target in
// place), inline (a stage built FROM an earlier stage that makes no files
// becomes a copy of it on the target) and split (the stage's RUN steps stay
// in a files stage and a new runtime stage copies its results). A new
// layout is a file of its own beside swap.go, inline.go and split.go, and
// a case in run.

// run carries out the plan: the builder stages, the start command and the
// health check first, then the layout that places them.
func (r *rewriter) run() error {
	st := r.d.Stages[r.t]
	r.wd = r.d.Workdir(r.t)
	r.decideUser()
	moves := r.byRule[readiness.RuleMoveToBuilder]
	r.newBase = dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseDistroless || r.has(readiness.RuleDistrolessBase) ||
		r.has(readiness.RuleBumpNode) || r.in.Target != nil && !sameRepo(st.ResolvedBase, r.target.Ref)
	rewriteStart := r.newBase
	for _, rule := range startRules {
		rewriteStart = rewriteStart || r.has(rule)
	}
	if err := r.builders(); err != nil {
		return err
	}
	r.pruneShipped()
	var start []string
	if rewriteStart {
		var err error
		if start, err = r.startLines(); err != nil {
			return err
		}
	}
	health, err := r.healthLines()
	if err != nil {
		return err
	}
	if start != nil {
		start = append(append([]string{}, r.preStart...), start...)
		r.preStart = nil
	}
	if len(moves) > 0 && st.BaseStage < 0 && len(r.chown) == 0 && !strings.Contains(st.ResolvedBase, "alpine") && r.onlyNodeAccounts() {
		// The stage's only RUN steps installed the init wrapper the
		// start no longer runs: they go, and the stage moves in place.
		// In place, no users stage brings accounts the target lacks:
		// only the node image's node user, which becomes nonroot, may be
		// named.
		drop := r.unusedInit(r.t)
		if drops := r.aptDrops(r.t, drop); r.everyRunGoes(r.t, drops) {
			for _, d := range drops {
				r.replace(d.in, "")
			}
			r.change(readiness.RuleMoveToBuilder, "the runtime stage's RUN steps only installed "+droppedNames(drop)+
				", which only the old start ran: they go, and the stage moves to the target in place")
			moves = nil
		}
	}
	if len(moves) > 0 && st.BaseStage < 0 && len(r.chown) == 0 && strings.Contains(st.ResolvedBase, "alpine") && r.onlyNodeAccounts() {
		// FROM alpine + RUN apk add nodejs: the target brings Node, and
		// the stage's COPY steps need no files stage to copy through.
		if runs := r.apkOnlyNode(r.t); runs != nil {
			for _, in := range runs {
				r.replace(in, "")
			}
			r.change(readiness.RuleMoveToBuilder, "the runtime stage's RUN steps only installed Node with apk, which the target brings: they go, and the stage moves to the target in place")
			moves = nil
		}
	}
	switch {
	case st.BaseStage >= 0 && !r.makesFiles(r.t) && len(r.chown) == 0:
		return r.inline(start, health)
	case len(moves) > 0 || st.BaseStage >= 0 || len(r.chown) > 0:
		// A files stage is where the directories the service writes are
		// chowned (nonroot.go).
		return r.split(start, health)
	}
	return r.swap(start, health)
}

// makesFiles reports whether stage i has instructions that change its
// files (RUN, COPY, ADD).
func (r *rewriter) makesFiles(i int) bool {
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command == "run" || in.Command == "copy" || in.Command == "add" {
			return true
		}
	}
	return false
}

// chain is stage t's FROM chain, root first.
func (r *rewriter) chain() []int { return r.chainOf(r.t) }

// appDir sets r.wd to the directory a new runtime stage copies the app
// from, and returns the WORKDIR line that stage needs: the chain's own
// WORKDIR, or, when the chain sets none, nothing (node keeps / as its
// working directory) while the app is copied from the directory that holds
// every COPY destination. It refuses, under rule, when the app was copied
// into / itself.
func (r *rewriter) appDir(rule string) (string, error) {
	dir, ok := r.d.AppDir(r.t)
	if !ok {
		st := r.d.Stages[r.t]
		return "", r.refuse(rule, "the stages set no WORKDIR and copy the app into /", "codegenie cannot tell the app's files from the base image's; set a WORKDIR", st.Line)
	}
	if r.wd == "/" {
		r.wd = dir
		return "", nil
	}
	return fmt.Sprintf("WORKDIR %s\n", r.wd), nil
}

// root is the first stage of stage i's FROM chain: the one built from an
// image.
func (r *rewriter) root(i int) int {
	for n := 0; r.d.Stages[i].BaseStage >= 0 && n <= len(r.d.Stages); n++ {
		i = r.d.Stages[i].BaseStage
	}
	return i
}

// all returns stage t's instructions of a command.
func (r *rewriter) all(cmd string) []dockerfile.Instruction {
	var out []dockerfile.Instruction
	for _, in := range r.d.Stages[r.t].Instructions {
		if in.Command == cmd {
			out = append(out, in)
		}
	}
	return out
}

// runtimeOnly are instructions that describe the container, not its files:
// they move to the new runtime stage.
var runtimeOnly = map[string]bool{"cmd": true, "entrypoint": true, "healthcheck": true, "expose": true, "stopsignal": true, "volume": true, "label": true, "shell": true, "onbuild": true}
