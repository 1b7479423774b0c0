package readiness

// The start command: package-manager chains, shell-form and node starts,
// and the node command that replaces them on a distroless entrypoint.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// DistrolessCmd turns a node command into the CMD a distroless node image
// runs: its entrypoint is node, so CMD holds node's arguments only, and a
// preload given as two words (--require ./otel.js) is written as one
// (--require=./otel.js) so that the option and its value stay together.
// A command that does not start with node is returned as it is.
func DistrolessCmd(argv []string) []string {
	if len(argv) == 0 || !isNodeWord(argv[0]) {
		return argv
	}
	var out []string
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if preload[a] && i+1 < len(args) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

var preload = map[string]bool{"-r": false, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true}

func isNodeWord(w string) bool {
	base := w
	if i := strings.LastIndex(w, "/"); i >= 0 {
		base = w[i+1:]
	}
	return base == "node" || base == "nodejs"
}

// cmdFix is the CMD (and ENV) that replaces a start command on distroless.
func cmdFix(argv, env []string) string {
	fix := "CMD " + quoteArgv(DistrolessCmd(argv))
	if len(env) > 0 {
		fix = "ENV " + strings.Join(env, " ") + " and " + fix
	}
	return fix
}

// chains: what the container runs at start.
func (b *builder) chains(f *npmscripts.Facts, r probe.Result) {
	warnEv := map[string][]probe.Evidence{}
	for _, w := range r.Warnings {
		warnEv[w.ID] = append(warnEv[w.ID], w.Evidence...)
	}
	for _, c := range f.Chains {
		b.chain = &c
		startLine := 0
		switch {
		case c.Start.Cmd != nil:
			startLine = c.Start.Cmd.Line
		case c.Start.Entrypoint != nil:
			startLine = c.Start.Entrypoint.Line
		}
		evs := ev(c.Dockerfile, startLine)
		for _, s := range c.Scripts {
			if s.Line > 0 {
				file := s.Package
				if file == "" {
					file = pkgFileOf(c)
				}
				evs = append(evs, probe.Evidence{File: file, Line: s.Line, Note: s.Name + ": " + s.Command})
			}
		}
		// The scripts the start's steps come from (npm-run-all's, an &&
		// line's) that the chain's own list does not name.
		for _, s := range c.Steps {
			if s.Line > 0 && !slices.ContainsFunc(evs, func(e probe.Evidence) bool { return e.File == s.Package && e.Line == s.Line }) {
				evs = append(evs, probe.Evidence{File: s.Package, Line: s.Line, Note: s.Script + ": " + strings.Join(s.Argv, " ")})
			}
		}
		switch c.Launcher {
		case "npx":
			bl := probe.Blocker{ID: npmscripts.WarnPackageManagerStart, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("the container starts with %s, which distroless lacks", strings.Join(c.Program, " ")), Evidence: evs}
			st := b.nodeStart(c.Direct, c.Env, "the npx command")
			st.Dir = c.Dir
			switch {
			case c.Convertible && st.Program == nil:
				bl.Rule, bl.Fix = RuleScriptArgv, cmdFix(b.viaJSEntry(c.Direct), c.Env)
				if st.Bin != "" {
					bl.Fix = fmt.Sprintf("run %s's JS file (the one its package's \"bin\" names) from a generated launcher that finds it in node_modules at run time: CMD [%q]", st.Bin, LauncherFile)
				}
				b.setStart(st, false)
			case c.Convertible:
				bl.Rule, bl.WhyNot = RuleBinaryAtRuntime, fmt.Sprintf("npx runs %s, which is not node", strings.Join(st.Program, " "))
			default:
				bl.Rule, bl.WhyNot = RuleShellLine, "the npx command cannot be rewritten: "+strings.Join(c.Blockers, "; ")
			}
			b.Add(bl)
		case "npm", "yarn", "pnpm", string(shellcmd.NodeRun):
			bl := probe.Blocker{ID: npmscripts.WarnPackageManagerStart, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("the container starts with %s, which runs %q through sh -c", strings.Join(c.Program, " "), c.Script), Evidence: evs}
			ls, launcher := b.launcherSteps(c)
			launcher = launcher && len(ls.Steps) > 1
			st := b.nodeStart(c.Direct, c.Env, "the "+c.Script+" script")
			st.Dir = c.Dir
			switch {
			case c.Convertible && st.Program == nil:
				bl.Rule, bl.Fix = RuleScriptArgv, cmdFix(b.viaJSEntry(c.Direct), c.Env)
				for _, s := range c.Steps {
					if s.Via != "" && s.ViaScript != "" {
						// sh -e bin/start.sh: defaults, then exec node.
						if b.startScripts == nil {
							b.startScripts = map[string]bool{}
						}
						b.startScripts[s.Via] = true
						bl.Evidence = append(bl.Evidence, probe.Evidence{File: s.Via, Note: "sets defaults (they become ENV), then execs " + strings.Join(s.Argv, " ")})
					}
				}
				if c.Dir != "" {
					// Relative to the image's WORKDIR, as Docker reads it.
					bl.Fix = "WORKDIR " + c.Dir + " and " + bl.Fix
				}
				if st.Bin != "" {
					// A .bin command whose JS file is known only once the
					// dependencies are installed.
					bl.Fix = fmt.Sprintf("run %s's JS file (the one its package's \"bin\" names) from a generated launcher that finds it in node_modules at run time: CMD [%q]", st.Bin, LauncherFile)
				}
				b.setStart(st, false)
			case launcher:
				bl.Rule = RuleNodeLauncher
				bl.Fix = launcherFix(ls)
				ls.From = "the " + c.Script + " script and its hooks"
				if slices.ContainsFunc(c.Steps, func(s npmscripts.Step) bool {
					return s.Script != c.Script && s.Script != "pre"+c.Script && s.Script != "post"+c.Script
				}) {
					ls.From = "the " + c.Script + " script and the scripts it runs"
				}
				b.setStart(ls, false)
			case c.Convertible:
				bl.Rule, bl.WhyNot = RuleBinaryAtRuntime, fmt.Sprintf("the %s script runs %s, which is not node", c.Script, strings.Join(st.Program, " "))
			default:
				bl.Rule, bl.WhyNot = RuleShellLine, "the start chain does not reduce to node commands: "+strings.Join(c.Blockers, "; ")+stepsWhy(c)
			}
			b.Add(bl)
		case "shell":
			bl := probe.Blocker{ID: npmscripts.WarnShellFormStart, Kind: probe.ShellAtRuntime,
				Title: "the start command needs a shell: " + strings.TrimPrefix(strings.Join(c.Blockers, "; "), "start command needs a shell: "), Evidence: evs}
			if ls, ok := b.launcherSteps(c); ok {
				bl.Rule = RuleNodeLauncher
				bl.Fix = launcherFix(ls)
				ls.From = "the start command line"
				b.setStart(ls, false)
			} else {
				bl.Rule, bl.WhyNot = RuleShellLine, "one-off steps go into the build or an init job; the service runs as one exec-form command"+stepsWhy(c)
				if len(c.Steps) == 0 && c.StepsWhy != "" {
					bl.WhyNot = "the line is more than commands joined by &&, which a launcher runs one after the other: " + c.StepsWhy
				}
			}
			b.Add(bl)
		case "node", "other":
			if _, rest, ok := shellcmd.EnvPrefix(c.Program); ok {
				// cross-env A=b CMD, env A=b CMD: the variables move to ENV
				// and CMD runs itself; the steps read it so (Direct).
				why := "cross-env spawns it by PATH, and distroless has no node on PATH"
				if baseName(c.Program[0]) == "env" {
					why = "distroless has no env"
				}
				bl := probe.Blocker{ID: npmscripts.WarnEnvWrapperStart, Kind: probe.MissingBinary,
					Title: fmt.Sprintf("the container starts %s through %s: %s", strings.Join(rest, " "), baseName(c.Program[0]), why), Evidence: evs}
				st := b.nodeStart(c.Direct, c.Env, "the "+baseName(c.Program[0])+" command")
				if c.Convertible && len(c.Direct) > 0 && isNodeWord(c.Direct[0]) && st.Program == nil {
					bl.Rule, bl.Fix = RuleScriptArgv, cmdFix(c.Direct, c.Env)
					b.setStart(st, false)
				} else {
					bl.Rule, bl.WhyNot = RuleBinaryAtRuntime, fmt.Sprintf("%s runs %s, which is not node", baseName(c.Program[0]), strings.Join(rest, " "))
				}
				b.Add(bl)
			}
			sc := c.Start
			shellForm := (sc.Cmd != nil && sc.Cmd.Form == dockerfile.FormShell) || (sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell)
			if shellForm || c.ViaShell {
				id := dockerfileprobe.WarnShellFormCmd
				if sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell {
					id = dockerfileprobe.WarnShellFormEntry
				}
				title := "the start command is in shell form and runs through /bin/sh -c"
				if !shellForm {
					title = "the start command runs through an explicit sh -c (" + strings.Join(sc.Argv, " ") + ")"
				}
				bl := probe.Blocker{ID: id, Kind: probe.ShellAtRuntime, Rule: RuleExecForm, Title: title, Fix: cmdFix(c.Direct, c.Env), Evidence: evs}
				if len(c.Direct) == 0 {
					bl.Rule, bl.Fix, bl.WhyNot = RuleShellLine, "", "the command line needs a shell: "+strings.Join(c.Blockers, "; ")
				}
				b.Add(bl)
				b.setStart(b.nodeStart(c.Direct, c.Env, "the shell-form command"), false)
			}
			b.start, b.startEv = &c, evs
		}
		for _, e := range warnEv[npmscripts.WarnDistrolessNodeTwice] {
			if e.File == c.Dockerfile {
				// Program is the entrypoint (node) then CMD, which starts
				// with node again.
				cmd := c.Program
				if len(cmd) > 1 && isNodeWord(cmd[0]) && isNodeWord(cmd[1]) {
					cmd = cmd[1:]
				}
				b.Add(probe.Blocker{ID: npmscripts.WarnDistrolessNodeTwice, Kind: probe.UnknownKind, Rule: RuleDropNodeArgv,
					Title: "CMD starts with node, but the distroless entrypoint is node already", Fix: cmdFix(cmd, nil),
					Evidence: []probe.Evidence{e}})
				b.setStart(Start{Args: DistrolessCmd(cmd), From: "CMD"}, true)
			}
		}
		// What the container runs now, when no rule above changed it.
		prog := c.Direct
		if len(prog) == 0 {
			prog = c.Program
		}
		b.setStart(b.nodeStart(prog, c.Env, "the start command"), false)
	}
}

// stepsWhy says why a start's steps are not node commands that a
// launcher runs one after the other ("" when nothing more is known).
func stepsWhy(c npmscripts.Chain) string {
	switch {
	case c.Parallel:
		return " (some of its scripts run at the same time, as run-p or npm-run-all -p runs them; a launcher runs its steps one after the other)"
	case c.StepsWhy != "":
		return " (" + c.StepsWhy + ")"
	}
	return ""
}

// LauncherFile is the generated launcher's name, beside the app's
// package.json in the image's WORKDIR.
const LauncherFile = "codegenie-launch.cjs"

func launcherFix(st Start) string {
	s := make([]string, len(st.Steps))
	for i, argv := range st.Steps {
		s[i] = strings.Join(argv, " ")
		if i < len(st.StepEnv) && len(st.StepEnv[i]) > 0 {
			s[i] = strings.Join(st.StepEnv[i], " ") + " " + s[i]
		}
	}
	what := "node steps"
	if len(st.StepBin) > 0 {
		what = "steps (node, and node_modules/.bin commands' JS files, which the launcher finds at run time)"
	}
	return fmt.Sprintf("run the %d %s (%s) from a generated launcher: CMD [%q]", len(st.Steps), what, strings.Join(s, "; "), LauncherFile)
}

// viaJSEntry replaces a command that is a shim or an env-node script by
// the node command that runs its JS file.
func (b *builder) viaJSEntry(argv []string) []string {
	if len(argv) == 0 || isNodeWord(argv[0]) {
		return argv
	}
	if js, ok := b.jsEntries[argv[0]]; ok {
		return append(append([]string{}, js...), argv[1:]...)
	}
	return argv
}

// otherBins are the bins of packages often installed globally whose names
// are not the package's own, from each package's "bin" field on the npm
// registry (npm view PACKAGE bin, latest versions, 2026-12-03).
var otherBins = map[string][]string{
	"pm2":          {"pm2-runtime", "pm2-docker", "pm2-dev"},
	"typescript":   {"tsc"},
	"@nestjs/cli":  {"nest"},
	"@angular/cli": {"ng"},
	"ts-node":      {"ts-node-esm", "ts-node-transpile-only", "ts-node-script", "ts-node-cwd", "ts-script"},
}

// globalBin returns the package of the judged image that prog, a
// program on the PATH or in a bin folder, is the command of: the one whose
// name (without its scope) it is, as an npm package's bin is named by
// default, or one of its otherBins. Another package whose bin has another
// name is not found.
func (b *builder) globalBin(globals []noderuntime.GlobalPackage, prog string) (noderuntime.GlobalPackage, bool) {
	if dir := path.Dir(prog); strings.Contains(prog, "/") && path.Base(dir) != "bin" {
		return noderuntime.GlobalPackage{}, false
	}
	for _, g := range globals { // the judged image's, its built base's included
		if path.Base(g.Package) == path.Base(prog) || slices.Contains(otherBins[g.Package], path.Base(prog)) {
			return g, true
		}
	}
	return noderuntime.GlobalPackage{}, false
}

// startProgram checks that what the container starts exists in the image:
// a program other than node must be a file of the repository or an OS
// package the image installs, and node's script must be a file the image
// holds. Otherwise a distroless image will not have it either, and the
// verdict cannot be ready.
func (b *builder) startProgram(ep *entrypoints.Facts, nr *noderuntime.Facts) {
	c := b.start
	if c == nil || len(c.Program) == 0 {
		return
	}
	prog := c.Program[0]
	switch c.Launcher {
	case "other":
		if _, _, ok := shellcmd.EnvPrefix(c.Program); ok {
			return // judged as the env wrapper it is
		}
		name := baseName(prog)
		for _, e := range ep.Executables {
			if e.Command == prog {
				return // judged as an executable of its own
			}
			if e.RunBy != "" && e.Command == shellcmd.ShellScript(c.Program) {
				return // a shell that runs a script: judged as that script
			}
		}
		for _, p := range nr.OSPackages {
			for _, bin := range noderuntime.PackageBinaries(p.Name) {
				if bin == name {
					return // judged with the OS packages
				}
			}
		}
		for _, u := range nr.Binaries {
			if u.Binary == name {
				return
			}
		}
		if g, ok := b.globalBin(nr.GlobalPackages, prog); ok {
			what := g.Package
			switch {
			case g.Version != "":
				what += "@" + g.Version
			case g.VersionVar != "":
				what += " (at the version $" + g.VersionVar + " gives)"
			}
			b.Add(probe.Blocker{ID: noderuntime.WarnGlobalPackage, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("the container starts %s, the command of %s, which `%s` installs globally: codegenie does not read a globally installed package's code, so what it runs is unknown", prog, what, g.Tool),
				Fix: "install the package from a package.json and lockfile in the image's WORKDIR (npm ci) and start its bin file with node in exec form: " +
					"codegenie then reads its code and its dependencies, and a rewrite can copy that folder",
				Evidence: append(slices.Clone(b.startEv), probe.Evidence{File: g.Dockerfile, Line: g.Line})})
			return
		}
		b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
			Title: fmt.Sprintf("the container starts %s, which is neither a file of the repository nor a package the image installs", prog),
			Fix:   "run the service with node and its JS file in exec form", Evidence: b.startEv})
	case "node":
		// A script a build generates (dist/, a bundle) is not in the
		// repository and may well be in the image; a tool's name is not
		// the app's script in any image (CMD ["npm", "start"] on a
		// distroless base runs node /app/npm).
		script := nodeScriptOf(c.Program[1:])
		if shellcmd.IsShell(script) && len(c.Program) >= 4 && c.Program[1] == script && c.Program[2] == "-c" {
			// CMD ["sh", "-c", LINE] on a distroless base runs node sh -c
			// LINE; exec form of LINE is what was meant.
			a := shellcmd.Analyze(c.Program[3])
			bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormCmd, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("CMD runs %s -c %q, which on the distroless entrypoint is node %s: a shell the image does not have", script, c.Program[3], script), Evidence: b.startEv}
			if a.Removable && len(a.Argv) > 0 && isNodeWord(a.Argv[0]) {
				bl.Rule, bl.Fix = RuleExecForm, cmdFix(a.Argv, a.Env)
				b.setStart(b.nodeStart(a.Argv, a.Env, "the sh -c line"), true)
			} else {
				bl.Rule, bl.WhyNot = RuleShellLine, "the line needs a shell: "+strings.Join(a.Reasons, ", ")
			}
			b.Add(bl)
			return
		}
		if isNodeWord(script) && b.hasBlocker(npmscripts.WarnDistrolessNodeTwice) {
			return // CMD ["node", ...] on distroless: drop_node_argv removes it
		}
		if notAScript[baseName(script)] {
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("node runs %q as its script, but %s is a tool, not the app's JS file (the distroless entrypoint is node)", script, baseName(script)),
				Fix:   "point CMD at the service's JS file (relative to WORKDIR)", Evidence: b.startEv})
		}
	}
}

// notAScript are names of tools that are never the app's own script.
var notAScript = map[string]bool{"npm": true, "npx": true, "yarn": true, "pnpm": true, "corepack": true, "pm2": true, "pm2-runtime": true,
	"nodemon": true, "ts-node": true, "tsx": true, "next": true, "sh": true, "bash": true, "node": true}

// nodeScriptOf returns the script of node's arguments: the first that is
// not an option or a preload's value.
func nodeScriptOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case preload[a] || a == "-r":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// launcherSteps reads a start whose steps (npmscripts.Chain.Steps: hooks,
// && lines, npm-run-all, each with its cross-env or VAR=x variables) are
// node commands run one after the other, in one folder: a generated Node
// launcher runs them without a shell, as the prestart hook's are run.
func (b *builder) launcherSteps(c npmscripts.Chain) (Start, bool) {
	if len(c.Steps) == 0 || c.Parallel {
		return Start{}, false
	}
	st := Start{Dir: c.Steps[0].Dir}
	for _, s := range c.Steps {
		if len(s.Argv) == 0 || s.Dir != st.Dir || s.Via != "" || slices.Contains(s.Argv, "<expanded>") {
			return Start{}, false
		}
		argv, bin := b.viaJSEntry(s.Argv), ""
		switch {
		case isNodeWord(argv[0]):
		case s.Script != "" && b.binCommands[argv[0]]:
			// A script's knex migrate:latest: the .bin command's JS file,
			// found at run time.
			bin = baseName(argv[0])
		default:
			return Start{}, false
		}
		st.Steps = append(st.Steps, argv)
		st.StepEnv = append(st.StepEnv, s.Env)
		st.StepBin = append(st.StepBin, bin)
	}
	if !slices.ContainsFunc(st.StepEnv, func(e []string) bool { return len(e) > 0 }) {
		st.StepEnv = nil
	}
	if !slices.ContainsFunc(st.StepBin, func(b string) bool { return b != "" }) {
		st.StepBin = nil
	}
	return st, true
}

func pkgFileOf(c npmscripts.Chain) string {
	if c.Package != "" {
		return c.Package
	}
	return pkgFile(c.Dockerfile)
}

func pkgFile(dockerfilePath string) string {
	if i := strings.LastIndex(dockerfilePath, "/"); i >= 0 {
		return dockerfilePath[:i] + "/package.json"
	}
	return "package.json"
}

// scriptArgs are the arguments the container passes an entrypoint script
// (its "$@"): the words after it in the start command, which ENTRYPOINT
// and CMD (without the init wrapper) give.
func (b *builder) scriptArgs(script string) []string {
	for i, w := range b.startArgv {
		if w == script {
			return append([]string{}, b.startArgv[i+1:]...)
		}
	}
	return append([]string{}, b.cmdArgv...)
}

// cutDollarAt splits exec's trailing "$@" off: exec node app.js "$@" is
// node app.js, to which the script's arguments are appended.
func cutDollarAt(exec []string) (fixed []string, appends bool) {
	if n := len(exec); n > 1 && exec[n-1] == `"$@"` {
		return exec[:n-1], true
	}
	return exec, false
}

// appendFix is the ENTRYPOINT and CMD that run node's fixed arguments
// with the arguments docker run gives (CMD when it gives none).
func appendFix(st Start) string {
	fix := "ENTRYPOINT " + quoteArgv(append([]string{dockerfile.DistrolessEntrypoint}, st.Args...))
	if len(st.CmdArgs) > 0 {
		fix += " and CMD " + quoteArgv(st.CmdArgs)
	}
	if len(st.Env) > 0 {
		fix = "ENV " + strings.Join(st.Env, " ") + ", " + fix
	}
	return fix
}
