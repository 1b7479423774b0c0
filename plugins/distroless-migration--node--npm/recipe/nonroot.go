package recipe

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// The target's user (rule nonroot_user). A service that ran as root (its
// stages set no USER) runs, on a target such as distroless :nonroot, as
// that target's user. What root let it do must still work: the
// directories it writes are made in the files stage and chowned to the
// target's uid, or, when that cannot be enough (a port below 1024, a
// write into a system directory), the rewrite picks the target's root
// variant. docs/gates/nonroot.md states the rule.

// UserDecision is what the rewrite does about the target's user.
type UserDecision struct {
	// Chown are the directories the files stage makes and chowns to the
	// target's uid.
	Chown []readiness.Write
	// Root is the root variant the rewrite picks instead of the target;
	// nil when it keeps the target.
	Root *Target
	// Why is the reason, for the change list; Warning says what the
	// rewrite could not settle.
	Why, Warning string
}

// DecideUser decides, for a service whose facts are nr, moving to t:
// nothing when the service already runs as a user its stages name, or
// when t runs as root; the root variant when a port below 1024 or a write
// into a system directory needs root, or when no files stage can chown
// (noFiles says why: its stages have no shell, or the app has no folder
// of its own to copy); the directories to chown otherwise. chosen is set when the user named t (--target-image): it is
// then kept, and what it breaks is a warning.
func DecideUser(nr *readiness.NonRoot, t Target, chosen bool, noFiles string) UserDecision {
	var d UserDecision
	if nr == nil || !nr.AsRoot || nr.User != "" || t.UID == "" {
		return d
	}
	var needRoot []string
	for _, p := range nr.LowPorts {
		needRoot = append(needRoot, fmt.Sprintf("it listens on port %d (%s, %s), which only root may bind without CAP_NET_BIND_SERVICE (Docker 20.10 and later set net.ipv4.ip_unprivileged_port_start to 0 in a container; not every Kubernetes runtime does)", p.Port, p.How, where(p.Evidence.File, p.Evidence.Line)))
	}
	var writes []readiness.Write
	for _, w := range nr.Writes {
		if readiness.SystemDir(w.Dir) {
			needRoot = append(needRoot, fmt.Sprintf("it writes into %s (%s, %s), a system directory that a files stage cannot hand over", w.Dir, w.How, where(w.Evidence.File, w.Evidence.Line)))
			continue
		}
		writes = append(writes, w)
	}
	if len(writes) > 0 && noFiles != "" && len(needRoot) == 0 {
		needRoot = append(needRoot, fmt.Sprintf("it writes into %s (%s, %s), and %s", writes[0].Dir, writes[0].How, where(writes[0].Evidence.File, writes[0].Evidence.Line), noFiles))
	}
	if len(needRoot) > 0 {
		rv, ok := RootVariant(t)
		switch {
		case chosen || !ok:
			d.Warning = fmt.Sprintf("the service ran as root and %s runs as %s, but %s; use a root variant of the target or change the service", t.Ref, t.User, strings.Join(needRoot, "; "))
		default:
			d.Root = &rv
			d.Why = fmt.Sprintf("the service ran as root, and %s: the runtime stage is %s, the root variant of %s, not %s's user %s", strings.Join(needRoot, "; "), rv.Ref, t.Ref, t.Ref, t.User)
			return d
		}
	}
	d.Chown = nested(writes)
	return d
}

// plainWordRE is a word the shell reads as itself.
var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9_./@%+=:,-]+$`)

// shellWord is p as one shell word: as it is when the shell reads it as
// itself, else in single quotes (a path from the app's code may hold a
// space or a $).
func shellWord(p string) string {
	if plainWordRE.MatchString(p) {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// where is file:line.
func where(file string, line int) string { return fmt.Sprintf("%s:%d", file, line) }

// nested drops the directories that another of ws holds: a recursive
// chown of the outer one covers them.
func nested(ws []readiness.Write) []readiness.Write {
	var out []readiness.Write
	for _, w := range ws {
		if !slices.ContainsFunc(ws, func(o readiness.Write) bool { return o.Dir != w.Dir && within(w.Dir, o.Dir) }) {
			out = append(out, w)
		}
	}
	return out
}

// RootVariant is the tag of t's family that runs as root and has a shell
// exactly when t does (distroless :nonroot → :latest).
func RootVariant(t Target) (Target, bool) {
	for _, f := range families {
		if f.name != t.Family {
			continue
		}
		var tags []string
		for tag, facts := range f.tags {
			if facts.uid == "" && facts.shell == t.Shell {
				tags = append(tags, tag)
			}
		}
		slices.Sort(tags)
		if len(tags) == 0 {
			return Target{}, false
		}
		rv, err := lookup(f, tags[0], t.Major)
		return rv, err == nil
	}
	return Target{}, false
}

// decideUser carries out DecideUser at the start of the rewrite: it picks
// the root variant, or keeps the directories to chown for the layout.
func (r *rewriter) decideUser() {
	noFiles := ""
	if _, ok := r.d.AppDir(r.t); !ok {
		noFiles = "the app is copied into / with no WORKDIR, so no files stage can hand its directories over"
	}
	if dockerfile.ClassifyBase(r.d.RootBase(r.t)) == dockerfile.BaseDistroless {
		noFiles = "its stages have no shell to chown it with"
	}
	d := DecideUser(r.in.Plan.NonRoot, r.target, r.in.TargetChosen, noFiles)
	if d.Warning != "" {
		r.res.Warnings = append(r.res.Warnings, d.Warning)
	}
	if d.Root != nil {
		rv := *d.Root
		rv.Digest = r.in.Pins[rv.Ref]
		r.target, r.res.Target = rv, rv
		r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleNonRootUser, What: d.Why})
		return
	}
	r.chown = d.Chown
}

// chownFlag is the --chown option of the COPY that hands dir to the
// runtime stage, when dir is one the service writes: a COPY of a directory
// copies its contents, with their owners, into a destination it makes as
// root (BuildKit and the classic builder alike; moby/buildkit#1941), so
// without it the written directory itself would be root's. Its contents
// are the target user's already (chown -R in the files stage).
func (r *rewriter) chownFlag(dir string) string {
	for _, w := range r.chown {
		if w.Dir == dir && r.target.UID != "" {
			return "--chown=" + r.target.UID + " "
		}
	}
	return ""
}

// chownWrites makes the directories of r.chown in the files stage, after
// line end, and chowns them to the target's uid; those outside the app's
// directory are copied to the runtime stage on their own (c.outside).
func (r *rewriter) chownWrites(end int, c *collected) {
	if len(r.chown) == 0 {
		return
	}
	var dirs, made, whys, apart []string
	for _, w := range r.chown {
		dirs = append(dirs, shellWord(w.Dir))
		if !strings.HasPrefix(w.How, "RUN ") { // a RUN step made it already
			made = append(made, shellWord(w.Dir))
		}
		whys = append(whys, fmt.Sprintf("%s (%s, %s)", w.Dir, w.How, where(w.Evidence.File, w.Evidence.Line)))
		if !within(w.Dir, r.wd) || w.Dir == r.wd {
			apart = append(apart, w.Dir)
		}
		if !within(w.Dir, r.wd) {
			c.outside = append(c.outside, outsideCopy{src: w.Dir, dest: w.Dir})
		}
	}
	how := "the runtime stage copies " + r.wd + " with the owners of its contents kept"
	if len(apart) > 0 {
		how = fmt.Sprintf("the runtime stage copies them with the owners of a directory's contents kept, and %s with COPY --chown=%s, since a COPY makes its destination directory as root", strings.Join(apart, ", "), r.target.UID)
	}
	step := fmt.Sprintf("chown -R %s %s", r.target.UID, strings.Join(dirs, " "))
	if len(made) > 0 {
		step = fmt.Sprintf("mkdir -p %s && %s", strings.Join(made, " "), step)
	}
	r.insertAfter(end, "RUN "+step+"\n")
	r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleNonRootUser, What: fmt.Sprintf(
		"the service ran as root and %s runs as %s: the directories it writes, %s, are chowned to %s in the files stage (made there first when no RUN step made them), and %s",
		r.target.Ref, r.target.User, strings.Join(whys, ", "), r.target.UID, how)})
}
