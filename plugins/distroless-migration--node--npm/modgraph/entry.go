package modgraph

import (
	"bytes"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
)

// NodeCommand is one node command the start comes down to: node's
// arguments (without node), run in Dir (relative to the image's WORKDIR).
type NodeCommand struct {
	Args []string
	Dir  string
	// Bin, when set, is a node_modules/.bin command the step runs (Args
	// are its arguments): node runs the JS file its package's "bin" names.
	Bin string
	// Shebang is set for a step that runs a file by its path with no JS
	// extension (oclif's ./run start): node runs it only when its first
	// line names node.
	Shebang bool
}

// NodeCommands returns the node commands the start runs, one for each of
// the chain's steps (npmscripts.Chain.Steps: the reading of the start
// that readiness and the recipe use too, through package managers, &&
// lines, hooks, npm-run-all and cross-env). A step that runs a JavaScript
// file directly runs node through its shebang. why says why there are
// none: the start does not come down to steps, or one step is not node,
// whose code the graph cannot start from.
func NodeCommands(c *npmscripts.Chain) (cmds []NodeCommand, why string) {
	if c == nil {
		return nil, "no start command is known"
	}
	steps := c.Steps
	if len(c.GraphSteps) > 0 {
		// An entrypoint script that does more than set defaults (Steps is
		// at most the script itself): its shell stays, and the graph
		// starts from the node commands it runs.
		steps = c.GraphSteps
	}
	if len(steps) == 0 {
		why := c.StepsWhy
		if why == "" {
			why = "no command"
		}
		return nil, "the start command does not come down to node commands (" + strings.Join(chainArgv(c), " ") + ": " + why + ")"
	}
	for _, s := range steps {
		// tini -- node app.js, gosu app node app.js: the graph starts at
		// the command the init or user wrapper runs.
		_, argv := dockerfile.SplitInit(s.Argv)
		switch {
		case len(argv) > 0 && isNode(argv[0]):
			cmds = append(cmds, NodeCommand{Args: argv[1:], Dir: s.Dir})
		case len(argv) > 0 && tsRunners[path.Base(argv[0])]:
			// tsx ./backend/index.ts, ts-node src/main.ts: node with the
			// runner's loader, on the TypeScript file. The graph starts at
			// that file; the runner's own code (a transpiler, and tsx's
			// esbuild service binary) is not entered: the start program's
			// own check judges the runner.
			args, ok := tsRunnerArgs(argv[1:])
			if !ok {
				return nil, "the start runs " + strings.Join(s.Argv, " ") + ", a TypeScript runner whose file codegenie cannot tell"
			}
			cmds = append(cmds, NodeCommand{Args: args, Dir: s.Dir})
		case len(argv) > 0 && isJSPath(argv[0]):
			cmds = append(cmds, NodeCommand{Args: argv, Dir: s.Dir})
		case len(argv) > 0 && (s.Script != "" || strings.Contains(argv[0], "node_modules/.bin/")) && binWord(argv[0]):
			// A package script runs with node_modules/.bin on PATH.
			cmds = append(cmds, NodeCommand{Bin: path.Base(argv[0]), Args: argv[1:], Dir: s.Dir})
		case len(argv) > 0 && strings.Contains(argv[0], "/") && path.Ext(argv[0]) == "":
			cmds = append(cmds, NodeCommand{Args: argv, Dir: s.Dir, Shebang: true})
		default:
			why := "the start runs " + strings.Join(s.Argv, " ") + ", which is not node"
			if c.StepsWhy != "" {
				why += " (" + c.StepsWhy + ")"
			}
			return nil, why
		}
	}
	return cmds, ""
}

// tsRunners are the TypeScript runners a start may run a .ts file with:
// node with their loader.
var tsRunners = map[string]bool{"tsx": true, "ts-node": true, "ts-node-transpile-only": true, "ts-node-esm": true}

// tsRunnerOptions are the runners' options that take the next word as
// their value; -r and --require preload a module, as node's do.
var tsRunnerOptions = map[string]bool{"--tsconfig": true, "-P": true, "--project": true, "-C": true, "--compiler": true,
	"-O": true, "--compiler-options": true, "--env-file": true, "--cwd": true, "--dir": true, "--scope": true, "-I": true, "--ignore": true}

// tsRunnerArgs returns node's arguments for a TypeScript runner's: its
// preloads and file; ok is false for a watch mode, an evaluated line or a
// REPL, whose file is not the service's.
func tsRunnerArgs(args []string) ([]string, bool) {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case i == 0 && a == "watch", a == "-e", a == "--eval", a == "-p", a == "--print", a == "-i", a == "--interactive":
			return nil, false
		case a == "-r" || a == "--require":
			if i+1 < len(args) {
				out = append(out, "--require", args[i+1])
				i++
			}
		case tsRunnerOptions[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return append(out, args[i:]...), true
		}
	}
	return nil, false
}

// frameworkOutput returns the entries of a framework's server that a
// build writes and the image ships (a Next.js standalone server.js, a
// Nitro .output/server/index.mjs) at image path ip; ok is false when ip is
// none, and why then says what was missing, if ip looked like one.
func frameworkOutput(j *images.Judged, set *images.FileSet, w *walker, ip string) (entries []string, why string, ok bool) {
	for _, f := range []func(*images.Judged, *images.FileSet, *walker, string) ([]string, string, bool){nextStandalone, nitroOutput} {
		files, fwhy, found := f(j, set, w, ip)
		if found {
			return files, fwhy, true
		}
		if why == "" {
			why = fwhy
		}
	}
	return nil, why, false
}

// binWord reports a word a package script may run from node_modules/.bin:
// a bare name, or a path into node_modules/.bin.
func binWord(w string) bool {
	if strings.Contains(w, "node_modules/.bin/") {
		return true
	}
	return w != "" && !strings.Contains(w, "/") && !strings.HasPrefix(w, "-")
}

func isJSPath(p string) bool {
	switch path.Ext(p) {
	case ".js", ".mjs", ".cjs":
		return true
	}
	return false
}

func isNode(w string) bool {
	b := path.Base(w)
	return b == "node" || b == "nodejs"
}

// preloadFlags take a module to load before the script.
var preloadFlags = map[string]bool{"-r": true, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true}

// valueFlags take a separate value that is not a module.
var valueFlags = map[string]bool{"--env-file": true, "--title": true, "--inspect-port": true, "-C": true, "--conditions": true,
	"--max-old-space-size": true, "--stack-size": true, "--input-type": true}

// ScriptArgs splits node's arguments into the modules it preloads and the
// script it runs ("" when it runs none: -e, -p, or a REPL).
func ScriptArgs(args []string) (preloads []string, script string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-e" || a == "--eval" || a == "-p" || a == "--print" {
			return preloads, ""
		}
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			if preloadFlags[k] {
				preloads = append(preloads, v)
			}
			continue
		}
		switch {
		case preloadFlags[a] && i+1 < len(args):
			preloads = append(preloads, args[i+1])
			i++
		case valueFlags[a] && i+1 < len(args):
			i++
		case a == "--":
			if i+1 < len(args) {
				return preloads, args[i+1]
			}
			return preloads, ""
		case strings.HasPrefix(a, "-"):
		default:
			return preloads, a
		}
	}
	return preloads, ""
}

// entryFiles finds the repository files the container's node commands
// start with: each command's script and preloads.
func entryFiles(j *images.Judged, set *images.FileSet, c *npmscripts.Chain, w *walker) ([]string, string) {
	cmds, why := NodeCommands(c)
	if len(cmds) == 0 {
		return nil, why
	}
	// NODE_OPTIONS set by ENV preloads modules too (--require, --import).
	var optPreloads []string
	if opts, ok := envValue(j, "NODE_OPTIONS"); ok {
		optPreloads, _ = ScriptArgs(append(strings.Fields(opts), "--"))
	}
	var out, whys []string
	for _, cmd := range cmds {
		files, why := commandEntries(j, set, w, cmd, optPreloads)
		whys = append(whys, why)
		if len(files) == 0 {
			// Code the graph cannot see runs at start (a build's output,
			// a package not installed): no step is the whole of it.
			return nil, strings.Join(whys, "; ")
		}
		out = append(out, files...)
	}
	var uniq []string
	for _, f := range out {
		if !slices.Contains(uniq, f) {
			uniq = append(uniq, f)
		}
	}
	return uniq, strings.Join(whys, "; ")
}

// commandEntries finds the repository files one node command starts with.
func commandEntries(j *images.Judged, set *images.FileSet, w *walker, cmd NodeCommand, optPreloads []string) ([]string, string) {
	if cmd.Bin != "" {
		// knex migrate:latest: the JS file of the package whose "bin"
		// names knex, in the app's node_modules.
		for _, dir := range []string{path.Join(j.Context, cmd.Dir), j.Context} {
			if t, ok := w.binEntry(dir, cmd.Bin); ok {
				return []string{t}, cmd.Bin + " (" + t + ")"
			}
		}
		return nil, cmd.Bin + " is a command that no installed package's \"bin\" names"
	}
	args := cmd.Args
	if cmd.Shebang {
		// The file itself, by its path: node only if its first line says
		// so (#!/usr/bin/env node); a shell script's node commands are
		// not read here.
		wd := j.File.Workdir(j.File.Final)
		t, ok := mapEntry(j, set, w, wd, path.Join(cmd.Dir, args[0]))
		if !ok {
			return nil, args[0] + " in " + path.Join(wd, cmd.Dir) + " is not in the repository"
		}
		if !nodeShebang(w.repo, t) {
			return nil, args[0] + " (" + t + ") is not a node script"
		}
		return []string{t}, strings.Join(args, " ") + " (" + t + ", #!node)"
	}
	preloads, script := ScriptArgs(args)
	preloads = append(preloads, optPreloads...)
	if script == "" {
		return nil, "node runs no script file (" + strings.Join(args, " ") + ")"
	}
	wd := j.File.Workdir(j.File.Final)
	var out []string
	var missing []string
	nextWhy := ""
	for _, m := range append(preloads, script) {
		if !strings.HasPrefix(m, ".") && !strings.HasPrefix(m, "/") && !strings.Contains(m, "/") && path.Ext(m) == "" {
			// A bare preload (--require dotenv/config) is a package.
			if t, ok := w.resolve(path.Join(j.Context, cmd.Dir, "index.js"), m); ok {
				out = append(out, t)
				continue
			}
		}
		p := m
		if !path.IsAbs(p) {
			p = path.Join(cmd.Dir, p)
		}
		if t, ok := mapEntry(j, set, w, wd, p); ok {
			out = append(out, t)
			continue
		}
		ip := p
		if !path.IsAbs(ip) {
			ip = path.Join(wd, p)
		}
		if m == script {
			if files, why, ok := frameworkOutput(j, set, w, ip); ok {
				out = append(out, files...)
				nextWhy = why
				continue
			} else if why != "" {
				nextWhy = why
			}
		}
		missing = append(missing, m)
	}
	why := "node " + strings.Join(args, " ") + " in " + path.Join(wd, cmd.Dir)
	if nextWhy != "" {
		why += "; " + nextWhy
	}
	if len(missing) > 0 {
		why += "; not found in the repository: " + strings.Join(missing, ", ")
		if len(out) == 0 {
			return nil, why
		}
	}
	return out, why
}

// nodeShebang reports a file whose first line runs node: #!/usr/bin/env
// node (with options, or env -S), #!/usr/local/bin/node.
func nodeShebang(repo *probe.Repo, file string) bool {
	data, err := repo.ReadFile(file)
	if err != nil || !bytes.HasPrefix(data, []byte("#!")) {
		return false
	}
	first, _, _ := bytes.Cut(data[2:], []byte("\n"))
	words := strings.Fields(string(first))
	for i, w := range words {
		if i > 0 && strings.HasPrefix(w, "-") {
			continue // env -S, node's own options after it
		}
		switch path.Base(w) {
		case "env":
			continue
		case "node", "nodejs":
			return true
		}
		return false
	}
	return false
}

// envValue is the last ENV value of key in the final stage's FROM chain.
func envValue(j *images.Judged, key string) (string, bool) {
	f := j.File
	val, found := "", false
	var chain []int
	for i := f.Final; i >= 0 && len(chain) <= len(f.Stages); i = f.Stages[i].BaseStage {
		chain = append(chain, i)
	}
	slices.Reverse(chain)
	for _, i := range chain {
		for _, in := range f.Stages[i].Instructions {
			if in.Command != "env" {
				continue
			}
			for _, kv := range in.Args {
				if k, v, ok := strings.Cut(kv, "="); ok && k == key {
					if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
						v = v[1 : len(v)-1]
					}
					val, found = v, true
				}
			}
		}
	}
	return val, found
}

// mapEntry maps a path node is given (relative to the image's WORKDIR) to
// the repository file it is, or to the source it was compiled from.
func mapEntry(j *images.Judged, set *images.FileSet, w *walker, wd, p string) (string, bool) {
	ip := p
	if !path.IsAbs(ip) {
		ip = path.Join(wd, p)
	}
	for _, e := range exts {
		if rel, ok := set.RepoPath(ip + e); ok {
			return rel, true
		}
	}
	if rel, ok := set.RepoPath(path.Join(ip, "index.js")); ok {
		return rel, true
	}
	// Generated (dist/) or not copied: the path below WORKDIR, read in the
	// build context.
	rel := strings.TrimPrefix(ip, strings.TrimSuffix(wd, "/")+"/")
	if path.IsAbs(rel) {
		rel = strings.TrimPrefix(rel, "/")
	}
	cand := path.Join(j.Context, rel)
	if t, ok := w.file(cand); ok {
		return t, true
	}
	if t, ok := w.fromSource(cand); ok {
		return t, true
	}
	return compiledEntry(set, ip)
}

// compiledEntry maps a file of a directory a builder stage generated to
// the one source the stage compiled it from, when the source's path
// without its extension, and with or without a src/ folder, ends with the
// file's path below the build's output folder: Nx's and the Nest CLI's
// monorepo layout, where dist/apps/api/main.js is built from
// apps/api/src/main.ts, copied as apps/ (node apps/api/main) or as the app
// itself (node main); and a workspace package's dist/src/main.js, copied
// as dist/ (hedgedoc's backend).
func compiledEntry(set *images.FileSet, ip string) (string, bool) {
	if set == nil {
		return "", false
	}
	for _, g := range set.Generated {
		rest, ok := strings.CutPrefix(ip, strings.TrimSuffix(g.ImagePath, "/")+"/")
		if !ok {
			continue
		}
		// The generated folder's part below its output folder (dist/apps
		// gives apps/), then the file's path in it; and the stage's
		// folder above the output folder (/usr/src/app/backend/).
		key, above := rest, "/"
		segs := strings.Split(strings.Trim(g.StagePath, "/"), "/")
		for i := len(segs) - 1; i >= 0; i-- {
			if outDirs[segs[i]] {
				key, above = path.Join(path.Join(segs[i+1:]...), rest), "/"+path.Join(segs[:i]...)+"/"
				break
			}
		}
		key = strings.TrimSuffix(key, path.Ext(key))
		// found are the sources that match; near, those whose folder
		// above the match ends the stage's folder above its output (the
		// backend's src/main.ts, not the database package's).
		var found, near []string
		for src, dirs := range set.Compiled {
			if !slices.Contains(dirs, g.ImagePath) {
				continue
			}
			// With its src/ folder (tsc's dist/src/main.js of a rootDir
			// above src/) or without it (Nx's dist/apps/api/main.js).
			bare := "/" + strings.TrimSuffix(src, path.Ext(src))
			for _, form := range []string{bare, strings.Replace(bare, "/src/", "/", 1)} {
				if prefix, ok := strings.CutSuffix(form, "/"+key); ok {
					found = append(found, src)
					if strings.HasSuffix(above, prefix+"/") {
						near = append(near, src)
					}
					break
				}
			}
		}
		switch {
		case len(near) == 1:
			return near[0], true
		case len(found) == 1:
			return found[0], true
		}
	}
	return "", false
}

// outDirs are the folder names a build writes its output to.
var outDirs = map[string]bool{"dist": true, "build": true, "out": true, "lib": true}

func chainArgv(c *npmscripts.Chain) []string {
	if c == nil {
		return nil
	}
	if len(c.Program) > 0 {
		return c.Program
	}
	return c.Start.Argv
}
