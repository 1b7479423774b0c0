package recipe

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// Users the runtime stage names that the target image lacks. The target's
// own /etc/passwd and /etc/group stay: a named user is kept by appending
// its entries to them (in a users stage with a shell), or, where no stage
// of the rewrite has a shell, the official node image's node user is
// mapped to the target's nonroot user, and the change list says so.

// chownRE finds a COPY or ADD --chown value.
var chownRE = regexp.MustCompile(`--chown=(\S+)`)

// onlyNodeAccounts reports whether the judged stage's chain names no
// account the target lacks other than node, which an in-place move maps
// to the target's nonroot (mapNodeUser).
func (r *rewriter) onlyNodeAccounts() bool {
	users, groups := r.accounts(r.chain())
	for _, n := range append(users, groups...) {
		if n != "node" {
			return false
		}
	}
	return true
}

// rootUser reports whether a USER value (user[:group]) is root.
func rootUser(spec string) bool {
	u, _, _ := strings.Cut(spec, ":")
	return u == "root" || u == "0"
}

// accountNameRE is a user or group name a pattern can hold as it is.
var accountNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// targetAccounts are the accounts the target image has.
func (r *rewriter) targetAccounts() []string {
	known := []string{"root", "nobody", "nonroot"}
	if r.target.Family != "distroless" {
		known = append(known, "node") // DHI and Chainguard images have a node user
	}
	return known
}

// accounts are the user and group names that stages' USER and COPY/ADD
// --chown name and the target does not have (numbers need no entry).
func (r *rewriter) accounts(stages []int) (users, groups []string) {
	add := func(spec string) {
		u, g, _ := strings.Cut(spec, ":")
		for _, n := range []struct {
			name string
			to   *[]string
		}{{u, &users}, {g, &groups}} {
			if n.name != "" && accountNameRE.MatchString(n.name) && !slices.Contains(r.targetAccounts(), n.name) && !slices.Contains(*n.to, n.name) {
				*n.to = append(*n.to, n.name)
			}
		}
	}
	for _, i := range stages {
		for _, in := range r.d.Stages[i].Instructions {
			switch in.Command {
			case "user":
				if len(in.Args) == 1 {
					add(in.Args[0])
				}
			case "copy", "add":
				if m := chownRE.FindStringSubmatch(r.verbatim(in)); m != nil {
					add(m[1])
				}
			}
		}
	}
	return users, groups
}

// usersStage is a stage, named name, on img (which has grep and awk), that
// appends the entries of users (and their primary groups) and groups from
// the /etc/passwd and /etc/group of stage src to the target's own; copy is
// the runtime stage's COPY of the result. It copies src's files rather
// than being built FROM src: a users stage FROM the files stage failed
// the gates' build with buildah's "layer not known".
func (r *rewriter) usersStage(platform, img, src, name string, users, groups []string) (stage, copy string) {
	var b strings.Builder
	b.WriteString(from(platform, img, name))
	fmt.Fprintf(&b, "COPY --from=%s /etc/passwd /etc/group /codegenie-etc/\n", r.target.Pinned())
	fmt.Fprintf(&b, "COPY --from=%s /etc/passwd /etc/group /codegenie-etc/%s/\n", src, src)
	var steps []string
	srcDir := "/codegenie-etc/" + src
	if len(users) > 0 {
		steps = append(steps, fmt.Sprintf("grep -E '^(%s):' %s/passwd >> /codegenie-etc/passwd", strings.Join(users, "|"), srcDir))
	}
	// A user's primary group by its gid, and the groups named.
	match := fmt.Sprintf("$1 ~ /^(%s)$/", strings.Join(dedupe(append(append([]string{}, users...), groups...)), "|"))
	primary := "0"
	if len(users) > 0 {
		primary = fmt.Sprintf("$1 ~ /^(%s)$/", strings.Join(users, "|"))
	}
	steps = append(steps, fmt.Sprintf("awk -F: 'NR == FNR { if (%s) gid[$4] = 1; next } %s || ($3 in gid)' %s/passwd %s/group >> /codegenie-etc/group", primary, match, srcDir, srcDir))
	b.WriteString("RUN " + strings.Join(steps, " && ") + "\n") // one line: the escape character may be `
	return b.String(), fmt.Sprintf("COPY --from=%s /codegenie-etc/passwd /codegenie-etc/group /etc/\n", name)
}

// keepAccounts records the change of a users stage.
func (r *rewriter) keepAccounts(name string, users, groups []string) {
	all := dedupe(append(append([]string{}, users...), groups...))
	r.change(readiness.RuleDistrolessBase, fmt.Sprintf("the stage runs as or chowns to %s, whom %s does not know: a users stage (%s) appends their /etc/passwd and /etc/group entries to %s's own, which the runtime stage copies; the target's other accounts stay as they are",
		strings.Join(all, ", "), r.target.Ref, name, r.target.Ref))
}

// mapNodeUser rewrites USER node and --chown=node in stage i as nonroot,
// the distroless image's unprivileged user, and says so; it reports
// whether it changed anything.
func (r *rewriter) mapNodeUser(i int) bool {
	if r.target.Family != "distroless" {
		return false
	}
	done := false
	for _, in := range r.d.Stages[i].Instructions {
		if in.Command != "user" && in.Command != "copy" && in.Command != "add" {
			continue
		}
		text := r.verbatim(in)
		if in.Command != "user" {
			m := chownRE.FindStringSubmatchIndex(text)
			if m == nil {
				continue
			}
			spec := text[m[2]:m[3]]
			if mapped := mapNode(spec); mapped != spec {
				r.replace(in, text[:m[2]]+mapped+text[m[3]:])
				done = true
			}
			continue
		}
		if len(in.Args) == 1 && mapNode(in.Args[0]) != in.Args[0] {
			r.replace(in, strings.Replace(text, in.Args[0], mapNode(in.Args[0]), 1))
			done = true
		}
	}
	if done {
		r.change(readiness.RuleDistrolessBase, fmt.Sprintf("the node user (uid 1000 in the node image) becomes nonroot (uid 65532), the unprivileged user of %s, which has no node user: USER and --chown name nonroot; files an earlier run left on a volume as uid 1000 need chown 65532", r.target.Ref))
	}
	return done
}

// mapNode maps node to nonroot in a user[:group] value.
func mapNode(spec string) string {
	u, g, hasGroup := strings.Cut(spec, ":")
	if u == "node" {
		u = "nonroot"
	}
	if g == "node" {
		g = "nonroot"
	}
	if hasGroup {
		return u + ":" + g
	}
	return u
}
