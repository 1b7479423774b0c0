package shellcmd

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Script is what an entrypoint script does, when all it does is set
// defaults and hand over to its command.
type Script struct {
	// DefaultsOnly is true when the script only sets environment defaults
	// (VAR=value, export VAR=value, export VAR=${VAR:-value}, set -e) and
	// ends by exec'ing its arguments or a command. Such a script is ENV
	// plus an exec-form command.
	DefaultsOnly bool `json:"defaults_only"`
	// Env are the defaults, as ENV takes them.
	Env []string `json:"env,omitempty"`
	// Exec is the command it execs: "$@" for its arguments.
	Exec []string `json:"exec,omitempty"`
	// ExecLine is the line of the exec, and Lines the lines of the
	// defaults and the exec, for evidence.
	ExecLine int   `json:"exec_line,omitempty"`
	Lines    []int `json:"lines,omitempty"`
	// Reasons say what else the script does (a condition, a loop, a trap,
	// a command before the exec).
	Reasons []string `json:"reasons,omitempty"`
	// ReasonLines are the lines of the statements that do more than set
	// defaults, for evidence.
	ReasonLines []int `json:"reason_lines,omitempty"`
	// Programs are the programs the script runs by a literal name (what
	// exec runs included), in order, once each: "nothing at run time uses
	// X" is said only when the entrypoint script does not run X either.
	Programs []string `json:"programs,omitempty"`
	// Wrappers are the init and user wrappers among Programs (tini,
	// dumb-init, gosu, su-exec), each with the first line that runs it:
	// what they wrap is among Programs too.
	Wrappers []Wrapped `json:"wrappers,omitempty"`
	// Runs are the commands the script runs, in order, past their init and
	// user wrappers, each with its line: builtins aside, except those that
	// run other code (. and source, eval) and cd. A word whose value is not known
	// is "<expanded>", and ends the command's words. When the script does
	// more than set defaults, the module graph starts from the ones that
	// run node code.
	Runs []ScriptRun `json:"runs,omitempty"`
}

// ScriptRun is one command a script runs.
type ScriptRun struct {
	Argv []string `json:"argv"`
	Line int      `json:"line"`
}

// RunsArgs reports a run of "$@" alone: the script's own arguments run as
// a command (exec "$@", su-exec app "$@").
func (r ScriptRun) RunsArgs() bool { return len(r.Argv) == 1 && r.Argv[0] == ScriptArgs }

// HandsOver reports a script that runs its own arguments as a command.
func (s *Script) HandsOver() bool { return slices.ContainsFunc(s.Runs, ScriptRun.RunsArgs) }

// Wrapped is an init or user wrapper an entrypoint script runs.
type Wrapped struct {
	Program string `json:"program"`
	Line    int    `json:"line"`
}

// AnalyzeScript reads a POSIX shell script.
func AnalyzeScript(src string) Script {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return Script{Reasons: []string{"not valid shell: " + err.Error()}}
	}
	var s Script
	s.Programs, s.Wrappers, s.Runs = programs(f)
	// vars are the variables the script has set to a literal so far, at
	// its top level: a later $VAR word is their value.
	vars := map[string]string{}
	if strings.Contains(src, "\r") {
		// sh reads a carriage return (a CRLF line end) as part of a word;
		// the parser takes it for a blank.
		s.Reasons = append(s.Reasons, "a carriage return (CRLF line ends?)")
	}
	for i, st := range f.Stmts {
		last := i == len(f.Stmts)-1
		before := len(s.Reasons)
		s.stmt(st, last, vars)
		if len(s.Reasons) > before {
			s.ReasonLines = append(s.ReasonLines, int(st.Pos().Line()))
		}
	}
	if s.Exec == nil && len(s.Reasons) == 0 {
		s.Reasons = append(s.Reasons, "it does not end by exec'ing a command")
	}
	s.DefaultsOnly = len(s.Reasons) == 0
	return s
}

// stmt reads one top-level statement of the script.
func (s *Script) stmt(st *syntax.Stmt, last bool, vars map[string]string) {
	if st.Negated || st.Background || len(st.Redirs) > 0 {
		s.Reasons = append(s.Reasons, "a redirection or background job at line "+itoa(st.Pos().Line()))
		return
	}
	s.Lines = append(s.Lines, int(st.Pos().Line()))
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		s.call(c, last, vars)
	case *syntax.DeclClause:
		if c.Variant.Value != "export" {
			s.Reasons = append(s.Reasons, c.Variant.Value+" at line "+itoa(st.Pos().Line()))
			return
		}
		for _, as := range c.Args {
			if as.Naked && as.Value == nil && as.Index == nil && as.Array == nil {
				continue // export VAR: every ENV variable is exported already
			}
			s.assign(as)
			recordVar(vars, as)
		}
	default:
		s.Reasons = append(s.Reasons, "logic at line "+itoa(st.Pos().Line())+" ("+typeName(c)+")")
	}
}

func (s *Script) call(c *syntax.CallExpr, last bool, vars map[string]string) {
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			s.assign(as)
			recordVar(vars, as)
		}
		return
	}
	var argv []string
	for _, w := range c.Args {
		if isDollarAt(w) {
			argv = append(argv, `"$@"`)
			continue
		}
		if name, quoted, ok := simpleParam(w); ok {
			if v, known := vars[name]; known {
				// $GOSU set to "gosu app" above: the words it splits into.
				if quoted {
					argv = append(argv, v)
				} else {
					argv = append(argv, strings.Fields(v)...)
				}
				continue
			}
		}
		v, ok := plainWord(w)
		if !ok {
			s.Reasons = append(s.Reasons, "an expanded word at line "+itoa(w.Pos().Line()))
			return
		}
		argv = append(argv, v)
	}
	if len(argv) == 0 {
		// Only variables that were empty: no command at all.
		return
	}
	switch {
	case argv[0] == "set" && len(c.Assigns) == 0 && onlyOptions(argv[1:]):
		return // shell options change nothing once the shell is gone
	case argv[0] == "exec" && last && len(argv) > 1 && len(c.Assigns) == 0 && !strings.HasPrefix(argv[1], "-"):
		s.Exec = argv[1:]
		s.ExecLine = int(c.Pos().Line())
	default:
		s.Reasons = append(s.Reasons, "it runs "+argv[0]+" at line "+itoa(c.Pos().Line()))
	}
}

// onlyOptions reports set's arguments that are options alone: "set --"
// or any operand replaces "$@", which is logic.
func onlyOptions(args []string) bool {
	for _, a := range args {
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
			return false
		}
	}
	return true
}

// assign records VAR=value or VAR=${VAR:-value}; anything else is logic.
func (s *Script) assign(as *syntax.Assign) {
	if as.Name == nil { // an option such as export -n
		s.Reasons = append(s.Reasons, "export with options")
		return
	}
	if as.Value == nil || as.Naked || as.Append || as.Index != nil || as.Array != nil {
		s.Reasons = append(s.Reasons, "a variable declared without a plain value: "+as.Name.Value)
		return
	}
	if v, ok := plainWord(as.Value); ok {
		s.Env = append(s.Env, as.Name.Value+"="+v)
		return
	}
	// ${VAR:-default} for the same VAR is a default: ENV VAR=default, which
	// the container's environment overrides just the same.
	if len(as.Value.Parts) == 1 {
		if pe, ok := as.Value.Parts[0].(*syntax.ParamExp); ok && pe.Param.Value == as.Name.Value && pe.Exp != nil &&
			(pe.Exp.Op == syntax.DefaultUnsetOrNull || pe.Exp.Op == syntax.DefaultUnset) {
			if pe.Exp.Word == nil {
				s.Env = append(s.Env, as.Name.Value+"=")
				return
			}
			if v, ok := plainWord(pe.Exp.Word); ok {
				s.Env = append(s.Env, as.Name.Value+"="+v)
				return
			}
		}
		if dq, ok := as.Value.Parts[0].(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			w := &syntax.Word{Parts: []syntax.WordPart{dq.Parts[0]}}
			tmp := &syntax.Assign{Name: as.Name, Value: w}
			s.assign(tmp)
			return
		}
	}
	s.Reasons = append(s.Reasons, "a computed value for "+as.Name.Value)
}

func isDollarAt(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	dq, ok := w.Parts[0].(*syntax.DblQuoted)
	if !ok || len(dq.Parts) != 1 {
		return false
	}
	pe, ok := dq.Parts[0].(*syntax.ParamExp)
	return ok && pe.Param.Value == "@" && pe.Exp == nil && !pe.Length
}

// plainWord returns a word with no expansion, glob or tilde in it.
func plainWord(w *syntax.Word) (string, bool) {
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.ContainsAny(lit.Value, "*?[~") {
			return "", false
		}
	}
	v, _, ok := wordValue(w)
	return v, ok
}

func typeName(v any) string {
	switch v.(type) {
	case *syntax.IfClause:
		return "if"
	case *syntax.WhileClause:
		return "while"
	case *syntax.ForClause:
		return "for"
	case *syntax.CaseClause:
		return "case"
	case *syntax.BinaryCmd:
		return "&& or ||"
	case *syntax.FuncDecl:
		return "a function"
	case *syntax.TestClause:
		return "[[ ]]"
	}
	return "a shell construct"
}

func itoa(n uint) string { return strconv.FormatUint(uint64(n), 10) }

// programs lists the programs f runs by a literal name, anywhere in it
// (in conditions, loops and functions too), once each, in order; the
// builtins exec, command and nohup stand for the program they run, and an
// init or user wrapper (tini --, gosu USER) for itself and the program it
// wraps. A word that is a variable the script set to a literal earlier
// ($GOSU after GOSU="gosu app", in any branch) is each value it may have.
func programs(f *syntax.File) (out []string, wrappers []Wrapped, runs []ScriptRun) {
	seen, seenWrap := map[string]bool{}, map[string]bool{}
	vars := map[string][]string{}
	add := func(v string) {
		if !seen[v] && !builtin[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.DeclClause:
			for _, as := range n.Args {
				recordValues(vars, as)
			}
			return true
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				for _, as := range n.Assigns {
					recordValues(vars, as)
				}
				return true
			}
			line := int(n.Pos().Line())
			for _, argv := range expansions(n.Args, vars) {
				cmd := commandOf(argv)
				if len(cmd) == 0 {
					runs = appendRun(runs, argv, line)
					continue
				}
				if init, rest := dockerfile.SplitInit(cmd); init != nil {
					add(init[0])
					if !seenWrap[init[0]] {
						seenWrap[init[0]] = true
						wrappers = append(wrappers, Wrapped{Program: init[0], Line: line})
					}
					cmd = commandOf(rest)
					if len(cmd) == 0 {
						runs = appendRun(runs, rest, line)
						continue
					}
				}
				add(cmd[0])
				runs = appendRun(runs, cmd, line)
			}
		}
		return true
	})
	return out, wrappers, runs
}

// codeBuiltins are the builtins that run other code (another script, or a
// line built at run time) or change where later commands run (cd).
var codeBuiltins = map[string]bool{".": true, "source": true, "eval": true, "cd": true}

// appendRun adds argv, a command the script runs, to runs, with unknown
// words as "<expanded>"; a builtin that runs no other code is left out.
func appendRun(runs []ScriptRun, argv []string, line int) []ScriptRun {
	for len(argv) > 0 && (argv[0] == "exec" || argv[0] == "command" || argv[0] == "nohup") {
		argv = argv[1:] // exec "$@": what it runs
	}
	if len(argv) == 0 || builtin[argv[0]] && !codeBuiltins[argv[0]] {
		return runs
	}
	out := make([]string, 0, len(argv))
	for _, w := range argv {
		if w == argsWord {
			out = append(out, ScriptArgs)
			break
		}
		if w == unknownWord {
			out = append(out, "<expanded>")
			break
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		out = []string{"<expanded>"}
	}
	return append(runs, ScriptRun{Argv: out, Line: line})
}

// nodeOptions reports an unknown word w of words that sits between node
// and a literal script file it runs (node $NODE_OPTIONS app.js "$@", as
// node-red's entrypoint runs it): node's options, which the variable
// holds, since what follows the script is the script's. The module graph
// then starts at the script; preloads an ENV NODE_OPTIONS names are read
// apart.
func nodeOptions(argv []string, words []*syntax.Word, w *syntax.Word) bool {
	for len(argv) > 0 && (argv[0] == "exec" || argv[0] == "command" || argv[0] == "nohup") {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return false
	}
	if b := path.Base(argv[0]); b != "node" && b != "nodejs" {
		return false
	}
	after := false
	for _, x := range words {
		if x == w {
			after = true
			continue
		}
		if !after {
			continue
		}
		v, ok := plainWord(x)
		if ok && !strings.HasPrefix(v, "-") && jsFile(v) {
			return true
		}
	}
	return false
}

// jsFile reports a path with a JavaScript or TypeScript file's extension.
func jsFile(w string) bool {
	switch path.Ext(w) {
	case ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts":
		return true
	}
	return false
}

// unknownWord stands for a word whose value is not known statically, and
// argsWord for "$@", the script's arguments.
const (
	unknownWord = "\x00"
	argsWord    = "\x00@"
)

// ScriptArgs is how a script's run shows "$@", the script's own
// arguments (exec "$@", su-exec app "$@", node main.js "$@").
const ScriptArgs = `"$@"`

// commandOf returns argv from the program it runs: past exec, command and
// nohup; nil when that word is not known or is an option.
func commandOf(argv []string) []string {
	for i, v := range argv {
		switch {
		case v == unknownWord || v == argsWord || strings.HasPrefix(v, "-"):
			return nil
		case v == "exec" || v == "command" || v == "nohup":
			continue
		}
		return argv[i:]
	}
	return nil
}

// maxExpansions bounds the argv a command line is read as, one per value
// its variables may have.
const maxExpansions = 8

// expansions returns the argv a command's words may be, up to the first
// word whose value is unknown (then unknownWord): a variable with known
// values is each of them, split into words unless quoted.
func expansions(words []*syntax.Word, vars map[string][]string) [][]string {
	alts := [][]string{nil}
	for _, w := range words {
		v, ok := plainWord(w)
		if lit := w.Lit(); lit == "[" || lit == "]" {
			v, ok = lit, true // test's brackets, not a glob
		}
		if ok {
			for i := range alts {
				alts[i] = append(alts[i], v)
			}
			continue
		}
		name, quoted, ok := simpleParam(w)
		if ok && quoted && name == "@" {
			// "$@": the script's own arguments, which end the command.
			for i := range alts {
				alts[i] = append(alts[i], argsWord)
			}
			return alts
		}
		vals := vars[name]
		if (!ok || len(vals) == 0) && nodeOptions(alts[0], words, w) {
			continue
		}
		if !ok || len(vals) == 0 {
			for i := range alts {
				alts[i] = append(alts[i], unknownWord)
			}
			if last := words[len(words)-1]; last != w {
				// su-exec "$PUID:$PGID" "$@": a word not known, then the
				// script's arguments as the command's last words.
				if name, quoted, ok := simpleParam(last); ok && quoted && name == "@" {
					for i := range alts {
						alts[i] = append(alts[i], argsWord)
					}
				}
			}
			return alts
		}
		var next [][]string
		for _, a := range alts {
			for _, v := range vals {
				if len(next) == maxExpansions {
					break
				}
				words := strings.Fields(v)
				if quoted {
					words = []string{v}
				}
				next = append(next, append(slices.Clone(a), words...))
			}
		}
		alts = next
	}
	return alts
}

// simpleParam reads a word that is one variable and nothing else: $NAME,
// ${NAME} or "$NAME" (quoted: not split into words).
func simpleParam(w *syntax.Word) (name string, quoted, ok bool) {
	if len(w.Parts) != 1 {
		return "", false, false
	}
	p := w.Parts[0]
	if dq, isDQ := p.(*syntax.DblQuoted); isDQ && !dq.Dollar && len(dq.Parts) == 1 {
		p, quoted = dq.Parts[0], true
	}
	pe, isPE := p.(*syntax.ParamExp)
	if !isPE || pe.Excl || pe.Length || pe.Width || pe.Index != nil || pe.Slice != nil || pe.Repl != nil || pe.Names != 0 || pe.Exp != nil || pe.Param == nil {
		return "", false, false
	}
	return pe.Param.Value, quoted, true
}

// recordVar keeps a variable's literal value (VAR=value, export
// VAR=value); any other assignment makes it unknown.
func recordVar(vars map[string]string, as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	if v, ok := literalAssign(as); ok {
		vars[as.Name.Value] = v
		return
	}
	if !as.Naked {
		delete(vars, as.Name.Value)
	}
}

// recordValues adds a literal value a variable is given anywhere (in a
// branch too) to the values it may have.
func recordValues(vars map[string][]string, as *syntax.Assign) {
	if as.Name == nil {
		return
	}
	if v, ok := literalAssign(as); ok && !slices.Contains(vars[as.Name.Value], v) {
		vars[as.Name.Value] = append(vars[as.Name.Value], v)
	}
}

func literalAssign(as *syntax.Assign) (string, bool) {
	if as.Value == nil && !as.Naked && !as.Append && as.Index == nil && as.Array == nil {
		return "", true // VAR=
	}
	if as.Value == nil || as.Naked || as.Append || as.Index != nil || as.Array != nil {
		return "", false
	}
	return plainWord(as.Value)
}

// builtin are shell builtins, which run no program.
var builtin = map[string]bool{"set": true, "cd": true, "export": true, "unset": true, "shift": true, "trap": true, "wait": true,
	":": true, ".": true, "source": true, "eval": true, "read": true, "return": true, "exit": true, "local": true, "true": true,
	"false": true, "[": true, "test": true, "echo": true, "printf": true, "umask": true, "ulimit": true, "break": true, "continue": true}
