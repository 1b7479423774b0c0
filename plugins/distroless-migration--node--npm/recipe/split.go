package recipe

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The split layout: a files stage keeps the RUN steps, and a new runtime
// stage on the target copies their results (rule move_to_builder).

// split turns the runtime stage into a files stage that keeps its RUN
// steps, and appends a runtime stage on the target that copies the files.
// The instructions that describe the container move to the new stage with
// the comment lines directly above them.
func (r *rewriter) split(start, health []string) error {
	st := r.d.Stages[r.t]
	workdir, err := r.appDir(readiness.RuleMoveToBuilder)
	if err != nil {
		return err
	}
	stageName := pick(r.name(r.t) != "", r.name(r.t), "app")
	files := stageName + "-files"
	base := st.Base
	switch {
	case st.BaseStage >= 0:
		// Built from an earlier stage, which stays as it is.
	case dockerfile.ClassifyBase(st.ResolvedBase) != dockerfile.BaseOfficialNode || strings.Contains(st.ResolvedBase, "alpine") || noderuntime.NodeMajor(st.ResolvedBase) != r.target.Major:
		// The files stage keeps the variant of an official node image
		// (node:20 becomes node:22, with the compilers a full image has
		// for native builds).
		ref := r.builderRefFor(st.ResolvedBase)
		base = r.baseRef(r.t, ref, readiness.RuleMoveToBuilder)
		// The files stage installs the node_modules that ship.
		what := fmt.Sprintf("the files stage, whose node_modules ship, runs on %s (glibc, Node %d), so native addons match the runtime", ref, r.target.Major)
		r.changeIfBlocked(readiness.RuleGlibcBuilder, what)
		r.changeIfBlocked(readiness.RuleSameMajor, what)
		if strings.Contains(st.ResolvedBase, "alpine") {
			if err := r.apkToApt(r.t); err != nil {
				return err
			}
		}
	}
	drop := r.unusedInit(r.t)
	if !strings.Contains(st.ResolvedBase, "alpine") {
		r.dropAptPackages(r.t, drop)
	}
	r.dropInitDownloads(r.t, drop)
	r.edits = append(r.edits, edit{from: st.Line, to: max(st.Line, st.EndLine), text: from(st.Platform, base, files)})
	var keep []string
	startComments := ""
	hc, _ := r.d.Effective(r.t, "healthcheck")
	prev := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		first := r.commentsAbove(prev, in.Line)
		comments := r.text(first, in.Line-1)
		prev = r.lastLine(in)
		if !runtimeOnly[in.Command] {
			continue
		}
		r.edits = append(r.edits, edit{from: first, to: r.lastLine(in), text: ""})
		switch in.Command {
		case "cmd", "entrypoint":
			startComments += comments
		case "shell", "onbuild":
		case "healthcheck":
			if in.Line == hc.Line {
				keep = append(keep, comments)
				if health != nil {
					keep = append(keep, health...)
				} else {
					keep = append(keep, r.verbatim(in))
				}
			}
		default:
			keep = append(keep, comments, r.verbatim(in))
		}
	}
	c := r.collect(r.chain())
	// The new stage follows the files stage's last kept instruction, so
	// that what came after the runtime-only lines stays after it.
	end := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		if !runtimeOnly[in.Command] {
			end = max(end, r.lastLine(in))
		}
	}
	if c.prune != "" && r.writablePrune(c.prune, files) {
		r.insertAfter(end, "RUN "+c.prune+"\n")
		r.change(readiness.RuleMoveToBuilder, "dev dependencies are pruned in the files stage: "+c.prune)
	}
	// The service ran as root and could write where it wrote; on a target
	// that runs as another user those directories go to that user, in the
	// files stage (COPY --from keeps ownership).
	r.chownWrites(end, &c)
	var b strings.Builder
	usersCopy := ""
	if users, groups := r.accounts(r.chain()); len(users)+len(groups) > 0 {
		name := stageName + "-users"
		img := base
		if st.BaseStage >= 0 {
			img = r.builderRef()
		}
		stage, cp := r.usersStage(st.Platform, img, files, name, users, groups)
		b.WriteString("\n" + stage)
		usersCopy = cp
		r.added++
		r.keepAccounts(name, users, groups)
	}
	b.WriteString("\n")
	b.WriteString(from(st.Platform, r.baseRef(r.t, r.target.Ref, readiness.RuleDistrolessBase), r.name(r.t)))
	r.copies(&b, workdir, files, c, usersCopy)
	for _, k := range keep {
		b.WriteString(k)
	}
	b.WriteString(startComments)
	for _, s := range start {
		b.WriteString(s)
	}
	// Blank lines that set the runtime-only lines apart stay where they
	// were: the new stage goes after them, and they separate it, instead
	// of trailing it at the end of the file.
	at, text := end, b.String()
	if r.t == len(r.d.Stages)-1 {
		l := end
		for l < len(r.src) && strings.TrimSpace(string(r.src[l])) == "" {
			l++
		}
		if l > end {
			at, text = l, strings.TrimPrefix(text, "\n")
		}
	}
	r.insertAfter(at, text)
	r.added++
	if len(r.byRule[readiness.RuleMoveToBuilder]) == 0 && st.BaseStage < 0 {
		r.change(readiness.RuleNonRootUser, fmt.Sprintf("the runtime stage becomes a files stage (%s, on %s), where the directories the service writes are chowned; a new runtime stage on %s copies %s from it with COPY --from, ownership kept",
			files, base, r.target.Pinned(), handed(r.wd, c)))
	} else {
		r.change(readiness.RuleMoveToBuilder, fmt.Sprintf("the runtime stage's RUN steps stay in a files stage (%s, on %s); a new runtime stage on %s copies %s from it with COPY --from, ownership kept",
			files, base, r.target.Pinned(), handed(r.wd, c)))
	}
	r.change(readiness.RuleDistrolessBase, "the runtime stage is FROM "+r.target.Pinned())
	return nil
}
