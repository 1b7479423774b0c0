package recipe

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// What a files stage hands the runtime stage (rule move_to_builder): the
// app directory, users, files and directories outside the WORKDIR, ARG,
// ENV and USER, and
// the step that prunes dev dependencies.

// collected is what a chain of stages sets up that the runtime needs.
type collected struct {
	args     []string // ARG instructions, verbatim (ENV may use them)
	envs     []string // ENV instructions, verbatim
	lastUser string   // the last USER, verbatim
	// wdUser is the USER line of the app directory's owner in the
	// original image: the user current when a WORKDIR or a RUN step made
	// it (or a directory below it), the --chown user of a COPY that made
	// it, or the owner a later chown gave it; "" for root.
	wdUser  string
	outside []outsideCopy // what COPY and ADD put outside the WORKDIR
	prune   string        // the step that prunes dev dependencies
}

func (r *rewriter) collect(stages []int) collected {
	var c collected
	// The stages are a FROM chain, root first: WORKDIR and ENV carry on.
	wd, production := "/", false
	var pkgDirs []string // directories a COPY put a package.json in
	user, wdMade := "", false
	for _, i := range stages {
		for _, in := range r.d.Stages[i].Instructions {
			if r.gone[in.Line] {
				continue
			}
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = resolvePath(wd, in.Args[0])
					if !wdMade && within(wd, r.wd) {
						wdMade, c.wdUser = true, user
					}
				}
			case "arg":
				c.args = append(c.args, r.verbatim(in))
			case "user":
				c.lastUser = r.verbatim(in)
				user = c.lastUser
				if len(in.Args) == 1 && rootUser(in.Args[0]) {
					user = ""
				}
			case "env":
				c.envs = append(c.envs, r.verbatim(in))
				for _, kv := range in.Args {
					if k, v, _ := strings.Cut(kv, "="); k == "NODE_ENV" {
						production = v == "production"
					}
				}
			case "copy", "add":
				if len(in.Args) > 0 {
					raw := in.Args[len(in.Args)-1]
					dest := resolvePath(wd, raw)
					if !wdMade && within(dest, r.wd) {
						// The copy makes the app directory: BuildKit makes
						// the directories a COPY creates as its --chown
						// user (fsutil's copy.MkdirAll), else as root.
						wdMade, c.wdUser = true, ""
						if m := chownRE.FindStringSubmatch(r.verbatim(in)); m != nil && !rootUser(m[1]) && !strings.ContainsAny(m[1], "$`") {
							c.wdUser = "USER " + m[1] + "\n"
						}
					}
					srcs := in.Args[:len(in.Args)-1]
					if in.From == "" && slices.ContainsFunc(srcs, isManifest) {
						pkgDirs = append(pkgDirs, copyDir(dest, raw, srcs))
					}
					if !within(dest, r.wd) {
						c.outside = append(c.outside, outsideFor(dest, raw, srcs, r.wd)...)
					}
				}
			case "run":
				cmds := shellcmd.Instruction(in)
				for _, cmd := range cmds {
					if len(cmd) == 0 {
						continue
					}
					// A step that names the app directory, or a path in
					// it, before anything made it may make it: as the
					// step's user. A chown of it gives it that owner.
					if owner, ok := r.chownOf(cmd, wd); ok {
						wdMade, c.wdUser = true, owner
					} else if !wdMade && slices.ContainsFunc(cmd[1:], func(w string) bool {
						return !strings.HasPrefix(w, "-") && within(resolvePath(wd, w), r.wd)
					}) {
						wdMade, c.wdUser = true, user
					}
					// A directory the step makes outside the WORKDIR
					// (mkdir, install -d), or what it copies or moves
					// there (cp, mv: mv public /srv/public), is the
					// service's, with the owner and mode the step gave
					// it: the runtime stage gets it too, not only the app
					// directory. The system's own directories are not
					// handed over.
					made := shellcmd.MadeDirs(cmd)
					if b := path.Base(cmd[0]); b == "cp" || b == "mv" {
						w, _ := shellcmd.Written(cmd)
						made = append(made, w...)
					}
					for _, d := range made {
						if strings.ContainsAny(d, "$*?<") {
							continue // a word the shell expands
						}
						dir := resolvePath(wd, d)
						if !within(dir, r.wd) && !within(r.wd, dir) && !readiness.SystemDir(dir) && dir != "/tmp" {
							c.outside = append(c.outside, outsideCopy{src: dir, dest: dir})
						}
					}
					switch path.Base(cmd[0]) {
					case "npm", "yarn", "pnpm":
						// With NODE_ENV=production an install leaves dev
						// dependencies out already.
						c.prune = nextPrune(c.prune, cmd, production || prodInStep(in))
						// An install finds its project by walking up from
						// the WORKDIR to a package.json: one that a COPY put
						// above the WORKDIR gets its node_modules there.
						if isInstall(cmd) {
							if root := projectRoot(wd, pkgDirs); root != "" && !within(root, r.wd) {
								nm := path.Join(root, "node_modules")
								c.outside = append(c.outside, outsideCopy{src: nm, dest: nm})
							}
						}
					}
				}
			}
		}
	}
	return c
}

// chownOf reads a chown of the app directory (chown -R of it or of a
// directory above it, or chown of the directory itself): the USER line of
// the owner it gives, "" for root; ok is false for any other command.
func (r *rewriter) chownOf(cmd []string, wd string) (owner string, ok bool) {
	if path.Base(cmd[0]) != "chown" {
		return "", false
	}
	recursive, spec := false, ""
	var targets []string
	for _, w := range cmd[1:] {
		switch {
		case w == "-R" || w == "--recursive" || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "R"):
			recursive = true
		case strings.HasPrefix(w, "--reference"):
			return "", false // the owner is another file's
		case strings.HasPrefix(w, "-"):
		case spec == "":
			spec = w
		default:
			targets = append(targets, w)
		}
	}
	for _, t := range targets {
		if dir := resolvePath(wd, t); dir == path.Clean(r.wd) || recursive && within(r.wd, dir) {
			if strings.ContainsAny(spec, "$`") || rootUser(spec) {
				return "", true
			}
			return "USER " + spec + "\n", true
		}
	}
	return "", false
}

// copies writes the WORKDIR and the COPY --from lines that hand a files
// stage's results to the runtime stage, with the ARG, ENV and USER lines.
// When the original's app directory belonged to a user other than root
// (its WORKDIR made it while that USER was set, BuildKit making a missing
// WORKDIR as the current USER, moby/buildkit#1002; or a chown gave it
// that owner), a COPY --from of the directory would not carry that over:
// it leaves the directory's own owner as it finds it. So that user is set
// first, its account copied in before, and the runtime's WORKDIR makes
// the directory the same user's.
func (r *rewriter) copies(b *strings.Builder, workdir, files string, c collected, users string) {
	early := workdir != "" && c.wdUser != "" && !strings.Contains(c.wdUser, "$")
	if early {
		for _, a := range c.args {
			b.WriteString(a)
		}
		b.WriteString(users)
		b.WriteString(c.wdUser)
		r.change(readiness.RuleDistrolessBase, fmt.Sprintf("the runtime stage sets %s before its WORKDIR, which makes %s that user's, as it was in the original image", strings.TrimSpace(c.wdUser), r.wd))
	}
	b.WriteString(workdir)
	fmt.Fprintf(b, "COPY --from=%s %s%s %s\n", files, r.chownFlag(r.wd), r.wd, r.wd)
	if !early {
		b.WriteString(users)
	}
	for _, o := range dedupe(c.outside) {
		fmt.Fprintf(b, "COPY --from=%s %s%s %s\n", files, r.chownFlag(o.src), o.src, o.dest)
	}
	if !early {
		for _, a := range c.args {
			b.WriteString(a)
		}
	}
	for _, e := range c.envs {
		b.WriteString(e)
	}
	if c.lastUser != "" && (!early || c.lastUser != c.wdUser) {
		b.WriteString(c.lastUser)
	}
}

// handed names what the runtime stage copies from a files stage: the app
// directory wd, then what lies outside it, for the change list.
func handed(wd string, c collected) string {
	names := []string{wd}
	for _, o := range dedupe(c.outside) {
		names = append(names, o.src)
	}
	if len(names) == 1 {
		return wd
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// outsideCopy is one COPY --from line for what a files stage put outside
// its WORKDIR.
type outsideCopy struct{ src, dest string }

// outsideFor names what COPY srcs raw put at dest, outside the WORKDIR wd.
// A destination that holds the WORKDIR ("/", or /srv above /srv/app) is
// never copied whole: that would copy the files stage's own system (its
// shell among it) over the target's. Each source is copied by name instead,
// into that directory; a source that is a directory, whose contents land
// there unnamed, keeps the whole destination.
func outsideFor(dest, raw string, srcs []string, wd string) []outsideCopy {
	intoDir := strings.HasSuffix(raw, "/") || len(srcs) > 1 || slices.ContainsFunc(srcs, isGlob)
	if !intoDir || !within(wd, dest) {
		return []outsideCopy{{src: dest, dest: dest}}
	}
	var out []outsideCopy
	for _, s := range srcs {
		base := path.Base(s)
		if strings.HasSuffix(s, "/") || base == "." || base == "/" || base == ".." {
			return []outsideCopy{{src: dest, dest: dest}}
		}
		out = append(out, outsideCopy{src: path.Join(dest, base), dest: strings.TrimSuffix(dest, "/") + "/"})
	}
	return out
}

// copyDir is the directory a COPY of srcs to raw (resolved: dest) writes
// its files into.
func copyDir(dest, raw string, srcs []string) string {
	if strings.HasSuffix(raw, "/") || len(srcs) > 1 || slices.ContainsFunc(srcs, isGlob) || slices.Contains(srcs, ".") {
		return dest
	}
	return path.Dir(dest)
}

// isManifest reports a COPY source that brings a package.json.
func isManifest(s string) bool {
	if s == "." || strings.HasSuffix(s, "/") {
		return true
	}
	ok, err := path.Match(path.Base(s), "package.json")
	return err == nil && ok
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// projectRoot is the nearest directory at or above wd that a COPY put a
// package.json in, the way npm finds its project; "" when none did.
func projectRoot(wd string, pkgDirs []string) string {
	for d := path.Clean(wd); ; d = path.Dir(d) {
		if slices.Contains(pkgDirs, d) {
			return d
		}
		if d == "/" {
			return ""
		}
	}
}

// pruneFor is the step that drops dev dependencies after an install that
// keeps them; empty when c is not such an install.
func pruneFor(c []string) string {
	if project, prod, _ := installOf(c); !project || prod {
		return ""
	}
	switch path.Base(c[0]) {
	case "npm":
		return "npm prune --omit=dev"
	case "pnpm":
		return "pnpm prune --prod"
	}
	if slices.ContainsFunc(c, func(a string) bool { return strings.HasPrefix(a, "--immutable") }) {
		return berryPrune
	}
	return "yarn install --production --frozen-lockfile --ignore-scripts"
}

// berryPrune is Yarn 2+'s way to keep production dependencies only; it
// needs the workspace-tools plugin before Yarn 4, so the recipe names it
// rather than writes it.
const berryPrune = "yarn workspaces focus --all --production"

// writablePrune reports whether the recipe writes step: not for Yarn 2+
// (an install with --immutable, or a .yarnrc.yml in the build context),
// which has no install --production. Otherwise it warns that dev
// dependencies ship from stage, and says what would prune them.
func (r *rewriter) writablePrune(step, stage string) bool {
	if r.noDevDependencies() {
		return false // nothing to prune: a second install pass for nothing
	}
	berry := step == berryPrune
	if strings.HasPrefix(step, "yarn ") && r.in.Read != nil {
		if _, err := r.in.Read(path.Join(r.in.Context, ".yarnrc.yml")); err == nil {
			berry = true
		}
	}
	if berry {
		r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("dev dependencies ship: %s installs them with Yarn 2 or later, which has no install --production; add RUN %s there (Yarn 4, or the workspace-tools plugin)", stage, berryPrune))
	}
	return !berry
}

// noDevDependencies reports that the build context's package.json
// declares no devDependencies and no workspaces (whose members may): a
// prune step would then remove nothing (excalidraw-room).
func (r *rewriter) noDevDependencies() bool {
	if r.in.Read == nil {
		return false
	}
	data, err := r.in.Read(path.Join(r.in.Context, "package.json"))
	if err != nil {
		return false
	}
	var pj struct {
		DevDependencies map[string]any `json:"devDependencies"`
		Workspaces      any            `json:"workspaces"`
	}
	if json.Unmarshal(data, &pj) != nil {
		return false
	}
	return len(pj.DevDependencies) == 0 && pj.Workspaces == nil
}

// prodInStep reports a RUN step that sets NODE_ENV=production for its
// own commands (NODE_ENV=production pnpm i, export NODE_ENV=production),
// as ENV would for the stage.
func prodInStep(in dockerfile.Instruction) bool {
	return slices.ContainsFunc(strings.Fields(strings.Join(in.Args, " ")), func(w string) bool {
		return strings.Trim(w, `"'`) == "NODE_ENV=production"
	})
}

// nextPrune is the prune step still owed after the package manager
// command c runs, given the one owed before: an install of the project
// that keeps dev dependencies owes one (none under NODE_ENV=production),
// and one that leaves them out, or a prune, pays it.
func nextPrune(owed string, c []string, production bool) string {
	project, prod, pruned := installOf(c)
	switch {
	case pruned || project && (prod || production):
		return ""
	case project:
		return pruneFor(c)
	}
	return owed
}

// installOf classifies a package manager command: an install of the
// project (not of named packages, not global), and whether it leaves dev
// dependencies out; or a prune of them (npm prune --omit=dev, pnpm prune
// --prod, yarn workspaces focus --production).
func installOf(c []string) (project, prod, pruned bool) {
	if len(c) == 0 {
		return false, false, false
	}
	prodFlag := func(a string) bool {
		switch a {
		case "--omit=dev", "--production", "--prod", "-P", "--only=production", "--only=prod":
			return true
		}
		return false
	}
	if path.Base(c[0]) == "yarn" && len(c) >= 3 && c[1] == "workspaces" && c[2] == "focus" {
		// Yarn 2+'s focus reinstalls the named workspaces' dependencies;
		// with --production, only their production ones: a prune.
		return false, false, slices.Contains(c[3:], "--production")
	}
	if len(c) >= 2 && c[1] == "prune" {
		return false, false, path.Base(c[0]) == "npm" && slices.ContainsFunc(c[2:], prodFlag) || path.Base(c[0]) == "pnpm" && slices.ContainsFunc(c[2:], prodFlag)
	}
	if !isInstall(c) {
		return false, false, false
	}
	for _, a := range c[min(2, len(c)):] {
		if strings.HasPrefix(a, "-g") || a == "--global" {
			return false, false, false
		}
		if !strings.HasPrefix(a, "-") {
			return false, false, false // installs named packages, not the project's
		}
		prod = prod || prodFlag(a)
	}
	return true, prod, false
}

// isInstall reports a package manager's install of the project.
func isInstall(c []string) bool {
	if len(c) < 2 {
		return path.Base(c[0]) == "yarn"
	}
	return c[1] == "install" || c[1] == "i" || c[1] == "ci"
}

// chainOf is stage i's FROM chain, root first.
func (r *rewriter) chainOf(i int) []int {
	var c []int
	for ; i >= 0 && len(c) <= len(r.d.Stages); i = r.d.Stages[i].BaseStage {
		c = append([]int{i}, c...)
	}
	return c
}

// devDeps is the prune step that stages (a FROM chain) owe for their last
// install of the project, and the directory it ran in; "" when they owe
// none.
func (r *rewriter) devDeps(stages []int) (step, dir string) {
	wd, production := "/", false
	for _, i := range stages {
		for _, in := range r.d.Stages[i].Instructions {
			switch in.Command {
			case "workdir":
				if len(in.Args) == 1 {
					wd = resolvePath(wd, in.Args[0])
				}
			case "env":
				for _, kv := range in.Args {
					if k, v, _ := strings.Cut(kv, "="); k == "NODE_ENV" {
						production = v == "production"
					}
				}
			case "run":
				cmds := shellcmd.Instruction(in)
				for _, cmd := range cmds {
					if len(cmd) == 0 {
						continue
					}
					switch path.Base(cmd[0]) {
					case "npm", "yarn", "pnpm":
						if project, _, _ := installOf(cmd); project {
							dir = wd
						}
						step = nextPrune(step, cmd, production || prodInStep(in))
					}
				}
			}
		}
	}
	return step, dir
}

// pruneShipped prunes dev dependencies where the runtime stage's
// node_modules come from: a stage it copies them from with COPY --from
// whose install kept them gets its package manager's prune step at its
// end. A stage that is also the base of another is left as it is, with a
// warning, since the other may need them (tests, a watcher).
func (r *rewriter) pruneShipped() {
	chain := r.chain()
	seen := map[int]bool{}
	for _, i := range chain {
		for _, in := range r.d.Stages[i].Instructions {
			if in.Command != "copy" || in.From == "" || len(in.Args) < 2 {
				continue
			}
			x, ok := r.d.StageRef(in.From)
			if !ok || x >= r.t || slices.Contains(chain, x) || seen[x] {
				continue
			}
			step, dir := r.devDeps(r.chainOf(x))
			if step == "" {
				continue
			}
			nm := path.Join(dir, "node_modules")
			if !slices.ContainsFunc(in.Args[:len(in.Args)-1], func(s string) bool { return !isGlob(s) && within(nm, path.Join("/", s)) }) {
				continue
			}
			seen[x] = true
			if j := slices.IndexFunc(r.d.Stages, func(st dockerfile.Stage) bool { return st.BaseStage == x }); j >= 0 {
				r.res.Warnings = append(r.res.Warnings, fmt.Sprintf("dev dependencies ship: the runtime stage copies %s from %s (line %d), whose install keeps them, and %s is also the base of %s, so codegenie does not prune there; add a stage FROM %s that runs %s and copy from it",
					nm, r.ref(x), in.Line, r.ref(x), r.ref(j), r.ref(x), step))
				continue
			}
			if !r.writablePrune(step, r.ref(x)) {
				continue
			}
			r.insertAfter(r.stageEnd(x), "RUN "+step+"\n")
			r.res.Changes = append(r.res.Changes, Change{Rule: readiness.RuleMoveToBuilder, Line: in.Line, What: fmt.Sprintf(
				"dev dependencies are pruned before they ship: the runtime stage copies %s from %s (line %d), whose install keeps them, so %s ends with RUN %s", nm, r.ref(x), in.Line, r.ref(x), step)})
		}
	}
}
