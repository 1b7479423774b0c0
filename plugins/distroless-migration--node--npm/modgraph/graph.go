// Package modgraph walks the module graph of the judged image from its
// entrypoint: the files node loads when the container starts, following
// require and import with literal specifiers, import() with a literal,
// package.json main and exports, and compiled output (dist/, build/) mapped
// back to its sources. Code the entrypoint cannot reach does not run at
// start, nor on any request path the app itself defines.
//
// What cannot be resolved (a computed require, a missing node_modules, an
// entrypoint that is not a file) is recorded, never dropped: the callers
// then treat the affected files as "in the image" and say why.
package modgraph

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
)

// MaxFiles bounds the walk; a graph larger than this is incomplete.
const MaxFiles = 50000

// Graph is the module graph of the judged image.
type Graph struct {
	// Entries are the repository files node starts with (the script and
	// every --require/--import preload).
	Entries []string
	// EntryWhy says how the entries were found, or why none was.
	EntryWhy string
	// parent maps a reached file to the file that first loaded it ("" for
	// an entry), and line to the line of that load.
	parent map[string]string
	line   map[string]int
	// Dynamic lists reached files with a computed require or import().
	Dynamic []Site
	// Unresolved lists what the walk could not follow.
	Unresolved []string
	// MissingPackages are bare specifiers with no installed package.
	MissingPackages []string
	// Escapes are relative loads whose path leaves the repository through
	// a symlink: the code they load cannot be read.
	Escapes []string
	// Truncated is set when the walk stopped at MaxFiles.
	Truncated bool
	// open maps each dependency file that only the app's files a
	// computed load leaves open load to that load (open.go).
	open map[string]Site
	// words counts each word's occurrences in the reached files
	// (lazy.go).
	words map[string]*wordStat
	// files are the reached files the words index, and repo reads them
	// again when a call's function is judged (live.go).
	files []string
	repo  *probe.Repo
	live  *liveness
	// modes are the server modes the start runs in (modes.go).
	modes []serverMode
	// loads lists each reached file's literal loads that resolved, with
	// where each starts (exports.go).
	loads map[string][]loadEdge
}

// Site is a place in a file.
type Site struct {
	File string
	Line int
	// Prefix is the literal start of a computed load's argument.
	Prefix string
	// Env is the environment variable that is the whole argument.
	Env string
	// Installed is a load of an installed package by its node_modules
	// path (Dynamic.Installed).
	Installed bool
	// App is set for a dependency's load of the app's own files whose
	// folder is not known (a migration runner's, loaders.go): the app
	// stays open. Why then says so.
	App bool
	Why string
}

// Complete reports whether the walk started from a known entry and
// followed every load it could resolve to a repository file, without
// being cut short.
func (g *Graph) Complete() bool {
	return g != nil && len(g.Entries) > 0 && !g.Truncated
}

// Reached reports whether file is loaded from an entry.
func (g *Graph) Reached(file string) bool {
	if g == nil {
		return false
	}
	_, ok := g.parent[file]
	return ok
}

// Size is the number of reached files.
func (g *Graph) Size() int {
	if g == nil {
		return 0
	}
	return len(g.parent)
}

// Chain returns the load chain from an entry to file, entry first, each
// step but the first with the line that loads the next
// ("server.js → lib/x.js:3").
func (g *Graph) Chain(file string) []string {
	if !g.Reached(file) {
		return nil
	}
	var rev []string
	for f, n := file, 0; n < 1000; n++ {
		p := g.parent[f]
		if p == "" {
			rev = append(rev, f)
			break
		}
		rev = append(rev, f)
		f = p
	}
	out := make([]string, len(rev))
	for i := range rev {
		out[i] = rev[len(rev)-1-i]
	}
	return out
}

// LoadLine is the line of file's parent that loads it (0 for an entry).
func (g *Graph) LoadLine(file string) int { return g.line[file] }

// DynamicIn reports whether a file of the same package as file (the app,
// or one node_modules package) has a computed load, so that files of that
// package the walk did not reach may still be loaded.
func (g *Graph) DynamicIn(file string) (Site, bool) {
	if g == nil {
		return Site{}, false
	}
	if d, ok := g.open[file]; ok {
		return d, true
	}
	pkg := PackageOf(file)
	for _, d := range g.Dynamic {
		if d.App {
			if pkg == "" {
				return d, true
			}
			continue
		}
		if PackageOf(d.File) != pkg {
			// require(`@img/sharp-${platform}/versions`) may load any
			// package whose name starts so.
			if namesPackage(d.Prefix, pkg) {
				return d, true
			}
			continue
		}
		// A package's require(process.env.X) loads the module the
		// deployment names in X (mongodb's
		// MONGODB_CLIENT_ENCRYPTION_OVERRIDE): a package or a path of the
		// operator's choosing, not one of the package's own files, so it
		// leaves the rest of the package unreached. The app's own such
		// load may name any of its files (a config module), and leaves
		// them open.
		if d.Env != "" && pkg != "" {
			continue
		}
		// A load by a node_modules path loads an installed package:
		// none of the package's own files.
		if d.Installed {
			continue
		}
		// A runner's load of the app's files (typeorm's ormconfig) loads
		// none of the runner's own.
		if l, ok := loaderOf(pkg); ok && l.loadsOnlyApp(d.File) {
			continue
		}
		// require(`@img/sharp-${platform}/versions`) loads a package
		// whose name starts so: not this one, unless its own name does.
		if bareOther(d.Prefix, pkg) {
			continue
		}
		// require('./plugins/' + name) loads only files below ./plugins.
		if strings.HasPrefix(d.Prefix, "./") || strings.HasPrefix(d.Prefix, "../") {
			dir := path.Join(path.Dir(d.File), d.Prefix)
			if !strings.HasSuffix(d.Prefix, "/") {
				dir = path.Dir(dir)
			}
			if dir != "." && !strings.HasPrefix(file, dir+"/") {
				continue
			}
		}
		return d, true
	}
	return Site{}, false
}

// bareOther reports whether prefix, the literal start of a computed
// load's argument in a file of the dependency pkg (its node_modules
// folder), begins a bare specifier that cannot name pkg itself: the loaded
// package's name starts with the prefix, or the prefix names a whole
// other package and goes on with a path. The app's own loads are left
// alone: its aliases (@/, ~/) map bare-looking names to its files.
func bareOther(prefix, pkg string) bool {
	return strings.Contains(pkg, "node_modules/") && bare(prefix) && !namesPackage(prefix, pkg)
}

// bare reports whether a computed load's literal start begins a package
// name: not a path, a "#" import or a URL.
func bare(prefix string) bool {
	return prefix != "" && !strings.HasPrefix(prefix, ".") && !strings.HasPrefix(prefix, "/") &&
		!strings.HasPrefix(prefix, "#") && !strings.ContainsAny(prefix, ":\\")
}

// namesPackage reports whether a load whose argument starts with the bare
// prefix may load a file of pkg (a node_modules package folder): the
// prefix names pkg and goes on with a path (lodash/), or pkg's name
// starts with the prefix (@img/sharp- and @img/sharp-linux-x64).
func namesPackage(prefix, pkg string) bool {
	i := strings.LastIndex(pkg, "node_modules/")
	if i < 0 || !bare(prefix) {
		return false
	}
	name := pkg[i+len("node_modules/"):]
	parts := strings.SplitN(prefix, "/", 3)
	scoped := strings.HasPrefix(prefix, "@")
	switch {
	case !scoped && len(parts) >= 2:
		return parts[0] == name
	case scoped && len(parts) >= 3:
		return parts[0]+"/"+parts[1] == name
	default:
		return strings.HasPrefix(name, prefix)
	}
}

// PackageOf names the package a repository file belongs to: the
// node_modules package directory, or "" for the app's own code.
func PackageOf(file string) string {
	i := strings.LastIndex(file, "node_modules/")
	if i < 0 {
		return ""
	}
	rest := file[i+len("node_modules/"):]
	parts := strings.SplitN(rest, "/", 3)
	n := 1
	if strings.HasPrefix(parts[0], "@") && len(parts) > 1 {
		n = 2
	}
	if len(parts) < n {
		return file
	}
	return file[:i] + "node_modules/" + strings.Join(parts[:n], "/")
}

// Of is the derived fact of the judged image's module graph (nil when the
// repository has no parsed Dockerfile).
var Of = &probe.Analyzer[*Graph]{
	Name:     "module_graph",
	PerImage: true,
	Run:      build,
}

func build(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*Graph, error) {
	j, err := images.Image.Of(ctx, repo, pctx)
	if err != nil || j == nil || j.File == nil {
		return nil, err
	}
	set, err := images.Files.Of(ctx, repo, pctx)
	if err != nil {
		return nil, err
	}
	chain, err := npmscripts.Start.Of(ctx, repo, pctx)
	if err != nil {
		return nil, err
	}
	w := &walker{repo: repo, g: &Graph{parent: map[string]string{}, line: map[string]int{}},
		lazy: lazyIndex{words: map[string]*wordStat{}, defs: map[string]int{}, pending: map[string][]deferred{}}}
	if w.files, err = repo.Files(); err != nil {
		return nil, err
	}
	w.index = make(map[string]bool, len(w.files))
	for _, f := range w.files {
		w.index[f] = true
	}
	entries, why := entryFiles(j, set, chain, w)
	w.g.EntryWhy = why
	for _, e := range entries {
		if !w.index[e] {
			continue
		}
		w.g.Entries = append(w.g.Entries, e)
		if _, ok := w.g.parent[e]; !ok {
			w.g.parent[e] = ""
			w.queue = append(w.queue, e)
		}
	}
	if len(w.g.Entries) == 0 {
		w.g.Unresolved = append(w.g.Unresolved, "no entrypoint file: "+why)
		return w.g, nil
	}
	if err := w.run(ctx); err != nil {
		return nil, err
	}
	if err := w.openWalk(ctx); err != nil {
		return nil, err
	}
	w.g.words, w.g.files, w.g.repo, w.g.live = w.lazy.words, w.lazy.files, w.repo, newLiveness()
	w.g.modes = w.modes
	sort.Strings(w.g.Unresolved)
	sort.Strings(w.g.MissingPackages)
	return w.g, nil
}

type walker struct {
	repo  *probe.Repo
	files []string
	index map[string]bool
	g     *Graph
	queue []string
	pkgs  map[string]*manifest
	names map[string]string   // package name → folder, for workspaces
	tscfg map[string]*tsPaths // folder → the tsconfig paths that apply there
	// outDirs are the repository's tsconfig files that set outDir, read
	// once; nil before.
	outDirs []*tsPaths
	// parsers read the files that may guard a load with a platform test,
	// one per grammar.
	parsers map[*sitter.Language]*sitter.Parser
	// modes are the production server modes the start is known to run
	// in (modes.go).
	modes []serverMode
	// lazy holds the loads of functions no reached file names yet
	// (lazy.go).
	lazy lazyIndex
	// loaded are the migration runners whose app files were added
	// (loaders.go).
	loaded map[string]bool
	// texts are the app's own source files, read once a runner needs
	// them.
	texts *[]appText
	// prismaOut are the folders the repository's Prisma schemas generate
	// their clients into; nil before they are read.
	prismaOut []string
}

func (w *walker) run(ctx context.Context) error {
	for len(w.queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(w.g.parent) > MaxFiles {
			w.g.Unresolved = append(w.g.Unresolved, "the module graph has more than 50000 files; the walk stopped")
			w.g.Truncated = true
			return nil
		}
		f := w.queue[0]
		w.queue = w.queue[1:]
		if !loadable(f) {
			continue
		}
		data, err := w.repo.ReadFile(f)
		if err != nil {
			if errors.Is(err, probe.ErrPathEscapes) || errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		imps, dyn := Scan(data)
		src := &source{file: f, data: data, w: w}
		imps, dyn, _ = w.unguarded(ctx, f, src, imps, dyn)
		if w.appLoads(f) {
			dyn = nil
		}
		dyn = w.runnerCallbacks(ctx, src, dyn)
		dyn = w.globLoads(ctx, src, dyn)
		dyn = w.dirLoads(ctx, src, dyn)
		imps, dyn = namedLoads(src, imps, dyn)
		imps, dyn, lazy := w.deferLoads(ctx, src, imps, dyn)
		src.close()
		for name, ds := range lazy {
			w.lazy.pending[name] = append(w.lazy.pending[name], ds...)
		}
		hits := w.lazy.countWords(f, data)
		w.follow(f, imps, dyn)
		if l, line, ok := callSite(f, data); ok {
			w.loadAppFiles(l, Site{File: f, Line: line})
		}
		for name := range lazy {
			hits = append(hits, name)
		}
		for _, name := range hits {
			ds, ok := w.lazy.pending[name]
			if !ok || !w.lazy.used(name) {
				continue
			}
			delete(w.lazy.pending, name)
			for _, d := range ds {
				switch {
				case d.imp != nil:
					w.follow(d.file, []Import{*d.imp}, nil)
				case d.dyn != nil:
					w.follow(d.file, nil, []Dynamic{*d.dyn})
				}
			}
		}
	}
	return nil
}

// follow makes file f's loads: each literal one it resolves is reached
// (the first time), and each computed one is a site of the graph.
func (w *walker) follow(f string, imps []Import, dyn []Dynamic) {
	for _, d := range dyn {
		site := Site{File: f, Line: d.Line, Prefix: d.Prefix, Env: d.Env, Installed: d.Installed || loadsInstalled(f)}
		w.g.Dynamic = append(w.g.Dynamic, site)
		if l, ok := loaderOf(PackageOf(f)); ok && d.Env == "" && !bare(d.Prefix) && !site.Installed {
			w.loadAppFiles(l, site)
		}
	}
	for _, imp := range imps {
		to, ok := w.resolveAt(f, imp)
		if !ok {
			continue
		}
		if w.g.loads == nil {
			w.g.loads = map[string][]loadEdge{}
		}
		w.g.loads[f] = append(w.g.loads[f], loadEdge{offset: imp.Offset, to: to})
		if _, seen := w.g.parent[to]; seen {
			continue
		}
		w.g.parent[to] = f
		w.g.line[to] = imp.Line
		w.queue = append(w.queue, to)
	}
}

func loadable(f string) bool {
	switch path.Ext(f) {
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", "":
		return true
	}
	return false
}

var exts = []string{"", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".jsx", ".json", ".node"}

// file finds the file a path names with node's (and TypeScript's)
// extension and index rules.
func (w *walker) file(p string) (string, bool) {
	p = path.Clean(p)
	for _, e := range exts {
		if w.index[p+e] {
			return p + e, true
		}
	}
	// TypeScript sources import "./x.js" for ./x.ts (and .mjs, .cjs for
	// .mts, .cts).
	for js, tss := range map[string][]string{".js": {".ts", ".tsx"}, ".mjs": {".mts"}, ".cjs": {".cts"}} {
		if b, ok := strings.CutSuffix(p, js); ok {
			for _, e := range tss {
				if w.index[b+e] {
					return b + e, true
				}
			}
		}
	}
	if m := w.manifestAt(p); m != nil {
		if t, ok := w.packageEntry(p, m); ok {
			return t, true
		}
	}
	for _, e := range exts[1:] {
		if w.index[p+"/index"+e] {
			return p + "/index" + e, true
		}
	}
	return "", false
}

// resolveAt resolves one load of file from. A load that cannot be followed
// and may still name a file of the repository (a "#" import the package
// does not map, an alias whose map is not read) is recorded as a computed
// load: the files of from's package then stay possibly loaded. A bare name
// that is neither installed nor declared is followed through the app's
// alias maps (alias.go); when none names it, it is an unresolved edge and
// not a computed load.
func (w *walker) resolveAt(from string, imp Import) (string, bool) {
	if t, ok := w.resolve(from, imp.Spec); ok {
		return t, true
	}
	spec := imp.Spec
	switch {
	case strings.HasPrefix(spec, "#"):
		if t, ok := w.subpathImport(from, spec); ok {
			return t, true
		}
		w.g.Dynamic = append(w.g.Dynamic, Site{File: from, Line: imp.Line})
		w.g.Unresolved = appendOnce(w.g.Unresolved, "cannot resolve "+spec+" from "+from)
	case strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../"):
		// fork('./child.js') and new Worker('./job.js') resolve from the
		// working directory: the entry's folder.
		if len(w.g.Entries) > 0 {
			if t, ok := w.file(path.Join(path.Dir(w.g.Entries[len(w.g.Entries)-1]), spec)); ok {
				return t, true
			}
		}
	case !isBuiltin(spec) && !strings.HasPrefix(spec, "/") && !strings.Contains(spec, "://"):
		name, sub := splitBare(spec)
		if dir, ok := w.workspace(name); ok {
			if t, ok := w.packageFile(dir, w.manifestAt(dir), sub); ok {
				// The package is the repository's own folder (a pnpm or
				// yarn workspace link the build makes), not one
				// node_modules lacks.
				w.notMissing(name)
				return t, true
			}
		}
		// Only the application's own code has aliases (tsconfig paths, a
		// bundler's): a published package's bare name that is neither
		// installed nor declared names no file at run time, it throws
		// (mongodb's guarded require('aws4')).
		if w.declared(from, name) || PackageOf(from) != "" {
			break
		}
		switch t, kind := w.aliasOf(from, spec); kind {
		case aliasFile:
			w.notMissing(name)
			return t, true
		case aliasOpen:
			w.g.Dynamic = append(w.g.Dynamic, Site{File: from, Line: imp.Line})
			w.g.Unresolved = appendOnce(w.g.Unresolved, "cannot resolve "+spec+" from "+from+" (an alias whose target the walk cannot follow)")
		case aliasNone:
			// A literal name of a package that is not there: an edge the
			// walk cannot follow, to no file of the app. node throws
			// there unless some other package installs it, so it
			// leaves the app's other files as unreachable as they were.
			w.g.Unresolved = appendOnce(w.g.Unresolved, "cannot resolve "+spec+" from "+from+" (not installed, not a declared dependency, no alias names it)")
		}
	}
	return "", false
}

// packageFile resolves sub, a path in the package at dir ("" for the
// package itself), as node does: through its exports map, else as a file.
func (w *walker) packageFile(dir string, m *manifest, sub string) (string, bool) {
	if sub == "" {
		return w.file(dir)
	}
	if m != nil && len(m.Exports) > 0 {
		if t, ok := w.exportSubpath(dir, m, "./"+sub); ok {
			return t, true
		}
	}
	return w.file(path.Join(dir, sub))
}

// notMissing takes name off the packages node_modules lacks: the walk
// found what it names elsewhere.
func (w *walker) notMissing(name string) {
	w.g.MissingPackages = slices.DeleteFunc(w.g.MissingPackages, func(m string) bool { return m == name })
}

// subpathImport resolves a "#name" load through the "imports" field of
// the nearest package.json, matched as node matches it (subpathMatch).
func (w *walker) subpathImport(from, spec string) (string, bool) {
	for dir := path.Dir(from); ; dir = path.Dir(dir) {
		if m := w.manifestAt(dir); m != nil && len(m.Imports) > 0 {
			for _, target := range subpathTargets(m.Imports, spec) {
				if !strings.HasPrefix(target, "./") && !strings.HasPrefix(target, "../") && !strings.HasPrefix(target, "/") {
					// "#dep": {"node": "dep-node-native"}: a package (or a
					// built-in module), which node loads from there; no
					// later condition is tried.
					return w.resolve(from, target)
				}
				// "#src/*": "./build/*" names the build's output; the
				// repository holds what it is compiled from.
				if t, ok := w.file(path.Join(dir, target)); ok {
					return t, true
				}
				if t, ok := w.fromSource(path.Join(dir, target)); ok {
					return t, true
				}
			}
			return "", false
		}
		if dir == "." || dir == "/" {
			return "", false
		}
	}
}

// workspace finds the folder of the repository package named name (a
// workspace package, with no node_modules link in the repository).
func (w *walker) workspace(name string) (string, bool) {
	if w.names == nil {
		w.names = map[string]string{}
		for _, f := range w.files {
			if path.Base(f) != "package.json" || strings.Contains(f, "node_modules/") {
				continue
			}
			if m := w.manifestAt(path.Dir(f)); m != nil && m.Name != "" {
				if _, dup := w.names[m.Name]; !dup {
					w.names[m.Name] = path.Dir(f)
				}
			}
		}
	}
	d, ok := w.names[name]
	return d, ok
}

// declared reports whether the package.json nearest to from names the
// package among its dependencies of any kind.
func (w *walker) declared(from, name string) bool {
	for dir := path.Dir(from); ; dir = path.Dir(dir) {
		if m := w.manifestAt(dir); m != nil {
			for _, deps := range []map[string]string{m.Dependencies, m.DevDependencies, m.OptionalDependencies, m.PeerDependencies} {
				if _, ok := deps[name]; ok {
					return true
				}
			}
			return false
		}
		if dir == "." || dir == "/" {
			return false
		}
	}
}

func (w *walker) resolve(from, spec string) (string, bool) {
	if spec == "" || isBuiltin(spec) {
		return "", false
	}
	if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == ".." {
		p := path.Join(path.Dir(from), spec)
		if t, ok := w.file(p); ok {
			return t, true
		}
		if t, ok := w.fromSource(p); ok {
			return t, true
		}
		if w.escapes(p) {
			w.g.Escapes = appendOnce(w.g.Escapes, spec+" from "+from+" leaves the repository through a symlink")
			return "", false
		}
		w.g.Unresolved = appendOnce(w.g.Unresolved, "cannot resolve "+spec+" from "+from)
		return "", false
	}
	if strings.HasPrefix(spec, "/") || strings.Contains(spec, "://") || strings.HasPrefix(spec, "#") {
		return "", false // an absolute image path, a URL, or a subpath import map
	}
	name, sub := splitBare(spec)
	if !packageNameRE.MatchString(name) {
		// Not a name npm can publish ("() => import(\".", "@@/x"): the
		// text of a string that holds code, not a package the image lacks.
		return "", false
	}
	for dir := path.Dir(from); ; dir = path.Dir(dir) {
		base := path.Join(dir, "node_modules", name)
		if dir == "." {
			base = path.Join("node_modules", name)
		}
		if m := w.manifestAt(base); m != nil || w.hasDir(base) {
			return w.packageFile(base, m, sub)
		}
		if dir == "." || dir == "/" {
			break
		}
	}
	w.g.MissingPackages = appendOnce(w.g.MissingPackages, name)
	return "", false
}

// packageNameRE is a name npm can publish, scoped or not (old packages
// have capitals).
var packageNameRE = regexp.MustCompile(`^(?:@[A-Za-z0-9~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*$`)

// escapes reports whether loading p (as node would: p, p.js, p/index.js)
// reaches through a symlink out of the repository.
func (w *walker) escapes(p string) bool {
	for _, c := range []string{p, p + ".js", p + "/index.js"} {
		f, err := w.repo.Open(c)
		if err == nil {
			_ = f.Close()
		}
		if errors.Is(err, probe.ErrPathEscapes) {
			return true
		}
	}
	return false
}

// fromSource maps compiled output to the sources in the repository:
// dist/x.js or build/x.js → src/x.ts (or x.js) when only sources exist.
func (w *walker) fromSource(p string) (string, bool) {
	if t, ok := w.fromOutDir(p); ok {
		return t, true
	}
	for _, out := range []string{"dist", "build", "lib", "out"} { // outDirs, in this order
		segs := strings.Split(p, "/")
		for i, s := range segs {
			if s != out {
				continue
			}
			for _, src := range []string{"src", "."} {
				cand := append(append(append([]string{}, segs[:i]...), src), segs[i+1:]...)
				q := path.Join(cand...)
				q = strings.TrimSuffix(strings.TrimSuffix(q, ".js"), ".mjs")
				if t, ok := w.file(q); ok {
					return t, true
				}
			}
		}
	}
	return "", false
}

func (w *walker) hasDir(p string) bool {
	prefix := p + "/"
	i := sort.SearchStrings(w.files, prefix)
	return i < len(w.files) && strings.HasPrefix(w.files[i], prefix)
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func splitBare(spec string) (name, sub string) {
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") && len(parts) >= 2 {
		name = parts[0] + "/" + parts[1]
		if len(parts) == 3 {
			sub = parts[2]
		}
		return name, sub
	}
	name = parts[0]
	if len(parts) > 1 {
		sub = strings.Join(parts[1:], "/")
	}
	return name, sub
}

// manifest is the part of a package.json that tells node what to load.
type manifest struct {
	Name                 string            `json:"name"`
	Main                 string            `json:"main"`
	Module               string            `json:"module"`
	Exports              json.RawMessage   `json:"exports"`
	Imports              json.RawMessage   `json:"imports"`
	Dependencies         map[string]string `json:"dependencies"`
	DevDependencies      map[string]string `json:"devDependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
	// ModuleAliases is module-alias's map of names to folders.
	ModuleAliases map[string]string `json:"_moduleAliases"`
	// Bin is a file, or a map of command names to files.
	Bin json.RawMessage `json:"bin"`
}

// binEntry finds the JS file of the node_modules/.bin command name in the
// node_modules of folder dir: the package whose package.json "bin" names
// it (a string "bin" is named after the package).
func (w *walker) binEntry(dir, name string) (string, bool) {
	nm := path.Join(dir, "node_modules")
	cands := []string{path.Join(nm, name)}
	for _, f := range w.files {
		rel, ok := strings.CutPrefix(f, nm+"/")
		if !ok || path.Base(rel) != "package.json" {
			continue
		}
		if parts := strings.Split(rel, "/"); len(parts) == 2 || (len(parts) == 3 && strings.HasPrefix(parts[0], "@")) {
			cands = append(cands, path.Dir(f))
		}
	}
	for _, d := range cands {
		m := w.manifestAt(d)
		if m == nil || len(m.Bin) == 0 {
			continue
		}
		var one string
		if json.Unmarshal(m.Bin, &one) == nil {
			if path.Base(m.Name) == name {
				return w.file(path.Join(d, one))
			}
			continue
		}
		var many map[string]string
		if json.Unmarshal(m.Bin, &many) == nil {
			if t, ok := many[name]; ok {
				return w.file(path.Join(d, t))
			}
		}
	}
	return "", false
}

func (w *walker) manifestAt(dir string) *manifest {
	if w.pkgs == nil {
		w.pkgs = map[string]*manifest{}
	}
	if m, ok := w.pkgs[dir]; ok {
		return m
	}
	var m *manifest
	p := path.Join(dir, "package.json")
	if w.index[p] {
		if data, err := w.repo.ReadFile(p); err == nil {
			var mm manifest
			if json.Unmarshal(data, &mm) == nil {
				m = &mm
			}
		}
	}
	w.pkgs[dir] = m
	return m
}

// packageEntry resolves a package directory's "." entry: exports (the
// target a require, then an import, takes: exportTargets), else main,
// else index.
func (w *walker) packageEntry(dir string, m *manifest) (string, bool) {
	var cands []string
	if len(m.Exports) > 0 {
		cands = append(cands, exportTargets(m.Exports)...)
	}
	if m.Main != "" {
		cands = append(cands, m.Main)
	}
	for _, c := range cands {
		p := path.Join(dir, c)
		for _, e := range exts {
			if w.index[p+e] {
				return p + e, true
			}
		}
		for _, e := range exts[1:] {
			if w.index[p+"/index"+e] {
				return p + "/index" + e, true
			}
		}
		if t, ok := w.fromSource(p); ok {
			return t, true
		}
	}
	return "", false
}

// exportSubpath resolves "./sub" through a package's exports map,
// matched as node matches it (subpathMatch): the first target the
// package holds.
func (w *walker) exportSubpath(dir string, m *manifest, sub string) (string, bool) {
	for _, target := range subpathTargets(m.Exports, sub) {
		if t, ok := w.file(path.Join(dir, target)); ok {
			return t, true
		}
	}
	return "", false
}

var builtins = map[string]bool{}

func init() {
	for _, b := range strings.Fields(`assert async_hooks buffer child_process cluster console constants crypto dgram
diagnostics_channel dns domain events fs http http2 https inspector module net os path perf_hooks process punycode
querystring readline repl stream string_decoder sys timers tls trace_events tty url util v8 vm wasi worker_threads zlib test`) {
		builtins[b] = true
	}
}

func isBuiltin(spec string) bool {
	if strings.HasPrefix(spec, "node:") {
		return true
	}
	name, _ := splitBare(spec)
	return builtins[name]
}

// EntryWhyOr is EntryWhy, safe on a nil graph.
func (g *Graph) EntryWhyOr() string {
	if g == nil {
		return "no start command"
	}
	return g.EntryWhy
}

// CompiledSource maps a path of compiled output (dist/x.js, build/src/x.js)
// to the source file in the repository it was compiled from, when only the
// sources are in the repository.
func CompiledSource(repo *probe.Repo, rel string) (string, bool) {
	files, err := repo.Files()
	if err != nil {
		return "", false
	}
	w := &walker{repo: repo, files: files, index: make(map[string]bool, len(files)), g: &Graph{parent: map[string]string{}, line: map[string]int{}}}
	for _, f := range files {
		w.index[f] = true
	}
	if w.index[rel] {
		return rel, true
	}
	return w.fromSource(rel)
}
