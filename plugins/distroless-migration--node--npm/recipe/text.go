package recipe

import (
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// Dockerfile text: the lines the edits write and read.

func resolvePath(wd, p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	return path.Join(wd, p)
}

// sameRepo reports whether two references name the same repository.
func sameRepo(a, b string) bool { return repoOf(a) == repoOf(b) }

func repoOf(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

// from writes a FROM line.
func from(platform, ref, name string) string {
	s := "FROM "
	if platform != "" {
		s += "--platform=" + platform + " "
	}
	s += ref
	if name != "" {
		s += " AS " + name
	}
	return s + "\n"
}

func (r *rewriter) lastLine(in dockerfile.Instruction) int {
	if in.EndLine > in.Line {
		return in.EndLine
	}
	return in.Line
}

// stageEnd is the last line of stage i's instructions (its FROM line when
// it has none).
func (r *rewriter) stageEnd(i int) int {
	st := r.d.Stages[i]
	end := max(st.Line, st.EndLine)
	for _, in := range st.Instructions {
		end = max(end, r.lastLine(in))
	}
	return end
}

// verbatim is an instruction's original lines.
func (r *rewriter) verbatim(in dockerfile.Instruction) string {
	var b strings.Builder
	for l := in.Line; l <= r.lastLine(in) && l <= len(r.src); l++ {
		b.Write(r.src[l-1])
	}
	s := b.String()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s
}

func (r *rewriter) replace(in dockerfile.Instruction, text string) {
	r.edits = append(r.edits, edit{from: in.Line, to: r.lastLine(in), text: text})
}

func (r *rewriter) insertAfter(line int, text string) {
	r.edits = append(r.edits, edit{from: line + 1, to: line, text: text})
}

// execForm writes an exec-form argument list.
func execForm(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = jsonString(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteEnv writes KEY=VALUE pairs for ENV, quoting values that need it.
func quoteEnv(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || strings.ContainsAny(v, " \t\"'$\\") {
			v = jsonString(v)
		}
		out[i] = k + "=" + v
	}
	return out
}

func within(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

func dedupe[T comparable](s []T) []T {
	var out []T
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}
