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
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnPackageManagerStart, Summary: "the container starts through npm, yarn or pnpm, which distroless lacks and which run scripts with sh -c"},
	{ID: WarnLifecycleHooks, Summary: "pre or post hooks run around the start script; a direct rewrite would drop them"},
	{ID: WarnScriptNeedsShell, Summary: "a script in the start chain uses shell syntax (operators, expansions, redirections, other scripts)"},
	{ID: WarnMissingScript, Summary: "the start command names a package script that package.json does not define"},
	{ID: WarnShellFormStart, Summary: "the start command is a shell command line that needs a shell"},
	{ID: WarnDistrolessNodeTwice, Summary: "on a distroless node base the entrypoint is node already, so CMD must not start with node"},
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
	// Program is the argv after docker-entrypoint.sh and a removable sh -c.
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
	// Blockers say why the chain does not convert mechanically.
	Blockers []string `json:"blockers,omitempty"`
}

// Script is one package script the chain runs.
type Script struct {
	Name string `json:"name"`
	// Role is pre, main, post or called.
	Role     string            `json:"role"`
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
		Name:           Name,
		Version:        "3",
		Heaviness:      probe.Light,
		PerImage:       true,
		CacheStrategy:  probe.CacheContent,
		DeclaredInputs: append([]string{"package.json", "**/package.json", "server.js"}, images.Inputs()...),
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
		switch why := probe.UnreadReason(err); {
		case why != "":
			// A symlink out of the repository, or a FIFO: not read.
			out.Confidence, out.Reason, out.Detail = probe.Low, why, err.Error()
		case err != nil:
			lower(ReasonPackageJSONError, err.Error())
		}
		c, ws := resolve(f, pkg)
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
		c, _ := resolve(f, pkg)
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

func resolve(f *dockerfile.File, pk *pkg) (Chain, []probe.Warning) {
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
	if path.Base(argv[0]) == dockerfile.NodeEntrypoint {
		argv = argv[1:]
		if len(argv) == 0 || strings.HasPrefix(argv[0], "-") {
			argv = append([]string{"node"}, argv...)
		}
	}
	if c.Start.FromBase == dockerfile.BaseDistroless && len(argv) > 0 && argv[0] == dockerfile.DistrolessEntrypoint {
		if len(argv) > 1 && path.Base(argv[1]) == "node" {
			warn(WarnDistrolessNodeTwice, fmt.Sprintf("the distroless entrypoint is %s, so CMD %q runs node with a script named node", dockerfile.DistrolessEntrypoint, argv[1:]), startEv)
			c.Blockers = append(c.Blockers, "CMD starts with node on a distroless base")
		}
		argv = append([]string{"node"}, argv[1:]...)
	}
	// sh -c LINE: removable when LINE is one plain command.
	if len(argv) == 3 && shellcmd.IsShell(argv[0]) && argv[1] == "-c" {
		a := shellcmd.Analyze(argv[2])
		if !a.Removable && len(a.Commands) == 1 && onlyScriptCalls(a.Reasons) {
			// sh -c "npm run x": the shell only wraps one package-manager
			// command; resolve the script it runs.
			a.Removable, a.Argv = true, a.Commands[0]
		}
		if !a.Removable {
			c.Launcher = "shell"
			c.Blockers = append(c.Blockers, "start command needs a shell: "+strings.Join(a.Reasons, ", "))
			warn(WarnShellFormStart, fmt.Sprintf("the start command %q needs a shell: %s", argv[2], strings.Join(a.Reasons, ", ")), startEv)
			return c, ws
		}
		argv, c.Env = a.Argv, a.Env
		c.ViaShell = true
	}
	c.Program = argv
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
	if len(inv.Unsupported) > 0 {
		// The option changes which script runs, or whether one does: the
		// script's own command is not what the container ran.
		for _, u := range inv.Unsupported {
			c.Blockers = append(c.Blockers, fmt.Sprintf("%s option %s", inv.Runner, u))
		}
		return c, ws
	}

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
		warn(WarnMissingScript, fmt.Sprintf("%s runs script %q, which package.json does not define", inv.Runner, inv.Script), startEv)
		c.Blockers = append(c.Blockers, fmt.Sprintf("script %q is not defined", inv.Script))
		return c, ws
	}
	// npm and yarn classic run pre and post hooks; pnpm does not by default.
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
		c.Scripts = append(c.Scripts, s)
		if s.Analysis.NeedsShell && !s.Analysis.Removable {
			warn(WarnScriptNeedsShell, fmt.Sprintf("script %q (%s) needs a shell: %s", name, cmd, strings.Join(s.Analysis.Reasons, ", ")), scriptEv(name))
		}
		return s
	}
	if len(hooks) > 0 && strings.HasPrefix(hooks[0], "pre") {
		add(hooks[0], "pre", pk.scripts[hooks[0]], false)
	}
	m := add(inv.Script, "main", main, implicit)
	for _, h := range hooks {
		if strings.HasPrefix(h, "post") {
			add(h, "post", pk.scripts[h], false)
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
	return c, ws
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
