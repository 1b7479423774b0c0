package recipe

import (
	"path"
	"regexp"
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

// asRE finds the stage name of a FROM instruction's text.
var asRE = regexp.MustCompile(`(?i)\sAS\s+(\S+)\s*$`)

// continuedRE is a line continuation, with either escape character.
var continuedRE = regexp.MustCompile("[\\\\`][ \t]*\r?\n")

// name is stage i's name as its author wrote it (the parser lower-cases
// it), "" when it has none.
func (r *rewriter) name(i int) string {
	st := r.d.Stages[i]
	if st.Name == "" {
		return ""
	}
	var b strings.Builder
	for l := st.Line; l <= max(st.Line, st.EndLine) && l <= len(r.src); l++ {
		b.Write(r.src[l-1])
	}
	if m := asRE.FindStringSubmatch(continuedRE.ReplaceAllString(strings.TrimRight(b.String(), "\r\n"), " ")); m != nil && strings.EqualFold(m[1], st.Name) {
		return m[1]
	}
	return st.Name
}

// ref is how COPY --from names stage i: its name as written, else its
// index.
func (r *rewriter) ref(i int) string {
	if n := r.name(i); n != "" {
		return n
	}
	return r.d.StageName(i)
}

// commentsAbove is the first line of the comment lines directly above
// line, after line after (the end of the instruction before); line itself
// when there are none.
func (r *rewriter) commentsAbove(after, line int) int {
	first := line
	for l := line - 1; l > after && l >= 1 && l <= len(r.src); l-- {
		if !strings.HasPrefix(strings.TrimSpace(string(r.src[l-1])), "#") {
			break
		}
		first = l
	}
	return first
}

// lines is the original text of lines [from, to].
func (r *rewriter) text(from, to int) string {
	var b strings.Builder
	for l := from; l <= to && l <= len(r.src); l++ {
		b.Write(r.src[l-1])
	}
	return b.String()
}
