package modgraph

import (
	"strings"
	"testing"
)

// FuzzScan: any bytes scan without a panic, every specifier is a
// substring of the input, and every line number is within the input.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"require('a')", "import x from \"b\"\nexport * from 'c'", "import(`d`)", "require(name)",
		"/* unterminated", "'unterminated string", "`tpl ${x}`; require(`./p/${n}`)", "x.require('y'); ...require('z')",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		imps, dyn := Scan([]byte(src))
		lines := strings.Count(src, "\n") + 1
		for _, i := range imps {
			if !strings.Contains(src, i.Spec) {
				t.Errorf("specifier %q is not in the input", i.Spec)
			}
			if i.Line < 1 || i.Line > lines {
				t.Errorf("line %d outside 1..%d", i.Line, lines)
			}
		}
		for _, d := range dyn {
			if d.Line < 1 || d.Line > lines {
				t.Errorf("line %d outside 1..%d", d.Line, lines)
			}
		}
	})
}
