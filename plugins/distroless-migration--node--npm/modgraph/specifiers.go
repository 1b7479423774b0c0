package modgraph

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Import is one module specifier a file loads.
type Import struct {
	Spec string
	Line int
	// Offset is where the load's text starts in the source.
	Offset int
}

// Dynamic is a require or import() whose argument is not a literal.
type Dynamic struct {
	Line int
	// Offset is where the load's text starts in the source.
	Offset int
	// Prefix is the literal start of the argument ('./plugins/' in
	// require('./plugins/' + name)), when it has one.
	Prefix string
	// Env is the variable the argument is, when it is one and nothing
	// else: MONGODB_CLIENT_ENCRYPTION_OVERRIDE in
	// require(process.env.MONGODB_CLIENT_ENCRYPTION_OVERRIDE).
	Env string
	// Installed is set when a string literal of the argument names a
	// node_modules folder (typeorm's require(path.resolve(process.cwd() +
	// "/node_modules/" + name))): it loads an installed package, none of
	// the loading package's own files or the app's.
	Installed bool
}

// Each pattern begins with its keyword, so that the regexp package looks for
// it with a substring search rather than trying every position; what must
// come before the keyword is checked by keyword (a byte that is not part
// of a word, as \b would, or for a statement the start of the text, ';',
// '}' or a space, which the match then starts with).
var (
	// require("x"), require('x'), require(`x`)
	requireRE = regexp.MustCompile("require\\s*\\(\\s*(?:\"([^\"\\n]*)\"|'([^'\\n]*)'|`([^`$\\n]*)`)\\s*\\)")
	// require( followed by anything else: computed.
	requireAnyRE = regexp.MustCompile(`require\s*\(\s*([^\s)])`)
	// import x from "y"; import {a} from 'y'; export * from "y" (statements)
	importFromRE = regexp.MustCompile(`import\b[^'";]*?\bfrom\s*(?:"([^"\n]*)"|'([^'\n]*)')`)
	exportFromRE = regexp.MustCompile(`export\b[^'";]*?\bfrom\s*(?:"([^"\n]*)"|'([^'\n]*)')`)
	// import "y" (a statement)
	bareImport  = regexp.MustCompile(`import\s*(?:"([^"\n]*)"|'([^'\n]*)')`)
	dynImportRE = regexp.MustCompile("import\\s*\\(\\s*(?:\"([^\"\\n]*)\"|'([^'\\n]*)'|`([^`$\\n]*)`)\\s*[,)]")
	// process.env.NAME or process.env['NAME'], then the call's end.
	envArgRE = regexp.MustCompile(`^process\.env(?:\.([A-Za-z_$][\w$]*)|\[\s*(?:"([^"\n]*)"|'([^'\n]*)')\s*\])\s*\)`)
	dynAnyRE = regexp.MustCompile(`import\s*\(\s*([^\s)])`)
	// new Worker('./job.js'), new Worker(new URL('./job.js', import.meta.url)),
	// fork('./child.js'): code that runs in another thread or process.
	workerRE = regexp.MustCompile("new\\s+Worker\\s*\\(\\s*(?:new\\s+URL\\s*\\(\\s*)?(?:\"([^\"\\n]*)\"|'([^'\\n]*)'|`([^`$\\n]*)`)")
	forkRE   = regexp.MustCompile("fork\\s*\\(\\s*(?:\"([^\"\\n]*)\"|'([^'\\n]*)'|`([^`$\\n]*)`)")
)

// matches is FindAllStringSubmatchIndex of each of res over text, for
// matches whose keyword starts a word or, for a statement, a statement
// (a keyword that does not, or that a comment's line holds, is looked
// past, not matched through); a
// statement's match then starts at the byte before it, as the patterns'
// own (?m)(?:^|[;}\s]) did. With more than one pattern,
// matches come in the order they start, and one that starts inside an
// earlier one is dropped.
func matches(text string, statement bool, res ...*regexp.Regexp) [][]int {
	var all [][]int
	for _, re := range res {
		for pos := 0; pos < len(text); {
			m := re.FindStringSubmatchIndex(text[pos:])
			if m == nil {
				break
			}
			for k := range m {
				if m[k] >= 0 {
					m[k] += pos
				}
			}
			i := m[0]
			switch {
			case inComment(text, i):
				// "// const gqlTools = require('graphql-tools')", a load
				// commented out; "// Don't cache a rejected import (e.g.
				// a chunk-load failure)", prose; a JSDoc {import('x').T}:
				// no load. Looked past, not matched through: a statement
				// match may run on into the next line's code.
				pos = i + 1
				continue
			case !statement:
				if i > 0 && wordByte(text[i-1]) && text[i-1] != '$' {
					pos = i + 1 // not a word's start (\b): look again after it
					continue
				}
			case i == 0:
			case strings.IndexByte(";} \t\n\f\r", text[i-1]) >= 0:
				m[0] = i - 1
			default:
				pos = i + 1
				continue
			}
			all = append(all, m)
			pos = m[1]
		}
	}
	if len(res) > 1 {
		sort.SliceStable(all, func(a, b int) bool { return all[a][0] < all[b][0] })
		kept, end := all[:0], -1
		for _, m := range all {
			if m[0] >= end {
				kept = append(kept, m)
				end = m[1]
			}
		}
		all = kept
	}
	return all
}

// Scan lists the literal specifiers src loads and the lines of computed
// ones. It reads the raw text, so it sees require and import in any
// JavaScript or TypeScript dialect and cannot be misled by a regular
// expression that looks like a comment. A load on a line that a comment
// holds as far as the line itself shows (inComment: after a // that no
// quote or slash precedes, or on a block comment's line) is none; a load
// in a comment that the line does not show, or in a string that only
// looks like a call, is an extra edge (or an extra computed load), which
// errs toward more reachable code, never less.
func Scan(src []byte) ([]Import, []Dynamic) {
	text := string(src)
	lineAt := lineIndex(text)
	var imps []Import
	literal := map[int]bool{}
	add := func(statement bool, res ...*regexp.Regexp) {
		for _, m := range matches(text, statement, res...) {
			if isMember(text, m[0]) {
				continue
			}
			literal[m[0]] = true
			if statement && typeOnly(text[m[0]:m[1]]) {
				// import type { Pixel } from '@/generated/prisma/client':
				// TypeScript erases it; nothing loads at run time.
				continue
			}
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 && strings.Contains(text[m[g]:m[g+1]], "${") {
					// import X from "${host}/static/x" is the text of a
					// template literal (a page's inline <script>), not a
					// load: a quoted specifier holds no ${.
					break
				}
				if m[g] >= 0 {
					imps = append(imps, Import{Spec: text[m[g]:m[g+1]], Line: lineAt(m[g]), Offset: m[0]})
					break
				}
			}
		}
	}
	add(false, requireRE)
	add(true, importFromRE, exportFromRE)
	add(true, bareImport)
	add(false, dynImportRE)
	add(false, workerRE)
	add(false, forkRE)
	var dyn []Dynamic
	for _, re := range []*regexp.Regexp{requireAnyRE, dynAnyRE} {
		for _, m := range matches(text, false, re) {
			if isMember(text, m[0]) || literal[m[0]] {
				continue
			}
			if strings.IndexByte("?:*|]},;=>&^%", text[m[2]]) >= 0 {
				// No expression starts so: the text of a regular
				// expression (/import(?:\s+static)?/ in a syntax
				// highlighter), not a load.
				continue
			}
			arg, closed := argument(text, m[2])
			if closed && definesMethod(text, m[2]+len(arg)+1) {
				// import(data) { ... } in a class, function require(id)
				// { ... }: a definition of that name, not a load.
				continue
			}
			d := Dynamic{Line: lineAt(m[0]), Offset: m[0]}
			if c := text[m[2]]; c == '"' || c == '\'' || c == '`' {
				if end := strings.IndexByte(text[m[2]+1:], c); end >= 0 {
					d.Prefix = text[m[2]+1 : m[2]+1+end]
					if c == '`' {
						d.Prefix, _, _ = strings.Cut(d.Prefix, "${")
					}
				}
			}
			if e := envArgRE.FindStringSubmatch(text[m[2]:]); e != nil {
				d.Env = e[1] + e[2] + e[3]
			}
			d.Installed = closed && nodeModulesRE.MatchString(arg)
			if spec, ok := joinedLiteral(arg); closed && ok {
				// require('u' + 'rl'), a bundler's way to hide a load from
				// another bundler, names one module: a literal edge.
				imps = append(imps, Import{Spec: spec, Line: d.Line, Offset: m[0]})
				continue
			}
			if closed && loadsJSON(arg) {
				// require(path.join(dir, name + '.json')) reads data: no
				// code of the package's own, or anyone's, runs.
				continue
			}
			dyn = append(dyn, d)
		}
	}
	return imps, dyn
}

// nodeModulesRE finds a string literal that names a node_modules folder:
// "/node_modules/" or one that starts with "node_modules/".
var nodeModulesRE = regexp.MustCompile(`["'\x60](?:[^"'\x60\n]*/)?node_modules/`)

// typeOnly reports a statement that imports or exports types only, which
// TypeScript erases: import type X from, import type { X } from, import
// type * as X from, export type { X } from, export type * from. import
// type from 'x' and import type, { a } from 'x' import a default named
// type, and load.
func typeOnly(stmt string) bool {
	r := strings.TrimLeft(stmt, ";} \t\n\r\f")
	kw := "import"
	if !strings.HasPrefix(r, kw) {
		kw = "export"
	}
	r, ok := strings.CutPrefix(r, kw)
	if !ok || r == "" || !unicode.IsSpace(rune(r[0])) {
		return false
	}
	r, ok = strings.CutPrefix(strings.TrimLeftFunc(r, unicode.IsSpace), "type")
	if !ok || r == "" {
		return false
	}
	if r[0] == '{' || r[0] == '*' {
		return true
	}
	if !unicode.IsSpace(rune(r[0])) {
		return false // typeorm, typeof
	}
	r = strings.TrimLeftFunc(r, unicode.IsSpace)
	if r != "" && (r[0] == '{' || r[0] == '*') {
		return true
	}
	id := r[:len(r)-len(strings.TrimLeftFunc(r, func(c rune) bool { return c == '_' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c) }))]
	if id == "" || id == "from" {
		return false
	}
	return !strings.HasPrefix(strings.TrimLeftFunc(r[len(id):], unicode.IsSpace), ",")
}

// joinedLiteral returns the string that arg, a load's argument, is when
// it is string literals joined by + ('u' + 'rl'), comments aside.
func joinedLiteral(arg string) (string, bool) {
	rest := strings.TrimSpace(stripComments(arg))
	var b strings.Builder
	for parts := 0; ; parts++ {
		if rest == "" || !strings.ContainsRune("\"'`", rune(rest[0])) {
			return "", false
		}
		end := closingQuote(rest, 0)
		if end < 0 || rest[0] == '`' && strings.Contains(rest[:end], "${") {
			return "", false
		}
		b.WriteString(rest[1:end])
		rest = strings.TrimSpace(rest[end+1:])
		if rest == "" {
			return b.String(), parts > 0
		}
		if rest[0] != '+' {
			return "", false
		}
		rest = strings.TrimSpace(rest[1:])
	}
}

// argument returns the text of a call's argument list that starts at
// start, up to its closing parenthesis, stepping over strings and
// comments; ok is false when the list does not close within 2000 bytes,
// or a string or comment in it does not.
func argument(text string, start int) (string, bool) {
	depth := 0
	for i := start; i < len(text) && i < start+2000; i++ {
		switch c := text[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return text[start:i], c == ')'
			}
			depth--
		case '"', '\'', '`':
			end := closingQuote(text, i)
			if end < 0 {
				return "", false
			}
			i = end
		case '/':
			switch {
			case strings.HasPrefix(text[i:], "/*"):
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					return "", false
				}
				i += end + 3
			case strings.HasPrefix(text[i:], "//"):
				end := strings.IndexByte(text[i:], '\n')
				if end < 0 {
					return "", false
				}
				i += end
			}
		}
	}
	return "", false
}

// pathCallRE is a path.join or path.resolve call (_path.default.join in
// compiled code), whose result ends as its last argument does.
var pathCallRE = regexp.MustCompile(`^[\w$.]*\b(?:join|resolve)\s*\(`)

// lastPart returns what a load's argument ends with: the argument itself,
// or, for path.join(a, b, c + '.json'), the last argument of the join.
// Comments are dropped first.
func lastPart(arg string) string {
	arg = stripComments(arg)
	for range 4 {
		arg = strings.TrimSpace(arg)
		loc := pathCallRE.FindStringIndex(arg)
		if loc == nil {
			return arg
		}
		inner, ok := argument(arg, loc[1])
		if !ok || strings.TrimSpace(arg[loc[1]+len(inner):]) != ")" {
			return arg
		}
		arg = inner
		if i := lastComma(inner); i >= 0 {
			arg = inner[i+1:]
		}
	}
	return arg
}

// lastComma is the offset of the last comma of s outside brackets and
// strings, or -1 (also when a string in s does not close).
func lastComma(s string) int {
	c, ok := topCommas(s)
	if !ok || len(c) == 0 {
		return -1
	}
	return c[len(c)-1]
}

// topCommas returns the offsets of the commas of s outside brackets and
// strings; ok is false when a string in s does not close (the commas
// before it are returned).
func topCommas(s string) (offs []int, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				offs = append(offs, i)
			}
		case '"', '\'', '`':
			end := closingQuote(s, i)
			if end < 0 {
				return offs, false
			}
			i = end
		}
	}
	return offs, true
}

var commentRE = regexp.MustCompile(`/\*[^*]*\*+(?:[^/*][^*]*\*+)*/`)

func stripComments(s string) string { return commentRE.ReplaceAllString(s, " ") }

// inComment reports whether offset off of text is in a comment as far as
// its line shows: after a // that no quote or slash comes before on the
// line, or on a line that starts a block comment or goes on with one
// (" * "); and with no backtick between the line's start and off. Only a
// template literal spans lines, so a line that starts inside a string
// (minified code's "Read more: https://…`),…,require(x)") has the
// closing backtick there, and a load after it stays code.
func inComment(text string, off int) bool {
	line := text[strings.LastIndexByte(text[:off], '\n')+1 : off]
	trimmed := strings.TrimLeft(line, " \t")
	quoted := func(s string) bool { return strings.Contains(s, "`") }
	if strings.HasPrefix(trimmed, "/*") {
		return !strings.Contains(trimmed, "*/") && !quoted(trimmed) // /* istanbul ignore next */ require(x) is code
	}
	if strings.HasPrefix(trimmed, "* ") || trimmed == "*" {
		return !quoted(trimmed)
	}
	i := strings.Index(line, "//")
	return i >= 0 && !strings.ContainsAny(line[:i], "\"'`/") && !quoted(line[i:])
}

// closingQuote returns the offset of the quote that closes the string
// opening at text[i], or -1. A template literal's ${...} is stepped over
// as text: a quote inside it ends the search early, and the caller then
// gives up, which keeps the load computed.
func closingQuote(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case '\\':
			j++
		case q:
			return j
		case '\n':
			if q != '`' {
				return -1
			}
		}
	}
	return -1
}

// definesMethod reports whether the text after a call's closing
// parenthesis, at off, opens a function body on the same line: the
// "call" was a method or function definition named require or import. (A
// call that ends a line may be followed by a block, so the next line's
// brace does not count.)
func definesMethod(text string, off int) bool {
	rest := strings.TrimLeft(text[min(off, len(text)):], " \t")
	return strings.HasPrefix(rest, "{")
}

// loadsJSON reports whether a computed load's argument ends in a string
// that names a .json file ('.json', "/package.json", `${dir}/x.json`):
// Node reads such a file as data.
func loadsJSON(arg string) bool {
	arg = lastPart(arg)
	if len(arg) < 2 {
		return false
	}
	q := arg[len(arg)-1]
	if q != '"' && q != '\'' && q != '`' {
		return false
	}
	return strings.HasSuffix(arg[:len(arg)-1], ".json")
}

// isMember reports whether the word at off is a property (x.import(...),
// obj.require(...)), not the require function or the import keyword.
func isMember(text string, off int) bool {
	for i := off - 1; i >= 0; i-- {
		switch text[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '.':
			return i == 0 || text[i-1] != '.' // a spread (...) is not a member
		}
		return false
	}
	return false
}

func lineIndex(text string) func(int) int {
	var starts []int
	starts = append(starts, 0)
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return func(off int) int {
		lo, hi := 0, len(starts)
		for lo+1 < hi {
			mid := (lo + hi) / 2
			if starts[mid] <= off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo + 1
	}
}
