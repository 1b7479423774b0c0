// Package npmscripts is the npm_scripts probe. For each Dockerfile it
// resolves the final stage's start command (ENTRYPOINT and CMD, or the known
// base image's) to what actually runs: through docker-entrypoint.sh and
// sh -c, down to an npm, yarn or pnpm script and its pre and post hooks. It
// parses every script in that chain with a real shell parser (package
// shellcmd) and says whether it needs a shell, and, when it does not, the
// direct argv it is equivalent to, which a rewrite can use as exec form.
package npmscripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Name is the probe's name.
const Name = "npm_scripts"

// Reasons for lowered confidence.
const (
	ReasonDockerfileParseError probe.Reason = "dockerfile_parse_error"
	ReasonPackageJSONError     probe.Reason = "invalid_package_json"
	ReasonUnknownBase          probe.Reason = "unknown_base_image_command"
)

// Warning IDs.
const (
	WarnPackageManagerStart = "npm_scripts.package_manager_start"
	WarnLifecycleHooks      = "npm_scripts.lifecycle_hooks"
	WarnScriptNeedsShell    = "npm_scripts.script_needs_shell"
	WarnMissingScript       = "npm_scripts.missing_script"
	WarnShellFormStart      = "npm_scripts.shell_form_start"
	WarnDistrolessNodeTwice = "npm_scripts.distroless_node_in_cmd"
	WarnEnvWrapperStart     = "npm_scripts.env_wrapper_start"
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnPackageManagerStart, Summary: "the container starts through npm, yarn or pnpm, which distroless lacks and which run scripts with sh -c"},
	{ID: WarnLifecycleHooks, Summary: "pre or post hooks run around the start script; a direct rewrite would drop them"},
	{ID: WarnScriptNeedsShell, Summary: "a script in the start chain uses shell syntax (operators, expansions, redirections, other scripts)"},
	{ID: WarnMissingScript, Summary: "the start command names a package script that package.json does not define"},
	{ID: WarnShellFormStart, Summary: "the start command is a shell command line that needs a shell"},
	{ID: WarnDistrolessNodeTwice, Summary: "on a distroless node base the entrypoint is node already, so CMD must not start with node"},
	{ID: WarnEnvWrapperStart, Summary: "the container starts its command through cross-env or env, which look the command up by PATH: distroless has no env, and no node on PATH"},
}

// Facts are one start chain per parsed Dockerfile.
type Facts struct {
	Chains []Chain `json:"chains"`
}

// Chain is what a Dockerfile's container runs at start.
type Chain struct {
	Dockerfile string `json:"dockerfile"`
	// Package is the package.json the scripts come from.
	Package string                  `json:"package,omitempty"`
	Stage   int                     `json:"stage"`
	Start   dockerfile.StartCommand `json:"start"`
	// Init is the init wrapper the start runs through (tini --, dumb-init,
	// gosu USER), with its options; Program is the command it wraps.
	Init []string `json:"init,omitempty"`
	// Program is the argv after docker-entrypoint.sh, an init wrapper and
	// a removable sh -c.
	Program []string `json:"program,omitempty"`
	// ViaShell is set when the start command goes through sh -c (shell
	// form, or an exec-form ["sh", "-c", ...]) that a rewrite removes.
	ViaShell bool `json:"via_shell,omitempty"`
	// Launcher is npm, yarn, pnpm, node, shell, other or unknown.
	Launcher   string   `json:"launcher"`
	Script     string   `json:"script,omitempty"`
	ScriptArgs []string `json:"script_args,omitempty"`
	Scripts    []Script `json:"scripts,omitempty"`
	// Direct is the exec-form argv equivalent to the whole chain, with Env
	// moved to ENV, when the chain converts mechanically.
	Direct      []string `json:"direct,omitempty"`
	Env         []string `json:"env,omitempty"`
	Convertible bool     `json:"convertible"`
	// Dir is the folder, relative to the container's working directory,
	// that Direct runs in: the package a script of another directory or
	// workspace comes from, or a cd's directory. "" is the working
	// directory itself.
	Dir string `json:"dir,omitempty"`
	// Blockers say why the chain does not convert mechanically.
	Blockers []string `json:"blockers,omitempty"`
	// Steps are the commands the start comes down to, in the order they
	// run, each with its own environment and folder: a script's pre and
	// post hooks, the scripts an && line or npm-run-all runs, with the
	// package managers, cross-env, env and cd gone. This is the one
	// reading of what the container runs that readiness, the recipe and
	// the module graph share. When the chain converts, Steps is its one
	// command (Direct, Env, Dir). Nil when the start does not come down
	// to commands run one after the other; StepsWhy then says why.
	Steps    []Step `json:"steps,omitempty"`
	StepsWhy string `json:"steps_why,omitempty"`
	// GraphSteps, when Steps is nil because an entrypoint script does
	// more than set defaults, are the commands that script runs that run
	// node code (node, npx, a package script), in order: where the module
	// graph starts. The script itself still needs its shell, and no
	// rewrite runs them. Nil when the script runs a command whose code is
	// not known (a word built at run time, another script it sources).
	GraphSteps []Step `json:"graph_steps,omitempty"`
	// Parallel is set when some steps run at the same time (run-p,
	// npm-run-all -p), not one after the other.
	Parallel bool `json:"parallel,omitempty"`
}

// Script is one package script the chain runs.
type Script struct {
	Name string `json:"name"`
	// Role is pre, main, post, called, or handover (a script that only
	// runs another: npm run x, cd dir && npm start).
	Role string `json:"role"`
	// Package is the package.json the script is in.
	Package  string            `json:"package,omitempty"`
	Command  string            `json:"command"`
	Line     int               `json:"line,omitempty"`
	Implicit bool              `json:"implicit,omitempty"` // npm's default start: node server.js
	Analysis shellcmd.Analysis `json:"analysis"`
}

// Probe is the npm_scripts probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var _ probe.Probe = (*Probe)(nil)

// Desc describes the probe.
func (*Probe) Desc() probe.Desc {
	return probe.Desc{
		Name:          Name,
		Version:       "15", // 15: the node image's docker-entrypoint.sh after an init wrapper (tini -- /usr/local/bin/docker-entrypoint.sh) execs its arguments, as it does first; 14: a final stage on an official distribution image (FROM alpine + apk add nodejs) starts with its CMD alone: those images set no ENTRYPOINT; 13: an entrypoint script's trap, wait, kill and other builtins that run no code start no graph step (node-red's trap stop SIGTERM; function stop() { kill $CHILD_PID; }), and a variable between node and the script file it runs is node's options (node $NODE_OPTIONS app.js "$@"); 12: a pre hook that needs a shell leaves graph_steps: its node commands, then the script's steps (test, [, echo and other builtins run no code); 11: an entrypoint script's run of "$@" (exec "$@", su-exec USER "$@") runs the CMD it wraps, read as graph steps too when it is another script, and its cd moves where later commands run (graph_steps); the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); 10: run-script-os (run-os) runs the script tagged for Linux (linux, else nix, else default); the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); 9: graph_steps, the node commands of an entrypoint script that does more than set defaults; 8: a package script's sh x.sh whose script only sets defaults and execs node converts to that command; 5: steps, the commands the start comes down to (issue 21); 6: through entrypoint scripts that only set defaults; 7: shell options before -c LINE or a script (bash -ec, sh -e x.sh)
		Heaviness:     probe.Light,
		PerImage:      true,
		CacheStrategy: probe.CacheContent,
		// "**/*": the steps follow a shell script the start runs, whatever
		// its name (docker-entrypoint, start.sh, bin/run).
		DeclaredInputs: append([]string{"package.json", "**/package.json", "server.js", "**/*"}, images.Inputs()...),
		NewFacts:       func() any { return new(Facts) },
	}
}

// Run resolves each Dockerfile's start chain.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	files, err := images.Selected(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	facts := &Facts{Chains: []Chain{}}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	lower := func(r probe.Reason, detail string) {
		if out.Confidence == probe.High {
			out.Confidence, out.Reason, out.Detail = probe.Medium, r, detail
		}
	}
	for _, pf := range files {
		f := pf.File
		if f == nil && pf.Unread != "" {
			out.Confidence, out.Reason, out.Detail = probe.Low, pf.Unread, pf.Err.Error()
			continue
		}
		if f == nil {
			lower(ReasonDockerfileParseError, pf.Err.Error())
			continue
		}
		pkg, err := loadPackage(repo, packageDir(ctx, repo, pctx, f, path.Dir(pf.Path)))
		ps := packages{repo: repo, root: pkgRoot(pkg, path.Dir(pf.Path)), wd: f.Workdir(f.Final), set: fileSet(ctx, repo, pctx)}
		switch why := probe.UnreadReason(err); {
		case why != "":
			// A symlink out of the repository, or a FIFO: not read.
			out.Confidence, out.Reason, out.Detail = probe.Low, why, err.Error()
		case err != nil:
			lower(ReasonPackageJSONError, err.Error())
		}
		c, ws := resolve(f, pkg, ps)
		if !c.Start.Known {
			lower(ReasonUnknownBase, fmt.Sprintf("%s: the final stage inherits its start command from %s, whose config is not read statically", pf.Path, f.RootBase(f.Final)))
		}
		facts.Chains = append(facts.Chains, c)
		out.Warnings = append(out.Warnings, ws...)
	}
	return out, nil
}

// Start is the derived fact of the judged image's start chain (nil when
// the repository has no parsed Dockerfile), shared with the probes that
// follow the start command (the module graph, entrypoint scripts).
var Start = &probe.Analyzer[*Chain]{
	Name:     "start_chain",
	PerImage: true,
	Run: func(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*Chain, error) {
		files, err := images.Selected(ctx, repo, pctx)
		if err != nil || len(files) == 0 || files[0].File == nil {
			return nil, err
		}
		f := files[0].File
		pkg, _ := loadPackage(repo, packageDir(ctx, repo, pctx, f, path.Dir(files[0].Path)))
		c, _ := resolve(f, pkg, packages{repo: repo, root: pkgRoot(pkg, path.Dir(files[0].Path)), wd: f.Workdir(f.Final), set: fileSet(ctx, repo, pctx)})
		return &c, nil
	},
}

// pkg is the package.json a Dockerfile's chain resolves against.
type pkg struct {
	path    string
	scripts map[string]string
	lines   map[string]int
	// hasServerJS: npm's implicit start is node server.js.
	hasServerJS bool
}

// packageDir finds the folder of the package.json the container's start
// command runs against: the one the image holds in its WORKDIR (mapped back
// through COPY), else, in a workspace, the one package whose folder is named
// like the WORKDIR (pnpm deploy and similar steps generate that folder from
// it), else the one beside the Dockerfile (or the root).
func packageDir(ctx context.Context, repo *probe.Repo, pctx *probe.Context, f *dockerfile.File, beside string) string {
	wd := f.Workdir(f.Final)
	if set, err := images.Files.Of(ctx, repo, pctx); err == nil && set != nil {
		if rel, ok := set.RepoPath(path.Join(wd, "package.json")); ok {
			return path.Dir(rel)
		}
	}
	if base := path.Base(wd); base != "/" && base != "." && base != path.Base(beside) {
		if ms, err := repo.Glob("**/" + base + "/package.json"); err == nil && len(ms) == 1 {
			return path.Dir(ms[0])
		}
	}
	return beside
}

// loadPackage reads the package.json beside the Dockerfile, else the root
// one. A missing package.json is an empty package, not an error.
func loadPackage(repo *probe.Repo, dir string) (*pkg, error) {
	for _, d := range []string{dir, "."} {
		p := path.Join(d, "package.json")
		data, err := repo.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &pkg{}, err
		}
		var facts nodeproject.Facts
		if err := nodeproject.Parse(data, &facts); err != nil {
			return &pkg{path: p}, fmt.Errorf("%s: %w", p, err)
		}
		return &pkg{path: p, scripts: facts.Scripts, lines: nodeproject.ScriptLines(data), hasServerJS: repo.Exists(path.Join(d, "server.js"))}, nil
	}
	return &pkg{}, nil
}

// pkgRoot is the repository folder the container's working directory
// maps to: the start package's, else the Dockerfile's.
func pkgRoot(pk *pkg, beside string) string {
	if pk.path != "" {
		return path.Dir(pk.path)
	}
	return beside
}

// maxHandovers bounds how many scripts that hand over to another script
// (npm run x, cd dir && npm start, pnpm --filter y start) are followed.
const maxHandovers = 8

func resolve(f *dockerfile.File, pk *pkg, ps packages) (Chain, []probe.Warning) {
	c, ws := resolveChain(f, pk, ps)
	c.settleSteps()
	return c, ws
}

// settleSteps makes Direct and Steps say the same: a chain that converts
// to one command has that command as its one step, and a start whose
// steps are one command converts to it (cross-env A=b node x.js is node
// x.js with A=b, and run-s x, whose script x is node x.js, is node x.js).
func (c *Chain) settleSteps() {
	if c.Steps == nil && c.Convertible && len(c.Direct) > 0 {
		// The program the start runs, which StepsWhy says was not followed
		// further.
		c.Steps = []Step{{Argv: c.Direct, Env: c.Env, Dir: c.Dir}}
		return
	}
	if len(c.Steps) != 1 || c.Parallel {
		return
	}
	s := c.Steps[0]
	if s.Via != "" && s.ViaScript == "" {
		return // readiness rewrites an entrypoint script by its own rule
	}
	if c.Convertible && slices.Equal(s.Argv, c.Direct) {
		c.Steps[0].Env, c.Steps[0].Dir = c.Env, c.Dir
		return
	}
	c.Direct, c.Env, c.Dir, c.Convertible, c.Blockers = s.Argv, s.Env, s.Dir, true, nil
}

func resolveChain(f *dockerfile.File, pk *pkg, ps packages) (Chain, []probe.Warning) {
	c := Chain{Dockerfile: f.Path, Package: pk.path, Stage: f.Final, Start: f.Start(f.Final)}
	var ws []probe.Warning
	startEv := []probe.Evidence{{File: f.Path, Line: startLine(c.Start, f.Stages[f.Final].Line)}}
	warn := func(id, msg string, ev []probe.Evidence) {
		ws = append(ws, probe.Warning{ID: id, Message: msg, Evidence: ev})
	}
	argv := c.Start.Argv
	if len(argv) == 0 {
		c.Launcher = "unknown"
		c.Blockers = append(c.Blockers, "no start command is known")
		return c, ws
	}
	// docker-entrypoint.sh execs its arguments, prepending node when the
	// first is an option or the arguments are empty.
	nodeEntrypoint := func(argv []string) []string {
		argv = argv[1:]
		switch {
		case len(argv) == 0 || strings.HasPrefix(argv[0], "-"):
			argv = append([]string{"node"}, argv...)
		case ps.nodeRuns(argv[0]):
			// It also prepends node when the first is no command: a path
			// that is no file of the image, which node resolves
			// (/app/dist/main to /app/dist/main.js).
			argv = append([]string{"node"}, argv...)
		}
		return argv
	}
	if path.Base(argv[0]) == dockerfile.NodeEntrypoint {
		argv = nodeEntrypoint(argv)
	}
	// tini -- CMD...: the wrapped command is the start.
	if init, rest := dockerfile.SplitInit(argv); init != nil {
		c.Init, argv = init, rest
		if len(argv) == 0 {
			c.Launcher = "unknown"
			c.Blockers = append(c.Blockers, "the init wrapper "+init[0]+" runs no command")
			return c, ws
		}
		// ENTRYPOINT ["/tini", "--", "/usr/local/bin/docker-entrypoint.sh"]
		// on a node image: the image's own entrypoint, named after tini.
		if path.Base(argv[0]) == dockerfile.NodeEntrypoint && dockerfile.ClassifyBase(f.RootBase(f.Final)) == dockerfile.BaseOfficialNode && !ps.shipped(argv[0]) {
			argv = nodeEntrypoint(argv)
		}
	}
	if c.Start.FromBase == dockerfile.BaseDistroless && len(argv) > 0 && argv[0] == dockerfile.DistrolessEntrypoint {
		if len(argv) > 1 && path.Base(argv[1]) == "node" {
			warn(WarnDistrolessNodeTwice, fmt.Sprintf("the distroless entrypoint is %s, so CMD %q runs node with a script named node", dockerfile.DistrolessEntrypoint, argv[1:]), startEv)
			c.Blockers = append(c.Blockers, "CMD starts with node on a distroless base")
		}
		argv = append([]string{"node"}, argv[1:]...)
	}
	c.Steps, c.Parallel, c.StepsWhy, c.GraphSteps = expandStart(pk, ps, argv)
	// sh -c LINE: removable when LINE is one plain command.
	if line := shellcmd.ShellLineOnly(argv); line != "" {
		a := shellcmd.Analyze(line)
		if !a.Removable && len(a.Commands) == 1 && onlyScriptCalls(a.Reasons) {
			// sh -c "npm run x": the shell only wraps one package-manager
			// command; resolve the script it runs.
			a.Removable, a.Argv = true, a.Commands[0]
		}
		if dir, cmd, ok := shellcmd.CdThen(a); ok {
			// sh -c "cd dir && npm start": the command, run in dir.
			d, why := ps.dir(".", dir)
			if why != "" {
				c.Launcher = "shell"
				c.Blockers = append(c.Blockers, "start command changes directory: "+why)
				warn(WarnShellFormStart, fmt.Sprintf("the start command %q changes directory: %s", line, why), startEv)
				return c, ws
			}
			a.Removable, a.Argv, c.Dir = true, cmd, cleanDir(d)
		}
		if !a.Removable {
			c.Launcher = "shell"
			c.Blockers = append(c.Blockers, "start command needs a shell: "+strings.Join(a.Reasons, ", "))
			warn(WarnShellFormStart, fmt.Sprintf("the start command %q needs a shell: %s", line, strings.Join(a.Reasons, ", ")), startEv)
			return c, ws
		}
		argv, c.Env = a.Argv, a.Env
		c.ViaShell = true
	}
	c.Program = argv
	if bin, unsupported, ok := shellcmd.NpxBin(argv); ok {
		// npx runs a node_modules/.bin command: that command, without npx.
		c.Launcher = "npx"
		warn(WarnPackageManagerStart, fmt.Sprintf("the container starts with %q: npx is not in a distroless image", strings.Join(argv, " ")), startEv)
		if len(unsupported) > 0 {
			for _, u := range unsupported {
				c.Blockers = append(c.Blockers, "npx option "+u)
			}
			return c, ws
		}
		c.Direct, c.Convertible = bin, true
		return c, ws
	}
	if _, rest, ok := shellcmd.EnvPrefix(argv); ok {
		warn(WarnEnvWrapperStart, fmt.Sprintf("the container starts %s through %s, which finds it by PATH; the variables move to ENV and the command runs directly", strings.Join(rest, " "), path.Base(argv[0])), startEv)
	}
	inv, ok := shellcmd.ParseInvocation(argv)
	if !ok {
		c.Launcher = "other"
		if path.Base(argv[0]) == "node" {
			c.Launcher = "node"
		}
		c.Direct, c.Convertible = argv, true
		return c, ws
	}
	c.Launcher, c.Script, c.ScriptArgs = string(inv.Runner), inv.Script, inv.Args
	warn(WarnPackageManagerStart, fmt.Sprintf("the container starts with %q: %s is not in a distroless image and runs the script through sh -c", strings.Join(argv, " "), inv.Runner), startEv)
	c.Blockers = append(c.Blockers, fmt.Sprintf("starts through %s", inv.Runner))
	cur := c.Dir
	if cur == "" {
		cur = "."
	}
	for hop := 0; ; hop++ {
		next, ok := c.runScript(pk, ps, inv, cur, hop, startEv, warn)
		if !ok {
			return c, ws
		}
		if next.pkg == nil {
			break
		}
		pk, inv, cur = next.pkg, next.inv, next.dir
	}
	return c, ws
}

// handover is the next script a script hands over to.
type handover struct {
	pkg *pkg
	inv shellcmd.ScriptInvocation
	dir string
}

// runScript resolves one invocation's script in the package it runs
// (from the working directory cur): it adds its scripts to the chain and
// either finishes the chain (Direct, or blockers) or returns the
// invocation the script hands over to. ok is false when the chain stops
// with blockers.
func (c *Chain) runScript(pk *pkg, ps packages, inv shellcmd.ScriptInvocation, cur string, hop int, startEv []probe.Evidence, warn func(id, msg string, ev []probe.Evidence)) (handover, bool) {
	if len(inv.Unsupported) > 0 {
		// The option changes which script runs, or whether one does: the
		// script's own command is not what the container ran.
		for _, u := range inv.Unsupported {
			c.Blockers = append(c.Blockers, fmt.Sprintf("%s option %s", inv.Runner, u))
		}
		return handover{}, false
	}
	dir, why := ps.locate(cur, inv)
	if why != "" {
		c.Blockers = append(c.Blockers, fmt.Sprintf("%s %s: %s", inv.Runner, inv.Script, why))
		return handover{}, false
	}
	if path.Join(ps.root, dir, "package.json") != pk.path {
		p, err := loadOnly(ps.repo, path.Join(ps.root, dir))
		if err != nil {
			c.Blockers = append(c.Blockers, fmt.Sprintf("reading the package.json in %s: %v", dir, err))
			return handover{}, false
		}
		pk = p
	}
	c.Package, c.Script, c.Dir = pk.path, inv.Script, cleanDir(dir)
	scriptEv := func(name string) []probe.Evidence {
		if l, ok := pk.lines[name]; ok {
			return []probe.Evidence{{File: pk.path, Line: l}}
		}
		return startEv
	}
	main, ok := pk.scripts[inv.Script]
	implicit := false
	if !ok && inv.Script == "start" && inv.Runner == shellcmd.NPM && pk.hasServerJS {
		main, ok, implicit = "node server.js", true, true
	}
	if !ok {
		where := ""
		if pk.path != "" {
			where = " (" + pk.path + ")"
		}
		warn(WarnMissingScript, fmt.Sprintf("%s runs script %q, which package.json%s does not define", inv.Runner, inv.Script, where), startEv)
		c.Blockers = append(c.Blockers, fmt.Sprintf("script %q is not defined", inv.Script))
		return handover{}, false
	}
	// npm and yarn classic run pre and post hooks; pnpm and node --run
	// do not by default.
	var hooks []string
	if inv.Runner != shellcmd.PNPM && !inv.NoHooks {
		for _, h := range []string{"pre" + inv.Script, "post" + inv.Script} {
			if _, ok := pk.scripts[h]; ok {
				hooks = append(hooks, h)
			}
		}
	}
	add := func(name, role, cmd string, implicit bool) Script {
		s := Script{Name: name, Role: role, Command: cmd, Line: pk.lines[name], Implicit: implicit, Analysis: shellcmd.Analyze(cmd)}
		s.Package = pk.path
		c.Scripts = append(c.Scripts, s)
		return s
	}
	needsShell := func(s Script) {
		if s.Analysis.NeedsShell && !s.Analysis.Removable {
			warn(WarnScriptNeedsShell, fmt.Sprintf("script %q (%s) needs a shell: %s", s.Name, s.Command, strings.Join(s.Analysis.Reasons, ", ")), scriptEv(s.Name))
		}
	}
	if len(hooks) == 0 && hop < maxHandovers {
		a := shellcmd.Analyze(main)
		if next, env, ok := handsOver(a, inv.Args); ok {
			d, why := ps.dir(dir, next.dir)
			if why != "" {
				c.Blockers = append(c.Blockers, fmt.Sprintf("script %q changes directory: %s", inv.Script, why))
				return handover{}, false
			}
			add(inv.Script, "handover", main, implicit)
			c.Env = append(append(c.Env, inv.Env...), env...)
			if next.pkg == nil {
				// cd dir && node app.js: the command, in dir.
				c.Dir = cleanDir(d)
				c.Direct, c.Convertible, c.Blockers = next.inv.Args, true, nil
				return handover{}, true
			}
			return handover{pkg: pk, inv: next.inv, dir: d}, true
		}
	}
	if len(hooks) > 0 && strings.HasPrefix(hooks[0], "pre") {
		needsShell(add(hooks[0], "pre", pk.scripts[hooks[0]], false))
	}
	m := add(inv.Script, "main", main, implicit)
	needsShell(m)
	for _, h := range hooks {
		if strings.HasPrefix(h, "post") {
			needsShell(add(h, "post", pk.scripts[h], false))
		}
	}
	// Scripts the chain calls, transitively.
	seen := map[string]bool{inv.Script: true}
	queue := append([]string{}, m.Analysis.Calls...)
	for len(queue) > 0 && len(seen) < 64 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if cmd, ok := pk.scripts[name]; ok {
			s := add(name, "called", cmd, false)
			needsShell(s)
			queue = append(queue, s.Analysis.Calls...)
		}
	}
	if len(hooks) > 0 {
		warn(WarnLifecycleHooks, fmt.Sprintf("%s %s also runs %s; an exec-form rewrite must keep what they do", inv.Runner, inv.Script, strings.Join(hooks, " and ")), scriptEv(hooks[0]))
		c.Blockers = append(c.Blockers, "lifecycle hooks "+strings.Join(hooks, ", "))
	}
	switch {
	case len(hooks) > 0:
	case len(m.Analysis.Calls) > 0:
		c.Blockers = append(c.Blockers, "the script calls other scripts")
	case m.Analysis.NeedsShell && !m.Analysis.Removable:
		c.Blockers = append(c.Blockers, "the script needs a shell")
	default:
		c.Direct = append(append([]string{}, m.Analysis.Argv...), inv.Args...)
		// What the command line gives the script's environment (npm's
		// npm_config_ for options it does not know), then the script's
		// own assignments, which win.
		c.Env = append(append(c.Env, inv.Env...), m.Analysis.Env...)
		c.Convertible = true
		c.Blockers = nil // npm itself goes away in the rewrite
	}
	return handover{}, true
}

// handsOver reads a script that only hands over to one other command:
// another script (npm run x, pnpm --filter y start, with args the outer
// runner appends), or cd DIR && COMMAND. next.pkg is non-nil (a marker)
// when the command is a script invocation, whose Dir is relative to
// next.dir; otherwise next.inv.Args is the command's argv.
func handsOver(a shellcmd.Analysis, args []string) (next handover, env []string, ok bool) {
	dir, argv := ".", []string(nil)
	if d, cmd, isCd := shellcmd.CdThen(a); isCd {
		dir, argv = d, cmd
	} else if len(a.Commands) == 1 && len(a.Calls) == 1 && onlyScriptCalls(a.Reasons) {
		argv, env = a.Commands[0], a.Env
	} else {
		return handover{}, nil, false
	}
	// npm appends the script's arguments to its line.
	argv = append(append([]string{}, argv...), args...)
	if inv, isInv := shellcmd.ParseInvocation(argv); isInv {
		return handover{pkg: &pkg{}, inv: inv, dir: dir}, env, true
	}
	if dir == "." {
		return handover{}, nil, false
	}
	return handover{inv: shellcmd.ScriptInvocation{Args: argv}, dir: dir}, env, true
}

// cleanDir is "" for the working directory itself.
func cleanDir(d string) string {
	if d == "." || d == "" {
		return ""
	}
	return d
}

// loadOnly reads the package.json in dir, which must exist.
func loadOnly(repo *probe.Repo, dir string) (*pkg, error) {
	p := path.Join(dir, "package.json")
	if !repo.Exists(p) {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	return loadPackage(repo, dir)
}

// startLine is the line of the instruction that sets the start command,
// or of the final FROM when the command comes from the base image.
func startLine(sc dockerfile.StartCommand, from int) int {
	switch {
	case sc.Cmd != nil:
		return sc.Cmd.Line
	case sc.Entrypoint != nil:
		return sc.Entrypoint.Line
	}
	return from
}

// onlyScriptCalls reports whether every reason is a call of a package
// script (or mechanically removable).
func onlyScriptCalls(reasons []string) bool {
	for _, r := range reasons {
		if !strings.HasPrefix(r, "calls package script ") && r != shellcmd.ReasonAssign && r != shellcmd.ReasonExec {
			return false
		}
	}
	return true
}

// fileSet is the judged image's file set; nil when it is unknown.
func fileSet(ctx context.Context, repo *probe.Repo, pctx *probe.Context) *images.FileSet {
	set, err := images.Files.Of(ctx, repo, pctx)
	if err != nil {
		return nil
	}
	return set
}
