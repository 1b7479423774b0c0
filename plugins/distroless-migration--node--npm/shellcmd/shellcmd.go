// Package shellcmd decides whether a command line needs a shell. It parses
// the line with mvdan.cc/sh's POSIX parser and reports every construct only a
// shell can run (operators, pipes, redirections, expansions, assignments,
// subshells, builtins, calls of other package scripts) and, when there is
// none, the direct argv the line is equivalent to. Some constructs are
// mechanically removable: a VAR=x prefix becomes an ENV instruction and a
// leading exec is dropped. The package only parses; it runs nothing.
package shellcmd

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what a command line needs.
type Analysis struct {
	// NeedsShell is true when the line, as written, must run under sh -c.
	NeedsShell bool `json:"needs_shell"`
	// Reasons name each shell construct, such as "operator &&".
	Reasons []string `json:"reasons,omitempty"`
	// Removable is true when every reason is mechanically removable: the
	// line then runs as Argv with Env set, and no shell.
	Removable bool `json:"removable"`
	// Argv is the direct argv, when NeedsShell is false or Removable.
	Argv []string `json:"argv,omitempty"`
	// Env are the VAR=x assignments to move into ENV.
	Env []string `json:"env,omitempty"`
	// Calls are the package scripts the line runs (npm run x, yarn x...).
	Calls []string `json:"calls,omitempty"`
	// Commands are the argv of every simple command in the line, in order,
	// with "<expanded>" for words that need expansion.
	Commands [][]string `json:"commands,omitempty"`
	// ParseError is set when the line is not valid shell.
	ParseError string `json:"parse_error,omitempty"`
}

// Reasons that a rewrite removes mechanically.
const (
	ReasonAssign = "variable assignment prefix"
	ReasonExec   = "exec builtin"
)

var builtins = map[string]bool{
	"cd": true, "export": true, "source": true, ".": true, "set": true, "unset": true, "trap": true,
	"eval": true, "exit": true, "wait": true, "read": true, "shift": true, "ulimit": true, "umask": true,
	"alias": true, "test": false, // test and [ exist as binaries in most images, but not in distroless
}

// shells are the basenames that are a shell.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true, "yash": true, "busybox": true}

// IsShell reports whether an executable's basename is a shell.
func IsShell(name string) bool { return shells[path.Base(name)] }

// Analyze parses line as a POSIX shell command line.
func Analyze(line string) Analysis {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return Analysis{NeedsShell: true, Reasons: []string{"not valid POSIX shell"}, ParseError: err.Error()}
	}
	a := &analyzer{}
	if strings.Contains(line, "\r") {
		// sh reads a carriage return as part of a word; the parser takes
		// it for a blank.
		a.reason("carriage return")
	}
	if len(f.Stmts) == 0 {
		return Analysis{NeedsShell: true, Reasons: []string{"empty command"}}
	}
	if len(f.Stmts) > 1 {
		a.reason("command list (; or newline)")
	}
	for _, st := range f.Stmts {
		a.stmt(st, true)
	}
	return a.result()
}

type analyzer struct {
	reasons  map[string]bool
	argv     []string
	env      []string
	calls    []string
	commands [][]string
	simple   int // simple commands seen
}

func (a *analyzer) reason(r string) {
	if a.reasons == nil {
		a.reasons = map[string]bool{}
	}
	a.reasons[r] = true
}

func (a *analyzer) stmt(st *syntax.Stmt, top bool) {
	if st.Negated {
		a.reason("negation !")
	}
	if st.Background {
		a.reason("background &")
	}
	if st.Coprocess {
		a.reason("coprocess")
	}
	if len(st.Redirs) > 0 {
		a.reason("redirection")
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		a.call(c, top)
	case *syntax.BinaryCmd:
		a.reason("operator " + c.Op.String())
		a.stmt(c.X, false)
		a.stmt(c.Y, false)
	case *syntax.Subshell:
		a.reason("subshell")
		for _, s := range c.Stmts {
			a.stmt(s, false)
		}
	case *syntax.Block:
		a.reason("command group")
		for _, s := range c.Stmts {
			a.stmt(s, false)
		}
	case nil:
		a.reason("empty command")
	default:
		a.reason(fmt.Sprintf("shell construct %s", strings.TrimPrefix(fmt.Sprintf("%T", c), "*syntax.")))
		// if, for, while, case and function bodies: their commands are
		// the line's commands too.
		a.nested(c)
	}
}

// nested records the commands of the statements inside n: a compound
// command's, and a command substitution's ($(sha256sum f) runs
// sha256sum).
func (a *analyzer) nested(n syntax.Node) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok {
			a.stmt(st, false)
			return false
		}
		return true
	})
}

func (a *analyzer) call(c *syntax.CallExpr, top bool) {
	a.simple++
	// The commands its words substitute come after it, so that the
	// first command stays the one the line runs (curl in
	// curl "http://x:$(cat /port)/").
	defer func() {
		for _, as := range c.Assigns {
			if as.Value != nil {
				a.nested(as.Value)
			}
		}
		for _, w := range c.Args {
			a.nested(w)
		}
	}()
	var env []string
	for _, as := range c.Assigns {
		if as.Value == nil || as.Naked || as.Append || as.Index != nil || as.Array != nil {
			a.reason("variable assignment")
			continue
		}
		v, ok := a.literal(as.Value)
		if !ok {
			continue
		}
		env = append(env, as.Name.Value+"="+v)
	}
	if len(c.Assigns) > 0 {
		a.reason(ReasonAssign)
	}
	var argv []string
	for _, w := range c.Args {
		v, ok := a.literal(w)
		if !ok {
			v = "<expanded>"
		}
		argv = append(argv, v)
	}
	if len(argv) == 0 {
		a.reason("assignment without a command")
		return
	}
	if argv[0] == "exec" && len(argv) > 1 {
		a.reason(ReasonExec)
		argv = argv[1:]
	}
	a.commands = append(a.commands, argv)
	if builtins[argv[0]] {
		a.reason("shell builtin " + argv[0])
	}
	if IsShell(argv[0]) {
		a.reason("runs a shell: " + argv[0])
	}
	if s, ok := scriptCall(argv); ok {
		a.calls = append(a.calls, s)
		a.reason("calls package script " + s)
	}
	if top {
		a.argv, a.env = argv, env
	}
}

// literal returns the value of a word that involves no expansion, and
// records the reasons a word needs a shell.
func (a *analyzer) literal(w *syntax.Word) (string, bool) {
	for i, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok {
			if strings.ContainsAny(lit.Value, "*?[") {
				a.reason("glob pattern")
			}
			if i == 0 && strings.HasPrefix(lit.Value, "~") {
				a.reason("tilde expansion")
			}
		}
	}
	v, part, ok := wordValue(w)
	if !ok {
		a.expansion(part)
	}
	return v, ok
}

func (a *analyzer) expansion(p syntax.WordPart) {
	switch p.(type) {
	case *syntax.ParamExp:
		a.reason("variable expansion")
	case *syntax.CmdSubst:
		a.reason("command substitution")
	case *syntax.ArithmExp:
		a.reason("arithmetic expansion")
	case *syntax.ProcSubst:
		a.reason("process substitution")
	case *syntax.SglQuoted:
		a.reason("$'...' quoting")
	case *syntax.DblQuoted:
		a.reason("$\"...\" quoting")
	default:
		a.reason("expansion")
	}
}

func (a *analyzer) result() Analysis {
	r := Analysis{NeedsShell: len(a.reasons) > 0, Calls: a.calls, Commands: a.commands}
	removable := true
	for k := range a.reasons {
		r.Reasons = append(r.Reasons, k)
		if k != ReasonAssign && k != ReasonExec {
			removable = false
		}
	}
	sort.Strings(r.Reasons)
	r.Removable = removable && a.simple == 1
	if !r.NeedsShell || r.Removable {
		r.Argv, r.Env = a.argv, a.env
	}
	return r
}

// Runner is a package manager that runs package scripts.
type Runner string

// The runners.
const (
	NPM  Runner = "npm"
	Yarn Runner = "yarn"
	PNPM Runner = "pnpm"
	// NodeRun is node --run, Node's own script runner.
	NodeRun Runner = "node --run"
)

// ScriptInvocation is "npm start", "yarn run build" and the like.
type ScriptInvocation struct {
	Runner Runner
	Script string
	// Args are passed to the script: its positional arguments and those
	// after --. The package manager's own options are not.
	Args []string
	// Env is what the command line puts in the script's environment: for
	// npm, npm_config_<name> for each option npm does not know itself,
	// and NODE_OPTIONS for --node-options.
	Env []string
	// NoHooks is set when the command line turns the pre and post scripts
	// off (npm --ignore-scripts).
	NoHooks bool
	// Dir is the directory, relative to the working directory (or
	// absolute), whose package.json the runner runs: npm --prefix, pnpm
	// -C/--dir, yarn --cwd.
	Dir string
	// Workspace selects the workspace package (under Dir) whose script
	// runs, in its own directory: npm -w NAME|PATH, pnpm --filter
	// NAME|./PATH, yarn workspace NAME.
	Workspace string
	// Unsupported names the options that change which package's script
	// runs, or whether one runs at all (npm --workspaces, --help), each
	// with why. Running the script's command directly cannot keep them.
	Unsupported []string
}

// ParseInvocation recognises argv as a package manager running a script:
// npm start|stop|test|restart, npm run[-script] NAME, yarn [run] NAME,
// pnpm [run] NAME, yarn workspace X NAME, node --run NAME. ok is false for anything else (npm ci, yarn install...).
// npm's options are read as npm reads them, wherever they are.
func ParseInvocation(argv []string) (ScriptInvocation, bool) {
	if len(argv) < 2 {
		return ScriptInvocation{}, false
	}
	switch runner := Runner(path.Base(argv[0])); runner {
	case NPM:
		return npmInvocation(argv[1:])
	case Yarn, PNPM:
		return yarnPnpmInvocation(runner, argv[1:])
	case NodeRun: // not a program name
	case "node":
		if slices.ContainsFunc(argv[1:], func(a string) bool { return a == "--run" || strings.HasPrefix(a, "--run=") }) {
			return nodeRunInvocation(argv[1:])
		}
	}
	return ScriptInvocation{}, false
}

// managerCommands are yarn and pnpm subcommands that are not scripts.
var managerCommands = map[string]bool{
	"install": true, "add": true, "remove": true, "ci": true, "i": true, "exec": true, "dlx": true,
	"build": false, "why": true, "list": true, "ls": true, "upgrade": true, "up": true, "update": true,
	"config": true, "cache": true, "init": true, "create": true, "dedupe": true, "prune": true,
	"import": true, "link": true, "unlink": true, "pack": true, "publish": true, "rebuild": true,
	"store": true, "audit": true, "outdated": true, "workspace": true, "workspaces": true, "set": true,
	"node": true, "bin": true, "info": true, "global": true, "fetch": true, "deploy": true,
}

func scriptCall(argv []string) (string, bool) {
	if inv, ok := ParseInvocation(argv); ok {
		return inv.Script, true
	}
	switch path.Base(argv[0]) {
	case "npm-run-all", "run-s", "run-p", "concurrently":
		return strings.Join(argv[1:], " "), true
	}
	return "", false
}

// CdThen reads a line that is `cd DIR && COMMAND` (COMMAND one simple
// command, maybe exec'd or a package script call): the directory and the
// command's argv. A rewrite runs COMMAND with DIR as its working
// directory, and no shell. ok is false for anything else, including cd
// with an option, cd - and a DIR that needs expansion.
func CdThen(a Analysis) (dir string, argv []string, ok bool) {
	if len(a.Commands) != 2 || len(a.Commands[0]) != 2 || a.Commands[0][0] != "cd" || len(a.Commands[1]) == 0 {
		return "", nil, false
	}
	dir = a.Commands[0][1]
	if dir == "" || dir == "-" || dir == "<expanded>" || builtins[a.Commands[1][0]] || strings.HasPrefix(dir, "-") || slices.Contains(a.Commands[1], "<expanded>") {
		return "", nil, false
	}
	for _, r := range a.Reasons {
		switch {
		case r == "operator &&", r == "shell builtin cd", r == ReasonExec, strings.HasPrefix(r, "calls package script "):
		default:
			return "", nil, false
		}
	}
	return dir, a.Commands[1], true
}
