package recipe

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The inline layout: a runtime stage built FROM a stage, with no files of
// its own.

// inline rewrites a runtime stage built FROM an earlier stage that makes
// no files of its own: it becomes a stage on the target that copies the
// app from the stage it was built from, with that stage's ENV and USER.
// Users the stages name get their entries from a users stage built on the
// same parent, placed before it.
func (r *rewriter) inline(start, health []string) error {
	st := r.d.Stages[r.t]
	workdir, err := r.appDir(readiness.RuleDistrolessBase)
	if err != nil {
		return err
	}
	parent := r.ref(st.BaseStage)
	c := r.collect(r.chain()[:len(r.chain())-1])
	var b strings.Builder
	usersCopy := ""
	if users, groups := r.accounts(r.chain()); len(users)+len(groups) > 0 {
		name := pick(r.name(r.t) != "", r.name(r.t), "app") + "-users"
		stage, cp := r.usersStage(st.Platform, r.builderRef(), parent, name, users, groups)
		b.WriteString(stage + "\n")
		usersCopy = cp
		r.added++
		r.keepAccounts(name, users, groups)
	}
	b.WriteString(from(st.Platform, r.baseRef(r.t, r.target.Ref, readiness.RuleDistrolessBase), r.name(r.t)))
	r.copies(&b, workdir, parent, c, usersCopy)
	r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: b.String()})
	r.change(readiness.RuleDistrolessBase, fmt.Sprintf("the runtime stage is FROM %s and copies %s from %s, with its ENV and USER", r.target.Pinned(), r.wd, parent))
	r.changeIfBlocked(readiness.RuleMoveToBuilder, "the RUN steps stay in "+parent+", which the runtime stage copies its files from")
	r.newBase = false
	return r.swap(start, health)
}
