package readiness

// Executables the container starts: entrypoint scripts, .bin shims,
// env-node scripts and the base image's entrypoint.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// executables: entrypoint scripts, shims and the base image's entrypoint.
func (b *builder) executables(f *entrypoints.Facts) {
	for _, e := range f.Executables {
		evs := ev(e.File, e.Line)
		name := e.Command
		if e.RepoPath != "" && e.RepoPath != e.Command {
			name += " (" + e.RepoPath + ")"
		}
		b.scriptWrappers(e, name)
		if e.Script != nil {
			if b.readScripts == nil {
				b.readScripts = map[string]bool{}
			}
			b.readScripts[e.Origin+" "+e.Command] = true
		}
		if e.RunBy != "" && e.Script != nil {
			if b.scriptShells == nil {
				b.scriptShells = map[string]bool{}
			}
			b.scriptShells[e.Origin+" "+e.RunBy] = true
		}
		switch {
		case e.Origin == "bin_shim" && b.stepsDrop(e.Command):
			// cross-env, npm-run-all: the start's steps run what they ran,
			// without them.
		case e.Kind == entrypoints.KindBaseImage:
			b.Add(probe.Blocker{ID: entrypoints.WarnBaseEntry, Kind: probe.ShellAtRuntime, Rule: RuleDistrolessBase,
				Title: "the node base image boots through docker-entrypoint.sh (#!/bin/sh) as pid 1",
				Fix:   "use a distroless node base, whose entrypoint is node itself", Evidence: evs})
		case e.ShellRunner != "":
			b.Add(probe.Blocker{ID: entrypoints.WarnShellShim, Kind: probe.ShellAtRuntime, Rule: RuleShellLine,
				Title: fmt.Sprintf("%s %s", e.Command, e.ShellRunner), WhyNot: e.Command + " is a development runner that needs a shell; run the service with node directly", Evidence: evs})
		case e.Kind == entrypoints.KindInferred:
			b.Add(probe.Blocker{ID: pick(e.InterpreterKind == "shell", entrypoints.WarnShellShim, entrypoints.WarnEnvShebang), Kind: pick2(e.InterpreterKind == "shell", probe.ShellAtRuntime, probe.MissingBinary), Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s is a node_modules/.bin command; with a %s lockfile it is %s (inferred: node_modules is not in the repository)", e.Command, strings.TrimPrefix(e.ResolvedBy, "lockfile:"), pick(e.InterpreterKind == "shell", "a #!/bin/sh wrapper", "a #!/usr/bin/env node script")),
				Fix:   "point CMD at the JavaScript file that the \"bin\" field of the package providing " + path.Base(e.Command) + " names", Evidence: evs})
		case e.Kind == entrypoints.KindOutside:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s is a symlink that leads outside the repository; it was not read", e.Command), Evidence: evs})
		case e.Kind == entrypoints.KindNotRegular:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s is not a regular file (a FIFO, socket or device); it was not read", e.Command), Evidence: evs})
		case e.InterpreterKind == "shell" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: pick(e.Origin == "bin_shim", entrypoints.WarnShellShim, entrypoints.WarnShellShebang), Kind: probe.ShellAtRuntime, Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s is a %s wrapper", name, e.Shebang), Fix: "run the package's JS entry directly: CMD " + quoteArgv(DistrolessCmd(e.NodeArgv)), Evidence: evs})
		case e.InterpreterKind == "shell" && e.Script != nil && e.Script.DefaultsOnly && e.Origin == "entrypoint":
			exec := e.Script.Exec
			scriptArgs := b.scriptArgs(e.Command)
			if len(exec) == 1 && exec[0] == `"$@"` {
				exec = scriptArgs
			}
			if e.RepoPath != "" && e.Script.ExecLine > 0 {
				// The script's own lines: its defaults and its exec.
				for _, l := range e.Script.Lines {
					evs = append(evs, probe.Evidence{File: e.RepoPath, Line: l})
				}
			}
			bl := probe.Blocker{ID: entrypoints.WarnShellShebang, Kind: probe.ShellAtRuntime, Rule: RuleEntrypointToEnv,
				Title: fmt.Sprintf("%s is a shell script (%s) that only sets defaults and execs %s", name, shellOf(e), strings.Join(e.Script.Exec, " ")), Evidence: evs}
			fixed, appends := cutDollarAt(exec)
			switch {
			case slices.Contains(fixed, `"$@"`):
				bl.Rule, bl.WhyNot = RuleScriptLogic, `the script passes its arguments ("$@") before other words, which ENTRYPOINT and CMD cannot express`
			case appends && len(fixed) > 0 && isNodeWord(fixed[0]):
				// exec node app.js "$@": node app.js stays fixed, and the
				// script's arguments (what docker run passes) follow it.
				st := b.nodeStart(fixed, e.Script.Env, "the entrypoint script "+e.Command)
				if st.Program != nil || st.Bin != "" {
					bl.Rule, bl.WhyNot = RuleScriptLogic, "the script execs "+strings.Join(exec, " ")+", which is not a node script with its arguments"
					break
				}
				st.AppendArgs, st.CmdArgs = true, scriptArgs
				bl.Fix = "drop the script; " + appendFix(st)
				b.setStart(st, true)
			case len(exec) > 0 && isNodeWord(exec[0]):
				bl.Fix = "drop the ENTRYPOINT; " + cmdFix(exec, e.Script.Env)
				st := b.nodeStart(exec, e.Script.Env, "the entrypoint script "+e.Command)
				b.setStart(st, true)
			case userWrapped(exec) != "":
				bl.Rule, bl.WhyNot = RuleScriptLogic, "the script only sets defaults, but it execs through "+userWrapped(exec)+
					", which switches user and which distroless lacks: set USER in the Dockerfile and exec the command directly"
			default:
				bl.Rule, bl.WhyNot = RuleScriptLogic, "the script only sets defaults, but what it execs is not node ("+strings.Join(exec, " ")+")"
			}
			b.Add(bl)
		case e.InterpreterKind == "shell" && e.Script != nil && e.Script.DefaultsOnly && b.startScripts[e.RepoPath]:
			// A package script's sh -e bin/start.sh that only sets
			// defaults and execs node: the start's rewrite runs that
			// command with the defaults as ENV (the start's blocker).
		case e.InterpreterKind == "shell":
			bl := probe.Blocker{ID: entrypoints.WarnShellShebang, Kind: probe.ShellAtRuntime, Rule: RuleScriptLogic,
				Title: fmt.Sprintf("%s is a shell script (%s)", name, shellOf(e)), Evidence: evs}
			if e.Script != nil && len(e.Script.Reasons) > 0 {
				bl.WhyNot = "the script does more than set defaults: " + strings.Join(first(e.Script.Reasons, 3), "; ")
			}
			if e.Script != nil && e.RepoPath != "" {
				// The script's own lines that need the shell.
				for _, l := range firstInts(e.Script.ReasonLines, maxScriptEvidence) {
					bl.Evidence = append(bl.Evidence, probe.Evidence{File: e.RepoPath, Line: l})
				}
			}
			b.Add(bl)
		case e.InterpreterKind == "env" && e.NodeArgv != nil && e.Origin == "healthcheck" && len(b.execHealth) > 0 && b.execHealth[0] == e.Command:
			// HEALTHCHECK CMD ["/srv/app/src/healthcheck.js"] (Ackee): an
			// exec-form check of a #!/usr/bin/env node script runs it with
			// node instead, its arguments kept.
			argv := append(slices.Clone(e.NodeArgv[1:]), b.execHealth[1:]...)
			if len(argv) > 0 && argv[0] == e.RepoPath {
				argv[0] = e.Command // the image's path, as the check named it
			}
			bl := probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Rule: RuleHealthExecForm,
				Title: fmt.Sprintf("the HEALTHCHECK runs %s, which starts with %s; distroless has no /usr/bin/env", name, e.Shebang),
				Fix:   "HEALTHCHECK CMD " + quoteArgv(append([]string{dockerfile.DistrolessEntrypoint}, argv...)), Evidence: evs}
			b.addEdit(bl, Edit{Health: argv})
		case e.InterpreterKind == "env" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Fix: "point CMD at the JS file: CMD " + quoteArgv(DistrolessCmd(e.NodeArgv)), Evidence: evs})
		case e.InterpreterKind == "env":
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Evidence: evs})
		case e.Kind == entrypoints.KindNotFound && b.envWrapper(e.Command):
			// ./node_modules/.bin/cross-env A=b node x.js: the rewrite
			// drops cross-env (env_wrapper_start), whatever its file is.
		case e.Kind == entrypoints.KindNotFound:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s (run as %s) is not in the repository; what it needs is unknown", e.Command, e.Origin), Evidence: evs})
		}
	}
}

// maxScriptEvidence bounds the script lines a blocker cites.
const maxScriptEvidence = 5

func firstInts(s []int, n int) []int {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// scriptWrappers: an init or user wrapper an entrypoint script runs (exec
// gosu app "$@", or exec $GOSU "$@" after GOSU="gosu app") is a program
// distroless lacks, as it is in the Dockerfile's own ENTRYPOINT.
func (b *builder) scriptWrappers(e entrypoints.Executable, name string) {
	if e.Script == nil || e.RepoPath == "" {
		return
	}
	for _, w := range e.Script.Wrappers {
		evs := append(ev(e.File, e.Line), probe.Evidence{File: e.RepoPath, Line: w.Line, Note: w.Program})
		bl := probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime, Evidence: evs}
		if dockerfile.IsUserWrapper(w.Program) {
			bl.Title = fmt.Sprintf("the entrypoint script %s runs %s, which distroless lacks; it switches user before it runs the command", name, w.Program)
			bl.Fix = "set the user with USER in the Dockerfile and run the command directly"
		} else {
			bl.Title = fmt.Sprintf("the entrypoint script %s runs the init %s, which distroless lacks; it forwards signals to the command it wraps", name, w.Program)
		}
		b.Add(bl)
	}
}

// userWrapped names the user wrapper (gosu, su-exec) argv runs, or "".
func userWrapped(argv []string) string {
	if init, _ := dockerfile.SplitInit(argv); init != nil && dockerfile.IsUserWrapper(init[0]) {
		return init[0]
	}
	return ""
}

// shellOf says which shell runs a script: the one the start command names
// (run by bash), else its shebang.
func shellOf(e entrypoints.Executable) string {
	if e.RunBy != "" {
		return "run by " + e.RunBy
	}
	return e.Shebang
}

// envWrapper reports whether command is the cross-env or env that the
// start command runs its command through.
func (b *builder) envWrapper(command string) bool {
	if b.start == nil || len(b.start.Program) == 0 || b.start.Program[0] != command {
		return false
	}
	_, _, ok := shellcmd.EnvPrefix(b.start.Program)
	return ok
}

// stepsDrop reports whether the start's steps (npmscripts.Chain.Steps)
// went through the .bin command name and left it out: cross-env and env,
// whose variables the steps carry, and npm-run-all and run-s, whose
// scripts they run one after the other. A launcher or ENV then takes
// their place, so their shims are not run.
func (b *builder) stepsDrop(name string) bool {
	if b.chain == nil || len(b.chain.Steps) == 0 || b.chain.Parallel {
		return false
	}
	base := path.Base(name)
	for _, s := range b.chain.Steps {
		if len(s.Argv) > 0 && path.Base(s.Argv[0]) == base {
			return false
		}
	}
	if _, _, ok := shellcmd.EnvPrefix([]string{base, "A=b", "x"}); ok {
		return true
	}
	_, _, _, ok := shellcmd.RunAll([]string{base, "x"})
	return ok
}
