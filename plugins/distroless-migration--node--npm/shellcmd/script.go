package shellcmd

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
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
	// Programs are the programs the script runs by a literal name (what
	// exec runs included), in order, once each: "nothing at run time uses
	// X" is said only when the entrypoint script does not run X either.
	Programs []string `json:"programs,omitempty"`
}

// AnalyzeScript reads a POSIX shell script.
func AnalyzeScript(src string) Script {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return Script{Reasons: []string{"not valid shell: " + err.Error()}}
	}
	var s Script
	s.Programs = programs(f)
	if strings.Contains(src, "\r") {
		// sh reads a carriage return (a CRLF line end) as part of a word;
		// the parser takes it for a blank.
		s.Reasons = append(s.Reasons, "a carriage return (CRLF line ends?)")
	}
	for i, st := range f.Stmts {
		last := i == len(f.Stmts)-1
		if st.Negated || st.Background || len(st.Redirs) > 0 {
			s.Reasons = append(s.Reasons, "a redirection or background job at line "+itoa(st.Pos().Line()))
			continue
		}
		s.Lines = append(s.Lines, int(st.Pos().Line()))
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			s.call(c, last)
		case *syntax.DeclClause:
			if c.Variant.Value != "export" {
				s.Reasons = append(s.Reasons, c.Variant.Value+" at line "+itoa(st.Pos().Line()))
				continue
			}
			for _, as := range c.Args {
				if as.Naked && as.Value == nil && as.Index == nil && as.Array == nil {
					continue // export VAR: every ENV variable is exported already
				}
				s.assign(as)
			}
		default:
			s.Reasons = append(s.Reasons, "logic at line "+itoa(st.Pos().Line())+" ("+typeName(c)+")")
		}
	}
	if s.Exec == nil && len(s.Reasons) == 0 {
		s.Reasons = append(s.Reasons, "it does not end by exec'ing a command")
	}
	s.DefaultsOnly = len(s.Reasons) == 0
	return s
}

func (s *Script) call(c *syntax.CallExpr, last bool) {
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			s.assign(as)
		}
		return
	}
	var argv []string
	for _, w := range c.Args {
		if isDollarAt(w) {
			argv = append(argv, `"$@"`)
			continue
		}
		v, ok := plainWord(w)
		if !ok {
			s.Reasons = append(s.Reasons, "an expanded word at line "+itoa(w.Pos().Line()))
			return
		}
		argv = append(argv, v)
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
// builtins exec, command and nohup stand for the program they run.
func programs(f *syntax.File) []string {
	var out []string
	seen := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		for _, w := range c.Args {
			v, ok := plainWord(w)
			if !ok || strings.HasPrefix(v, "-") {
				break
			}
			if v == "exec" || v == "command" || v == "nohup" {
				continue
			}
			if !seen[v] && !builtin[v] {
				seen[v] = true
				out = append(out, v)
			}
			break
		}
		return true
	})
	return out
}

// builtin are shell builtins, which run no program.
var builtin = map[string]bool{"set": true, "cd": true, "export": true, "unset": true, "shift": true, "trap": true, "wait": true,
	":": true, ".": true, "source": true, "eval": true, "read": true, "return": true, "exit": true, "local": true, "true": true,
	"false": true, "[": true, "test": true, "echo": true, "printf": true, "umask": true, "ulimit": true, "break": true, "continue": true}
