// Package entrypoints is the entrypoint_scripts probe. It finds every file
// the container executes directly at start or for its health check (the
// ENTRYPOINT, the CMD's program, the HEALTHCHECK command, the first word of
// each npm script in the start chain) and every node_modules/.bin shim the
// start chain touches, maps each back to the repository through the
// Dockerfile's COPY instructions, and reports what it is: an ELF binary, a
// script and its shebang, or a symlink to JavaScript. A #!/bin/sh script or
// shim needs a shell; #!/usr/bin/env node needs /usr/bin/env, which
// distroless lacks too. The official node images' own docker-entrypoint.sh is
// reported as coming from the base image, not from the app.
package entrypoints

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/modgraph"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Name is the probe's name.
const Name = "entrypoint_scripts"

// Warning IDs.
const (
	WarnShellShebang  = "entrypoint_scripts.shell_shebang"
	WarnEnvShebang    = "entrypoint_scripts.env_shebang"
	WarnShellShim     = "entrypoint_scripts.shell_bin_shim"
	WarnBaseEntry     = "entrypoint_scripts.base_image_entrypoint"
	WarnNotFound      = "entrypoint_scripts.not_found"
	WarnNodePathShbng = "entrypoint_scripts.node_path_shebang"
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnShellShebang, Summary: "an executed script starts with a shell shebang (#!/bin/sh, #!/bin/bash) and needs that shell"},
	{ID: WarnEnvShebang, Summary: "an executed script starts with #!/usr/bin/env; distroless has no /usr/bin/env"},
	{ID: WarnShellShim, Summary: "a node_modules/.bin shim in the start chain is a #!/bin/sh wrapper script (pnpm, some yarn)"},
	{ID: WarnBaseEntry, Summary: "the official node base image boots through docker-entrypoint.sh, a #!/bin/sh script, as pid 1"},
	{ID: WarnNotFound, Summary: "an executed file could not be found in the repository, so its shebang is unknown"},
	{ID: WarnNodePathShbng, Summary: "an executed script names node by a path that differs on distroless (/nodejs/bin/node)"},
}

// Kind is what an executed file is.
type Kind string

// The kinds.
const (
	KindELF         Kind = "elf"
	KindScript      Kind = "script"
	KindSymlinkToJS Kind = "symlink_to_js"
	KindSymlink     Kind = "symlink"
	KindNoShebang   Kind = "no_shebang"
	KindBaseImage   Kind = "base_image"
	KindNotFound    Kind = "not_found"
	// KindOutside is a symlink that leads out of the repository; it is
	// never read.
	KindOutside Kind = "outside_repository"
	// KindNotRegular is a FIFO, socket or device where the file should be;
	// it is never read.
	KindNotRegular Kind = "not_regular_file"
	// KindInferred is a node_modules/.bin command whose node_modules is not
	// in the repository: what it is comes from the lockfile kind.
	KindInferred Kind = "inferred_from_lockfile"
)

// Facts list the executed files, per Dockerfile, in a stable order.
type Facts struct {
	Executables []Executable `json:"executables"`
}

// Executable is one file the container executes directly.
type Executable struct {
	Dockerfile string `json:"dockerfile"`
	// Command is the word as the container names it.
	Command string `json:"command"`
	// Origin: entrypoint, cmd, healthcheck, script:<name> or bin_shim.
	Origin   string `json:"origin"`
	RepoPath string `json:"repo_path,omitempty"`
	// ResolvedBy: copy (through COPY instructions), bin (node_modules/.bin),
	// basename (a unique repository file of that name) or base_image.
	ResolvedBy  string `json:"resolved_by,omitempty"`
	Kind        Kind   `json:"kind"`
	Shebang     string `json:"shebang,omitempty"`
	Interpreter string `json:"interpreter,omitempty"`
	// InterpreterKind: shell, env, node or other.
	InterpreterKind string `json:"interpreter_kind,omitempty"`
	SymlinkTarget   string `json:"symlink_target,omitempty"`
	// NodeArgv, for a JS file run through a shim or env shebang, is the
	// exec-form replacement (["node", "<js path>"]).
	NodeArgv []string `json:"node_argv,omitempty"`
	// ShellRunner says how a known node CLI runs its commands through a
	// shell (nodemon, concurrently).
	ShellRunner string `json:"shell_runner,omitempty"`
	// Script is what a shell script in the repository does, when it is
	// one: whether it only sets defaults and execs its command.
	Script *shellcmd.Script `json:"script,omitempty"`
	// RunBy is the shell the start command names to run the script
	// (ENTRYPOINT ["/bin/bash", "entrypoint.sh"], sh start.sh): the script
	// is that shell's, whatever its first line says.
	RunBy string `json:"run_by,omitempty"`
	// Evidence is where the container is told to run it.
	File string `json:"file"`
	Line int    `json:"line"`
}

// Probe is the entrypoint_scripts probe.
type Probe struct{}

// New returns the probe.
func New() *Probe { return &Probe{} }

var _ probe.Probe = (*Probe)(nil)

// Desc describes the probe. Its inputs are those of npm_scripts plus the
// executed files themselves; since any file may be executed, it declares
// every shell script and the .bin directory.
func (*Probe) Desc() probe.Desc {
	return probe.Desc{
		Name:      Name,
		Version:   "15", // 15: the node image's docker-entrypoint.sh named by an ENTRYPOINT (after tini) is the base image's entrypoint, not a missing file; 14: npm_scripts v14 (a final stage on an official distribution image starts with its CMD alone); 13: a package script's bare command is a node_modules/.bin command only when a top-level package of the npm lockfile links it (mirotalk's prestart cp is the system's cp); 12: a variable between node and the script file it runs is node's options, and the script is known (shellcmd.nodeOptions); 11: an ENTRYPOINT script with logic that hands over to its arguments ("$@") runs the CMD after it, and a CMD shell script is read like any entrypoint script; the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); 10: a script's cd moves where its ./command is looked up; the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); 9: COPY sources read from the judged image's build context, and through the file set for a COPY --from another stage (a Dockerfile built from its own folder); 4: an entrypoint script's programs (issue 21); 5: variables set to a literal, init and user wrappers, the lines that need the shell, scripts a shell runs (bash entrypoint.sh); 6: the programs of the scripts it runs by a path; 7: the first word of each step of the start (npm run migrate && npm start in CMD); 8: compiled output mapped to its sources through tsconfig outDir
		Heaviness: probe.Light,
		PerImage:  true,
		// The set of executed files depends on the repository's whole
		// layout (COPY sources, node_modules), so the probe caches only
		// on what it reads: Dockerfiles, package.json and executables.
		CacheStrategy: probe.CacheContent,
		// Any repository file may be what the container executes (an
		// extensionless docker/entrypoint), hence "**/*".
		DeclaredInputs: append([]string{"**/*", "package.json", "**/package.json", "server.js", "**/*.sh", "node_modules/.bin/*",
			"**/pnpm-lock.yaml", "**/yarn.lock", "**/package-lock.json", "**/npm-shrinkwrap.json", "**/*.js", "**/*.mjs", "**/*.cjs", "**/*.ts", "**/*.mts",
			"node_modules/*/package.json", "node_modules/@*/*/package.json", "bin/*", "**/bin/*"}, images.Inputs()...),
		NewFacts: func() any { return new(Facts) },
	}
}

// Run resolves every executed file.
func (*Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	chainsOut, err := npmscripts.New().Run(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	chains := chainsOut.Facts.(*npmscripts.Facts).Chains
	facts := &Facts{Executables: []Executable{}}
	out := probe.Output{Confidence: probe.High, Facts: facts}
	files := map[string]*dockerfile.File{}
	parsed, err := images.Selected(ctx, repo, pctx)
	if err != nil {
		return probe.Output{}, err
	}
	for _, pf := range parsed {
		if pf.File != nil {
			files[pf.Path] = pf.File
		}
	}
	r := &resolver{repo: repo, context: "."}
	if j, err := images.Image.Of(ctx, repo, pctx); err != nil {
		return probe.Output{}, err
	} else if j != nil && j.Context != "" {
		r.context = j.Context
	}
	if r.set, err = images.Files.Of(ctx, repo, pctx); err != nil {
		return probe.Output{}, err
	}
	for _, c := range chains {
		f := files[c.Dockerfile]
		if f == nil {
			continue
		}
		r.lockfile = lockfileKind(repo, path.Dir(c.Package))
		r.bins = lockfileBins(repo, path.Dir(c.Package))
		for _, ex := range r.executables(f, c) {
			out.Warnings = append(out.Warnings, warnings(ex)...)
			facts.Executables = append(facts.Executables, ex)
		}
	}
	switch {
	case chainsOut.Reason == probe.ReasonPathEscapes || chainsOut.Reason == probe.ReasonNotRegular:
		out.Confidence, out.Reason, out.Detail = probe.Low, chainsOut.Reason, chainsOut.Detail
	case len(r.escaped) > 0:
		out.Confidence, out.Reason = probe.Low, probe.ReasonPathEscapes
		out.Detail = "symlinks lead outside the repository and were not read: " + strings.Join(r.escaped, ", ")
	case len(r.irregular) > 0:
		out.Confidence, out.Reason = probe.Low, probe.ReasonNotRegular
		out.Detail = "not regular files (a FIFO, socket or device), not read: " + strings.Join(r.irregular, ", ")
	case chainsOut.Confidence != probe.High:
		out.Confidence, out.Reason, out.Detail = probe.Medium, chainsOut.Reason, chainsOut.Detail
	case len(r.inferred) > 0:
		out.Confidence, out.Reason, out.Detail = probe.Medium, ReasonInferred, strings.Join(r.inferred, "; ")
	}
	return out, nil
}

// ReasonInferred: a .bin command was judged from the lockfile kind,
// because node_modules is not in the repository.
const ReasonInferred probe.Reason = "inferred_from_lockfile"

// lockfileKind names the package manager whose lockfile is in dir (or at
// the root): pnpm, yarn or npm; "" when there is none.
func lockfileKind(repo *probe.Repo, dir string) string {
	for _, d := range []string{dir, "."} {
		for _, l := range []struct{ file, kind string }{{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}, {"package-lock.json", "npm"}, {"npm-shrinkwrap.json", "npm"}} {
			if repo.Exists(path.Join(d, l.file)) {
				return l.kind
			}
		}
	}
	return ""
}

// lockfileBins lists the commands the top-level packages of the npm
// lockfile beside dir's package.json (or at the root) link into
// node_modules/.bin: each package's "bin" names, or its own name for a
// single file. Nil when the lockfile is not npm's or cannot be read.
func lockfileBins(repo *probe.Repo, dir string) map[string]bool {
	for _, d := range []string{dir, "."} {
		for _, name := range []string{"package-lock.json", "npm-shrinkwrap.json"} {
			data, err := repo.ReadFile(path.Join(d, name))
			if err != nil {
				continue
			}
			var lock struct {
				Packages map[string]struct {
					Bin json.RawMessage `json:"bin"`
				} `json:"packages"`
			}
			if json.Unmarshal(data, &lock) != nil || lock.Packages == nil {
				return nil // lockfile v1 lists no bins
			}
			bins := map[string]bool{}
			for key, p := range lock.Packages {
				pkg, ok := strings.CutPrefix(key, "node_modules/")
				if !ok || strings.Contains(strings.TrimPrefix(pkg, "@"), "/node_modules/") || len(p.Bin) == 0 {
					continue
				}
				var one string
				var many map[string]string
				switch {
				case json.Unmarshal(p.Bin, &one) == nil:
					bins[path.Base(pkg)] = true
				case json.Unmarshal(p.Bin, &many) == nil:
					for b := range many {
						bins[b] = true
					}
				}
			}
			return bins
		}
	}
	return nil
}

type resolver struct {
	repo *probe.Repo
	// context is the judged image's build context, repository-relative:
	// its COPY sources are relative to it. set is the image's file set,
	// which follows COPY --from through the stages that built a file.
	context string
	set     *images.FileSet
	// lockfile is pnpm, yarn or npm: the lockfile beside the package.json.
	lockfile string
	// bins are the node_modules/.bin commands an npm lockfile's top-level
	// packages link; nil when the lockfile does not list them (pnpm,
	// yarn).
	bins map[string]bool
	// inferred explains each executable inferred from the lockfile.
	inferred []string
	// escaped lists executables that are symlinks out of the repository.
	escaped []string
	// irregular lists executables that are not regular files (a FIFO).
	irregular []string
}

func (r *resolver) executables(f *dockerfile.File, c npmscripts.Chain) []Executable {
	var exs []Executable
	seen := map[string]bool{}
	add := func(ex Executable) {
		if ex.Command == "" {
			return
		}
		key := ex.Command
		if seen[key] {
			return
		}
		seen[key] = true
		exs = append(exs, ex)
	}
	final := f.Final
	startLine := f.Stages[final].Line
	if c.Start.Cmd != nil {
		startLine = c.Start.Cmd.Line
	}
	// The ENTRYPOINT: the Dockerfile's own, or the base image's.
	// An init wrapper's (tini -- ./entrypoint.sh) is the command it wraps.
	entWord := func() string {
		args := c.Start.Entrypoint.Args
		if init, rest := dockerfile.SplitInit(args); init != nil {
			if len(rest) == 0 {
				return ""
			}
			return rest[0]
		}
		return args[0]
	}
	// entArgv is the ENTRYPOINT's command past an init wrapper.
	entArgv := func() []string {
		args := c.Start.Entrypoint.Args
		if init, rest := dockerfile.SplitInit(args); init != nil {
			return rest
		}
		return args
	}
	var entScript *shellcmd.Script // the ENTRYPOINT's script, when one was read
	switch {
	case c.Start.Entrypoint != nil && c.Start.Entrypoint.Form == dockerfile.FormExec && len(c.Start.Entrypoint.Args) > 0 && entWord() != "" && !isKnownTool(entWord()):
		ex := r.inspect(f, entWord(), "entrypoint", c.Start.Entrypoint.Line, false)
		if (ex.Command == "" || ex.Kind == KindNotFound) && path.Base(entWord()) == dockerfile.NodeEntrypoint && dockerfile.ClassifyBase(f.RootBase(final)) == dockerfile.BaseOfficialNode {
			// ENTRYPOINT ["/tini", "--", "/usr/local/bin/docker-entrypoint.sh"]:
			// the node image's own entrypoint, named in the Dockerfile.
			ex = Executable{Dockerfile: f.Path, Command: entWord(), Origin: "entrypoint", ResolvedBy: "base_image",
				Kind: KindBaseImage, Shebang: "#!/bin/sh", Interpreter: "sh", InterpreterKind: "shell", File: f.Path, Line: c.Start.Entrypoint.Line}
		}
		entScript = ex.Script
		add(ex)
	case c.Start.Entrypoint != nil && c.Start.Entrypoint.Form == dockerfile.FormExec && len(c.Start.Entrypoint.Args) > 0 && shellcmd.IsShell(entWord()):
		// ENTRYPOINT ["/bin/bash", "/app/entrypoint.sh"]: the script the
		// shell runs, read like any entrypoint script.
		if script := shellcmd.ShellScript(entArgv()); script != "" {
			ex := r.inspectRunBy(f, script, "entrypoint", c.Start.Entrypoint.Line, false, entWord())
			entScript = ex.Script
			add(ex)
		}
		// ENTRYPOINT ["/bin/sh", "-c", "/app/setup.sh && exec \"$0\" \"$@\""]:
		// the scripts its line runs.
		for _, ex := range r.lineScripts(f, entArgv(), "entrypoint", c.Start.Entrypoint.Line) {
			add(ex)
		}
	case c.Start.Entrypoint == nil && c.Start.FromBase == dockerfile.BaseOfficialNode:
		add(Executable{Dockerfile: f.Path, Command: dockerfile.NodeEntrypoint, Origin: "entrypoint", ResolvedBy: "base_image",
			Kind: KindBaseImage, Shebang: "#!/bin/sh", Interpreter: "sh", InterpreterKind: "shell", File: f.Path, Line: f.Stages[final].Line})
	}
	// An ENTRYPOINT script with logic that hands over to its arguments
	// (exec "$@", su-exec "$PUID" "$@") runs the CMD after it: a CMD
	// shell script is read like any entrypoint script (pingvin-share's
	// create-user.sh, then entrypoint.sh with its background servers).
	if entScript != nil && !entScript.DefaultsOnly && entScript.HandsOver() && c.Start.Cmd != nil && c.Start.Cmd.Form == dockerfile.FormExec {
		if script := shellcmd.ShellScript(c.Start.Cmd.Args); script != "" {
			add(r.inspectRunBy(f, script, "cmd", c.Start.Cmd.Line, false, c.Start.Cmd.Args[0]))
		}
	}
	// The program the CMD runs, when it is not node or a package manager.
	if len(c.Program) > 0 && c.Launcher == "other" {
		if script := shellcmd.ShellScript(c.Program); script != "" {
			// CMD ["sh", "start.sh"]: the script, not the shell.
			add(r.inspectRunBy(f, script, "cmd", startLine, false, c.Program[0]))
		} else if scripts := r.lineScripts(f, c.Program, "cmd", startLine); len(scripts) > 0 {
			for _, ex := range scripts {
				add(ex)
			}
		} else {
			add(r.inspect(f, c.Program[0], "cmd", startLine, false))
		}
	}
	// The command npx runs, from node_modules/.bin.
	if len(c.Direct) > 0 && c.Launcher == "npx" && !isKnownTool(c.Direct[0]) {
		add(r.inspect(f, c.Direct[0], "cmd", startLine, true))
	}
	// The script node runs, when it is not JavaScript: an exec-form CMD
	// naming a shell wrapper still needs a shell (DOMAIN.md row 5).
	if len(c.Program) > 1 && c.Launcher == "node" {
		if script := nodeScript(c.Program[1:]); script != "" {
			if ex := r.inspect(f, script, "node_script", startLine, false); ex.InterpreterKind == "shell" {
				add(ex)
			}
		}
	}
	// The HEALTHCHECK's command.
	if hc, ok := f.Effective(final, "healthcheck"); ok && len(hc.Args) > 0 {
		var word string
		if hc.Form == dockerfile.FormExec {
			word = hc.Args[0]
		} else if a := shellcmd.Analyze(hc.Args[0]); len(a.Commands) > 0 {
			word = a.Commands[0][0]
		}
		if word != "" && !isKnownTool(word) {
			add(r.inspect(f, word, "healthcheck", hc.Line, false))
		}
	}
	// The first word of each command of each script: scripts run with
	// node_modules/.bin on PATH.
	for _, s := range c.Scripts {
		dir := "" // where a cd of the line went (cd packages/server/bin && ./run start)
		for _, cmd := range s.Analysis.Commands {
			if len(cmd) == 0 || cmd[0] == "<expanded>" {
				continue
			}
			if cmd[0] == "cd" {
				dir = cdTo(dir, cmd)
				continue
			}
			var ex Executable
			switch script := shellcmd.ShellScript(cmd); {
			case script != "" && script != "<expanded>":
				// "start": "sh ./scripts/start.sh"
				ex = r.inspectRunBy(f, inDir(dir, script), "script:"+s.Name, startLine, false, cmd[0])
			case isKnownTool(cmd[0]):
				continue
			default:
				ex = r.inspectIn(f, dir, cmd[0], "script:"+s.Name, startLine)
			}
			if ex.Command == "" {
				continue
			}
			if s.Line > 0 {
				ex.File, ex.Line = pkgPath(c), s.Line
				if s.Package != "" {
					ex.File = s.Package
				}
			}
			add(ex)
		}
	}
	// The first word of each step the start comes down to that a script's
	// line runs (npm run migrate && npm start in CMD: knex migrate:latest),
	// also when the chain lists no scripts.
	for _, s := range c.Steps {
		if s.Script == "" || s.Via != "" || len(s.Argv) == 0 || isKnownTool(s.Argv[0]) || s.Argv[0] == "<expanded>" {
			continue
		}
		ex := r.inspectIn(f, s.Dir, s.Argv[0], "script:"+s.Script, startLine)
		if ex.Command == "" {
			continue
		}
		if s.Line > 0 {
			ex.File, ex.Line = s.Package, s.Line
		}
		add(ex)
	}
	sort.SliceStable(exs, func(i, j int) bool { return exs[i].Line < exs[j].Line })
	return exs
}

// cdTo is the folder a script line is in after cmd, a cd, from dir
// (relative to the working directory); "?" once it is not known (cd -,
// cd with no folder, a folder the shell expands, an absolute one).
func cdTo(dir string, cmd []string) string {
	if dir == "?" || len(cmd) != 2 || cmd[1] == "-" || strings.HasPrefix(cmd[1], "/") || strings.ContainsAny(cmd[1], "$~<") {
		return "?"
	}
	return path.Join(dir, cmd[1])
}

// inDir is a command word relative to the folder dir a script's cd moved
// to: a relative path (./run) is looked up there; a bare name (a bin on
// the PATH) and an absolute path are not moved.
func inDir(dir, word string) string {
	if dir == "" || dir == "." || dir == "?" || path.IsAbs(word) || !strings.Contains(word, "/") {
		return word
	}
	return path.Join(dir, word)
}

// inspectIn inspects a script's command word run in dir, where its cd
// went: a relative path is looked up there, and the executable keeps the
// script's own word, with node's argument relative to dir, as the start's
// step runs it there (cd packages/server/bin && ./run start: node ./run).
func (r *resolver) inspectIn(f *dockerfile.File, dir, word, origin string, line int) Executable {
	moved := inDir(dir, word)
	ex := r.inspect(f, moved, origin, line, true)
	if moved == word || ex.Command == "" {
		return ex
	}
	ex.Command = word
	if len(ex.NodeArgv) == 2 && ex.NodeArgv[1] == ex.RepoPath {
		ex.NodeArgv = []string{"node", word}
	}
	return ex
}

// lineScripts inspects the repository scripts a sh -c line runs: a
// command named by a path (./setup.sh), or a script it hands to a shell
// (bash setup.sh).
func (r *resolver) lineScripts(f *dockerfile.File, argv []string, origin string, line int) []Executable {
	l := shellcmd.ShellLine(argv)
	if l == "" {
		return nil
	}
	var out []Executable
	for _, cmd := range shellcmd.Analyze(l).Commands {
		if len(cmd) == 0 || cmd[0] == "<expanded>" {
			continue
		}
		var ex Executable
		switch script := shellcmd.ShellScript(cmd); {
		case script != "" && script != "<expanded>":
			ex = r.inspectRunBy(f, script, origin, line, false, cmd[0])
		case strings.Contains(cmd[0], "/") && !isKnownTool(cmd[0]):
			ex = r.inspect(f, cmd[0], origin, line, false)
		}
		if ex.Command != "" {
			out = append(out, ex)
		}
	}
	return out
}

// inspectRunBy inspects a script that a shell named in the start command
// runs: it is that shell's script whatever its first line says.
func (r *resolver) inspectRunBy(f *dockerfile.File, word, origin string, line int, inScript bool, shell string) Executable {
	ex := r.inspect(f, word, origin, line, inScript)
	if ex.Command == "" {
		return ex
	}
	ex.RunBy = path.Base(shell)
	if ex.RepoPath == "" || ex.Kind == KindOutside || ex.Kind == KindNotRegular || ex.Kind == KindNotFound {
		return ex
	}
	if ex.InterpreterKind != "shell" {
		ex.Interpreter, ex.InterpreterKind, ex.NodeArgv = ex.RunBy, "shell", nil
		if ex.Kind == KindNoShebang {
			ex.Kind = KindScript
		}
		r.readScript(&ex)
		r.followScripts(f, &ex)
	}
	return ex
}

// nodeScript returns the script argument of a node command line: the first
// argument that is not an option or an option's value.
func nodeScript(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-r" || a == "--require" || a == "--import" || a == "--loader" || a == "--experimental-loader" || a == "-e" || a == "--eval" || a == "-p" || a == "--print":
			if a == "-e" || a == "--eval" || a == "-p" || a == "--print" {
				return ""
			}
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

func pkgPath(c npmscripts.Chain) string {
	if d := path.Dir(c.Dockerfile); d != "." && d != "" {
		return path.Join(d, "package.json")
	}
	return "package.json"
}

// isKnownTool: words that are not files of the app (node itself, package
// managers, shell builtins). Missing system binaries are node_runtime's.
func isKnownTool(w string) bool {
	switch path.Base(w) {
	case "node", "nodejs", "npm", "npx", "yarn", "pnpm", "corepack", "exec", "cd", "echo", "test", "[", "true", "false", "export", "exit", "set", "sh", "bash":
		return true
	}
	return false
}

// inspect finds the repository file behind a command word and reads what
// it is.
func (r *resolver) inspect(f *dockerfile.File, word, origin string, line int, inScript bool) Executable {
	ex := Executable{Dockerfile: f.Path, Command: word, Origin: origin, File: f.Path, Line: line, Kind: KindNotFound}
	switch {
	case strings.Contains(word, "/"):
		cp := word
		if !path.IsAbs(cp) {
			cp = path.Join(f.Workdir(f.Final), cp)
		}
		if rp, ok := r.sourceOf(f, cp); ok {
			ex.RepoPath, ex.ResolvedBy = rp, "copy"
		} else if !path.IsAbs(word) && r.repo.Exists(path.Clean(word)) {
			ex.RepoPath, ex.ResolvedBy = path.Clean(word), "copy"
		}
	case inScript && r.repo.Exists("node_modules/.bin/"+word):
		ex.RepoPath, ex.ResolvedBy, ex.Origin = "node_modules/.bin/"+word, "bin", "bin_shim"
	default:
		for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin", f.Workdir(f.Final)} {
			if rp, ok := r.sourceOf(f, path.Join(dir, word)); ok {
				ex.RepoPath, ex.ResolvedBy = rp, "copy"
				break
			}
		}
		if ex.RepoPath == "" {
			if rp, ok := r.uniqueBasename(word); ok {
				ex.RepoPath, ex.ResolvedBy = rp, "basename"
			}
		}
	}
	if ex.RepoPath == "" && strings.Contains(word, "/") && !strings.Contains(word, "node_modules/.bin/") {
		// Compiled output the build generates (build/src/bin/cli.js):
		// its source carries the shebang the output keeps.
		rel := word
		if path.IsAbs(rel) {
			rel = strings.TrimPrefix(strings.TrimPrefix(rel, strings.TrimSuffix(f.Workdir(f.Final), "/")+"/"), "/")
		}
		if src, ok := modgraph.CompiledSource(r.repo, path.Clean(rel)); ok {
			ex.RepoPath, ex.ResolvedBy = src, "compiled_from"
		}
	}
	if ex.RepoPath == "" {
		if bin, ok := binName(word, inScript); ok && r.lockfile != "" && !r.repo.Exists("node_modules/.bin/"+bin) &&
			(r.bins == nil || r.bins[bin] || strings.Contains(word, "node_modules/.bin/")) {
			// A script's bare word runs from node_modules/.bin only when
			// a package links it there: mirotalk's prestart cp is the
			// system's cp, which no package of its npm lockfile provides.
			return r.inferBin(ex, bin)
		}
		if !strings.Contains(word, "/") || isSystemPath(word) {
			// Looked up on PATH, or a system directory, in the image: a
			// system binary, which node_runtime judges. Nothing to inspect.
			return Executable{}
		}
		return ex
	}
	r.classify(&ex)
	r.followScripts(f, &ex)
	return ex
}

// isSystemPath reports a path in the image's system binary directories.
func isSystemPath(p string) bool {
	for _, d := range []string{"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/", "/usr/local/bin/", "/usr/local/sbin/"} {
		if strings.HasPrefix(p, d) && !strings.Contains(p[len(d):], "/") {
			return true
		}
	}
	return false
}

// binName returns the node_modules/.bin name a command word runs: the
// word itself inside a package script (scripts run with .bin on PATH), or
// the last element of a node_modules/.bin/ path.
func binName(word string, inScript bool) (string, bool) {
	if i := strings.Index(word, "node_modules/.bin/"); i >= 0 {
		return word[i+len("node_modules/.bin/"):], true
	}
	if inScript && !strings.Contains(word, "/") {
		return word, true
	}
	return "", false
}

// shellRunners are node CLIs that run the commands they are given through
// a shell (nodemon's exec string, concurrently's and npm-run-all's
// commands): a shell is needed however they are started.
var shellRunners = map[string]string{
	"nodemon": "runs its exec command through sh -c", "concurrently": "runs each command through a shell",
	"npm-run-all": "runs npm scripts, which npm runs through sh -c", "run-p": "runs npm scripts, which npm runs through sh -c",
	"run-s": "runs npm scripts, which npm runs through sh -c", "forever": "starts its script through a shell wrapper",
}

// inferBin describes a node_modules/.bin command whose node_modules is not
// in the repository, from the lockfile: pnpm writes #!/bin/sh wrappers,
// npm and yarn symlink the package's JS file (which starts with
// #!/usr/bin/env node).
func (r *resolver) inferBin(ex Executable, bin string) Executable {
	ex.RepoPath, ex.ResolvedBy, ex.Kind, ex.Origin = "node_modules/.bin/"+bin, "lockfile:"+r.lockfile, KindInferred, "bin_shim"
	switch r.lockfile {
	case "pnpm":
		ex.Shebang, ex.Interpreter, ex.InterpreterKind = "#!/bin/sh", "sh", "shell"
	default:
		ex.Shebang, ex.Interpreter, ex.InterpreterKind = "#!/usr/bin/env node", "node", "env"
	}
	if why, ok := shellRunners[bin]; ok {
		ex.ShellRunner = why
	}
	r.inferred = append(r.inferred, fmt.Sprintf("%s: node_modules is not in the repository; %s from the %s lockfile", bin, ex.Shebang, r.lockfile))
	return ex
}

func (r *resolver) uniqueBasename(name string) (string, bool) {
	files, err := r.repo.Files()
	if err != nil {
		return "", false
	}
	var found []string
	for _, f := range files {
		if path.Base(f) == name && !strings.HasPrefix(f, "node_modules/") && !strings.Contains(f, "/node_modules/") {
			found = append(found, f)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}

// classify reads the file's type and shebang.
func (r *resolver) classify(ex *Executable) {
	abs := r.repo.Abs(ex.RepoPath)
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(abs)
		if err == nil {
			ex.SymlinkTarget = target
			ex.Kind = KindSymlink
			if isJS(target) {
				ex.Kind = KindSymlinkToJS
				ex.NodeArgv = []string{"node", path.Join(path.Dir(ex.RepoPath), target)}
			}
		}
	}
	head, err := readHead(r.repo, ex.RepoPath)
	if errors.Is(err, probe.ErrPathEscapes) {
		ex.Kind = KindOutside
		r.escaped = append(r.escaped, ex.RepoPath)
		return
	}
	if errors.Is(err, probe.ErrNotRegular) {
		ex.Kind = KindNotRegular
		r.irregular = append(r.irregular, ex.RepoPath)
		return
	}
	if err != nil {
		if ex.Kind == KindSymlink || ex.Kind == KindSymlinkToJS {
			return
		}
		ex.Kind = KindNotFound
		return
	}
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		ex.Kind = KindELF
	case bytes.HasPrefix(head, []byte("#!")):
		line, _, _ := bytes.Cut(head, []byte("\n"))
		ex.Shebang = strings.TrimSpace(string(line))
		ex.Interpreter, ex.InterpreterKind = interpreter(ex.Shebang)
		if ex.Kind != KindSymlinkToJS {
			ex.Kind = KindScript
		}
		if ex.InterpreterKind == "env" || ex.InterpreterKind == "node" {
			if ex.NodeArgv == nil && ex.Interpreter == "node" {
				ex.NodeArgv = []string{"node", ex.RepoPath}
				if ex.ResolvedBy == "compiled_from" {
					// The image runs the compiled file, not the source.
					ex.NodeArgv = []string{"node", ex.Command}
				}
			}
		}
		if ex.InterpreterKind == "shell" && strings.HasPrefix(ex.RepoPath, "node_modules/.bin/") {
			if js, ok := r.shimTarget(path.Base(ex.RepoPath)); ok {
				ex.NodeArgv = []string{"node", js}
			}
		}
		if ex.InterpreterKind == "shell" {
			r.readScript(ex)
		}
	default:
		if ex.Kind != KindSymlinkToJS {
			ex.Kind = KindNoShebang
		}
	}
}

// readScript reads what a shell script of the repository does.
func (r *resolver) readScript(ex *Executable) {
	if strings.HasPrefix(ex.RepoPath, "node_modules/") {
		return
	}
	if src, err := r.repo.ReadFile(ex.RepoPath); err == nil && len(src) <= maxScriptBytes {
		sc := shellcmd.AnalyzeScript(string(src))
		ex.Script = &sc
	}
}

// maxNested bounds how deep scripts that scripts run are followed.
const maxNested = 3

// followScripts adds to a script's Programs those of the repository's
// shell scripts it runs by a path (./install-extras.sh), and theirs in
// turn: what they run, the entrypoint runs.
func (r *resolver) followScripts(f *dockerfile.File, ex *Executable) {
	if ex.Script == nil {
		return
	}
	seen := map[string]bool{ex.RepoPath: true}
	var follow func(progs []string, depth int)
	follow = func(progs []string, depth int) {
		for _, p := range progs {
			if !strings.Contains(p, "/") || depth >= maxNested {
				continue
			}
			rp := r.scriptPath(f, p)
			if rp == "" || seen[rp] {
				continue
			}
			seen[rp] = true
			src, err := r.repo.ReadFile(rp)
			if err != nil || len(src) > maxScriptBytes {
				continue
			}
			head := src[:min(len(src), 256)]
			if bytes.HasPrefix(head, []byte("\x7fELF")) {
				continue
			}
			if first, _, _ := bytes.Cut(head, []byte("\n")); bytes.HasPrefix(first, []byte("#!")) {
				if _, kind := interpreter(strings.TrimSpace(string(first))); kind != "shell" {
					continue // not a shell script: ./tool.js
				}
			}
			nested := shellcmd.AnalyzeScript(string(src))
			for _, q := range nested.Programs {
				if !slices.Contains(ex.Script.Programs, q) {
					ex.Script.Programs = append(ex.Script.Programs, q)
				}
			}
			follow(nested.Programs, depth+1)
		}
	}
	follow(slices.Clone(ex.Script.Programs), 0)
}

// sourceOf returns the repository file that the final stage's COPY
// instructions put at the image path cp, when there is one: COPY sources
// are relative to the build context.
func (r *resolver) sourceOf(f *dockerfile.File, cp string) (string, bool) {
	isDir := func(p string) bool {
		fi, err := os.Stat(r.repo.Abs(path.Join(r.context, p)))
		return err == nil && fi.IsDir()
	}
	if rp, ok := f.SourceOf(f.Final, cp, isDir); ok {
		if rp = path.Join(r.context, rp); r.repo.Exists(rp) {
			return rp, true
		}
	}
	// Copied from another stage that took it from the context (rallly's
	// COPY --from=builder /app/scripts/docker-start.sh ./).
	if rp, ok := r.set.RepoPath(cp); ok && r.repo.Exists(rp) {
		return rp, true
	}
	return "", false
}

// scriptPath finds the repository file a script runs by a path: through
// the final stage's COPY instructions, else the same path in the
// repository.
func (r *resolver) scriptPath(f *dockerfile.File, word string) string {
	cp := word
	if !path.IsAbs(cp) {
		cp = path.Join(f.Workdir(f.Final), cp)
	}
	if rp, ok := r.sourceOf(f, cp); ok {
		return rp
	}
	if !path.IsAbs(word) && r.repo.Exists(path.Clean(word)) {
		return path.Clean(word)
	}
	return ""
}

// shimTarget finds the JS file a .bin name stands for, from the bin field
// of the installed packages' package.json.
func (r *resolver) shimTarget(name string) (string, bool) {
	var cands []string
	for _, pat := range []string{"node_modules/*/package.json", "node_modules/@*/*/package.json"} {
		ms, _ := r.repo.Glob(pat)
		cands = append(cands, ms...)
	}
	for _, pj := range cands {
		data, err := r.repo.ReadFile(pj)
		if err != nil || !bytes.Contains(data, []byte(name)) {
			continue
		}
		var pkg nodeproject.Facts
		if nodeproject.Parse(data, &pkg) != nil {
			continue
		}
		for _, b := range pkg.Bin {
			if b.Name == name {
				return path.Join(path.Dir(pj), b.Path), true
			}
		}
	}
	return "", false
}

// maxScriptBytes bounds the entrypoint scripts that are read whole; a
// larger one is judged by its shebang alone.
const maxScriptBytes = 256 << 10

func readHead(repo *probe.Repo, rel string) ([]byte, error) {
	f, err := repo.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// interpreter reads a shebang: "#!/usr/bin/env node" is env running node.
func interpreter(shebang string) (name, kind string) {
	fields := strings.Fields(strings.TrimPrefix(shebang, "#!"))
	if len(fields) == 0 {
		return "", "other"
	}
	prog := path.Base(fields[0])
	if prog == "env" {
		rest := fields[1:]
		for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
			rest = rest[1:]
		}
		// #!/usr/bin/env bash is a shell script first: what it runs needs a
		// shell whatever finds it. #!/usr/bin/env node needs env.
		if len(rest) > 0 && shellcmd.IsShell(rest[0]) {
			return path.Base(rest[0]), "shell"
		}
		if len(rest) > 0 {
			return path.Base(rest[0]), "env"
		}
		return "env", "env"
	}
	switch {
	case shellcmd.IsShell(prog):
		return prog, "shell"
	case prog == "node" || prog == "nodejs":
		return prog, "node"
	}
	return prog, "other"
}

func isJS(p string) bool {
	switch path.Ext(p) {
	case ".js", ".cjs", ".mjs":
		return true
	}
	return false
}

func warnings(ex Executable) []probe.Warning {
	ev := []probe.Evidence{{File: ex.File, Line: ex.Line, Note: ex.Command}}
	where := ex.Command
	if ex.RepoPath != "" && ex.RepoPath != ex.Command {
		where = fmt.Sprintf("%s (%s)", ex.Command, ex.RepoPath)
	}
	switch {
	case ex.Kind == KindBaseImage:
		return []probe.Warning{{ID: WarnBaseEntry, Message: "no ENTRYPOINT: the official node image runs docker-entrypoint.sh (#!/bin/sh) as pid 1; a distroless base removes it", Evidence: ev}}
	case ex.Kind == KindOutside:
		return []probe.Warning{{ID: WarnNotFound, Message: fmt.Sprintf("%s, run as %s, is a symlink that leads outside the repository; it was not read", ex.Command, ex.Origin), Evidence: ev}}
	case ex.Kind == KindNotRegular:
		return []probe.Warning{{ID: WarnNotFound, Message: fmt.Sprintf("%s, run as %s, is not a regular file (a FIFO, socket or device); it was not read", ex.Command, ex.Origin), Evidence: ev}}
	case ex.Kind == KindNotFound:
		return []probe.Warning{{ID: WarnNotFound, Message: fmt.Sprintf("%s, run as %s, was not found in the repository", ex.Command, ex.Origin), Evidence: ev}}
	case ex.InterpreterKind == "shell" && ex.RunBy != "":
		return []probe.Warning{{ID: WarnShellShebang, Message: fmt.Sprintf("%s is run by %s, as %s", where, ex.RunBy, ex.Origin), Evidence: ev}}
	case ex.InterpreterKind == "shell" && ex.Origin == "bin_shim":
		return []probe.Warning{{ID: WarnShellShim, Message: fmt.Sprintf("the .bin shim %s is a %s wrapper", where, ex.Shebang), Evidence: ev}}
	case ex.InterpreterKind == "shell":
		return []probe.Warning{{ID: WarnShellShebang, Message: fmt.Sprintf("%s starts with %s", where, ex.Shebang), Evidence: ev}}
	case ex.InterpreterKind == "env":
		return []probe.Warning{{ID: WarnEnvShebang, Message: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", where, ex.Shebang), Evidence: ev}}
	case ex.InterpreterKind == "node" && !strings.HasPrefix(ex.Shebang, "#!/nodejs/bin/node"):
		return []probe.Warning{{ID: WarnNodePathShbng, Message: fmt.Sprintf("%s starts with %s; distroless node is /nodejs/bin/node", where, ex.Shebang), Evidence: ev}}
	}
	return nil
}
