package childprocess

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStreamTokens: a file too large to parse is scanned for the calls
// that run a shell, in chunks, with each call's line, whatever chunk
// boundary it straddles (issue 22, item 4).
func TestStreamTokens(t *testing.T) {
	t.Parallel()
	pad := "// " + strings.Repeat("x", 1000) + "\n"
	tests := []struct {
		name         string
		src          string
		lines        []int
		unclassified bool
		mentions     bool
	}{
		{"execSync first", "const cp = require('child_process');\ncp.execSync('ls');\n" + strings.Repeat(pad, 3300), []int{2}, false, true},
		{"exec at the end", "const {exec} = require('child_process');\n" + strings.Repeat(pad, 3300) + "exec('ls')\n", []int{3302}, false, true},
		{"require().exec", "require('child_process').exec('x')\n" + strings.Repeat(pad, 3000), []int{1}, false, true},
		{"regexp exec", "require('child_process');\n" + strings.Repeat(pad, 3000) + "/a/.exec(s); m.exec(s); myexecSync(1)\n", nil, false, true},
		{"spawn needs a parse", "require('child_process').spawn('git', ['x'])\n" + strings.Repeat(pad, 3000), nil, true, true},
		{"shell true", "require('child_process');\n" + strings.Repeat(pad, 3000) + "x.spawn(c, {shell: true})\n", []int{3002}, true, true},
		{"no module", strings.Repeat(pad, 3000) + "exec('ls')\n", []int{3001}, false, false},
		// webpack's list of node's built-in modules names it, loading
		// nothing; a method called exec is no call.
		{"built-in list", "const $=[\"buffer\",\"child_process\",\"cluster\"];\n" + strings.Repeat(pad, 3000) + "exec('ls')\n", []int{3002}, false, false},
		{"import from", "import { execSync } from \"node:child_process\";\n" + strings.Repeat(pad, 3000), nil, false, true},
		{"method definitions", "require(\"child_process\");\n" + strings.Repeat(pad, 3000) + "class R{exec(v,I,P){return v}execSync (a, b) {}}x.spawn(c) {}\nexec(f(a), b)\n", []int{3003}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, err := streamTokens(strings.NewReader(tt.src), MaxTokenScanBytes)
			if err != nil {
				t.Fatal(err)
			}
			var lines []int
			for _, c := range ts.calls {
				lines = append(lines, c.line)
			}
			if diff := cmp.Diff(tt.lines, lines); diff != "" {
				t.Errorf("shell calls' lines (-want +got):\n%s", diff)
			}
			if ts.unclassified != tt.unclassified || ts.mentions != tt.mentions {
				t.Errorf("unclassified %v mentions %v, want %v %v", ts.unclassified, ts.mentions, tt.unclassified, tt.mentions)
			}
		})
	}
	// Every cut of a call across a chunk boundary finds it once.
	for cut := 256<<10 - 80; cut < 256<<10+20; cut++ {
		src := strings.Repeat("a", cut) + "\ncp.execSync('ls')\n"
		ts, err := streamTokens(io.MultiReader(strings.NewReader(src[:cut]), strings.NewReader(src[cut:])), MaxTokenScanBytes)
		if err != nil || len(ts.calls) != 1 || ts.calls[0].line != 2 {
			t.Fatalf("cut %d: %+v, %v; want one call at line 2", cut, ts.calls, err)
		}
	}
	// A 50 MB file full of cp.exec is read to its end, cheaply.
	big := bytes.Repeat([]byte("cp.exec('x');\n"), 50<<20/14)
	ts, err := streamTokens(bytes.NewReader(append([]byte("require('child_process')\n"), big...)), MaxTokenScanBytes)
	if err != nil || len(ts.calls) != maxTokenCalls || ts.truncated {
		t.Errorf("50 MB of cp.exec: %d calls, truncated %v, %v", len(ts.calls), ts.truncated, err)
	}
	// Past the limit the file stays unread.
	if ts, _ := streamTokens(bytes.NewReader(big), 1<<20); !ts.truncated {
		t.Error("a file over the limit is not marked truncated")
	}
}
