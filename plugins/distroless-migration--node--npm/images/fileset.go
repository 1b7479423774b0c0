package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// FileSet is what the judged image's final stage holds of the repository:
// the files its COPY and ADD instructions bring in, directly or through
// builder stages, after .dockerignore.
type FileSet struct {
	// Files maps a repository path to its path in the image (a file
	// copied to two places keeps one of them).
	Files map[string]string
	// byImage maps an image path to the repository file that lands there
	// last.
	byImage map[string]string
	// Generated are image directories that a builder stage's RUN steps
	// produced (such as /app/dist), copied into the final image: their
	// contents are not in the repository.
	Generated []Generated
	// Compiled are the repository sources a builder stage held when it
	// produced a Generated directory: the image ships what they compile to.
	// Maps the source to the generated image directories (a stage that
	// builds a backend, a database package and a commons package makes
	// three).
	Compiled map[string][]string
	// ContextGuessed is set when no compose file names the build context
	// and it was taken to be the Dockerfile's own folder (not the root).
	ContextGuessed bool
	// InstallsDependencies is set when a stage that feeds the final image
	// installs packages (npm ci, npm install, yarn, pnpm install): the
	// image's node_modules comes from the lockfile, not from the repository.
	InstallsDependencies bool
	// OmitsDevDependencies is set when such an install leaves out
	// devDependencies (npm ci --omit=dev, a prune, --production,
	// NODE_ENV=production): the image's node_modules is the production
	// set a lockfile pins.
	OmitsDevDependencies bool
	// AddsPackages is set when such a stage adds named packages that the
	// lockfile need not pin (npm install x, yarn add x, pnpm add x): its
	// node_modules may hold packages no lockfile names.
	AddsPackages bool
	// AddedPackages are the names such steps add, when every one of them
	// names its packages (npm add prisma@7 gives prisma); nil otherwise.
	AddedPackages []string
	// Projects are the repository package.json files that the judged
	// Dockerfile's stages hold at their working directories, by stage
	// index: the project whose dependencies a stage's install installs.
	Projects map[int]string
	// Unresolved says why part of the file set is unknown (a COPY source
	// with a variable, an ADD of a URL); when it is not empty, a file not in
	// Files may still be in the image.
	Unresolved []string
}

// Generated is a directory of the final image whose files a RUN step made.
type Generated struct {
	ImagePath string
	// Stage and StagePath are where it was made.
	Stage     string
	StagePath string
}

// Ships reports whether the image holds the repository file rel. known is
// false when the file set is incomplete and rel is not in it.
func (s *FileSet) Ships(rel string) (ships, known bool) {
	if s == nil {
		return true, false
	}
	if _, ok := s.Files[rel]; ok {
		return true, true
	}
	if _, ok := s.Compiled[rel]; ok {
		return true, true
	}
	if s.InstallsDependencies && isNodeModules(rel) {
		return true, true
	}
	return false, len(s.Unresolved) == 0
}

// ImagePath returns where rel is in the image.
func (s *FileSet) ImagePath(rel string) (string, bool) {
	if s == nil {
		return "", false
	}
	p, ok := s.Files[rel]
	return p, ok
}

// RepoPath maps an image path back to the repository file it came from.
func (s *FileSet) RepoPath(imagePath string) (string, bool) {
	if s == nil {
		return "", false
	}
	rel, ok := s.byImage[path.Clean(imagePath)]
	return rel, ok
}

// isSource reports a JavaScript or TypeScript source file, which a build
// step may compile into generated output.
func isSource(rel string) bool {
	switch path.Ext(rel) {
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return !strings.HasSuffix(rel, ".d.ts")
	}
	return false
}

func isNodeModules(rel string) bool {
	return strings.HasPrefix(rel, "node_modules/") || strings.Contains(rel, "/node_modules/")
}

// Files is the derived fact of the judged image's file set (nil when the
// repository has no Dockerfile or it did not parse).
var Files = &probe.Analyzer[*FileSet]{
	Name:     "image_files",
	PerImage: true,
	Run: func(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*FileSet, error) {
		j, err := Image.Of(ctx, repo, pctx)
		if err != nil || j == nil || j.File == nil {
			return nil, err
		}
		all, err := repo.Files()
		if err != nil {
			return nil, err
		}
		ign, err := readIgnore(repo, j.Parsed.Path, j.Context)
		if err != nil {
			return nil, err
		}
		parsed, err := ParseAll(ctx, repo)
		if err != nil {
			return nil, err
		}
		built, err := Built.Of(ctx, repo, nil)
		if err != nil {
			return nil, err
		}
		ext := &repoBuilds{repo: repo, all: all, parsed: parsed, built: built,
			memo: map[string]*builtStage{}, visiting: map[string]bool{j.Parsed.Path: true}}
		b := newSetBuilder(j.File, contextFiles(all, j.Context, ign), ext)
		// A later COPY to the same image path replaces the earlier file:
		// only the last one ships.
		byImage := map[string]string{}
		for _, m := range b.stage(j.File.Final, 0) {
			byImage[m.image] = m.repo
		}
		set := &FileSet{Files: make(map[string]string, len(byImage)), byImage: byImage}
		ips := make([]string, 0, len(byImage))
		for ip := range byImage {
			ips = append(ips, ip)
		}
		sort.Strings(ips)
		for _, ip := range ips {
			if _, dup := set.Files[byImage[ip]]; !dup {
				set.Files[byImage[ip]] = ip // the first image path, in order
			}
		}
		set.Generated, set.Unresolved = b.generated, b.unresolved
		set.ContextGuessed = j.ContextWhy == contextGuessWhy && j.Context != "."
		set.InstallsDependencies = b.installs
		set.OmitsDevDependencies = b.installs && b.omitsDev
		set.AddsPackages = b.adds
		if b.adds && !b.addedUnnamed {
			set.AddedPackages = b.added
		}
		set.Compiled = map[string][]string{}
		for _, g := range set.Generated {
			if path.Base(g.StagePath) == "node_modules" {
				// What a package manager installed, not what the stage's
				// sources compile to: a build script beside the install
				// (tools/release.js) does not ship with node_modules.
				continue
			}
			var held []mapping
			if st, ok := j.File.StageRef(g.Stage); ok {
				held = b.stage(st, 0)
			} else if img := ext.image(g.Stage); img != nil {
				held = img.maps // made in an image the repository builds
			}
			for _, m := range held {
				if isSource(m.repo) && !isNodeModules(m.repo) {
					if !slices.Contains(set.Compiled[m.repo], g.ImagePath) {
						set.Compiled[m.repo] = append(set.Compiled[m.repo], g.ImagePath)
					}
				}
			}
		}
		set.Projects = map[int]string{}
		for i := range j.File.Stages {
			maps := b.stage(i, 0)
			want := path.Join(b.workdirs[i], "package.json")
			for _, m := range maps {
				if m.image == want {
					set.Projects[i] = m.repo // a later COPY to the same path wins
				}
			}
		}
		sort.Strings(set.Unresolved)
		return set, nil
	},
}

// TracedOutput reports a folder that a framework's build writes with the
// dependencies it traced copied inside, native addons included: Nitro's
// .output (and its server folder, with server/node_modules) and Next.js's
// .next/standalone (with node_modules).
func TracedOutput(p string) bool {
	p = path.Clean(p)
	base, parent := path.Base(p), path.Base(path.Dir(p))
	return base == ".output" || base == "server" && parent == ".output" || base == "standalone" && parent == ".next"
}

// mapping is one repository file in a stage's filesystem.
type mapping struct{ image, repo string }

type setBuilder struct {
	f *dockerfile.File
	// ext reads the images the repository builds from its other
	// Dockerfiles.
	ext *repoBuilds
	// files are the build context's files: context-relative → repo path.
	files []ctxFile
	memo  map[int][]mapping
	// workdirs is each built stage's working directory at its end.
	workdirs  map[int]string
	generated []Generated
	effects
}

// effects are what a build's steps did that the file set reports: the
// copies it could not resolve, and whether it installed packages, left
// devDependencies out, or added packages by name.
type effects struct {
	unresolved []string
	installs   bool
	omitsDev   bool
	adds       bool
	// added are the packages the adding steps name; addedUnnamed is set
	// when one of them names none codegenie can read.
	added        []string
	addedUnnamed bool
}

// take adds what another build (an image the repository builds, which a
// stage starts FROM or copies from) did.
func (e *effects) take(o effects) {
	e.unresolved = append(e.unresolved, o.unresolved...)
	e.installs = e.installs || o.installs
	e.omitsDev = e.omitsDev || o.omitsDev
	e.adds = e.adds || o.adds
	e.added = append(e.added, o.added...)
	e.addedUnnamed = e.addedUnnamed || o.addedUnnamed
}

type ctxFile struct{ rel, repo string }

func newSetBuilder(f *dockerfile.File, files []ctxFile, ext *repoBuilds) *setBuilder {
	return &setBuilder{f: f, files: files, ext: ext, memo: map[int][]mapping{}, workdirs: map[int]string{}}
}

// repoBuilds reads the images the repository builds (Built) when a stage
// of the judged Dockerfile starts FROM one or copies from one: the file
// set of that Dockerfile's stage as its build leaves it.
type repoBuilds struct {
	repo   *probe.Repo
	all    []string
	parsed []Parsed
	built  *BuiltImages
	memo   map[string]*builtStage
	// visiting are the Dockerfiles being read, the judged one first: an
	// image built FROM itself, or FROM the judged image, is not read again.
	visiting map[string]bool
}

// builtStage is the filesystem a repository-built image holds of the
// repository, with what its build did.
type builtStage struct {
	maps    []mapping
	workdir string
	effects
}

// image returns the file set of the image ref names when the repository
// builds it from another of its Dockerfiles; nil otherwise.
func (r *repoBuilds) image(ref string) *builtStage {
	if r == nil {
		return nil
	}
	bi, ok := r.built.Lookup(ref)
	if !ok || r.visiting[bi.Dockerfile] {
		return nil
	}
	key := bi.Dockerfile + "\x00" + bi.Context + "\x00" + bi.Target
	if bs, ok := r.memo[key]; ok {
		return bs
	}
	f := bi.Build(r.parsed)
	if f == nil {
		return nil
	}
	ign, err := readIgnore(r.repo, bi.Dockerfile, bi.Context)
	if err != nil {
		return nil // its .dockerignore unread: the image stays unknown
	}
	r.visiting[bi.Dockerfile] = true
	defer delete(r.visiting, bi.Dockerfile)
	nb := newSetBuilder(f, contextFiles(r.all, bi.Context, ign), r)
	maps := nb.stage(f.Final, 0)
	bs := &builtStage{maps: maps, workdir: nb.workdirs[f.Final], effects: nb.effects}
	r.memo[key] = bs
	return bs
}

// stage returns the repository files in stage i's filesystem (through its
// FROM chain), in COPY order; a later COPY to the same path wins.
func (b *setBuilder) stage(i, depth int) []mapping {
	if m, ok := b.memo[i]; ok {
		return m
	}
	if depth > len(b.f.Stages) {
		return nil
	}
	var out []mapping
	wd := "/" // on an image base
	if bs := b.f.Stages[i].BaseStage; bs >= 0 {
		out = append(out, b.stage(bs, depth+1)...)
		// The base's working directory, as its build above left it: not
		// found anew through its chain for every stage, which made a
		// long FROM chain quadratic.
		var ok bool
		if wd, ok = b.workdirs[bs]; !ok {
			wd = b.f.Workdir(bs)
		}
	} else if img := b.ext.image(b.f.Stages[i].ResolvedBase); img != nil {
		// An image another of the repository's Dockerfiles builds.
		b.take(img.effects)
		out = append(out, img.maps...)
		if img.workdir != "" {
			wd = img.workdir
		}
	}
	for _, in := range b.f.Stages[i].Instructions {
		switch in.Command {
		case "workdir":
			if len(in.Args) == 1 {
				wd = joinAbs(wd, in.Args[0])
			}
		case "run":
			if gone := removedPaths(in, wd); len(gone) > 0 {
				// A fresh slice: out may share the base stage's memo.
				kept := make([]mapping, 0, len(out))
				for _, m := range out {
					if !slices.ContainsFunc(gone, func(g string) bool { _, ok := under(m.image, g); return ok }) {
						kept = append(kept, m)
					}
				}
				out = kept
			}
			if addsPackages(in) {
				b.adds = true
				line := strings.Join(in.Args, " ")
				if in.Form == dockerfile.FormShell && len(in.Args) > 0 {
					line = in.Args[0]
				}
				n := len(b.added)
				for _, p := range shellcmd.Installs(line) {
					if !p.Global && !slices.Contains(b.added, p.Package) {
						b.added = append(b.added, p.Package)
					}
				}
				if len(b.added) == n {
					b.addedUnnamed = true
				}
			}
			if installsPackages(in) {
				b.installs = true
				if omitsDev(in) {
					b.omitsDev = true
				}
			}
		case "env":
			if slices.ContainsFunc(in.Args, func(a string) bool { return strings.ReplaceAll(a, `"`, "") == "NODE_ENV=production" }) {
				b.omitsDev = true // npm and yarn 1 install no devDependencies then
			}
		case "copy", "add":
			if len(in.Args) < 2 {
				continue
			}
			srcs, dest := in.Args[:len(in.Args)-1], in.Args[len(in.Args)-1]
			destDir := strings.HasSuffix(dest, "/") || len(srcs) > 1
			dest = joinAbs(wd, dest)
			for _, src := range srcs {
				out = append(out, b.copyOne(in, src, dest, destDir, depth)...)
			}
		}
	}
	b.memo[i] = out
	b.workdirs[i] = wd
	return out
}

func (b *setBuilder) copyOne(in dockerfile.Instruction, src, dest string, destDir bool, depth int) []mapping {
	if strings.Contains(src, "$") {
		// The model expanded every variable whose value the Dockerfile
		// gives; one left is unknown, and says why.
		msg := strings.ToUpper(in.Command) + " source " + src + " uses a variable"
		for _, u := range in.Unknown {
			if strings.Contains(src, u.Name) {
				msg += "; " + u.Name + " is " + u.Why
			}
		}
		b.unresolved = append(b.unresolved, msg+" ("+b.f.Path+":"+strconv.Itoa(in.Line)+")")
		return nil
	}
	if strings.Contains(src, "://") {
		b.unresolved = append(b.unresolved, "ADD "+src+" fetches a URL ("+b.f.Path+":"+strconv.Itoa(in.Line)+")")
		return nil
	}
	var out []mapping
	if in.From != "" {
		st, ok := b.f.StageRef(in.From)
		var img *builtStage
		if !ok {
			img = b.ext.image(in.From) // a stage's name is not looked up
		}
		if img != nil {
			b.take(img.effects)
			sp := path.Clean("/" + strings.TrimPrefix(src, "/"))
			for _, m := range img.maps {
				if rest, ok := under(m.image, sp); ok {
					out = append(out, mapping{image: placed(dest, destDir, sp, rest, m.image), repo: m.repo})
				}
			}
			if len(out) == 0 {
				b.generated = append(b.generated, Generated{ImagePath: dest, Stage: in.From, StagePath: sp})
			}
			return out
		}
		if !ok {
			// Another image: none of the repository's files, unless it
			// is one codegenie cannot read, which may hold the app built
			// elsewhere.
			if unreadable(in.From) {
				b.unresolved = append(b.unresolved, fmt.Sprintf("%s --from=%s %s copies from %s, an image whose files are unknown here (%s:%d)",
					strings.ToUpper(in.Command), in.From, src, in.From, b.f.Path, in.Line))
			}
			return nil
		}
		// COPY --from resolves its sources from the stage's root, not from
		// its WORKDIR.
		sp := path.Clean("/" + strings.TrimPrefix(src, "/"))
		found := false
		for _, m := range b.stage(st, depth+1) {
			if rest, ok := under(m.image, sp); ok {
				found = true
				out = append(out, mapping{image: placed(dest, destDir, sp, rest, m.image), repo: m.repo})
			}
		}
		if found && b.runsIn(st, sp, out) {
			// Repository files, and what the stage's RUN steps wrote
			// beside them (ghostfolio's dist/apps: a package.json and
			// prisma/ copied into dist/apps/api beside the bundle the
			// build wrote): generated too.
			b.generated = append(b.generated, Generated{ImagePath: dest, Stage: b.f.StageName(st), StagePath: sp})
		}
		if !found {
			if ref, ok := b.unreadableRoot(st); ok {
				// No RUN of the chain made it: it is the base image's,
				// and that image may hold the app, built elsewhere.
				b.unresolved = append(b.unresolved, fmt.Sprintf("%s --from=%s %s copies from %s, an image whose files are unknown here (%s:%d)",
					strings.ToUpper(in.Command), in.From, src, ref, b.f.Path, in.Line))
				return out
			}
			b.generated = append(b.generated, Generated{ImagePath: dest, Stage: b.f.StageName(st), StagePath: sp})
		}
		return out
	}
	clean := path.Clean(strings.TrimPrefix(src, "./"))
	glob := strings.ContainsAny(clean, "*?[")
	for _, cf := range b.files {
		if clean == "." {
			out = append(out, mapping{image: path.Join(dest, cf.rel), repo: cf.repo})
			continue
		}
		if glob {
			// A glob that matches a file copies it; one that matches a
			// directory copies the directory's contents.
			if ok, _ := path.Match(clean, cf.rel); ok {
				out = append(out, mapping{image: path.Join(dest, path.Base(cf.rel)), repo: cf.repo})
				continue
			}
			segs := strings.Split(cf.rel, "/")
			for n := 1; n < len(segs); n++ {
				if ok, _ := path.Match(clean, strings.Join(segs[:n], "/")); ok {
					out = append(out, mapping{image: path.Join(dest, strings.Join(segs[n:], "/")), repo: cf.repo})
					break
				}
			}
			continue
		}
		if rest, ok := under(cf.rel, clean); ok {
			if rest == "" { // a file
				if destDir {
					out = append(out, mapping{image: path.Join(dest, path.Base(cf.rel)), repo: cf.repo})
				} else {
					out = append(out, mapping{image: dest, repo: cf.repo})
				}
				continue
			}
			out = append(out, mapping{image: path.Join(dest, rest), repo: cf.repo})
		}
	}
	return out
}

// buildOutputs are the folder names a build writes its output to.
var buildOutputs = map[string]bool{"dist": true, "build": true, "out": true, ".output": true, ".next": true}

// runsIn reports a COPY --from source folder sp, in or below a build
// output folder (dist/apps), that holds repository files (out), of a
// stage whose chain runs a RUN step after a COPY: the step may have
// written more there. A single file is the repository's alone.
func (b *setBuilder) runsIn(st int, sp string, out []mapping) bool {
	if len(out) == 1 && out[0].image == sp {
		return false // a file
	}
	if !slices.ContainsFunc(strings.Split(sp, "/"), func(s string) bool { return buildOutputs[s] }) {
		return false
	}
	var chain []int
	for i := st; i >= 0 && len(chain) <= len(b.f.Stages); i = b.f.Stages[i].BaseStage {
		chain = append(chain, i)
	}
	slices.Reverse(chain)
	copied := false
	for _, i := range chain {
		for _, in := range b.f.Stages[i].Instructions {
			switch in.Command {
			case "copy", "add":
				copied = true
			case "run":
				if copied {
					return true
				}
			}
		}
	}
	return false
}

// unreadable reports an image reference that is neither a known Node
// image nor a well-known image without Node (a distribution, a database,
// another language's runtime): an organisation's own image, whose files
// may be the application built elsewhere.
func unreadable(ref string) bool {
	if ref == "" || strings.EqualFold(ref, "scratch") || strings.Contains(ref, "$") {
		return false
	}
	if dockerfile.IsNodeBase(ref) {
		return false
	}
	_, known := dockerfile.NonNodeBase(ref)
	return !known
}

// unreadableRoot returns the image at the root of stage i's FROM chain
// when it is unreadable and no stage of the chain runs a RUN step, so
// that whatever a COPY --from takes from the chain beyond the
// repository's own files comes from that image.
func (b *setBuilder) unreadableRoot(i int) (string, bool) {
	for depth := 0; depth <= len(b.f.Stages); depth++ {
		st := b.f.Stages[i]
		for _, in := range st.Instructions {
			if in.Command == "run" {
				return "", false
			}
		}
		if st.BaseStage < 0 {
			if b.ext.image(st.ResolvedBase) != nil {
				return "", false // the repository builds it: what its RUN steps made is generated
			}
			return st.ResolvedBase, unreadable(st.ResolvedBase)
		}
		i = st.BaseStage
	}
	return "", false
}

// placed is where a file at src (rest below it) lands under dest.
func placed(dest string, destDir bool, src, rest, full string) string {
	if rest == "" {
		if destDir {
			return path.Join(dest, path.Base(full))
		}
		return dest
	}
	return path.Join(dest, rest)
}

// under reports whether p is prefix or below it, with the rest.
func under(p, prefix string) (string, bool) {
	if p == prefix {
		return "", true
	}
	if prefix == "/" {
		return strings.TrimPrefix(p, "/"), true
	}
	if rest, ok := strings.CutPrefix(p, prefix+"/"); ok {
		return rest, true
	}
	return "", false
}

func joinAbs(wd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wd, p)
}

// removedPaths returns the paths a RUN step deletes with rm -r (rm -rf
// .scripts packages/cloud), with what is under them: literal ones,
// resolved against wd. A glob, a variable, any path after a cd (the
// step's folder is then another), and an rm without -r (which deletes no
// folder; a file it names stays counted) are left out, so what they name
// stays in the file set.
func removedPaths(in dockerfile.Instruction, wd string) []string {
	cmds := [][]string{in.Args}
	if in.Form == dockerfile.FormShell {
		if len(in.Args) == 0 {
			return nil
		}
		cmds = shellcmd.Analyze(in.Args[0]).Commands
	}
	var out []string
	for _, c := range cmds {
		if len(c) == 0 {
			continue
		}
		switch path.Base(c[0]) {
		case "cd", "pushd", "popd":
			return out
		case "rm":
		default:
			continue
		}
		recursive := false
		var paths []string
		for _, a := range c[1:] {
			switch {
			case a == "--recursive" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR"):
				recursive = true
			case strings.HasPrefix(a, "-"):
			case a == "" || strings.ContainsAny(a, "*?[$<>{") || strings.Contains(a, "<expanded>"):
			default:
				paths = append(paths, joinAbs(wd, a))
			}
		}
		if recursive {
			for _, p := range paths {
				if p != "/" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// installsPackages reports whether a RUN step installs node packages.
func installsPackages(in dockerfile.Instruction) bool {
	cmd := strings.Join(in.Args, " ")
	for _, w := range []string{"npm ci", "npm install", "npm i ", "yarn install", "yarn --", "yarn workspaces focus", "pnpm install", "pnpm i ", "npm prune", "pnpm prune"} {
		if strings.Contains(cmd, w) {
			return true
		}
	}
	return strings.TrimSpace(cmd) == "yarn" || strings.Contains(cmd, "&& yarn") || strings.HasPrefix(strings.TrimSpace(cmd), "yarn &&")
}

// addsPackages reports a step that installs packages by name into a
// project (npm install x, npm i x, yarn add x, pnpm add x), not what a
// lockfile pins. A global install (-g) goes to the global folder, which
// require() does not search, and is not counted.
func addsPackages(in dockerfile.Instruction) bool {
	words := strings.Fields(strings.Join(in.Args, " "))
	sep := func(w string) bool {
		return w == "&&" || w == "||" || w == ";" || w == "|" || strings.HasSuffix(w, ";")
	}
	for i, w := range words {
		pm := path.Base(w)
		if pm != "npm" && pm != "yarn" && pm != "pnpm" {
			continue
		}
		// The subcommand may follow options (pnpm --allow-build=x add y).
		sub := -1
		for j := i + 1; j < len(words) && !sep(words[j]); j++ {
			if v := words[j]; v == "add" || pm == "npm" && (v == "install" || v == "i" || v == "isntall") {
				sub = j
				break
			}
		}
		if sub < 0 {
			continue
		}
		named, global := false, false
		for _, v := range words[sub+1:] {
			if sep(v) {
				break
			}
			switch {
			case v == "-g" || v == "--global" || v == "--location=global":
				global = true
			case !strings.HasPrefix(v, "-"):
				named = true
			}
		}
		if named && !global {
			return true
		}
	}
	return false
}

// omitsDev reports an install or prune step that leaves out
// devDependencies.
func omitsDev(in dockerfile.Instruction) bool {
	words := strings.Fields(strings.Join(in.Args, " "))
	for i, w := range words {
		w = strings.Trim(w, `"'`)
		switch w {
		case "--omit=dev", "--only=prod", "--only=production", "--production", "--production=true", "--prod", "NODE_ENV=production":
			return true
		case "--omit", "--only":
			if i+1 < len(words) && strings.HasPrefix(strings.Trim(words[i+1], `"'`), "prod") || i+1 < len(words) && strings.Trim(words[i+1], `"'`) == "dev" {
				return true
			}
		}
	}
	return false
}

// contextFiles lists the build context's files that .dockerignore keeps.
func contextFiles(all []string, ctxDir string, ign *ignore) []ctxFile {
	var out []ctxFile
	prefix := ""
	if ctxDir != "." && ctxDir != "" {
		prefix = ctxDir + "/"
	}
	for _, f := range all {
		rel, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		if ign.excludes(rel) {
			continue
		}
		out = append(out, ctxFile{rel: rel, repo: f})
	}
	return out
}

// ignore is a parsed .dockerignore.
type ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	segs   []string
	negate bool
}

// readIgnore reads the Dockerfile's own <name>.dockerignore, else the
// context's .dockerignore. None is no rule.
func readIgnore(repo *probe.Repo, dockerfilePath, context string) (*ignore, error) {
	cands := []string{dockerfilePath + ".dockerignore", path.Join(context, ".dockerignore")}
	for _, c := range cands {
		data, err := repo.ReadFile(c)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, probe.ErrPathEscapes) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return parseIgnore(string(data)), nil
	}
	return &ignore{}, nil
}

// IgnoreExcludes reports whether the .dockerignore data leaves the
// context-relative path rel out of the build context.
func IgnoreExcludes(data []byte, rel string) bool {
	return parseIgnore(string(data)).excludes(rel)
}

func parseIgnore(s string) *ignore {
	ig := &ignore{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, strings.TrimSpace(line[1:])
		}
		line = path.Clean(strings.TrimPrefix(line, "/"))
		if line == "." {
			continue
		}
		r.segs = strings.Split(line, "/")
		ig.rules = append(ig.rules, r)
	}
	return ig
}

// excludes applies the rules in order; the last match wins. A rule that
// matches a directory excludes everything below it.
func (ig *ignore) excludes(rel string) bool {
	if ig == nil || len(ig.rules) == 0 {
		return false
	}
	segs := strings.Split(rel, "/")
	out := false
	for _, r := range ig.rules {
		for n := 1; n <= len(segs); n++ {
			if probe.MatchSegments(r.segs, segs[:n]) {
				out = !r.negate
				break
			}
		}
	}
	return out
}

// nodeExts are the extensions node tries, in order, on a script path that
// names no file (LOAD_AS_FILE), and then the index files of a directory
// (LOAD_AS_DIRECTORY).
var nodeExts = []string{".js", ".json", ".node"}

// NodeScript resolves the image path p as node resolves the script it is
// given: p itself, then p.js, p.json and p.node, then p/index.js,
// p/index.json and p/index.node. It returns the image path node loads when
// p is no file of the image and one of the others is: a repository file the
// image holds, or a file a builder compiled into a generated directory from
// a repository source of that name (src/main.ts for dist/main). ok is
// false when p itself is a file of the image, or nothing resolves.
func (s *FileSet) NodeScript(p string) (string, bool) {
	if s == nil {
		return "", false
	}
	p = path.Clean(p)
	if _, ok := s.byImage[p]; ok {
		return "", false
	}
	var cands []string
	for _, e := range nodeExts {
		cands = append(cands, p+e)
	}
	for _, e := range nodeExts {
		cands = append(cands, path.Join(p, "index"+e))
	}
	for _, c := range cands {
		if _, ok := s.byImage[c]; ok {
			return c, true
		}
	}
	// Compiled output: a source compiled into the generated directory
	// that holds p, named as p is below it (dist/main from src/main.ts,
	// dist/main/index.js from src/main/index.ts).
	for _, g := range s.Generated {
		rest, ok := under(p, g.ImagePath)
		if !ok || rest == "" {
			continue
		}
		asFile, asDir := false, false
		for src, dirs := range s.Compiled {
			if !slices.Contains(dirs, g.ImagePath) {
				continue
			}
			stem := "/" + strings.TrimSuffix(src, path.Ext(src))
			asFile = asFile || strings.HasSuffix(stem, "/"+rest)
			asDir = asDir || strings.HasSuffix(stem, "/"+rest+"/index")
		}
		switch {
		case asFile:
			return p + ".js", true
		case asDir:
			return path.Join(p, "index.js"), true
		}
	}
	return "", false
}
