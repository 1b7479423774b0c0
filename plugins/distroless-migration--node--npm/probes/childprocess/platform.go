package childprocess

import (
	"regexp"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// A call that an if, a ternary or an && guards with a process.platform
// test for another system (process.platform === 'win32' runs cmd.exe,
// 'darwin' runs sw_vers) never runs in a Linux image. The guard is read
// from the call's own enclosing conditions; only a plain comparison with
// a string literal counts, alone or as a conjunct of an && condition.

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

// same reports whether a and b are the same node.
func same(a, b *sitter.Node) bool {
	return a != nil && b != nil && a.StartByte() == b.StartByte() && a.EndByte() == b.EndByte() && a.Type() == b.Type()
}

// platformGuard returns the other system that n's enclosing conditions
// restrict it to, or "".
func (a *analysis) platformGuard(n *sitter.Node) string {
	for child, p := n, n.Parent(); p != nil; child, p = p, p.Parent() {
		var cond *sitter.Node
		holds := true
		switch p.Type() {
		case "if_statement", "ternary_expression":
			cond = p.ChildByFieldName("condition")
			switch {
			case same(p.ChildByFieldName("consequence"), child):
			case same(p.ChildByFieldName("alternative"), child):
				holds = false
			default:
				continue
			}
		case "binary_expression":
			if op := p.ChildByFieldName("operator"); op == nil || a.text(op) != "&&" || !same(p.ChildByFieldName("right"), child) {
				continue
			}
			cond = p.ChildByFieldName("left")
		default:
			continue
		}
		if sys := guardedFor(a.text(cond), holds); sys != "" {
			return sys
		}
	}
	return ""
}
