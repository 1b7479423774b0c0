package modgraph

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// A call in a package's function runs only if that function does, and a
// function runs only if code that runs names it. Names (lazy.go) asks the
// first half: does any reached file name the function. Runs asks the
// whole: a mention counts only where it runs itself, at a module's top
// level or in the body of functions that run, by the same rule, down to
// code that runs with its module:
//
//	// next/dist/lib/helpers/get-pkg-manager.js
//	function getPkgManager(baseDir) { … execSync('yarn --version') … }
//	// next/dist/lib/install-dependencies.js
//	async function installDependencies(baseDir, deps, dev) { … getPkgManager(baseDir) … }
//	// next/dist/cli/next-test.js, loaded by the server's config schema
//	async function nextTest(…) { … installDependencies(…) … }
//
// The standalone server loads all three files, but only next's CLI calls
// nextTest, so getPkgManager's execSync never runs there.
//
// Only a package's files are read so: a mention in the app's own code
// always counts, because frameworks call the app's functions by names the
// app never writes (a NestJS controller's decorated methods). A mention
// that publishes the name (exports.x = x, export { x }, a re-export's
// getter, an import's binding) is no call; one that publishes it under
// another name (exports.y = x, export { x as y }) counts when that name
// runs. What cannot be read (a file over maxLazyParse, one the grammar
// cannot parse, a name past the budget) counts as running.

// liveness holds what Runs has settled for a graph.
type liveness struct {
	mu sync.Mutex
	// memo holds the names settled: true when code that runs names them.
	memo map[string]bool
	// namedIn lists, for a name found not to run, the functions whose
	// bodies name it.
	namedIn map[string][]string
	// mentions caches each name's occurrences, read once.
	mentions map[string][]mention
	// localNames are the names some file defines a function of its own
	// by and names bare: their answers depend on the file asked about.
	localNames map[string]bool
	parsed     int
	bytes      int
	steps      int
	w          walker // its parsers
}

func newLiveness() *liveness {
	return &liveness{memo: map[string]bool{}, namedIn: map[string][]string{}, mentions: map[string][]mention{}, localNames: map[string]bool{}}
}

// Budgets of the search: past them, a name counts as running. The parse
// budgets bound what it adds to a gather: at tree-sitter's rate of some
// 10 MB/s, 48 MiB is a few seconds on the largest graphs.
const (
	maxLiveParses = 600
	maxLiveBytes  = 48 << 20
	maxLiveDepth  = 64
	maxLiveSteps  = 200000
)

// mentionKind is what one occurrence of a name does.
type mentionKind int

const (
	// mentionRuns: at top level, in the app's code, or in a form not read.
	mentionRuns mentionKind = iota
	// mentionIn: in the bodies of the functions owners, all of which must
	// run.
	mentionIn
	// mentionAs: published or bound under another name, alias.
	mentionAs
	// mentionNone: the name's definition or a publication under itself.
	mentionNone
)

type mention struct {
	kind   mentionKind
	owners []string
	alias  string
	// file is the index of the file that holds it; local is set for a
	// bare identifier in a file that defines a function of the name
	// itself, which names that one, not another file's.
	file  int32
	local bool
}

// Runs reports whether the code at line and column (1-based, the column
// in code points) of a reached file may run: false only when it is in the
// body of a package's function that no code that runs names. The string
// then says why, for a finding's note.
func (g *Graph) Runs(ctx context.Context, file string, line, col int) (bool, string) {
	if g == nil || g.words == nil || g.Truncated || g.repo == nil || g.live == nil || PackageOf(file) == "" {
		return true, ""
	}
	x := g.live
	x.mu.Lock()
	defer x.mu.Unlock()
	data, err := g.repo.ReadFile(file)
	if err != nil || len(data) > maxLazyParse {
		return true, ""
	}
	src := &source{file: file, data: data, w: &x.w}
	root := src.root(ctx)
	if root == nil {
		return true, ""
	}
	off, ok := lineColOffset(data, line, col)
	if !ok {
		src.close()
		return true, ""
	}
	n := root.NamedDescendantForPointRange(pointAt(data, off), pointAt(data, off+1))
	if why := g.guardOf(file, data, n, src.text); why != "" {
		src.close()
		return false, "guarded off: " + why
	}
	owners := ownerChain(n, src.text)
	src.close()
	for _, o := range owners {
		if live, _ := g.liveName(ctx, file, o, nil); !live {
			why := "in " + o + "()"
			if o != owners[0] {
				why = "in " + owners[0] + "(), inside " + o + "()"
			}
			if in := x.namedIn[x.key(file, o)]; len(in) > 0 {
				if len(in) > 3 {
					in = append(in[:3:3], "…")
				}
				why += ", which only functions that never run name (" + strings.Join(in, ", ") + ")"
			} else {
				why += ", which no code that runs names"
			}
			return false, why
		}
	}
	return true, ""
}

// liveName reports whether code that runs names the function name that
// file defines; cyc is set when the answer leaned on a name still being
// settled (a recursion), which is then not memoized unless true.
func (g *Graph) liveName(ctx context.Context, file, name string, stack []string) (live, cyc bool) {
	x := g.live
	if runtimeCalled[name] || name == "" {
		return true, false
	}
	if x.steps++; len(stack) >= maxLiveDepth || x.steps > maxLiveSteps || ctx.Err() != nil {
		return true, false
	}
	ms, cached := x.mentions[name]
	if !cached {
		var ok bool
		if ms, ok = g.mentionsOf(ctx, name); !ok {
			ms = []mention{{kind: mentionRuns, file: -1}}
		}
		x.mentions[name] = ms
	}
	key := x.key(file, name)
	if v, ok := x.memo[key]; ok {
		return v, false
	}
	if slices.Contains(stack, key) {
		return false, true
	}
	stack = append(stack, key)
	var in []string
	for _, m := range ms {
		mfile := ""
		if m.file >= 0 {
			mfile = g.files[m.file]
		}
		if m.local && mfile != file {
			continue // that file's own function of the name
		}
		switch m.kind {
		case mentionNone: // mentionsOf leaves these out
		case mentionRuns:
			x.memo[key] = true
			return true, false
		case mentionAs:
			l, c := g.liveName(ctx, mfile, m.alias, stack)
			cyc = cyc || c
			if l {
				x.memo[key] = true
				return true, false
			}
			in = append(in, m.alias)
		case mentionIn:
			all := true
			for _, o := range m.owners {
				l, c := g.liveName(ctx, mfile, o, stack)
				cyc = cyc || c
				if !l {
					all = false
					break
				}
			}
			if all {
				x.memo[key] = true
				return true, false
			}
			if !slices.Contains(in, m.owners[0]) {
				in = append(in, m.owners[0])
			}
		}
	}
	if !cyc {
		x.memo[key] = false
		sort.Strings(in)
		x.namedIn[key] = in
	}
	return false, cyc
}

// key is what liveness memoizes the name of a function of file under:
// the name alone, unless a file names a function of its own by it.
func (x *liveness) key(file, name string) string {
	if x.localNames[name] {
		return file + "\x00" + name
	}
	return name
}

// mentionsOf reads every occurrence of name in the reached files; false
// when one of them cannot be read (it then counts as running) or the
// budget is spent. A mention that runs in any case ends the search.
func (g *Graph) mentionsOf(ctx context.Context, name string) ([]mention, bool) {
	st := g.words[name]
	if st == nil {
		return nil, true
	}
	for _, i := range st.files {
		if PackageOf(g.files[i]) == "" {
			return []mention{{kind: mentionRuns, file: i}}, true
		}
	}
	x := g.live
	var out []mention
	for _, i := range st.files {
		if x.parsed >= maxLiveParses {
			return nil, false
		}
		x.parsed++
		file := g.files[i]
		data, err := g.repo.ReadFile(file)
		if x.bytes += len(data); err != nil || len(data) > maxLazyParse || x.bytes > maxLiveBytes {
			return nil, false
		}
		src := &source{file: file, data: data, w: &x.w}
		root := src.root(ctx)
		if root == nil {
			return nil, false
		}
		pts := newPoints(data)
		var here []mention
		var bare []int // indexes into here of bare identifiers
		defines := false
		var builtins map[string]bool
		for _, off := range wordOffsets(data, name) {
			n := root.NamedDescendantForPointRange(pts.at(off), pts.at(off+len(name)))
			if g.guardOf(file, data, n, src.text) != "" {
				continue // it never runs in this image
			}
			defines = defines || lexicalDefinition(n, name, src.text)
			if builtins == nil {
				builtins = builtinBindings(root, src.text)
			}
			m := classifyMention(n, name, src.text, builtins)
			m.file = i
			switch {
			case m.kind == mentionNone, m.kind == mentionAs && m.alias == name:
			case m.kind == mentionIn && slices.Contains(m.owners, name):
				// In its own body: it runs only once it has.
			default:
				if n != nil && (n.Type() == "identifier" || n.Type() == "shorthand_property_identifier") {
					bare = append(bare, len(here))
				}
				here = append(here, m)
			}
		}
		src.close()
		if defines {
			for _, k := range bare {
				here[k].local = true
			}
			if len(bare) > 0 {
				x.localNames[name] = true
			}
		}
		for _, m := range here {
			if m.kind == mentionRuns && !m.local {
				return []mention{m}, true
			}
		}
		out = append(out, here...)
	}
	return out, true
}

// lexicalDefinition reports whether the occurrence n of name defines a
// function of the file's own by it (function name() {}, const name = () =>
// …, class name {}): the file's bare mentions of name are then of that
// one. A binding of an import or a require is not one.
func lexicalDefinition(n *sitter.Node, name string, text func(*sitter.Node) string) bool {
	if n == nil || n.Type() != "identifier" {
		return false
	}
	p := n.Parent()
	if p == nil {
		return false
	}
	switch p.Type() {
	case "function_declaration", "generator_function_declaration", "class_declaration":
		return jsplatform.Same(p.ChildByFieldName("name"), n)
	case "variable_declarator":
		return jsplatform.Same(p.ChildByFieldName("name"), n) && isFunction(p.ChildByFieldName("value"))
	}
	return false
}

// guardOf says why n never runs in the image, or "": a process.platform
// test keeps it to another system, or the start's server mode (a Next.js
// standalone server's development flags) keeps it from running.
func (g *Graph) guardOf(file string, data []byte, n *sitter.Node, text func(*sitter.Node) string) string {
	if n == nil {
		return ""
	}
	if sys := jsplatform.Guard(n, text); sys != "" {
		return "runs only on " + sys
	}
	if mode, ok := modeOf(g.modes, file, data); ok {
		return jsplatform.GuardWith(n, text, mode.condition)
	}
	return ""
}

// builtinNamespaces are the language's and node's global objects: a
// property of one (JSON.parse, Object.keys, process.exit) is theirs,
// never a package's function of that name. A package that puts its own
// function there (Object.assign = assign) names it on the right.
var builtinNamespaces = map[string]bool{
	"JSON": true, "Math": true, "Object": true, "Array": true, "Reflect": true, "Promise": true,
	"Number": true, "String": true, "Symbol": true, "Date": true, "BigInt": true, "Atomics": true,
	"Intl": true, "console": true, "Buffer": true, "process": true,
}

// builtinBindings are the names a file's top level binds to one of
// node's built-in modules: const cp = require('child_process') (also
// through an interop helper, _interop_require_default(require('fs'))),
// import * as cp from 'node:child_process', import fs from 'fs'. A
// property of one (cp.spawn) is node's function, never a package's.
func builtinBindings(root *sitter.Node, text func(*sitter.Node) string) map[string]bool {
	out := map[string]bool{}
	for i := 0; i < int(root.NamedChildCount()); i++ {
		st := root.NamedChild(i)
		switch st.Type() {
		case "lexical_declaration", "variable_declaration":
			for j := 0; j < int(st.NamedChildCount()); j++ {
				d := st.NamedChild(j)
				if d.Type() != "variable_declarator" {
					continue
				}
				id := d.ChildByFieldName("name")
				if id != nil && id.Type() == "identifier" && requiresBuiltin(d.ChildByFieldName("value"), text) {
					out[text(id)] = true
				}
			}
		case "import_statement":
			src := st.ChildByFieldName("source")
			if src == nil || !isBuiltin(strings.Trim(text(src), "\"'")) {
				continue
			}
			for j := 0; j < int(st.NamedChildCount()); j++ {
				c := st.NamedChild(j)
				if c.Type() != "import_clause" {
					continue
				}
				for k := 0; k < int(c.NamedChildCount()); k++ {
					switch b := c.NamedChild(k); b.Type() {
					case "identifier":
						out[text(b)] = true
					case "namespace_import":
						if id := b.NamedChild(0); id != nil {
							out[text(id)] = true
						}
					}
				}
			}
		}
	}
	return out
}

// requiresBuiltin reports require('<built-in>'), alone or as the one
// argument of an interop helper's call.
func requiresBuiltin(v *sitter.Node, text func(*sitter.Node) string) bool {
	for depth := 0; v != nil && depth < 3; depth++ {
		if v.Type() != "call_expression" {
			return false
		}
		args := v.ChildByFieldName("arguments")
		if args == nil || args.NamedChildCount() < 1 {
			return false
		}
		a := args.NamedChild(0)
		if fn := v.ChildByFieldName("function"); fn != nil && fn.Type() == "identifier" && text(fn) == "require" {
			spec := strings.Trim(text(a), "\"'`")
			return a.Type() == "string" && isBuiltin(spec) && !strings.HasSuffix(spec, "/") // require('events/') is the npm package
		}
		v = a // _interop_require_default(require('fs')), __importStar(…)
	}
	return false
}

// onlyTested reports whether the value of the expression e is only
// tested, never called nor handed on: the operand of !, typeof or void,
// a side of a comparison, or the whole condition of an if, a while or a
// ternary.
func onlyTested(e *sitter.Node) bool {
	p := e.Parent()
	for p != nil && p.Type() == "parenthesized_expression" {
		e, p = p, p.Parent()
	}
	if p == nil {
		return false
	}
	switch p.Type() {
	case "unary_expression":
		switch op := p.ChildByFieldName("operator"); {
		case op == nil:
		case op.Type() == "!", op.Type() == "typeof", op.Type() == "void":
			return true
		}
	case "binary_expression":
		switch op := p.ChildByFieldName("operator"); {
		case op == nil:
		case op.Type() == "===", op.Type() == "!==", op.Type() == "==", op.Type() == "!=", op.Type() == "instanceof", op.Type() == "in":
			return true
		}
	case "if_statement", "while_statement", "do_statement":
		return jsplatform.Same(p.ChildByFieldName("condition"), e)
	case "ternary_expression":
		return jsplatform.Same(p.ChildByFieldName("condition"), e)
	}
	return false
}

// classifyMention says what the occurrence n of name does.
func classifyMention(n *sitter.Node, name string, text func(*sitter.Node) string, builtins map[string]bool) mention {
	if n == nil {
		return mention{kind: mentionRuns}
	}
	switch n.Type() {
	case "comment", "regex_pattern", "regex", "regex_flags":
		return mention{kind: mentionNone} // calls nothing
	case "string_fragment", "string", "template_string":
		// Only a string that is the name itself can name it, as a
		// computed key (x["name"]()): "next:start-server" cannot.
		if s := strings.Trim(text(n), "\"'`"); s != name {
			return mention{kind: mentionNone}
		}
	}
	p := n.Parent()
	if p == nil {
		return mention{kind: mentionRuns}
	}
	// Its own definition.
	switch p.Type() {
	case "function_declaration", "generator_function_declaration", "method_definition", "class_declaration":
		if jsplatform.Same(p.ChildByFieldName("name"), n) {
			return mention{kind: mentionNone}
		}
	case "variable_declarator", "pair", "public_field_definition", "field_definition":
		if v := p.ChildByFieldName("value"); isFunction(v) && !jsplatform.Same(v, n) {
			return mention{kind: mentionNone}
		}
		if p.Type() == "variable_declarator" && jsplatform.Same(p.ChildByFieldName("name"), n) {
			return mention{kind: mentionNone} // const x = once(…): declares x, calls nothing
		}
		if p.Type() == "pair" && jsplatform.Same(p.ChildByFieldName("key"), n) {
			return mention{kind: mentionNone} // { isWasm: true }: a property's name
		}
	}
	if p.Type() == "assignment_expression" && jsplatform.Same(p.ChildByFieldName("right"), n) {
		// exports.y = x publishes x as y.
		if l := p.ChildByFieldName("left"); l != nil && l.Type() == "member_expression" && exportsObject(l.ChildByFieldName("object"), text) {
			if key := text(l.ChildByFieldName("property")); key != name && identWord(key) {
				return mention{kind: mentionAs, alias: key}
			}
			return mention{kind: mentionNone}
		}
	}
	if n.Type() == "property_identifier" && p.Type() == "member_expression" && jsplatform.Same(p.ChildByFieldName("property"), n) {
		if o := p.ChildByFieldName("object"); o != nil && o.Type() == "identifier" && (builtinNamespaces[text(o)] || builtins[text(o)]) {
			return mention{kind: mentionNone} // JSON.parse, cp.spawn: the language's or node's
		}
		if onlyTested(p) {
			return mention{kind: mentionNone} // if (!v.isWasm): its value is read, not called
		}
	}
	if n.Type() == "property_identifier" && p.Type() == "member_expression" {
		if a := p.Parent(); a != nil && a.Type() == "assignment_expression" && jsplatform.Same(a.ChildByFieldName("left"), p) {
			if r := a.ChildByFieldName("right"); isFunction(r) || exportsObject(p.ChildByFieldName("object"), text) {
				// Foo.prototype.x = function, exports.x = …: a
				// definition or a publication under its own name.
				return mention{kind: mentionNone}
			}
		}
	}
	// Bindings: an import, a destructured require. The local name's uses
	// are its own occurrences.
	switch p.Type() {
	case "import_specifier", "export_specifier":
		if alias := p.ChildByFieldName("alias"); alias != nil && !jsplatform.Same(alias, n) && text(alias) != name {
			return mention{kind: mentionAs, alias: text(alias)}
		}
		return mention{kind: mentionNone}
	case "import_clause", "namespace_import", "shorthand_property_identifier_pattern", "object_pattern":
		return mention{kind: mentionNone}
	case "pair_pattern":
		if k := p.ChildByFieldName("key"); jsplatform.Same(k, n) {
			if v := p.ChildByFieldName("value"); v != nil && v.Type() == "identifier" && text(v) != name {
				return mention{kind: mentionAs, alias: text(v)}
			}
		}
		return mention{kind: mentionNone}
	}
	if n.Type() == "shorthand_property_identifier_pattern" {
		return mention{kind: mentionNone}
	}
	// A publication in an object handed to module.exports or to a call
	// that exports (_export(exports, {…}), Object.defineProperty(exports,
	// "x", {…})).
	if obj := publishedObject(n, text); obj != nil {
		switch p.Type() {
		case "pair":
			k := p.ChildByFieldName("key")
			if jsplatform.Same(k, n) {
				return mention{kind: mentionNone}
			}
			if key := strings.Trim(text(k), `"'`); key != name && identWord(key) {
				return mention{kind: mentionAs, alias: key}
			}
			return mention{kind: mentionNone}
		case "object":
			return mention{kind: mentionNone} // { x }
		}
	}
	if n.Type() == "string_fragment" || n.Type() == "string" {
		s := n
		if s.Type() == "string_fragment" {
			s = p
		}
		if args := s.Parent(); args != nil && args.Type() == "arguments" && exportsCall(args.Parent(), text) {
			return mention{kind: mentionNone} // Object.defineProperty(exports, "x", …)
		}
	}
	owners := ownerChain(n, text)
	if len(owners) == 0 {
		return mention{kind: mentionRuns}
	}
	return mention{kind: mentionIn, owners: owners}
}

// ownerChain lists the names of the functions whose bodies hold n,
// innermost first, as ownerOf names them: code in the body runs only when
// each of them has run. A function with no name of its own (a callback)
// belongs to the one around it; one whose name is computed, or that is
// exported as default, is called by names the walk cannot list and adds
// none. A getter that Object.defineProperty(exports, "x", …) publishes is
// named x.
func ownerChain(n *sitter.Node, text func(*sitter.Node) string) []string {
	var out []string
	for ; n != nil; n = n.Parent() {
		name, ok := functionNameOf(n, text)
		if !ok || name == "" || runtimeCalled[name] && name != "get" && name != "set" {
			continue
		}
		if name == "get" || name == "set" {
			if key := definedExport(n, text); key != "" {
				name = key
			}
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// definedExport is the name x of Object.defineProperty(exports, "x",
// { get: fn }) for its getter fn.
func definedExport(fn *sitter.Node, text func(*sitter.Node) string) string {
	pair := fn.Parent()
	if pair == nil || pair.Type() != "pair" {
		return ""
	}
	obj := pair.Parent()
	if obj == nil || obj.Type() != "object" {
		return ""
	}
	args := obj.Parent()
	if args == nil || args.Type() != "arguments" || !exportsCall(args.Parent(), text) || args.NamedChildCount() < 3 {
		return ""
	}
	if k := args.NamedChild(1); k.Type() == "string" {
		if s := strings.Trim(text(k), `"'`); identWord(s) {
			return s
		}
	}
	return ""
}

// publishedObject returns the object literal that holds n as a key or a
// value, when that object is what the module exports: the right side of
// an assignment to module.exports or exports, or an argument of a call
// whose first argument is exports.
func publishedObject(n *sitter.Node, text func(*sitter.Node) string) *sitter.Node {
	o := n.Parent()
	if o != nil && o.Type() == "pair" {
		o = o.Parent()
	}
	if o == nil || o.Type() != "object" {
		return nil
	}
	p := o.Parent()
	for p != nil && p.Type() == "parenthesized_expression" {
		p = p.Parent()
	}
	switch {
	case p == nil:
		return nil
	case p.Type() == "assignment_expression" && exportsObject(p.ChildByFieldName("left"), text):
		return o
	case p.Type() == "arguments" && exportsCall(p.Parent(), text):
		return o
	}
	return nil
}

// exportsCall reports a call whose first argument is exports or
// module.exports: a helper that publishes names.
func exportsCall(call *sitter.Node, text func(*sitter.Node) string) bool {
	if call == nil || call.Type() != "call_expression" {
		return false
	}
	args := call.ChildByFieldName("arguments")
	return args != nil && args.NamedChildCount() > 0 && exportsObject(args.NamedChild(0), text)
}

// exportsObject reports exports, module.exports or a member of either,
// also as a bundle's module function has them (e.exports, bundleModule).
func exportsObject(n *sitter.Node, text func(*sitter.Node) string) bool {
	for n != nil && n.Type() == "member_expression" {
		if t := text(n); t == "module.exports" {
			return true
		}
		if p := n.ChildByFieldName("property"); p != nil && text(p) == "exports" {
			if o := n.ChildByFieldName("object"); o != nil && o.Type() == "identifier" {
				if _, ok := bundleModule(o, text); ok {
					return true
				}
			}
		}
		n = n.ChildByFieldName("object")
	}
	return n != nil && n.Type() == "identifier" && text(n) == "exports"
}

// bundleModule returns the id of the bundle module whose module object
// the identifier m is: the first parameter of a function that is a value
// of a module table ({421: (e, t, i) => { … }, …}, as ncc and webpack
// write them), the function around m.
func bundleModule(m *sitter.Node, text func(*sitter.Node) string) (string, bool) {
	fn := m.Parent()
	for fn != nil && !isFunction(fn) {
		fn = fn.Parent()
	}
	if fn == nil {
		return "", false
	}
	pair := fn.Parent()
	if pair == nil || pair.Type() != "pair" || !jsplatform.Same(pair.ChildByFieldName("value"), fn) {
		return "", false
	}
	key := pair.ChildByFieldName("key")
	if key == nil || (key.Type() != "number" && key.Type() != "string") {
		return "", false
	}
	if obj := pair.Parent(); obj == nil || obj.Type() != "object" {
		return "", false
	}
	first := fn.ChildByFieldName("parameter")
	if params := fn.ChildByFieldName("parameters"); first == nil && params != nil && params.NamedChildCount() > 0 {
		first = params.NamedChild(0)
	}
	if first == nil || first.Type() != "identifier" || text(first) != text(m) {
		return "", false
	}
	return strings.Trim(text(key), `"'`), true
}

func isFunction(n *sitter.Node) bool {
	for n != nil && n.Type() == "parenthesized_expression" {
		n = n.NamedChild(0)
	}
	if n == nil {
		return false
	}
	switch n.Type() {
	case "function_expression", "function", "arrow_function", "generator_function", "class":
		return true
	}
	return false
}

// wordOffsets lists where name occurs in data as a whole word.
func wordOffsets(data []byte, name string) []int {
	var out []int
	w := []byte(name)
	for i := 0; ; {
		j := bytes.Index(data[i:], w)
		if j < 0 {
			return out
		}
		at := i + j
		end := at + len(w)
		if (at == 0 || !wordByte(data[at-1])) && (end == len(data) || !wordByte(data[end])) {
			out = append(out, at)
		}
		i = end
	}
}

// points turns byte offsets of one file into rows and columns, with the
// line starts found once (pointAt counts them again for each offset).
type points struct {
	data  []byte
	lines []int // the offset each line starts at
}

func newPoints(data []byte) *points {
	p := &points{data: data, lines: []int{0}}
	for i, c := range data {
		if c == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	return p
}

func (p *points) at(off int) sitter.Point {
	off = min(off, len(p.data))
	row := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off }) - 1
	return sitter.Point{Row: uint32(row), Column: uint32(off - p.lines[row])}
}

// lineColOffset is the byte offset of a 1-based line and code-point
// column.
func lineColOffset(data []byte, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(data) && data[off] != '\n'; c++ {
		_, size := utf8.DecodeRune(data[off:])
		off += size
	}
	return off, off < len(data)
}
