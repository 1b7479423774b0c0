// Package udiff writes unified diffs of small text files (Dockerfiles,
// generated scripts), as `diff -u` and `git apply` read them.
package udiff

import (
	"fmt"
	"strings"
)

// context is the number of unchanged lines around each change.
const context = 3

type op struct {
	kind byte // ' ', '-', '+'
	text string
}

// Diff returns the unified diff that turns old into new, with a/ and b/
// prefixed names; empty when they are equal. A nil old is a new file.
func Diff(name string, old, new []byte) string {
	if string(old) == string(new) {
		return ""
	}
	a, b := split(old), split(new)
	ops := script(a, b)
	var out strings.Builder
	from := "a/" + name
	if old == nil {
		from = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ b/%s\n", from, name)
	// Hunks: runs of changes with up to context lines around them.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// Look ahead: do more changes follow within 2*context?
			j := end
			for j < len(ops) && ops[j].kind == ' ' && j-end < 2*context {
				j++
			}
			if j < len(ops) && ops[j].kind != ' ' {
				end = j
				continue
			}
			end = min(end+context, len(ops))
			break
		}
		aStart, bStart := lineAt(ops, start)
		aLen, bLen := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", rng(aStart, aLen), rng(bStart, bLen))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			if !strings.HasSuffix(o.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return out.String()
}

// lineAt is the 1-based line numbers in a and b where ops[i] is.
func lineAt(ops []op, i int) (int, int) {
	a, b := 1, 1
	for _, o := range ops[:i] {
		if o.kind != '+' {
			a++
		}
		if o.kind != '-' {
			b++
		}
	}
	return a, b
}

func rng(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// Lines splits data into lines that keep their newline; the last line has
// none when data does not end with one.
func Lines(data []byte) []string { return split(data) }

func split(data []byte) []string {
	var out []string
	s := string(data)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// script is an edit script from a to b by longest common subsequence.
func script(a, b []string) []op {
	n, m := len(a), len(b)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, op{'+', b[j]})
			j++
		default:
			ops = append(ops, op{'-', a[i]})
			i++
		}
	}
	// Deletions before insertions within a change, as diff -u prints them.
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		e := k
		for e < len(ops) && ops[e].kind != ' ' {
			e++
		}
		var del, ins []op
		for _, o := range ops[k:e] {
			if o.kind == '-' {
				del = append(del, o)
			} else {
				ins = append(ins, o)
			}
		}
		copy(ops[k:], append(del, ins...))
		k = e
	}
	return ops
}
