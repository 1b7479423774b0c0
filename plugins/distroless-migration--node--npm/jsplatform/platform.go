// Package jsplatform reads the process.platform tests that guard
// JavaScript code: code that a test for another system (process.platform
// === 'win32', a switch case 'darwin', an early exit unless darwin) keeps
// from running never runs in a Linux image. Both the child_process
// analysis (calls) and the module graph (loads) read guards this way.
package jsplatform

import (
	"regexp"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// A node that an if, a ternary, an && or a switch case guards with a
// process.platform test for another system (process.platform === 'win32'
// runs cmd.exe, 'darwin' runs sw_vers) never runs in a Linux image. The
// guard is read from the node's own enclosing conditions; only a plain
// comparison with a string literal counts, alone or as a conjunct of an
// && condition.

// otherSystems are the process.platform values of systems other than
// Linux.
var otherSystems = map[string]bool{
	"darwin": true, "win32": true, "freebsd": true, "openbsd": true, "netbsd": true,
	"sunos": true, "aix": true, "android": true, "cygwin": true, "haiku": true,
}

// platformTest is one comparison of process.platform (or os.platform())
// with a string literal, either way round.
var platformTest = regexp.MustCompile(`^(?:(?:process\.platform|(?:os|require\(\s*['"](?:node:)?os['"]\s*\))\.platform\(\))\s*(===?|!==?)\s*['"]([a-z0-9]+)['"]|['"]([a-z0-9]+)['"]\s*(===?|!==?)\s*(?:process\.platform|(?:os|require\(\s*['"](?:node:)?os['"]\s*\))\.platform\(\)))$`)

// comparison reads s as a platform test: the platform and whether it
// tests for equality.
func comparison(s string) (platform string, equal, ok bool) {
	m := platformTest.FindStringSubmatch(strings.TrimSpace(s))
	switch {
	case m == nil:
		return "", false, false
	case m[2] != "":
		return m[2], strings.HasPrefix(m[1], "=="), true
	default:
		return m[3], strings.HasPrefix(m[4], "=="), true
	}
}

// unparen strips the parentheses around a whole expression.
func unparen(s string) string {
	s = strings.TrimSpace(s)
	for strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") && balanced(s[1:len(s)-1]) {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// balanced reports whether s's parentheses pair up.
func balanced(s string) bool {
	depth := 0
	for _, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// Unparen strips the parentheses around a whole expression.
func Unparen(s string) string { return unparen(s) }

// guardedFor returns the other system a condition restricts its branch to:
// holds is true for the branch taken when cond holds (then, or the right
// of &&), false for the else branch. "" when it does not.
func guardedFor(cond string, holds bool) string {
	cond = unparen(cond)
	if strings.Contains(cond, "||") || strings.Contains(cond, "?") {
		return ""
	}
	if !holds {
		// else of process.platform !== 'win32', or of === 'linux'.
		p, equal, ok := comparison(cond)
		switch {
		case ok && !equal && otherSystems[p]:
			return p
		case ok && equal && p == "linux":
			return "a system other than linux"
		}
		return ""
	}
	for _, part := range strings.Split(cond, "&&") {
		p, equal, ok := comparison(unparen(part))
		switch {
		case ok && equal && otherSystems[p]:
			return p
		case ok && !equal && p == "linux":
			return "a system other than linux"
		}
	}
	return ""
}

// Same reports whether a and b are the same node.
func Same(a, b *sitter.Node) bool {
	return a != nil && b != nil && a.StartByte() == b.StartByte() && a.EndByte() == b.EndByte() && a.Type() == b.Type()
}

// Guard returns the other system that n's enclosing conditions restrict
// it to, or "". text gives a node's source. An early exit counts as a condition too: in
//
//	if (process.platform !== 'darwin') { throw new Error('macOS only') }
//	execFile('defaults', ...)
//
// (default-browser-id, run-applescript) the statements after the if run
// only on darwin.
func Guard(n *sitter.Node, text func(*sitter.Node) string) string {
	return guard(n, text, guardedFor, true)
}

// Condition reads one condition that guards a branch: what it restricts
// the branch to, or "" for nothing. holds is true for the branch taken
// when cond holds (then, the right of &&, what follows an early exit on
// the condition's negation), false for the else branch.
type Condition func(cond string, holds bool) string

// GuardWith returns what n's enclosing ifs, ternaries, && and early exits
// restrict it to, as c reads their conditions, or "". It reads no switch
// cases.
func GuardWith(n *sitter.Node, text func(*sitter.Node) string, c Condition) string {
	return guard(n, text, c, false)
}

func guard(n *sitter.Node, text func(*sitter.Node) string, c Condition, cases bool) string {
	for child, p := n, n.Parent(); p != nil; child, p = p, p.Parent() {
		var cond *sitter.Node
		holds := true
		switch p.Type() {
		case "statement_block", "program":
			if sys := exitGuard(p, child, text, c); sys != "" {
				return sys
			}
			continue
		case "if_statement", "ternary_expression":
			cond = p.ChildByFieldName("condition")
			switch {
			case Same(p.ChildByFieldName("consequence"), child):
			case Same(p.ChildByFieldName("alternative"), child):
				holds = false
			default:
				continue
			}
		case "switch_case":
			if !cases {
				continue
			}
			if sys := caseGuard(p, child, text); sys != "" {
				return sys
			}
			continue
		case "binary_expression":
			if op := p.ChildByFieldName("operator"); op == nil || text(op) != "&&" || !Same(p.ChildByFieldName("right"), child) {
				continue
			}
			cond = p.ChildByFieldName("left")
		default:
			continue
		}
		if sys := c(text(cond), holds); sys != "" {
			return sys
		}
	}
	return ""
}

// exitGuard returns what an early exit before child in block restricts
// child to, as c reads its condition: an if with no else whose branch
// always leaves (throw, or return).
func exitGuard(block, child *sitter.Node, text func(*sitter.Node) string, c Condition) string {
	for i := 0; i < int(block.NamedChildCount()); i++ {
		st := block.NamedChild(i)
		if Same(st, child) || st.StartByte() >= child.StartByte() {
			return ""
		}
		if st.Type() != "if_statement" || st.ChildByFieldName("alternative") != nil || !exits(st.ChildByFieldName("consequence")) {
			continue
		}
		// What follows runs when the condition does not hold.
		if sys := c(text(st.ChildByFieldName("condition")), false); sys != "" {
			return sys
		}
	}
	return ""
}

// exits reports a statement that always leaves its function: a throw or
// a return, alone or as a block's last statement.
func exits(st *sitter.Node) bool {
	st = last(st)
	return st != nil && (st.Type() == "throw_statement" || st.Type() == "return_statement")
}

// last is a statement, or the last statement of a block (nested blocks
// followed); nil for an empty block.
func last(st *sitter.Node) *sitter.Node {
	for st != nil && st.Type() == "statement_block" {
		if st.NamedChildCount() == 0 {
			return nil
		}
		st = st.NamedChild(int(st.NamedChildCount()) - 1)
	}
	return st
}

// platformValue matches the value a switch on the platform tests.
var platformValue = regexp.MustCompile(`^(?:process\.platform|(?:os|require\(\s*['"](?:node:)?os['"]\s*\))\.platform\(\))$`)

// caseGuard returns the other system a switch (process.platform) case
// restricts child, a statement of its body, to: every label that reaches
// the body (its own, the empty cases grouped with it, and those of cases
// that fall through into it) names another system.
func caseGuard(c, child *sitter.Node, text func(*sitter.Node) string) string {
	value := c.ChildByFieldName("value")
	if value == nil || Same(value, child) {
		return ""
	}
	sw := c.Parent()
	if sw != nil && sw.Type() == "switch_body" {
		sw = sw.Parent()
	}
	if sw == nil || sw.Type() != "switch_statement" || !platformValue.MatchString(unparen(text(sw.ChildByFieldName("value")))) {
		return ""
	}
	sys := ""
	for k := c; k != nil; k = k.PrevNamedSibling() {
		if k.Type() != "switch_case" {
			return "" // default, or a comment: not read
		}
		if k != c {
			if body := caseBody(k); len(body) > 0 && endsJump(body[len(body)-1]) {
				break // the case before ends: nothing falls into c from there
			}
		}
		v := k.ChildByFieldName("value")
		if v == nil || v.Type() != "string" {
			return ""
		}
		p := strings.Trim(text(v), `'"`)
		if !otherSystems[p] {
			return ""
		}
		if sys == "" {
			sys = p
		}
	}
	return sys
}

// caseBody lists a switch case's statements.
func caseBody(c *sitter.Node) []*sitter.Node {
	var out []*sitter.Node
	value := c.ChildByFieldName("value")
	for i := 0; i < int(c.NamedChildCount()); i++ {
		if n := c.NamedChild(i); !Same(n, value) && n.Type() != "comment" {
			out = append(out, n)
		}
	}
	return out
}

// endsJump reports a statement that leaves a switch case: break, continue,
// return or throw, alone or last in a block.
func endsJump(st *sitter.Node) bool {
	if st = last(st); st == nil {
		return false
	}
	switch st.Type() {
	case "break_statement", "continue_statement", "return_statement", "throw_statement":
		return true
	}
	return false
}
