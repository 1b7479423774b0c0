package npmscripts

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Step is one command the start comes down to.
type Step struct {
	Argv []string `json:"argv"`
	// Env is what the command's environment gets on top of the
	// container's, in order (a later value wins): VAR=x prefixes,
	// cross-env's and env's assignments, npm's npm_config_ options.
	Env []string `json:"env,omitempty"`
	// Dir is the folder, relative to the container's working directory,
	// the command runs in ("" is the working directory itself).
	Dir string `json:"dir,omitempty"`
	// Script is the package script whose line holds the command ("" for
	// the Dockerfile's own command), in Package at Line.
	Script  string `json:"script,omitempty"`
	Package string `json:"package,omitempty"`
	Line    int    `json:"line,omitempty"`
	// Via is the repository's shell script (an entrypoint script that
	// only sets defaults) whose exec runs the command: the module graph
	// starts from the command, and readiness's own rule for the script
	// rewrites it.
	Via string `json:"via,omitempty"`
	// ViaScript is the package script whose line runs Via (sh -e
	// bin/start.sh in "start"); "" when the Dockerfile's own command runs
	// it. Such a script goes with the package manager: the start becomes
	// the command it execs, with its defaults as ENV.
	ViaScript string `json:"via_script,omitempty"`
}

// maxFollowed bounds how many script invocations one start expands to.
const maxFollowed = 64

// expander follows a start command through package managers, script
// lines joined by &&, npm-run-all, cross-env and cd, down to the commands
// that run, in order: the one reading of the start that readiness, the
// recipe and the module graph share.
type expander struct {
	ps       packages
	steps    []Step
	parallel bool
	followed int
	// via is the shell script whose exec is being expanded, and
	// viaScript the package script whose line ran it.
	via, viaScript string
	// runner is the package manager running the current script, which
	// npm-run-all runs its scripts with (npm outside any).
	runner shellcmd.Runner
	// graph are the node commands of the first script followed that does
	// more than set defaults (Chain.GraphSteps); graphRead is set once it
	// was read, whatever it found.
	graph     []Step
	graphRead bool
}

// expandStart is the start argv's steps, or why it does not come down to
// a list of commands run one after the other.
func expandStart(pk *pkg, ps packages, argv []string) (steps []Step, parallel bool, why string, graph []Step) {
	x := &expander{ps: ps}
	if why := x.command(pk, ".", argv, nil, ""); why != "" {
		if len(x.steps) > 0 || !x.graphRead {
			return nil, false, why, nil // steps before the script, or no script: no graph of its own
		}
		return nil, false, why, x.graph
	}
	return x.steps, x.parallel, "", nil
}

// command expands one command run in dir (relative to the working
// directory) against package pk, with env.
func (x *expander) command(pk *pkg, dir string, argv, env []string, script string) string {
	if len(argv) == 0 {
		return "an empty command"
	}
	if e, rest, ok := shellcmd.EnvPrefix(argv); ok {
		env, argv = append(slices.Clone(env), e...), rest
	}
	if l := shellcmd.ShellLineOnly(argv); l != "" {
		return x.line(pk, dir, l, nil, env, script)
	}
	if rel, args, ok := x.shellScript(dir, argv); ok {
		return x.followScript(pk, dir, rel, args, env, script)
	}
	if bin, unsupported, ok := shellcmd.NpxBin(argv); ok {
		if len(unsupported) > 0 {
			return "npx option " + unsupported[0]
		}
		return x.command(pk, dir, bin, env, script)
	}
	if names, par, why, ok := shellcmd.RunAll(argv); ok {
		if why != "" {
			return path.Base(argv[0]) + ": " + why
		}
		x.parallel = x.parallel || par
		runner := x.runner
		if runner == "" || runner == shellcmd.NodeRun {
			runner = shellcmd.NPM
		}
		for _, n := range names {
			// npm-run-all runs each as RUNNER run NAME (the package manager
			// that runs it), with the hooks that runner runs.
			if why := x.invoke(pk, dir, shellcmd.ScriptInvocation{Runner: runner, Script: n}, env); why != "" {
				return why
			}
		}
		return ""
	}
	if b := path.Base(argv[0]); (b == "run-script-os" || b == "run-os") && len(argv) == 1 && script != "" {
		// run-script-os runs the script of the same name tagged for the
		// system: linux, else nix, else default (its README, 1.1.6).
		key, ok := osScript(pk, script)
		if !ok {
			return b + ": no " + script + ":linux, " + script + ":nix or " + script + ":default script"
		}
		return x.invoke(pk, dir, shellcmd.ScriptInvocation{Runner: shellcmd.NPM, Script: key}, env)
	}
	if inv, ok := shellcmd.ParseInvocation(argv); ok {
		return x.invoke(pk, dir, inv, env)
	}
	if shellcmd.IsBuiltin(argv[0]) {
		return "shell builtin " + argv[0]
	}
	st := Step{Argv: argv, Env: env, Dir: cleanDir(dir), Script: script, Via: x.via, ViaScript: x.viaScript}
	if script != "" {
		st.Package, st.Line = pk.path, pk.lines[script]
	}
	x.steps = append(x.steps, st)
	return ""
}

// osScript is the script run-script-os runs on Linux for script: one
// named script:TAG[:TAG...] whose tags hold linux, else nix (any Unix),
// else script:default.
func osScript(pk *pkg, script string) (string, bool) {
	var keys []string
	for k := range pk.scripts {
		if strings.HasPrefix(k, script+":") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, tag := range []string{"linux", "nix", "default"} {
		for _, k := range keys {
			if slices.Contains(strings.Split(strings.TrimPrefix(k, script+":"), ":"), tag) {
				return k, true
			}
		}
	}
	return "", false
}

// invoke expands a package manager's run of a script: its pre hook, the
// script with the invocation's arguments, its post hook.
func (x *expander) invoke(pk *pkg, dir string, inv shellcmd.ScriptInvocation, env []string) string {
	if x.followed++; x.followed > maxFollowed {
		return fmt.Sprintf("the start runs more than %d scripts", maxFollowed)
	}
	if len(inv.Unsupported) > 0 {
		return fmt.Sprintf("%s option %s", inv.Runner, inv.Unsupported[0])
	}
	d, why := x.ps.locate(dir, inv)
	if why != "" {
		return fmt.Sprintf("%s %s: %s", inv.Runner, inv.Script, why)
	}
	if path.Join(x.ps.root, d, "package.json") != pk.path {
		p, err := loadOnly(x.ps.repo, path.Join(x.ps.root, d))
		if err != nil {
			return fmt.Sprintf("reading the package.json in %s: %v", d, err)
		}
		pk = p
	}
	main, ok := pk.scripts[inv.Script]
	if !ok && inv.Script == "start" && inv.Runner == shellcmd.NPM && pk.hasServerJS {
		main, ok = "node server.js", true
	}
	if !ok {
		return fmt.Sprintf("script %q is not defined", inv.Script)
	}
	env = append(slices.Clone(env), inv.Env...)
	hooks := inv.Runner != shellcmd.PNPM && !inv.NoHooks
	outer := x.runner
	x.runner = inv.Runner
	defer func() { x.runner = outer }()
	if pre, ok := pk.scripts["pre"+inv.Script]; ok && hooks {
		if why := x.line(pk, d, pre, nil, env, "pre"+inv.Script); why != "" {
			if !x.graphRead && len(x.steps) == 0 {
				x.graphRead = true
				x.graph = x.hookGraph(pk, d, pre, main, inv.Args, env, inv.Script)
			}
			return why
		}
	}
	if why := x.line(pk, d, main, inv.Args, env, inv.Script); why != "" {
		return why
	}
	if post, ok := pk.scripts["post"+inv.Script]; ok && hooks {
		return x.line(pk, d, post, nil, env, "post"+inv.Script)
	}
	return ""
}

// line expands a command line that sh would run in dir: commands joined
// by &&, with args (npm's, appended to the line) after the last.
func (x *expander) line(pk *pkg, dir, line string, args, env []string, script string) string {
	cmds, why := shellcmd.AndList(line)
	if why != "" {
		if script == "" {
			return "the start command needs a shell: " + why
		}
		return fmt.Sprintf("script %q needs a shell: %s", script, why)
	}
	if len(args) > 0 {
		last := &cmds[len(cmds)-1]
		last.Argv = append(slices.Clone(last.Argv), args...)
	}
	for _, c := range cmds {
		if c.Argv[0] == "cd" {
			if len(c.Argv) != 2 || c.Argv[1] == "-" || c.Argv[1] == "" || c.Argv[1][0] == '-' || len(c.Env) > 0 {
				return "a cd that is not cd DIR"
			}
			d, why := x.ps.dir(dir, c.Argv[1])
			if why != "" {
				return why
			}
			dir = d
			continue
		}
		if why := x.command(pk, dir, c.Argv, append(slices.Clone(env), c.Env...), script); why != "" {
			return why
		}
	}
	return ""
}

// maxScriptBytes bounds the shell scripts followed.
const maxScriptBytes = 256 << 10

// shellScript reads argv as a run of a shell script of the repository
// that the image holds: bash SCRIPT ARGS, or SCRIPT ARGS with a shell
// shebang. It returns the script's repository path and its arguments.
func (x *expander) shellScript(dir string, argv []string) (rel string, args []string, ok bool) {
	word, args, byShell := argv[0], argv[1:], false
	if shellcmd.IsShell(word) {
		// bash x.sh, sh -e x.sh, bash -- x.sh; not sh -c or sh -s.
		if word, args = shellcmd.ShellScriptArgs(argv); word == "" {
			return "", nil, false
		}
		byShell = true
	}
	if x.ps.set == nil {
		return "", nil, false
	}
	var cands []string
	switch {
	case path.IsAbs(word):
		cands = []string{word}
	case strings.Contains(word, "/") || byShell:
		cands = []string{path.Join(x.ps.wd, dir, word)}
	default:
		// Looked up on PATH.
		for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
			cands = append(cands, path.Join(d, word))
		}
	}
	for _, c := range cands {
		if r, found := x.ps.set.RepoPath(c); found {
			rel = r
			break
		}
	}
	if rel == "" {
		return "", nil, false
	}
	if byShell {
		return rel, args, true
	}
	src, err := x.ps.repo.ReadFile(rel)
	if err != nil {
		return "", nil, false
	}
	first, _, _ := strings.Cut(string(src[:min(len(src), 256)]), "\n")
	f := strings.Fields(strings.TrimPrefix(first, "#!"))
	if !strings.HasPrefix(first, "#!") || len(f) == 0 {
		return "", nil, false
	}
	sh := f[0]
	if path.Base(sh) == "env" && len(f) > 1 {
		sh = f[1]
	}
	return rel, args, shellcmd.IsShell(sh)
}

// readScript reads rel, a shell script the start follows, counting it
// against maxFollowed; why says why it cannot be read.
func (x *expander) readScript(rel string) (sc shellcmd.Script, why string) {
	if x.followed++; x.followed > maxFollowed {
		return sc, fmt.Sprintf("the start runs more than %d scripts", maxFollowed)
	}
	src, err := x.ps.repo.ReadFile(rel)
	if err != nil {
		return sc, fmt.Sprintf("reading %s: %v", rel, err)
	}
	if len(src) > maxScriptBytes {
		return sc, rel + " is too large to read as a script"
	}
	return shellcmd.AnalyzeScript(string(src)), ""
}

// followScript expands a shell script that only sets defaults and then
// execs a command: that command, with "$@" the script's arguments.
func (x *expander) followScript(pk *pkg, dir, rel string, args, env []string, script string) string {
	sc, why := x.readScript(rel)
	if why != "" {
		return why
	}
	if !sc.DefaultsOnly {
		why := rel + " is a shell script that does more than set defaults and exec a command"
		if len(sc.Reasons) > 0 {
			why += " (" + sc.Reasons[0] + ")"
		}
		if !x.graphRead {
			x.graphRead = true
			x.graph = x.graphSteps(pk, dir, rel, sc, args, env, script)
		}
		return why
	}
	var exec []string
	for i, w := range sc.Exec {
		switch {
		case w == `"$@"` && i == len(sc.Exec)-1:
			exec = append(exec, args...)
		case strings.Contains(w, "$"):
			return rel + " execs " + strings.Join(sc.Exec, " ") + ", which needs expansion"
		default:
			exec = append(exec, w)
		}
	}
	if len(exec) == 0 {
		return rel + " execs no command"
	}
	outer, outerScript := x.via, x.viaScript
	x.via, x.viaScript = rel, script
	defer func() { x.via, x.viaScript = outer, outerScript }()
	return x.command(pk, dir, exec, append(slices.Clone(env), sc.Env...), script)
}

// hookGraph is where the module graph starts when the pre hook of script
// needs a shell (mirotalk's prestart, test -f config.js || cp …): the
// node commands of the hook, read as an entrypoint script's are, then the
// steps of the script's own line. Nil when one of them is not known.
func (x *expander) hookGraph(pk *pkg, dir, pre, main string, args, env []string, script string) []Step {
	var out []Step
	if sc := shellcmd.AnalyzeScript(pre); !runsNoCode(sc) {
		if out = x.graphSteps(pk, dir, "", sc, nil, env, "pre"+script); out == nil {
			return nil
		}
	}
	sub := &expander{ps: x.ps, followed: x.followed, runner: x.runner, graphRead: true}
	if why := sub.line(pk, dir, main, args, env, script); why != "" || len(sub.steps) == 0 {
		return nil
	}
	return append(out, sub.steps...)
}

// runsNoCode reports a script whose every command is a program or
// builtin that runs no JavaScript (test -f x || cp y x).
func runsNoCode(sc shellcmd.Script) bool {
	for _, r := range sc.Runs {
		if r.RunsArgs() || len(r.Argv) == 0 || !noCode[path.Base(r.Argv[0])] {
			return false
		}
	}
	return true
}

// noCode are programs an entrypoint script runs that run no JavaScript of
// the image: what they do is judged on its own (a missing binary), and the
// module graph has nothing to start from in them.
var noCode = map[string]bool{"mkdir": true, "chown": true, "chmod": true, "cp": true, "mv": true, "rm": true, "ln": true,
	"cat": true, "touch": true, "sleep": true, "ls": true, "id": true, "whoami": true, "date": true, "sed": true, "grep": true,
	"awk": true, "envsubst": true, "tee": true, "find": true, "xargs": true, "wget": true, "curl": true, "nc": true,
	"timeout": true, "dirname": true, "basename": true, "realpath": true, "readlink": true, "hostname": true, "ulimit": true,
	"su-exec": true, "gosu": true, "tini": true, "dumb-init": true, "head": true, "tail": true, "tr": true, "cut": true,
	"sort": true, "uniq": true, "wc": true, "stat": true, "df": true, "du": true, "getent": true, "usermod": true,
	"groupmod": true, "useradd": true, "groupadd": true, "addgroup": true, "adduser": true, "update-ca-certificates": true,
	"caddy": true, "nginx": true, "openssl": true,
	// Shell builtins that run nothing: node-red's entrypoint traps
	// SIGTERM to kill its child and waits for it.
	"test": true, "[": true, "true": true, "false": true, "echo": true, "printf": true, "exit": true, ":": true,
	"trap": true, "wait": true, "kill": true, "set": true, "export": true, "unset": true, "local": true, "readonly": true,
	"declare": true, "shift": true, "return": true, "umask": true, "break": true, "continue": true, "read": true}

// graphSteps reads the node commands of rel, an entrypoint script that
// does more than set defaults (run in dir with args), for the module
// graph: each command it runs that runs node code, expanded as a start
// command is (npx, package scripts, cross-env). A run of "$@" (exec "$@",
// su-exec app "$@") runs args: the command the script wraps (the image's
// CMD after an ENTRYPOINT script), read the same way when it is another
// script. Nil when one of its commands is not known (an expanded program,
// a line it sources or evals) or none runs node.
func (x *expander) graphSteps(pk *pkg, dir, rel string, sc shellcmd.Script, args, env []string, script string) []Step {
	sub := &expander{ps: x.ps, followed: x.followed, via: rel, viaScript: script, runner: x.runner, graphRead: true}
	for _, r := range sc.Runs {
		argv := r.Argv
		if r.RunsArgs() {
			if len(args) == 0 {
				continue // no arguments: "$@" runs nothing
			}
			argv = args
		}
		if len(argv) == 0 || argv[0] == "<expanded>" || argv[0] == "." || argv[0] == "source" || argv[0] == "eval" {
			return nil
		}
		if n := len(argv); argv[n-1] == "<expanded>" || argv[n-1] == shellcmd.ScriptArgs {
			// "$@" or a variable after the command: its words up to there
			// name what runs (node main "$@"); the rest are its arguments.
			argv = argv[:n-1]
			if len(argv) == 0 {
				return nil
			}
		}
		if argv[0] == "cd" {
			// cd backend && npm run prod: where later commands run.
			if len(argv) != 2 || argv[1] == "-" || argv[1] == "" || argv[1][0] == '-' {
				return nil
			}
			d, why := x.ps.dir(dir, argv[1])
			if why != "" {
				return nil
			}
			dir = d
			continue
		}
		if noCode[path.Base(argv[0])] {
			continue
		}
		if inner, innerArgs, ok := sub.shellScript(dir, argv); ok {
			// Another script of the image (the CMD script an ENTRYPOINT
			// script execs): its own node commands, when it does more
			// than set defaults; else what it execs, as for the start.
			isc, why := sub.readScript(inner)
			if why != "" {
				return nil
			}
			if !isc.DefaultsOnly {
				steps := sub.graphSteps(pk, dir, inner, isc, innerArgs, env, script)
				if steps == nil {
					return nil
				}
				sub.steps = append(sub.steps, steps...)
				continue
			}
		}
		if bin, unsupported, ok := shellcmd.NpxBin(argv); ok && len(unsupported) == 0 && len(bin) > 0 {
			// npx runs the package's bin from node_modules/.bin.
			argv = append([]string{"node_modules/.bin/" + bin[0]}, bin[1:]...)
		}
		if why := sub.command(pk, dir, argv, env, script); why != "" {
			return nil
		}
	}
	// Two runs of "$@" (exec "$@" when not root, su-exec app "$@"
	// otherwise) are one command, run one way or the other.
	var out []Step
	for _, st := range sub.steps {
		if !slices.ContainsFunc(out, func(o Step) bool {
			return slices.Equal(o.Argv, st.Argv) && o.Dir == st.Dir && slices.Equal(o.Env, st.Env)
		}) {
			out = append(out, st)
		}
	}
	return out
}
