package udiff

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// patch applies a unified diff made by Diff to old, strictly: every
// context and removed line must match.
func patch(t *testing.T, old, diff string) string {
	t.Helper()
	a := split([]byte(old))
	lines := strings.SplitAfter(diff, "\n")
	var out []string
	next := 0 // index into a
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		h := lines[i]
		if !strings.HasPrefix(h, "@@ -") {
			t.Fatalf("line %d: want a hunk header, got %q", i, h)
		}
		f := strings.Fields(h)
		start, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(f[1], "-"), ",")[0])
		if !strings.Contains(f[1], ",0") {
			start--
		}
		for ; next < start; next++ {
			out = append(out, a[next])
		}
		for i+1 < len(lines) && lines[i+1] != "" && !strings.HasPrefix(lines[i+1], "@@") {
			i++
			l := lines[i]
			body := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if next >= len(a) || a[next] != body {
					t.Fatalf("hunk line %q does not match old line %d (%q)", l, next+1, at(a, next))
				}
				if l[0] == ' ' {
					out = append(out, body)
				}
				next++
			case '+':
				out = append(out, body)
			}
		}
	}
	out = append(out, a[next:]...)
	return strings.Join(out, "")
}

func at(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return "<end>"
}

func TestDiffApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 300 {
		var old []string
		for i := range r.IntN(30) {
			old = append(old, fmt.Sprintf("line %d\n", i%7))
		}
		var nw []string
		for _, l := range old {
			switch r.IntN(6) {
			case 0: // drop
			case 1:
				nw = append(nw, "new "+l)
			case 2:
				nw = append(nw, l, "added\n")
			default:
				nw = append(nw, l)
			}
		}
		o, w := strings.Join(old, ""), strings.Join(nw, "")
		if n%5 == 0 && w != "" {
			w = strings.TrimSuffix(w, "\n") // no newline at the end
		}
		d := Diff("Dockerfile", []byte(o), []byte(w))
		if o == w {
			if d != "" {
				t.Fatalf("equal inputs gave a diff:\n%s", d)
			}
			continue
		}
		if got := patch(t, o, d); got != w {
			t.Fatalf("case %d: the diff does not give the new text\nold:\n%s\nnew:\n%s\ndiff:\n%s\ngot:\n%s", n, o, w, d, got)
		}
	}
}

func TestDiffNewFile(t *testing.T) {
	d := Diff("launch.js", nil, []byte("a\nb\n"))
	want := "--- /dev/null\n+++ b/launch.js\n@@ -0,0 +1,2 @@\n+a\n+b\n"
	if d != want {
		t.Fatalf("got\n%s\nwant\n%s", d, want)
	}
}
