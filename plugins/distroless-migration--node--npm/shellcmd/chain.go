package shellcmd

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command of a line: its argv and the VAR=x
// assignments that prefix it (its own environment, not the next one's).
type Command struct {
	Env  []string `json:"env,omitempty"`
	Argv []string `json:"argv"`
}

// AndList reads a line that is simple commands joined by && (one command
// is a list of one): each command with literal words, maybe prefixed by
// literal VAR=x assignments or exec. A program that runs them in order,
// stopping at the first that fails, does what sh did. why names the first
// construct that is more than that (||, a pipe, a redirection, an
// expansion, a glob...), and cmds is then nil.
func AndList(line string) (cmds []Command, why string) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, "not valid POSIX shell"
	}
	if strings.Contains(line, "\r") {
		return nil, "carriage return"
	}
	if len(f.Stmts) != 1 {
		return nil, "command list (; or newline)"
	}
	var walk func(st *syntax.Stmt) string
	walk = func(st *syntax.Stmt) string {
		switch {
		case st.Negated:
			return "negation !"
		case st.Background:
			return "background &"
		case st.Coprocess:
			return "coprocess"
		case len(st.Redirs) > 0:
			return "redirection"
		}
		switch c := st.Cmd.(type) {
		case *syntax.BinaryCmd:
			if c.Op != syntax.AndStmt {
				return "operator " + c.Op.String()
			}
			if w := walk(c.X); w != "" {
				return w
			}
			return walk(c.Y)
		case *syntax.CallExpr:
			cmd, w := literalCall(c)
			if w != "" {
				return w
			}
			cmds = append(cmds, cmd)
			return ""
		case nil:
			return "empty command"
		default:
			return "a shell construct other than a simple command"
		}
	}
	if w := walk(f.Stmts[0]); w != "" {
		return nil, w
	}
	return cmds, ""
}

// literalCall is a simple command whose words and assignments are all
// literal, with a leading exec dropped.
func literalCall(c *syntax.CallExpr) (Command, string) {
	var cmd Command
	for _, as := range c.Assigns {
		if as.Value == nil || as.Naked || as.Append || as.Index != nil || as.Array != nil {
			return cmd, "variable assignment"
		}
		v, _, ok := wordValue(as.Value)
		if !ok {
			return cmd, "expansion in an assignment"
		}
		cmd.Env = append(cmd.Env, as.Name.Value+"="+v)
	}
	for _, w := range c.Args {
		for _, p := range w.Parts {
			if lit, ok := p.(*syntax.Lit); ok && strings.ContainsAny(lit.Value, "*?[") {
				return cmd, "glob pattern"
			}
		}
		if lit, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
			return cmd, "tilde expansion"
		}
		v, _, ok := wordValue(w)
		if !ok {
			return cmd, "expansion"
		}
		cmd.Argv = append(cmd.Argv, v)
	}
	if len(cmd.Argv) == 0 {
		return cmd, "assignment without a command"
	}
	if cmd.Argv[0] == "exec" && len(cmd.Argv) > 1 {
		cmd.Argv = cmd.Argv[1:]
	}
	return cmd, ""
}

// EnvPrefix reads a command that sets variables and runs another:
// cross-env A=b C=d CMD... and env A=b CMD... (env without options). It
// returns the assignments and the command. Both find CMD by PATH, which
// is not how a distroless image finds node, so a rewrite sets the
// variables itself and runs CMD. ok is false for anything else, and for
// cross-env-shell, which runs CMD through a shell.
func EnvPrefix(argv []string) (env, cmd []string, ok bool) {
	if len(argv) < 2 {
		return nil, nil, false
	}
	rest := argv[1:]
	switch path.Base(argv[0]) {
	case "cross-env":
		if rest[0] == "--" {
			rest = rest[1:]
		}
	case "env":
		if rest[0] == "-" || rest[0] == "--" {
			return nil, nil, false // - empties the environment; -- is GNU's only
		}
	default:
		return nil, nil, false
	}
	for len(rest) > 0 {
		k, _, isAssign := strings.Cut(rest[0], "=")
		if !isAssign || !validName(k) {
			break
		}
		env = append(env, rest[0])
		rest = rest[1:]
	}
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		// No command, or an option of env (-i, -u) or cross-env.
		return nil, nil, false
	}
	return env, rest, true
}

func validName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, r := range k {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// RunAll reads npm-run-all, run-s and run-p: the package scripts they run,
// in order, each through the package manager (npm run NAME by default,
// with its pre and post scripts). parallel is set when any of them run at
// the same time (run-p, npm-run-all -p), which one process running them in
// order does not keep. why names what a rewrite cannot keep: a pattern
// (build:*), arguments given with a name, or an option that changes which
// scripts run or what a failure does. ok is false when argv is none of
// the three.
func RunAll(argv []string) (names []string, parallel bool, why string, ok bool) {
	if len(argv) == 0 {
		return nil, false, "", false
	}
	switch path.Base(argv[0]) {
	case "npm-run-all", "npm-run-all2":
	case "run-s":
	case "run-p":
		parallel = true
	default:
		return nil, false, "", false
	}
	for _, a := range argv[1:] {
		switch a {
		case "-s", "--sequential", "--serial":
			continue
		case "-p", "--parallel":
			parallel = true
			continue
		case "-l", "--print-label", "-n", "--print-name", "--silent", "--aggregate-output":
			continue // output only
		}
		switch {
		case a == "--":
			return nil, parallel, "arguments passed to the scripts (--)", true
		case strings.HasPrefix(a, "-"):
			return nil, parallel, "option " + a, true
		case strings.ContainsAny(a, "*?{} \t"):
			return nil, parallel, "the pattern or arguments " + strconv.Quote(a), true
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		return nil, parallel, "no script is named", true
	}
	return names, parallel, "", true
}

// IsBuiltin reports whether name is a shell builtin that no image has as
// a program (cd, export, source...).
func IsBuiltin(name string) bool { return builtins[name] }
