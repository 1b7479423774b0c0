package recipe

import (
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The swap layout: the runtime stage moves to the target in place.

// swap moves the runtime stage to the target in place. No stage of it has
// a shell to add a user's entries with, so the node image's node user
// becomes the target's nonroot.
func (r *rewriter) swap(start, health []string) error {
	st := r.d.Stages[r.t]
	if r.newBase {
		r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, r.baseRef(r.t, r.target.Ref, readiness.RuleDistrolessBase), r.name(r.t))})
		r.change(readiness.RuleDistrolessBase, "the runtime stage is FROM "+r.target.Pinned())
	}
	hc, hasHC := r.d.Effective(r.t, "healthcheck")
	cmdDone := false
	cmds := r.all("cmd")
	for _, in := range st.Instructions {
		switch in.Command {
		case "entrypoint":
			if start != nil {
				r.replace(in, "")
			}
		case "cmd":
			if start != nil {
				if in.Line == cmds[len(cmds)-1].Line {
					r.replace(in, strings.Join(start, ""))
					cmdDone = true
				} else {
					r.replace(in, "")
				}
			}
		case "healthcheck":
			if health != nil && hasHC && in.Line == hc.Line {
				r.replace(in, strings.Join(health, ""))
			}
		case "shell":
			r.replace(in, "")
			r.change(readiness.RuleExecForm, "SHELL goes: every instruction of the runtime stage is in exec form")
		}
	}
	if r.newBase {
		r.mapNodeUser(r.t)
	}
	if start != nil && !cmdDone {
		r.insertAfter(r.stageEnd(r.t), strings.Join(start, ""))
	}
	if start == nil && len(r.preStart) > 0 {
		r.insertAfter(r.stageEnd(r.t), strings.Join(r.preStart, ""))
	}
	return nil
}
