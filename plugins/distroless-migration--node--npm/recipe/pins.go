package recipe

import (
	"fmt"
	"strings"
)

// Digest pins: a FROM the author pinned by digest stays pinned. The new
// image is named with its digest when codegenie knows it (the target's,
// resolved by the caller, or Input.Pins); else it is named by its tag, and
// a change says the pin must be refreshed.

// baseRef is the reference a rewritten FROM of stage i names for the
// image ref; rule is the rule whose change the FROM carries out.
func (r *rewriter) baseRef(i int, ref, rule string) string {
	digest := r.in.Pins[ref]
	if ref == r.target.Ref {
		digest = r.target.Digest
	}
	st := r.d.Stages[i]
	_, old, pinned := strings.Cut(st.Base, "@")
	switch {
	case digest != "" && (pinned || ref == r.target.Ref):
		return ref + "@" + digest
	case pinned:
		r.res.Changes = append(r.res.Changes, Change{Rule: rule, Line: st.Line, What: fmt.Sprintf(
			"line %d pinned its base by digest (%s); codegenie could not resolve %s to a digest, so the new FROM names its tag: pin it again (docker buildx imagetools inspect %s)",
			st.Line, clipText(old, 19), ref, ref)})
	}
	return ref
}
