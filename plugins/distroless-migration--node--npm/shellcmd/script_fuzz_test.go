package shellcmd

import "testing"

// FuzzAnalyzeScript: any script analyses without a panic, and a script
// judged defaults-only always names what it execs.
func FuzzAnalyzeScript(f *testing.F) {
	for _, s := range []string{
		"#!/bin/sh\nexport A=${A:-1}\nexec \"$@\"\n", "if true; then :; fi", "exec", "A=$(cat f)\nexec node x.js", "export B\nset -eu\nexec node",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s := AnalyzeScript(src)
		if s.DefaultsOnly && len(s.Exec) == 0 {
			t.Errorf("defaults-only script with no exec: %+v", s)
		}
		if s.DefaultsOnly && len(s.Reasons) > 0 {
			t.Errorf("defaults-only script with reasons: %+v", s)
		}
	})
}
