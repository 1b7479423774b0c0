package shellcmd

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// CheckLine is a health check's shell line that runs one command, with
// what a fallback after || does to its exit status.
type CheckLine struct {
	// Argv is the command; Env the VAR=x assignments before it.
	Argv []string
	Env  []string
	// AlwaysSucceeds is set when a fallback makes the line exit 0 whatever
	// the command does ("|| exit 0", "|| true", "|| :"). A fallback that
	// exits non-zero ("|| exit 1", "|| exit", "|| false") leaves the
	// check's outcome as the command's: Docker takes any non-zero status
	// as unhealthy.
	AlwaysSucceeds bool
	// Grep is set when the command's output is piped into grep: the
	// line's status is then grep's (sh has no pipefail), not the
	// command's.
	Grep *Grep
	// EnvWords are the words of Argv that the shell builds from the
	// environment (http://localhost:${PORT:-3000}/health); Argv holds
	// them with their defaults.
	EnvWords []EnvWord
}

// ParseCheckLine reads line as a health check: one command, its output
// sent to /dev/null or not, or piped into a grep whose pattern a generated
// check can carry (ParseGrep), and at most one fallback after ||. ok is
// false, with why, for anything else (another pipe, a chain, an
// expansion).
func ParseCheckLine(line string) (cl CheckLine, why string, ok bool) {
	if strings.Contains(line, "\r") {
		return cl, "it has a carriage return", false
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return cl, "it is not valid POSIX shell", false
	}
	if len(f.Stmts) != 1 {
		return cl, "it is not one command", false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return cl, "it negates, backgrounds or redirects the whole line", false
	}
	cmd := st
	if bin, isBin := st.Cmd.(*syntax.BinaryCmd); isBin && bin.Op != syntax.Pipe {
		if bin.Op != syntax.OrStmt {
			return cl, "it runs more than one command (" + bin.Op.String() + ")", false
		}
		always, fbOK := fallback(bin.Y)
		if !fbOK {
			return cl, "what runs after || is not exit, true or false", false
		}
		cl.AlwaysSucceeds = always
		cmd = bin.X
	}
	if pipe, isPipe := cmd.Cmd.(*syntax.BinaryCmd); isPipe && pipe.Op == syntax.Pipe && !cmd.Negated && len(cmd.Redirs) == 0 {
		// grep's own output going to /dev/null (grep -E ok > /dev/null)
		// changes only what the health log shows, not the status.
		gargv, ok := plainArgv(withoutDiscards(pipe.Y))
		if !ok {
			return cl, "what the pipe feeds is not a plain command", false
		}
		g, why, ok := ParseGrep(gargv)
		if !ok {
			return cl, why, false
		}
		cl.Grep = &g
		cmd = pipe.X
	}
	call, isCall := cmd.Cmd.(*syntax.CallExpr)
	if !isCall || cmd.Negated || cmd.Background || cmd.Coprocess {
		return cl, "it is not a simple command", false
	}
	for _, r := range cmd.Redirs {
		if !discards(r) {
			return cl, "it redirects to something other than /dev/null", false
		}
	}
	for _, as := range call.Assigns {
		if as.Value == nil || as.Naked || as.Append || as.Index != nil || as.Array != nil {
			return cl, "it has a variable assignment that is not VAR=value", false
		}
		v, ok := plainWord(as.Value)
		if !ok {
			return cl, "a variable's value is expanded by the shell", false
		}
		cl.Env = append(cl.Env, as.Name.Value+"="+v)
	}
	for _, w := range call.Args {
		v, ok := plainWord(w)
		if !ok {
			parts, isEnv := envWord(w)
			if !isEnv {
				return cl, "a word is expanded by the shell (a glob, a command substitution, or a variable expansion other than $VAR, ${VAR} and ${VAR:-default})", false
			}
			ew := EnvWord{Index: len(cl.Argv), Parts: parts}
			cl.EnvWords = append(cl.EnvWords, ew)
			v = ew.Resolve(nil)
		}
		cl.Argv = append(cl.Argv, v)
	}
	if len(cl.Argv) > 1 && cl.Argv[0] == "exec" {
		cl.Argv = cl.Argv[1:]
		for i := range cl.EnvWords {
			cl.EnvWords[i].Index--
		}
	}
	if len(cl.EnvWords) > 0 && cl.EnvWords[0].Index <= 0 {
		return cl, "the command's name comes from a variable", false
	}
	if len(cl.Argv) == 0 {
		return cl, "it runs no command", false
	}
	if builtins[cl.Argv[0]] || cl.Argv[0] == "exec" || IsShell(cl.Argv[0]) {
		return cl, "it runs " + cl.Argv[0], false
	}
	return cl, "", true
}

// withoutDiscards is st without its redirections when each of them only
// discards output (to /dev/null, or 2>&1 after it); st itself otherwise.
func withoutDiscards(st *syntax.Stmt) *syntax.Stmt {
	if len(st.Redirs) == 0 || slices.ContainsFunc(st.Redirs, func(r *syntax.Redirect) bool { return !discards(r) }) {
		return st
	}
	c := *st
	c.Redirs = nil
	return &c
}

// plainArgv is st's words when st is a plain command: no assignment,
// redirection or expansion.
func plainArgv(st *syntax.Stmt) ([]string, bool) {
	call, isCall := st.Cmd.(*syntax.CallExpr)
	if !isCall || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, false
	}
	var argv []string
	for _, w := range call.Args {
		v, ok := plainWord(w)
		if !ok {
			return nil, false
		}
		argv = append(argv, v)
	}
	return argv, len(argv) > 0
}

// fallback reads what runs after ||: always is true when it exits 0.
func fallback(st *syntax.Stmt) (always, ok bool) {
	argv, plain := plainArgv(st)
	if !plain {
		return false, false
	}
	switch {
	case len(argv) == 1 && (argv[0] == "true" || argv[0] == ":"):
		return true, true
	case len(argv) == 1 && (argv[0] == "false" || argv[0] == "exit"):
		// exit alone exits with the failed command's status.
		return false, true
	case len(argv) == 2 && argv[0] == "exit":
		n, err := strconv.Atoi(argv[1])
		if err != nil || n < 0 {
			return false, false
		}
		return n%256 == 0, true
	}
	return false, false
}

// discards reports a redirection that throws output away (>/dev/null,
// 2>&1 and the like) and so changes nothing about the exit status.
func discards(r *syntax.Redirect) bool {
	if r.N != nil && r.N.Value != "1" && r.N.Value != "2" {
		return false
	}
	target, ok := plainWord(r.Word)
	if !ok {
		return false
	}
	if op := r.Op; op == syntax.RdrOut || op == syntax.AppOut || op == syntax.RdrClob {
		return target == "/dev/null"
	}
	if r.Op == syntax.DplOut {
		return target == "1" || target == "2"
	}
	return false
}
