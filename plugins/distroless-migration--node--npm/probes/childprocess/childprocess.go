package childprocess

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
)

// Name is the probe's name.
const Name = "child_process"

// MaxParseBytes is the largest file the probe parses. Larger files are
// still searched for "child_process"; one that mentions it is reported as
// too large rather than parsed.
const MaxParseBytes = 2 << 20

// Reasons this probe gives for medium confidence.
const (
	ReasonInvalidPackageJSON       probe.Reason = "invalid_package_json"
	ReasonDependenciesNotInstalled probe.Reason = "dependencies_not_installed"
	ReasonParseErrors              probe.Reason = "parse_errors"
	ReasonFilesTooLarge            probe.Reason = "files_too_large"
	// ReasonDependenciesUnavailable: a lockfile install (gather --deps
	// lockfile) could not provide some pinned packages.
	ReasonDependenciesUnavailable probe.Reason = "dependencies_unavailable"
	// ReasonImageDependenciesPartial: on a traced run, part of the image's
	// node_modules could not be read back (imagedeps.Ref).
	ReasonImageDependenciesPartial probe.Reason = "image_dependencies_partial"
)

// Warning IDs.
const (
	WarnShellInApp                 = "child_process.shell_in_app"
	WarnShellInDependency          = "child_process.shell_in_dependency"
	WarnMaybeShellInApp            = "child_process.maybe_shell_in_app"
	WarnMaybeShellInDependency     = "child_process.maybe_shell_in_dependency"
	WarnBinaryInApp                = "child_process.binary_in_app"
	WarnBinaryInDependency         = "child_process.binary_in_dependency"
	WarnDynamicInApp               = "child_process.dynamic_in_app"
	WarnDynamicInDependency        = "child_process.dynamic_in_dependency"
	WarnParseError                 = "child_process.parse_error"
	WarnFileTooLarge               = "child_process.file_too_large"
	WarnDependencyNotInstalled     = "child_process.dependency_not_installed"
	WarnInvalidPackageJSON         = "child_process.invalid_package_json"
	WarnOutsideRepository          = "child_process.outside_repository"
	WarnDependencyNotFetched       = "child_process.dependency_not_fetched"
	WarnDependencyIntegrity        = "child_process.dependency_integrity_mismatch"
	WarnDependencyRefused          = "child_process.dependency_refused"
	WarnDependencyHashFromRegistry = "child_process.dependency_hash_from_registry"
)

const warnPrefix = Name + "."

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnShellInApp, Summary: "application code runs a command through /bin/sh (exec, execSync, or shell: true), which a distroless image lacks"},
	{ID: WarnShellInDependency, Summary: "a production dependency runs a command through /bin/sh (exec, execSync, or shell: true), which a distroless image lacks"},
	{ID: WarnMaybeShellInApp, Summary: "application code starts a process with a shell option that is not a literal; it may run /bin/sh"},
	{ID: WarnMaybeShellInDependency, Summary: "a production dependency starts a process with a shell option that is not a literal; it may run /bin/sh"},
	{ID: WarnBinaryInApp, Summary: "application code runs a program other than node (such as git or getconf), which a distroless image lacks"},
	{ID: WarnBinaryInDependency, Summary: "a production dependency runs a program other than node (such as git or getconf), which a distroless image lacks"},
	{ID: WarnDynamicInApp, Summary: "application code starts a process whose command is not a literal, or passes child_process on; check what it runs"},
	{ID: WarnDynamicInDependency, Summary: "a production dependency starts a process whose command is not a literal, or passes child_process on; check what it runs"},
	{ID: WarnParseError, Summary: "a JavaScript or TypeScript file that mentions child_process has syntax errors; calls near them may be missed"},
	{ID: WarnFileTooLarge, Summary: "a file that mentions child_process is too large to parse; its calls were not examined"},
	{ID: WarnDependencyNotInstalled, Summary: "a production dependency is not installed under node_modules, so its code was not scanned"},
	{ID: WarnInvalidPackageJSON, Summary: "a package.json could not be read, so the production dependencies it declares were not followed"},
	{ID: WarnOutsideRepository, Summary: "a symlink points outside the repository; its target was not scanned"},
	{ID: WarnDependencyNotFetched, Summary: "a production dependency the lockfile pins could not be fetched (registry unreachable or refusing) and is not in the dependency cache, so its code was not scanned"},
	{ID: WarnDependencyIntegrity, Summary: "a production dependency's tarball does not match the lockfile's integrity hash; it was neither unpacked nor scanned"},
	{ID: WarnDependencyHashFromRegistry, Summary: "the lockfile records no tarball hash for a production dependency (yarn berry hashes its own archive), so its tarball was verified against the hash the registry publishes"},
	{ID: WarnDependencyRefused, Summary: "a production dependency's tarball was refused (a path out of the package, a device, or over a size cap), so its code was not scanned"},
}

// Kind classifies what a child_process call needs at run time.
type Kind string

// The kinds, from worst to harmless.
const (
	// KindShell runs /bin/sh (or another shell) for certain.
	KindShell Kind = "shell"
	// KindMaybeShell runs a shell depending on a value known only at run
	// time.
	KindMaybeShell Kind = "maybe_shell"
	// KindBinary runs a program other than node and a shell, by a literal
	// name or path.
	KindBinary Kind = "binary"
	// KindDynamic runs a command that is not a literal, or the module or
	// one of its functions escapes where it cannot be followed.
	KindDynamic Kind = "dynamic"
	// KindNode runs node itself (fork, or spawn of process.execPath).
	KindNode Kind = "node"
)

// Origin says whose code a finding is in.
type Origin string

// The origins.
const (
	OriginApp        Origin = "app"
	OriginDependency Origin = "dependency"
)

// FunctionModule is the Function of a finding where the child_process
// module object itself escapes (is exported, passed as an argument, or
// re-exported wholesale), so its uses could not be followed.
const FunctionModule = "module"

// Facts are the child_process facts.
type Facts struct {
	// Findings are sorted by file, line, column and function.
	Findings []Finding `json:"findings"`
	Counts   Counts    `json:"counts"`
	// FilesScanned counts the candidate files read and searched.
	FilesScanned int `json:"files_scanned"`
	// FilesParsed counts the files that mention child_process and were
	// parsed.
	FilesParsed int `json:"files_parsed"`
	// ParseErrors lists the parsed files with syntax errors.
	ParseErrors []string `json:"parse_errors,omitempty"`
	// TooLarge lists the files that mention child_process but exceed
	// MaxParseBytes.
	TooLarge []string `json:"too_large,omitempty"`
	// TokenScanned lists the files over MaxParseBytes that mention
	// child_process: a streaming token scan found their shell calls by
	// name. Those that also hold a call only a parse classifies are in
	// TooLarge as well.
	TokenScanned []string `json:"token_scanned,omitempty"`
	// UnreadInImage lists the TooLarge files the judged image holds and
	// may run (reachable, or not known to be unreachable): the verdict
	// cannot rest on them.
	UnreadInImage []string `json:"unread_in_image,omitempty"`
	// NodeModules says whether a node_modules directory is present at the
	// repository root.
	NodeModules bool `json:"node_modules"`
	// DependenciesScanned counts the installed production packages whose
	// files were scanned.
	DependenciesScanned int `json:"dependencies_scanned"`
	// MissingDependencies are required production dependencies that are
	// declared but not installed (or installed outside the repository).
	MissingDependencies []MissingDependency `json:"missing_dependencies,omitempty"`
	// Graph is the judged image's module graph the scopes come from.
	Graph *Graph `json:"graph,omitempty"`
	// ImageNodeModules is set on a traced run: the dependencies scanned
	// are those the built image holds, read back from it, not the
	// checkout's (package imagedeps).
	ImageNodeModules *imagedeps.Ref `json:"image_node_modules,omitempty"`
	// Writes and Listens are the literal file writes and listen ports of
	// the reachable application code (writes.go): what a move to a
	// non-root user can break.
	Writes  []Write  `json:"writes,omitempty"`
	Listens []Listen `json:"listens,omitempty"`
}

// Finding is one use of child_process.
type Finding struct {
	// File is repository-relative and slash-separated.
	File string `json:"file"`
	// Line and Column are 1-based; Column counts Unicode code points.
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Function string `json:"function"`
	Kind     Kind   `json:"kind"`
	// Command is the first argument when it is a string literal or a
	// template literal without substitutions.
	Command string `json:"command,omitempty"`
	// Binary is the program the call runs when it is known: the command of
	// spawn or execFile, or the first word of a shell command line.
	Binary string `json:"binary,omitempty"`
	Origin Origin `json:"origin"`
	// Package and PackageVersion name the dependency a finding is in, from
	// its package.json.
	Package        string `json:"package,omitempty"`
	PackageVersion string `json:"package_version,omitempty"`
	// Platform is the other system (win32, darwin) that a process.platform
	// test around the call restricts it to: it never runs in a Linux image.
	Platform string `json:"platform,omitempty"`
	// Within is the name of the function whose body holds the call, when
	// it has one: the call runs only if that function is called.
	Within string `json:"within,omitempty"`
	// Shape names the known shape of generated or copied code the call
	// is part of (ShapeNapiMuslCheck), recognised by its structure.
	Shape string `json:"shape,omitempty"`
	// Scope says whether the code ships in the judged image and runs.
	Scope     Scope  `json:"scope"`
	ScopeNote string `json:"scope_note,omitempty"`
	// Chain is the load chain from the entrypoint, for reachable code.
	Chain []string `json:"chain,omitempty"`
}

// Counts counts findings by origin and kind.
type Counts struct {
	App        KindCounts `json:"app"`
	Dependency KindCounts `json:"dependency"`
}

// KindCounts counts findings by kind.
type KindCounts struct {
	Shell      int `json:"shell"`
	MaybeShell int `json:"maybe_shell"`
	Binary     int `json:"binary"`
	Dynamic    int `json:"dynamic"`
	Node       int `json:"node"`
}

func (c *KindCounts) add(k Kind) {
	switch k {
	case KindShell:
		c.Shell++
	case KindMaybeShell:
		c.MaybeShell++
	case KindBinary:
		c.Binary++
	case KindDynamic:
		c.Dynamic++
	case KindNode:
		c.Node++
	}
}

// MissingDependency is a production dependency that could not be scanned.
type MissingDependency struct {
	Name string `json:"name"`
	// RequiredBy is "package.json" for the root, else name@version of the
	// package that depends on it.
	RequiredBy string `json:"required_by"`
}

// Probe is the child_process probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var (
	_ probe.Probe = (*Probe)(nil)
	_ probe.Keyed = (*Probe)(nil)
)

// appExts are the application's source extensions; depExts are those Node
// loads from a dependency.
var (
	appExts = []string{".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx"}
	depExts = []string{".js", ".cjs", ".mjs"}
)

// Desc describes the probe. The declared inputs cover every file the output
// can depend on; see the package documentation for what that costs.
func (*Probe) Desc() probe.Desc {
	inputs := []string{"package.json"}
	for _, e := range appExts {
		inputs = append(inputs, "**/*"+e)
	}
	// The module graph resolves loads to any file (data.json, addon.node)
	// and the image's file set counts every file of the build context.
	inputs = append(inputs, "**/*", "node_modules/**/package.json")
	inputs = append(inputs, images.Inputs()...)
	for _, e := range depExts {
		inputs = append(inputs, "node_modules/**/*"+e)
	}
	return probe.Desc{
		Name:      Name,
		Version:   "73", // 73: a module that re-exports an app wrapper (export { run } from …, export { default as run } from …, export * from …) exports it too, and its importers' literal commands are calls (a barrel file); 72: an app file that loads a wrapper's module whole (const util = require(…), import * as util from …) calls it as util.run(…) or (0, util_1.run)(…) (exportcalls.go); 71: a package's exports conditions are read in the file's order, for a require and for an import, as node reads them ("default" before "node" wins; a "node" whose nested conditions match no require lets the require after it win: modgraph/pkgexports.go); 70: the graph starts at the node command of an entrypoint script that traps signals and waits for its background node (node-red), not at the kill of its trap handler; 69: a call of a require's result (require('./run')('git')) is a call of the wrapper the module exports; 68: an exports or imports target of null exports nothing, an imports target that names a package loads it; a literal an importer passes to an exported wrapper runs on the systems the wrapper's call does, and is maybe_shell when the wrapper's options may set shell and the literal is a command line; a comment in a parameter list does not shift the parameter; 67: a literal command that an app file passes to a function another app module exports, which hands that parameter (or its first element) to spawn, is a call of its own at that argument (exportcalls.go: etherpad's runCmd(['pnpm', '--version'])); 66: of the exports or imports patterns that match a subpath, the one node picks (the longest part before the "*", then the longest key) decides the file: the walk took whichever a Go map gave first, and reached different files from run to run (modgraph/pkgexports.go); 65: the walk from the app files an open computed load leaves open does not enter files the main walk reached; 64: pnpm options before its command (pnpm --allow-build=x add y) no longer hide the packages it adds (shellcmd.Installs); 63: SvelteKit's $lib alias is the package's src/lib folder, and $app/…, $env/… are modules its build provides, in a package with a svelte.config file (modgraph/alias.go); 62: a --deps lockfile run mounts the development packages too when the judged image's install omits nothing, and the root's devDependencies are then scanned; a computed load of a name the file declares once with a literal path (const p = path.join(__dirname, "dist", "x.mjs"); import(p)) is a literal load (modgraph namedLoads); 61: a call of cross-spawn (its default export, .spawn, .sync, a destructured or named import) is judged as spawn's or spawnSync's: on Linux it hands child_process its arguments and options unchanged; 60: a package that only app files a computed load leaves open load is open through that load, not unreachable (modgraph/open.go: a route file that only require(path.join(dir, name)) reaches may load a package that spawns); a computed load that joins a folder to an entry of a readdir of that folder in the same file (sequelize's models/index.js, a route loader) reaches that folder's files and its subfolders' index files, and leaves the app closed (modgraph/dirload.go listedLoad); path.join(__dirname, "/api") is the file's api folder; 59: an image that installs dependencies while the repository has no root package.json and no package was read is medium, dependencies_not_installed (NodeBB copies install/package.json); 58: the graph starts from the node commands of a start whose pre hook needs a shell (npmscripts graph_steps); the lookup of ldd by napi-rs's earlier binding loader, on a Node without process.report, is a known shape (napi_rs_no_report_check); 57: the confidence is low when the code the entrypoint reaches loads a pinned package the install could not provide; a package the walk misses is in an image that omits devDependencies and adds none by name only if it is a pinned production package that could not be provided (a devDependency pin or an optional peer is not); 55: an operand of && or || in a test is only tested (n.file && n.sync ? …); a property of a const declared with an object literal (const l = { parse }) names a function of the files its file reaches; 54: a string that is a function's name, other than a subscript's key, names it only in a file that reaches the function's file through literal loads, or when a computed load may reach that file (a TypeScript enum's "sync" in a file that never loads cross-spawn names no spawnSync); a subscript's string key (x["spawn"]) is read as a property of x; a property of a bundle's binding of one of its own modules (n.sync, n = t(738)) names a function of the bundle or of what it loads; a property an assignment sets (isexe.sync = sync, x.sync.exists = …) and a class field's name call nothing; a destructured load (const { serialize } = require(…)) binds its names to the load; 53: a bare name names a file's own function only where its nearest declaration is that function, not anywhere in a file that defines one; 52: this.name in a class with its own names class methods and fields, not an object literal's methods; 51: the liveness answer is kept per file whenever a mention's reading depends on the file asked about; 50: a package's function runs only where a load hands it to code that runs: a default export (module.exports = f, export default f, a bundle module's e.exports = f) where its importers use what they bind, a property of a module (X.sync) only of the files that module reaches; a parameter or a plain variable of the name, this.name in a class with its own, a private name, an event's name and a property of a bundle's binding of a built-in module name no package's function (modgraph/exports.go); 49: a file too large to parse mentions child_process for the token scan only where it loads it (require(, import(, from: not a bundler's list of built-in modules), and a name( whose parentheses a body's brace follows is a method, no call; a Next.js standalone server runs with process.env.TURBOPACK off unless the image's ENV sets it; 48: a bundle's module table (ncc, webpack) maps its require of an id to child_process, with its names held in the module function around it (bundle.go); compiled code's (0, _util.promisify)(…) is promisify; a package's function runs only where code that runs names it, and a regular expression, a string other than the name, or a property of a language global (JSON.parse) names nothing; a callback that once, memoize, debounce or promisify wraps is named by the variable the wrapper's result is bound to (modgraph); 47: the liveness search reads at most 48 MiB of a graph's files; 46: typescript.js's computed load resolves a plugin's module name, an installed package, and leaves typescript's own files unreached (modgraph/installed.go); 45: the musl check of napi-rs's generated binding loader is recognised by its structure (Finding.Shape, shapes.go); 44: a call in a package's function counts only when code that runs names that function: a mention in the body of a function that never runs itself, a publication (exports.x = x, a re-export's getter, an import's binding) or a comment calls nothing (modgraph/live.go); 43: a computed load whose argument names a node_modules folder (typeorm's PlatformTools.load) loads an installed package, none of its own package's files; an entrypoint script's run of "$@" (exec "$@", su-exec USER "$@") runs the CMD it wraps, read as graph steps too when it is another script, and its cd moves where later commands run (graph_steps); a runner's load read to load only the app's files (typeorm's ormconfig, loaders.go Own) leaves the runner's own files unreached; a call in a function of the file whose every caller a process.platform test keeps to another system runs there only (wrapper.go callersPlatform); the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); a workspace package the walk finds in the repository (a compiled main mapped to its source) is no package node_modules lacks (Flowise's flowise-components); 42: a literal load on a line a comment holds (// const x = require(...) commented out, a JSDoc {import(...)}) is none, unless a backtick before it on the line may close a template literal; a devOptional package of an npm lockfile is installed (prisma beside @prisma/client); a monorepo app built to dist/apps/api/main.js starts at apps/api/src/main.ts (Nx, Nest CLI), and a dist/ folder with repository files copied beside the build is generated too; a package the image adds by name that the lockfile pins too (npm add prisma@7) keeps a package the lockfile does not name out of the image; a builder's rm -r of literal paths takes them out of what it hands on; a "#src/*" import of the build output resolves to its source; a step that runs a file by its path (./run start) starts the graph there when its shebang runs node, and @oclif/core loads the commands folder (loaders.go); a function of the file that hands its parameter to spawn as the command is judged at each caller's literal (wrapper.go); a TypeScript import type loads nothing; an alias into a Prisma schema's generated client folder loads @prisma/client; the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); 41: a Nitro server's .output (Nuxt) starts the graph at nitro's and Nuxt's server runtime and the app's sources (modgraph/nitro.go); a TypeScript runner's file is an entry; a specifier npm cannot publish is not a missing package; promisify-child-process and child-process-promise are read as child_process (moduleSpecs); a computed load in an app helper that loads every file of the folder its callers name (outline's requireDirectory(__dirname)) reaches the files of the folders they pass as literals (modgraph/dirload.go); migrate-mongo, knex-migrator and mikro-orm are runners; the graph starts from the node commands of an entrypoint script that does more than set defaults (npmscripts graph_steps); 40: the app's computed load in the function it gives a runner as its callback (umzug's migrations.resolve) loads the migration files; one that loads what a glob of the function around it lists reaches the files the glob matches (loaders.go, globload.go); 39: string literals joined by + are one literal specifier (msgpackr's require('u' + 'rl') opened every package named u...); a package's benchmark/ and bench/ folders are its tests' kind; import( or require( followed by what starts no expression (a regular expression's text) is not a load; 38: a migration runner's computed load (knex, umzug, sequelize-cli) reaches the app's migration files and the configuration it loads (modgraph/loaders.go); 37: a child_process call in the body of a function no reached file names is not reachable (Finding.Within); 36: a load in the body of a function no reached file names is not made (modgraph/lazy.go); an image another Dockerfile of the repository builds is read through that Dockerfile (images.Built); 35: next's bundled code's computed loads do not open next's files in its standalone mode; 34: a method or function named import or require is not a load; a Next.js standalone server runs with its development flags off: the loads they guard in next's own files are not made, nor do its server's computed loads of the app's build output and config open next's own files; 28: a computed load of a .json file (path.join(dir, x + '.json')) reads data, and leaves its package unreached; a dependency's load whose literal start names other packages (@img/sharp-) leaves its own files unreached and opens those packages; 27: a Next.js standalone server does not load next.config; a dependency's require(process.env.X) leaves its own files unreached; 26: a pnpm link: dependency to a missing folder is not pinned; 25: an image file too large to read back stands as an empty file, so a load of it resolves, and only one the entrypoint may reach leaves the scan short; 24: a traced image's node_modules listed whole (a file too large to read leaves the package list whole) leaves a missing package absent; 23: loads and calls that a switch (process.platform) case, or an early exit unless another system, keeps off Linux (package jsplatform); 22: a Next.js standalone server.js starts at next's start-server and the app's server-side sources; 21: a missing package no lockfile pins leaves reachability known, for an image whose installs are all from the lockfile; 7: an undeclared, uninstalled package is an unresolved edge, tsconfig paths and module-alias followed; 8: wrappers read with dockerfile.SplitInit (issue 21); 9: a COPY --from an image codegenie cannot read leaves the file set incomplete, and a whole lockfile install for an image without devDependencies scopes like the image; 10: the dependencies of nested packages with node_modules of their own; 11: a parent's node_modules stands for the app folder's when it has none; 12: literal writes and listen ports of reachable app code; 13: their defaults after ?? and ||, ternaries, `${__dirname}/x` and names declared once; 13: the graph starts from every node step of the start (npmscripts steps: && lines, hooks, npm-run-all, cross-env, entrypoint scripts that only set defaults); 14: a script step's node_modules/.bin command enters at its package's bin file, and a step whose code is not found leaves no entry; 15: the write scan searches the call names, not walking the tree; 16: the dependencies of the root's workspace packages; 17: a package's scripts/ folder is its own tooling, not loaded by a computed require; 18: a builder stage's sources do not ship with the node_modules it installs; 19: calls guarded by a process.platform test for another system; 20: compiled output mapped to its sources through tsconfig outDir and rootDir
		After:     []string{imagedeps.Source},
		Heaviness: probe.Light,
		// A static scan, but of every file the entrypoint reaches, which
		// with --deps lockfile is the dependencies' code too: Flowise's
		// graph is about 13,000 files and 40,000 more left open, some 30 s
		// on an idle machine, more on a busy one. The run's
		// --light-timeout, when given, still wins.
		Timeout:        10 * time.Minute,
		CacheStrategy:  probe.CacheContent,
		PerImage:       true,
		DeclaredInputs: inputs,
		NewFacts:       func() any { return new(Facts) },
	}
}

// KeySettings names, on a traced run, the blob of the image's node_modules
// the scan reads: it is content-addressed, so the key covers its bytes.
func (*Probe) KeySettings(pctx *probe.Context) []string {
	if ref := imagedeps.Earlier(pctx); ref != nil {
		return []string{"image_node_modules=" + ref.Digest}
	}
	return nil
}

// Run scans the application and its installed production dependencies:
// on a traced run, those the built image holds.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	in, err := imagedeps.Read(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	if in != nil {
		defer func() { _ = in.Close() }()
		repo = in.Repo
	}
	files, err := repo.Files()
	if err != nil {
		return probe.Output{}, err
	}
	s := newSession(repo, files)
	if d := pctx.Dependencies; d != nil {
		s.memo = d.Memo
		s.unavailable = unavailableNames(d.Unavailable)
		s.dev = d.Dev && in == nil
	}
	s.image = in
	tasks := s.appTasks()
	if err := s.resolveDependencies(); err != nil {
		return probe.Output{}, err
	}
	tasks = append(tasks, s.dependencyTasks()...)
	results, err := s.scanAll(ctx, tasks)
	if err != nil {
		return probe.Output{}, err
	}
	sc, graph, err := newScoper(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	sc.image = in
	if err := s.wrapperCalls(ctx, tasks, results, sc.g); err != nil {
		return probe.Output{}, err
	}
	out := s.output(tasks, results)
	if d := pctx.Dependencies; d != nil && len(d.Unavailable) > 0 && in == nil {
		unavailable(&out, d)
	}
	if d := pctx.Dependencies; d != nil && in == nil {
		for _, p := range d.RegistryVerified {
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnDependencyHashFromRegistry, Message: fmt.Sprintf("%s: %s records no tarball hash for it; it was verified against the registry's own", p, d.Lockfile)})
		}
	}
	facts := out.Facts.(*Facts)
	facts.Graph = graph
	if in == nil && !s.listed("package.json") && len(s.packages) == 0 && !s.nodeModules && sc.set != nil && sc.set.InstallsDependencies &&
		(pctx.Dependencies == nil || pctx.Dependencies.Installed == 0) {
		// NodeBB's build copies install/package.json to the app folder
		// and installs from it: the repository declares nothing.
		why := "the image installs dependencies, but the repository has no package.json at its root and none of its packages was read, so what the install brings was not scanned (a build step may make or copy the package.json it installs from); a traced run reads the built image's node_modules"
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnDependencyNotInstalled, Message: why})
		if out.Confidence == probe.High {
			out.Confidence, out.Reason, out.Detail = probe.Medium, ReasonDependenciesNotInstalled, why
		} else {
			out.Detail += "; " + why
		}
	}
	if d := pctx.Dependencies; d != nil && in == nil && graph != nil {
		if lost := loadedUnavailable(graph.MissingPackages, d.Unavailable); len(lost) > 0 {
			// Code the service runs is in a package nobody read.
			out.Confidence, out.Reason = probe.Low, ReasonDependenciesUnavailable
			out.Detail = fmt.Sprintf("the code the entrypoint reaches loads %s, which the lockfile install could not provide: what it runs was not read (the warnings say why; a traced run reads the built image)", strings.Join(first(lost, 3), ", "))
		}
	}
	if graph != nil && len(graph.Escapes) > 0 {
		// Code the service loads is out of reach: nothing said of it holds.
		out.Confidence, out.Reason = probe.Low, probe.ReasonPathEscapes
		out.Detail = strings.Join(graph.Escapes, "; ") + ": the code it loads cannot be read"
	}
	for i := range facts.Findings {
		sc.scope(&facts.Findings[i])
	}
	if facts.Writes, facts.Listens, err = sc.scanWrites(ctx, repo); err != nil {
		return probe.Output{}, err
	}
	for _, p := range facts.TooLarge {
		f := Finding{File: p, Origin: OriginApp}
		if strings.HasPrefix(p, "node_modules/") || strings.Contains(p, "/node_modules/") {
			f.Origin = OriginDependency
		}
		sc.scope(&f)
		if f.Scope == ScopeReachable || f.Scope == ScopeUnresolved {
			facts.UnreadInImage = append(facts.UnreadInImage, p)
		}
	}
	// The image's files too large to read back: unread, so only one the
	// entrypoint may reach leaves the scan short (a compiler's 9 MB bundle
	// that nothing loads does not).
	var unread []string
	for _, p := range in.TooLargeFiles() {
		f := Finding{File: p, Origin: OriginDependency}
		sc.scope(&f)
		if f.Scope == ScopeReachable || f.Scope == ScopeUnresolved {
			facts.UnreadInImage = append(facts.UnreadInImage, p)
			unread = append(unread, p)
		}
	}
	if len(unread) > 0 {
		detail := fmt.Sprintf("%d files of the image's node_modules that the entrypoint may reach are over %d MiB and were not read (%s)", len(unread), sandbox.MaxFileSetFile>>20, strings.Join(first(unread, 3), ", "))
		if out.Confidence == probe.High {
			out.Confidence, out.Reason, out.Detail = probe.Medium, ReasonImageDependenciesPartial, detail
		} else {
			out.Detail += "; " + detail
		}
	}
	return out, nil
}

// issue is one reason for lowered confidence, in priority order.
type issue struct {
	reason probe.Reason
	detail string
}

func (s *session) output(tasks []task, results []result) probe.Output {
	facts := &Facts{
		Findings:            []Finding{},
		NodeModules:         s.nodeModules,
		DependenciesScanned: s.scannedPackages,
		MissingDependencies: s.missing,
	}
	var warnings []probe.Warning
	var issues []issue
	if len(s.invalid) > 0 {
		for _, e := range s.invalid {
			warnings = append(warnings, probe.Warning{ID: WarnInvalidPackageJSON, Message: e.msg, Evidence: []probe.Evidence{{File: e.file, Line: e.line, Column: e.column}}})
		}
		issues = append(issues, issue{ReasonInvalidPackageJSON, fmt.Sprintf("%d package.json files could not be read; their dependencies were not followed", len(s.invalid))})
	}
	switch {
	case s.image != nil:
		// The image is what ships: a dependency it lacks is not code
		// that can run. What could not be read back is said instead.
		facts.ImageNodeModules = s.image.Ref
		if !s.image.PackagesWhole() {
			issues = append(issues, issue{ReasonImageDependenciesPartial, s.image.Partial()})
		}
	case s.declared > 0 && !s.nodeModules && len(s.unavailable) == 0:
		warnings = append(warnings, probe.Warning{ID: WarnDependencyNotInstalled, Message: fmt.Sprintf("package.json declares %d production dependencies but node_modules is absent; they were not scanned", s.declared)})
		issues = append(issues, issue{ReasonDependenciesNotInstalled, "node_modules is absent, so production dependencies were not scanned"})
	case len(s.missing) > 0:
		for _, m := range s.missing {
			if s.unavailable[m.Name] {
				continue // reported with why the install could not provide it
			}
			warnings = append(warnings, probe.Warning{ID: WarnDependencyNotInstalled, Message: fmt.Sprintf("%s (required by %s) is not installed under node_modules", m.Name, m.RequiredBy)})
		}
		issues = append(issues, issue{ReasonDependenciesNotInstalled, fmt.Sprintf("%d production dependencies are not installed", len(s.missing))})
	}
	for _, o := range s.outside {
		warnings = append(warnings, probe.Warning{ID: WarnOutsideRepository, Message: fmt.Sprintf("%s points outside the repository and was not scanned", o)})
	}

	var evidence []probe.Evidence
	for i, r := range results {
		t := &tasks[i]
		if r.symlink {
			s.symlinks = true
		}
		if r.outside {
			warnings = append(warnings, probe.Warning{ID: WarnOutsideRepository, Message: fmt.Sprintf("%s points outside the repository and was not scanned", t.path)})
		}
		if !r.read {
			continue
		}
		facts.FilesScanned++
		if r.tooLarge {
			facts.TooLarge = append(facts.TooLarge, t.path)
			warnings = append(warnings, probe.Warning{ID: WarnFileTooLarge, Message: fmt.Sprintf("%s mentions child_process but is larger than %d bytes; it was not parsed, and a token scan could not classify its calls", t.path, MaxParseBytes), Evidence: []probe.Evidence{{File: t.path}}})
		}
		if r.tokenScanned {
			facts.TokenScanned = append(facts.TokenScanned, t.path)
		}
		if !r.parsed && !r.tokenScanned {
			continue
		}
		if r.parsed {
			facts.FilesParsed++
		}
		if r.syntaxErr != nil {
			facts.ParseErrors = append(facts.ParseErrors, t.path)
			ev := probe.Evidence{File: t.path, Line: r.syntaxErr.line, Column: r.syntaxErr.column}
			warnings = append(warnings, probe.Warning{ID: WarnParseError, Message: fmt.Sprintf("%s:%d:%d: syntax error; calls near it may be missed", t.path, ev.Line, ev.Column), Evidence: []probe.Evidence{ev}})
		}
		for _, c := range r.calls {
			f := Finding{
				File: t.path, Line: c.line, Column: c.column,
				Function: c.function, Kind: c.kind, Command: c.command, Binary: c.binary,
				Origin: t.origin, Platform: c.platform, Within: c.within, Shape: c.shape,
			}
			if t.pkg != nil {
				f.Package, f.PackageVersion = t.pkg.name, t.pkg.version
			}
			facts.Findings = append(facts.Findings, f)
		}
	}
	sort.Slice(facts.Findings, func(i, j int) bool {
		a, b := &facts.Findings[i], &facts.Findings[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Function < b.Function
	})
	for _, f := range facts.Findings {
		if f.Origin == OriginApp {
			facts.Counts.App.add(f.Kind)
		} else {
			facts.Counts.Dependency.add(f.Kind)
		}
		ev := probe.Evidence{File: f.File, Line: f.Line, Column: f.Column, Note: fmt.Sprintf("%s: %s", f.Function, f.Kind)}
		evidence = append(evidence, ev)
		if id := warningFor(f); id != "" {
			warnings = append(warnings, probe.Warning{ID: id, Message: describe(f), Evidence: []probe.Evidence{ev}})
		}
	}
	if len(facts.ParseErrors) > 0 {
		issues = append(issues, issue{ReasonParseErrors, fmt.Sprintf("%d files have syntax errors", len(facts.ParseErrors))})
	}
	if len(facts.TooLarge) > 0 {
		issues = append(issues, issue{ReasonFilesTooLarge, fmt.Sprintf("%d files were too large to parse", len(facts.TooLarge))})
	}
	out := probe.Output{Confidence: probe.High, Facts: facts, Warnings: warnings, Evidence: evidence, Uncacheable: s.symlinks}
	if len(issues) > 0 {
		details := make([]string, len(issues))
		for i, is := range issues {
			details[i] = is.detail
		}
		out.Confidence, out.Reason, out.Detail = probe.Medium, issues[0].reason, strings.Join(details, "; ")
	}
	return out
}

// unavailable reports the packages a lockfile install could not provide,
// lowering the confidence: their code was not read. The output is not
// cached, since why a package is missing (offline, a bad tarball) is not
// among the declared inputs.
func unavailable(out *probe.Output, d *probe.Dependencies) {
	for _, u := range d.Unavailable {
		id := WarnDependencyNotFetched
		switch u.Kind {
		case "integrity_mismatch":
			id = WarnDependencyIntegrity
		case "unsafe_archive", "too_large":
			id = WarnDependencyRefused
		}
		out.Warnings = append(out.Warnings, probe.Warning{ID: id, Message: fmt.Sprintf("%s@%s (%s, from %s): %s", u.Name, u.Version, u.Path, d.Lockfile, u.Error)})
	}
	names := make([]string, 0, len(d.Unavailable))
	for _, u := range d.Unavailable {
		names = append(names, u.Name+"@"+u.Version)
	}
	detail := fmt.Sprintf("%d of the %d production packages %s pins could not be provided (%s; the warnings say why), so their code was not scanned", len(d.Unavailable), len(d.Unavailable)+d.Installed, d.Lockfile, strings.Join(first(names, 3), ", "))
	if out.Confidence == probe.High {
		out.Confidence, out.Reason, out.Detail = probe.Medium, ReasonDependenciesUnavailable, detail
	} else {
		out.Detail += "; " + detail
	}
	out.Uncacheable = true
}

// loadedUnavailable lists the packages of missing (the ones the module
// graph's reached files load and node_modules lacks) that a lockfile pins
// but the install could not provide, as name@version.
func loadedUnavailable(missing []string, us []probe.UnavailableDependency) []string {
	var out []string
	for _, u := range us {
		if slices.Contains(missing, u.Name) && !slices.Contains(out, u.Name+"@"+u.Version) {
			out = append(out, u.Name+"@"+u.Version)
		}
	}
	return out
}

// warningFor returns the warning a finding raises, or "" for node.
func warningFor(f Finding) string {
	var base string
	switch f.Kind {
	case KindShell:
		base = "shell"
	case KindMaybeShell:
		base = "maybe_shell"
	case KindBinary:
		base = "binary"
	case KindDynamic:
		base = "dynamic"
	case KindNode:
		return ""
	default:
		return ""
	}
	if f.Origin == OriginApp {
		return warnPrefix + base + "_in_app"
	}
	return warnPrefix + base + "_in_dependency"
}

// describe is a finding's warning message: one line, naming the place.
func describe(f Finding) string {
	where := fmt.Sprintf("%s:%d", f.File, f.Line)
	if f.Package != "" {
		where = fmt.Sprintf("%s@%s %s", f.Package, f.PackageVersion, where)
	}
	call := f.Function + "(…)"
	if f.Command != "" {
		call = fmt.Sprintf("%s(%q)", f.Function, f.Command)
	}
	switch {
	case f.Function == FunctionModule:
		return fmt.Sprintf("%s: the child_process module is passed on; its uses were not followed", where)
	case f.Kind == KindShell:
		return fmt.Sprintf("%s: %s runs a shell", where, call)
	case f.Kind == KindMaybeShell:
		return fmt.Sprintf("%s: %s sets a shell option that is not a literal; it may run a shell", where, call)
	case f.Kind == KindBinary:
		return fmt.Sprintf("%s: %s runs %s, which a distroless image does not have", where, call, f.Binary)
	default:
		return fmt.Sprintf("%s: %s runs a command that is not a literal", where, call)
	}
}

// isNotExist reports a file that vanished or a dangling symlink.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
