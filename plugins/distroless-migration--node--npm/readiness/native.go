package readiness

// Native code in the judged image: which stages build what ships, and
// which of them build it against musl, which a glibc distroless runtime
// cannot load (native_abi).

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// NativeStage is a stage that builds native code the judged image ships:
// node_modules with native addons, or a shared object (a musl-built SQLite
// extension). Root is the first stage of its FROM chain, whose base the
// rewrite changes; Why says what ships from it.
type NativeStage struct {
	Root int
	Why  string
}

// installRE matches a RUN step that installs (and so may compile)
// node_modules.
var installRE = regexp.MustCompile(`\b(?:npm|pnpm)\s+(?:[^&;|]*\s)?(?:i|install|ci|add|rebuild)\b|\byarn(?:\s*$|\s*(?:&&|;|\|)|\s+(?:install|add)\b|\s+--)|\bnode-gyp\b|\bprebuild(?:-install)?\b`)

// buildsAddons reports a RUN line that installs (and so may compile)
// node_modules with native addons: a project's install (npm ci, yarn, pnpm
// install), node-gyp or prebuild, or a named install of a package known
// to ship an addon. A line that only adds named packages none of which is
// known native (npm install undici@6.27.0, npm install -g pm2) builds
// none.
func buildsAddons(line string) bool {
	if !installRE.MatchString(line) {
		return false
	}
	var named []string // global ones too: they ship from the final stage
	for _, p := range shellcmd.Installs(line) {
		named = append(named, p.Package)
	}
	if len(named) == 0 || slices.ContainsFunc(named, noderuntime.KnownNative) {
		return true
	}
	for _, c := range shellcmd.Analyze(line).Commands {
		if projectInstall(c) {
			return true
		}
	}
	return false
}

// projectInstall reports a package manager command that installs a
// project's dependencies: npm ci, npm install, yarn, yarn install, pnpm
// install, with options only.
func projectInstall(c []string) bool {
	if len(c) == 0 {
		return false
	}
	pm := path.Base(c[0])
	if pm != "npm" && pm != "yarn" && pm != "pnpm" {
		return false
	}
	var words []string
	for _, a := range c[1:] {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	switch {
	case len(words) == 0:
		return pm == "yarn"
	case len(words) > 1:
		return false
	}
	return words[0] == "install" || words[0] == "i" || pm == "npm" && words[0] == "ci"
}

// nativeFileRE matches a path that is compiled native code.
var nativeFileRE = regexp.MustCompile(`\.(?:so(?:\.[0-9.]+)?|node)$`)

// NativeStages lists, once each and in stage order, the FROM-chain roots
// of d whose native code ships in d's final stage: of the chains with
// addons (all when addons is set; else those holding a stage in
// stageAddons), the final stage's chain if it installs node_modules, and
// every chain a COPY --from of a shipping chain copies node_modules (or a
// folder holding it, such as a framework's traced output) from; and,
// whatever the addons, every chain a shared object or .node file is
// copied from. A chain that only hands over built JavaScript (COPY
// --from=build /app/dist) is not listed.
func NativeStages(d *dockerfile.File, addons bool, stageAddons map[int]bool) []NativeStage {
	var out []NativeStage
	seen := map[int]bool{}
	add := func(root int, why string) {
		if !seen[root] {
			seen[root] = true
			out = append(out, NativeStage{Root: root, Why: why})
		}
	}
	visited := map[int]bool{}
	var visit func(i int)
	visit = func(i int) {
		if visited[i] {
			return
		}
		visited[i] = true
		// A chain the image copies node_modules from ships them, built by
		// its own install step or brought in from the build context (a
		// committed node_modules); the runtime's own chain builds native
		// code only with an install step of its own (an alpine
		// single-stage service), since the rewrite replaces its base.
		why, installs, has := "its node_modules, with native addons, ship in the image", false, addons
		for j := i; j >= 0 && j < len(d.Stages); j = d.Stages[j].BaseStage {
			has = has || stageAddons[j]
			for _, in := range d.Stages[j].Instructions {
				if in.Command == "run" && buildsAddons(strings.Join(in.Args, " ")) {
					why, installs = fmt.Sprintf("line %d installs node_modules with native addons", in.Line), true
				}
			}
		}
		if has && (i != d.Final || installs) {
			add(chainRoot(d, i), why)
		}
		for j := i; j >= 0 && j < len(d.Stages); j = d.Stages[j].BaseStage {
			st := d.Stages[j]
			for _, in := range st.Instructions {
				switch {
				case in.Command == "copy" && in.From != "":
					from, ok := d.StageRef(in.From)
					if !ok || from >= j {
						continue
					}
					srcs := in.Args
					if len(srcs) > 1 {
						srcs = srcs[:len(srcs)-1]
					}
					for _, src := range srcs {
						if nativeFileRE.MatchString(src) {
							add(chainRoot(d, from), fmt.Sprintf("line %d copies %s, native code built there", in.Line, src))
						}
					}
					if (addons || len(stageAddons) > 0) && copiesNodeModules(srcs, d.Workdir(from)) {
						visit(from)
					}
				}
			}
		}
	}
	visit(d.Final)
	sort.SliceStable(out, func(a, b int) bool { return out[a].Root < out[b].Root })
	return out
}

// copiesNodeModules reports a COPY whose sources may hold node_modules:
// node_modules itself, a framework's traced output, or the source stage's
// WORKDIR or a folder above it.
func copiesNodeModules(srcs []string, workdir string) bool {
	for _, s := range srcs {
		p := s
		if !path.IsAbs(p) {
			p = path.Join(workdir, p)
		}
		p = path.Clean(p)
		if strings.Contains(p, "node_modules") || images.TracedOutput(p) || p == "/" || workdir == p || strings.HasPrefix(workdir, p+"/") {
			return true
		}
	}
	return false
}

// chainRoot is the first stage of i's FROM chain.
func chainRoot(d *dockerfile.File, i int) int {
	for n := 0; i >= 0 && i < len(d.Stages) && d.Stages[i].BaseStage >= 0 && n <= len(d.Stages); n++ {
		i = d.Stages[i].BaseStage
	}
	return i
}

// isMusl reports a base image reference built on musl.
func isMusl(ref string) bool { return strings.Contains(ref, "alpine") }
