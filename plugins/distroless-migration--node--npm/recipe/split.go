package recipe

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The split layout: a files stage keeps the RUN steps, and a new runtime
// stage on the target copies their results (rule move_to_builder).

// split turns the runtime stage into a files stage that keeps its RUN
// steps, and appends a runtime stage on the target that copies the files.
func (r *rewriter) split(start, health []string) error {
	st := r.d.Stages[r.t]
	workdir, err := r.appDir(readiness.RuleMoveToBuilder)
	if err != nil {
		return err
	}
	files := "app-files"
	if st.Name != "" {
		files = st.Name + "-files"
	}
	base := st.Base
	switch {
	case st.BaseStage >= 0:
		// Built from an earlier stage, which stays as it is.
	case dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseOfficialNode || strings.Contains(st.ResolvedBase, "alpine") || nodeMajorOf(st.ResolvedBase) != r.target.Major:
		base = r.builderRef()
		if strings.Contains(st.ResolvedBase, "alpine") {
			if err := r.apkToApt(r.t); err != nil {
				return err
			}
		}
	}
	r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, base, files)})
	var keep []string
	hc, _ := r.d.Effective(r.t, "healthcheck")
	for _, in := range st.Instructions {
		switch {
		case in.Command == "cmd" || in.Command == "entrypoint" || in.Command == "shell" || in.Command == "onbuild":
			r.replace(in, "")
		case in.Command == "healthcheck":
			r.replace(in, "")
			if in.Line == hc.Line {
				if health != nil {
					keep = append(keep, health...)
				} else {
					keep = append(keep, r.verbatim(in))
				}
			}
		case runtimeOnly[in.Command]:
			r.replace(in, "")
			keep = append(keep, r.verbatim(in))
		}
	}
	c := r.collect(r.chain())
	c.users = c.users || r.needsNodeUser()
	// The new stage follows the files stage's last kept instruction, so
	// that what came after the runtime-only lines stays after it.
	end := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		if !runtimeOnly[in.Command] {
			end = max(end, r.lastLine(in))
		}
	}
	if c.prune != "" {
		r.insertAfter(end, "RUN "+c.prune+"\n")
		r.change(readiness.RuleMoveToBuilder, "dev dependencies are pruned in the files stage: "+c.prune)
	}
	// The service ran as root and could write the directories its RUN
	// steps made; on a target that runs as another user they go to that
	// user, in the files stage (COPY --from keeps ownership).
	if dirs := dedupe(c.madeDirs); c.lastUser == "" && r.target.UID != "" && len(dirs) > 0 {
		r.insertAfter(end, fmt.Sprintf("RUN chown -R %s %s\n", r.target.UID, strings.Join(dirs, " ")))
		r.change(readiness.RuleMoveToBuilder, fmt.Sprintf("the directories the RUN steps made (%s) go to %s, the target's user, since the service ran as root and wrote there", strings.Join(dirs, ", "), r.target.User))
	}
	var b strings.Builder
	b.WriteString("\n")
	b.WriteString(from(st.Platform, r.target.Pinned(), st.Name))
	b.WriteString(workdir)
	r.copies(&b, files, c)
	for _, k := range keep {
		b.WriteString(k)
	}
	for _, s := range start {
		b.WriteString(s)
	}
	r.insertAfter(end, b.String())
	r.appended = true
	r.change(readiness.RuleMoveToBuilder, fmt.Sprintf("the runtime stage's RUN steps stay in a files stage (%s, on %s); a new runtime stage on %s copies %s from it with COPY --from, ownership kept%s",
		files, base, r.target.Pinned(), r.wd, pick(c.users, ", and the users and groups they add (/etc/passwd, /etc/group)", "")))
	r.change(readiness.RuleDistrolessBase, "the runtime stage is FROM "+r.target.Pinned())
	return nil
}
