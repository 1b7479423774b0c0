package modgraph

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// What a module exports reaches other files only through their loads of
// it, so two questions of liveness (live.go) are answered from the loads
// the walk resolved:
//
//   - A property of a module (X.sync, where const X = require('glob')) is
//     a function of the module X names, or of one that module loads: it
//     names no function of a file that module never reaches.
//   - A function published as its file's default export (module.exports =
//     spawn, export default spawn, or a bundle's e.exports = spawn) runs
//     where the importers call what their load binds:
//
//	// next/dist/compiled/cross-spawn/index.js, an ncc bundle
//	139: (e, t, n) => { function spawn(…) { … r.spawn(…) } e.exports = spawn }
//	var r = __nccwpck_require__(139); module.exports = r
//	// next/dist/cli/next-test.js
//	const _crossspawn = _interop_require_default(require("next/dist/compiled/cross-spawn"))
//	async function nextTest(…) { … (0, _crossspawn.default)(…) }
//
// cross-spawn's spawn runs only if nextTest does. A load whose value the
// walk cannot follow (passed on, stored, exported under a name) counts as
// running, as does a file some load may reach by a computed name.

// loadEdge is a literal load of a file: where its text starts, and the
// file it resolved to.
type loadEdge struct {
	offset int
	to     string
}

// maxReach bounds the files reaches visits; past it, the answer is yes.
const maxReach = 4000

// reaches reports whether from is to, or loads it through its literal
// loads.
func (g *Graph) reaches(from, to string) bool {
	if from == to {
		return true
	}
	x := g.live
	key := from + "\x00" + to
	if v, ok := x.reach[key]; ok {
		return v
	}
	seen := map[string]bool{from: true}
	queue := []string{from}
	found := false
	for len(queue) > 0 && !found {
		f := queue[0]
		queue = queue[1:]
		for _, e := range g.loads[f] {
			if e.to == to {
				found = true
				break
			}
			if !seen[e.to] {
				seen[e.to] = true
				queue = append(queue, e.to)
			}
		}
		if len(seen) > maxReach {
			found = true
		}
	}
	x.reach[key] = found
	return found
}

// LoadSite is one literal load of a file: the file that makes it and
// where the load's text starts there.
type LoadSite struct {
	File   string
	Offset int
}

// Importers lists the literal loads of file the walk followed, in file
// and offset order; a bundle's requires of its own module ids are left
// out.
func (g *Graph) Importers(file string) []LoadSite {
	if g == nil || g.live == nil {
		return nil
	}
	var out []LoadSite
	for _, s := range g.importersOf(file) {
		if s.off >= 0 {
			out = append(out, LoadSite{File: s.file, Offset: s.off})
		}
	}
	return out
}

// loadSite is where a load starts in a file (-1: the bundle's own
// requires of a module id, found when read).
type loadSite struct {
	file string
	off  int
}

// importersOf lists the literal loads of file, in file and offset order,
// from an index of every load built once.
func (g *Graph) importersOf(file string) []loadSite {
	x := g.live
	if x.importers == nil {
		x.importers = map[string][]loadSite{}
		for from, es := range g.loads {
			for _, e := range es {
				x.importers[e.to] = append(x.importers[e.to], loadSite{file: from, off: e.offset})
			}
		}
		for _, sites := range x.importers {
			slices.SortFunc(sites, func(a, b loadSite) int {
				if c := strings.Compare(a.file, b.file); c != 0 {
					return c
				}
				return a.off - b.off
			})
		}
	}
	return x.importers[file]
}

// bindingsOf returns the load bindings of the reached file i
// (moduleBindings), a bundle's bindings of node's modules (bundleBuiltins)
// and of its own (bundleModules), and its consts of object literals
// (objectConsts), read the first time the file is.
func (x *liveness) bindingsOf(i int32, root *sitter.Node, data []byte, text func(*sitter.Node) string) fileBindings {
	if b, ok := x.bindings[i]; ok {
		return b
	}
	b := fileBindings{loads: moduleBindings(root, text), builtins: bundleBuiltins(root, data, text), bundle: bundleModules(root, data, text),
		objects: objectConsts(root, data, text)}
	x.bindings[i] = b
	return b
}

// fileBindings are the names a file binds to modules (to its loads, and,
// in a bundle, to node's built-in modules and to its own modules), and to
// object literals.
type fileBindings struct {
	loads    map[string]moduleBinding
	builtins []scopedBinding
	bundle   bundle
	// objects are the consts whose value is an object literal (const l =
	// { parse, config }), each in the function around it.
	objects []scopedBinding
}

// loadAt returns the file that the load starting within [start, end) of
// file resolved to.
func (g *Graph) loadAt(file string, start, end uint32) (string, bool) {
	for _, e := range g.loads[file] {
		if e.offset >= int(start) && e.offset < int(end) {
			return e.to, true
		}
	}
	return "", false
}

// moduleBinding is a name a file's top level binds to a load: its value's
// range, and whether the load is of one of node's built-in modules.
type moduleBinding struct {
	start, end uint32
	builtin    bool
}

// moduleBindings lists the names a file's top level binds to loads:
// const cp = require('child_process') (also through an interop helper,
// _interop_require_default(require('fs'))), const { serialize } =
// require('pg-protocol'), import * as cp from 'node:child_process',
// import fs from 'fs', import { serialize } from 'pg-protocol'.
func moduleBindings(root *sitter.Node, text func(*sitter.Node) string) map[string]moduleBinding {
	out := map[string]moduleBinding{}
	for i := 0; i < int(root.NamedChildCount()); i++ {
		st := root.NamedChild(i)
		switch st.Type() {
		case "lexical_declaration", "variable_declaration":
			for _, d := range declarators(st) {
				id, v := d.ChildByFieldName("name"), d.ChildByFieldName("value")
				if id == nil || v == nil {
					continue
				}
				spec, ok := requireOf(v, text)
				if !ok {
					continue
				}
				// const X = require('m'), and const { serialize } =
				// require('m'): what m exports.
				for _, n := range patternNames(id) {
					out[text(n)] = moduleBinding{start: v.StartByte(), end: v.EndByte(), builtin: builtinSpec(spec)}
				}
			}
		case "import_statement":
			src := st.ChildByFieldName("source")
			if src == nil {
				continue
			}
			b := moduleBinding{start: st.StartByte(), end: st.EndByte(), builtin: builtinSpec(strings.Trim(text(src), "\"'"))}
			for j := 0; j < int(st.NamedChildCount()); j++ {
				c := st.NamedChild(j)
				if c.Type() != "import_clause" {
					continue
				}
				for k := 0; k < int(c.NamedChildCount()); k++ {
					switch id := c.NamedChild(k); id.Type() {
					case "identifier":
						out[text(id)] = b
					case "namespace_import":
						if n := id.NamedChild(0); n != nil {
							out[text(n)] = b
						}
					case "named_imports":
						for _, n := range patternNames(id) {
							out[text(n)] = b
						}
					}
				}
			}
		}
	}
	return out
}

// declarators lists the variable declarators of a declaration (const,
// let or var).
func declarators(st *sitter.Node) []*sitter.Node {
	var out []*sitter.Node
	for i := 0; i < int(st.NamedChildCount()); i++ {
		if d := st.NamedChild(i); d.Type() == "variable_declarator" {
			out = append(out, d)
		}
	}
	return out
}

// builtinSpec reports one of node's built-in modules; require('events/')
// is the npm package.
func builtinSpec(spec string) bool {
	return isBuiltin(spec) && !strings.HasSuffix(spec, "/")
}

// interopHelpers wrap a load's value for the importer: TypeScript's, swc's,
// Babel's and esbuild's.
var interopHelpers = map[string]bool{
	"_interop_require_default": true, "_interop_require_wildcard": true, "__importDefault": true,
	"__importStar": true, "_interopRequireDefault": true, "_interopRequireWildcard": true,
	"__toESM": true, "_interopDefault": true, "interopDefault": true,
}

// requireOf returns the specifier of require('x'), alone or as the one
// argument of an interop helper's call.
func requireOf(v *sitter.Node, text func(*sitter.Node) string) (string, bool) {
	for depth := 0; v != nil && depth < 3; depth++ {
		if v.Type() != "call_expression" {
			return "", false
		}
		args := v.ChildByFieldName("arguments")
		if args == nil || args.NamedChildCount() < 1 {
			return "", false
		}
		a := args.NamedChild(0)
		fn := v.ChildByFieldName("function")
		if fn != nil && fn.Type() == "identifier" && text(fn) == "require" {
			if a.Type() != "string" {
				return "", false
			}
			return strings.Trim(text(a), "\"'`"), true
		}
		if calleeName(fn, text) == "" || !interopHelpers[calleeName(fn, text)] {
			return "", false
		}
		v = a
	}
	return "", false
}

// unwrapCallee is a call's function without the parentheses and the
// sequence compiled code writes around it: (0, x.f) is x.f.
func unwrapCallee(fn *sitter.Node) *sitter.Node {
	for fn != nil && (fn.Type() == "parenthesized_expression" || fn.Type() == "sequence_expression") && fn.NamedChildCount() > 0 {
		fn = fn.NamedChild(int(fn.NamedChildCount()) - 1)
	}
	return fn
}

// calleeName is the name a call's function is written with: f, x.f,
// (0, x.f).
func calleeName(fn *sitter.Node, text func(*sitter.Node) string) string {
	fn = unwrapCallee(fn)
	switch {
	case fn == nil:
		return ""
	case fn.Type() == "identifier":
		return text(fn)
	case fn.Type() == "member_expression":
		return text(fn.ChildByFieldName("property"))
	}
	return ""
}

// defaultExport reports whether n, the right side of an assignment or an
// export's value, publishes it as its module's default export, with the
// bundle module's id when a bundle's module function does.
func defaultExport(n *sitter.Node, text func(*sitter.Node) string) (id string, ok bool) {
	p := n.Parent()
	if p == nil {
		return "", false
	}
	if p.Type() == "export_statement" && ExportsDefault(p) {
		return "", true
	}
	if p.Type() != "assignment_expression" || !jsplatform.Same(p.ChildByFieldName("right"), n) {
		return "", false
	}
	l := p.ChildByFieldName("left")
	if l == nil || l.Type() != "member_expression" {
		return "", false
	}
	obj, prop := l.ChildByFieldName("object"), text(l.ChildByFieldName("property"))
	switch {
	case text(l) == "module.exports":
		return "", true
	case prop == "exports" && obj != nil && obj.Type() == "identifier":
		return bundleModule(obj, text) // e.exports = spawn
	case prop == "default" && obj != nil && (text(obj) == "exports" || text(obj) == "module.exports"):
		return "", true // exports.default = x
	}
	return "", false
}

// use is what one load of a module does with the module's value: the
// functions whose bodies use it (owners, all of which must run; none: it
// runs), or a re-export as another file's default (again, with its bundle
// id), or nothing at all (skip).
type use struct {
	owners  []string
	file    string
	again   bool
	id      string
	skip    bool
	unknown bool
}

// liveDefault reports whether code that runs calls the default export of
// file (of its bundle module id): whether any load of it hands the value
// to code that runs.
func (g *Graph) liveDefault(ctx context.Context, file, id string, stack []string) (live, cyc bool) {
	x := g.live
	key := "default\x00" + file + "\x00" + id
	if v, ok := x.memo[key]; ok {
		return v, false
	}
	if slices.Contains(stack, key) {
		return false, true
	}
	if x.steps++; len(stack) >= maxLiveDepth || x.steps > maxLiveSteps || ctx.Err() != nil {
		return true, false
	}
	uses, ok := g.usesOf(ctx, file, id)
	if !ok {
		x.memo[key] = true
		return true, false
	}
	stack = append(stack, key)
	for _, u := range uses {
		l, c := false, false
		switch {
		case u.skip:
			continue
		case u.unknown:
			l = true
		case u.again:
			l, c = g.liveDefault(ctx, u.file, u.id, stack)
		default:
			l = true
			for _, o := range u.owners {
				ol, oc := g.liveName(ctx, u.file, o, stack)
				c = c || oc
				if !ol {
					l = false
					break
				}
			}
		}
		cyc = cyc || c
		if l {
			x.memo[key] = true
			return true, false
		}
	}
	if !cyc {
		x.memo[key] = false
	}
	return false, cyc
}

// usesOf lists what each load of file's default export (of bundle module
// id, within file) does with it; false when a load cannot be read, or
// none is known (an entry, a file a computed load may reach).
func (g *Graph) usesOf(ctx context.Context, file, id string) ([]use, bool) {
	var sites []loadSite
	if id != "" {
		sites = append(sites, loadSite{file: file, off: -1})
	} else {
		if _, dyn := g.DynamicIn(file); dyn {
			return nil, false
		}
		if sites = g.importersOf(file); len(sites) == 0 {
			return nil, false
		}
	}
	x := g.live
	var out []use
	for _, s := range sites {
		if x.parsed >= maxLiveParses {
			return nil, false
		}
		x.parsed++
		data, err := g.repo.ReadFile(s.file)
		if x.bytes += len(data); err != nil || len(data) > maxLazyParse || x.bytes > maxLiveBytes {
			return nil, false
		}
		src := &source{file: s.file, data: data, w: &x.w}
		root := src.root(ctx)
		if root == nil {
			return nil, false
		}
		var loads []*sitter.Node
		if s.off < 0 {
			loads = bundleRequires(root, data, id, src.text)
			if loads == nil {
				src.close()
				return nil, false
			}
		} else {
			n := root.NamedDescendantForPointRange(pointAt(data, s.off), pointAt(data, s.off+1))
			loads = []*sitter.Node{loadExpression(n, src.text)}
		}
		for _, l := range loads {
			out = append(out, usesOfLoad(l, s.file, data, src.text)...)
		}
		src.close()
	}
	return out, true
}

// loadExpression climbs from the node at a load's start to the load: the
// require call or the import statement; nil when it is neither.
func loadExpression(n *sitter.Node, text func(*sitter.Node) string) *sitter.Node {
	for i := 0; n != nil && i < 6; i, n = i+1, n.Parent() {
		switch n.Type() {
		case "import_statement":
			return n
		case "call_expression":
			if fn := n.ChildByFieldName("function"); fn != nil && fn.Type() == "identifier" && text(fn) == "require" {
				return n
			}
		}
	}
	return nil
}

// bundleRequires finds the calls of a bundle's require with the module id
// in the bundle's file: name(id), with the id the only argument. nil when
// one of them is not a call of an identifier.
func bundleRequires(root *sitter.Node, data []byte, id string, text func(*sitter.Node) string) []*sitter.Node {
	pts := newPoints(data)
	out := []*sitter.Node{}
	for _, off := range wordOffsets(data, id) {
		n := root.NamedDescendantForPointRange(pts.at(off), pts.at(off+len(id)))
		if n == nil || n.Type() != "number" || text(n) != id {
			continue
		}
		args := n.Parent()
		if args == nil || args.Type() != "arguments" {
			continue // the table's key, or the number elsewhere
		}
		call := args.Parent()
		if args.NamedChildCount() != 1 || call == nil || call.Type() != "call_expression" {
			return nil
		}
		if fn := call.ChildByFieldName("function"); fn == nil || fn.Type() != "identifier" {
			return nil
		}
		out = append(out, call)
	}
	return out
}

// usesOfLoad says what the load l (a require call, an import statement,
// a bundle's require) in file does with the module's value.
func usesOfLoad(l *sitter.Node, file string, data []byte, text func(*sitter.Node) string) []use {
	if l == nil {
		return []use{{unknown: true}}
	}
	if l.Type() == "import_statement" {
		var out []use
		for i := 0; i < int(l.NamedChildCount()); i++ {
			c := l.NamedChild(i)
			if c.Type() != "import_clause" {
				continue
			}
			for _, id := range patternNames(c) {
				out = append(out, usesOfName(id, nil, file, data, text)...)
			}
		}
		if out == nil {
			return []use{{skip: true}} // import 'x' for its effects
		}
		return out
	}
	e := l
	for {
		p := e.Parent()
		for p != nil && p.Type() == "parenthesized_expression" {
			e, p = p, p.Parent()
		}
		if p != nil && p.Type() == "arguments" {
			if call := p.Parent(); call != nil && call.Type() == "call_expression" && interopHelpers[calleeName(call.ChildByFieldName("function"), text)] {
				e = call
				continue
			}
		}
		break
	}
	p := e.Parent()
	if p == nil {
		return []use{{unknown: true}}
	}
	switch p.Type() {
	case "expression_statement":
		return []use{{skip: true}} // require('x') for its effects
	case "variable_declarator":
		if !jsplatform.Same(p.ChildByFieldName("value"), e) {
			break
		}
		var out []use
		for _, id := range patternNames(p.ChildByFieldName("name")) {
			out = append(out, usesOfName(id, scopeOf(p), file, data, text)...)
		}
		if out != nil {
			return out
		}
	case "assignment_expression":
		if !jsplatform.Same(p.ChildByFieldName("right"), e) {
			break
		}
		if id, ok := defaultExport(e, text); ok {
			return []use{{again: true, file: file, id: id}}
		}
		if left := p.ChildByFieldName("left"); left != nil && left.Type() == "identifier" {
			return usesOfName(left, nil, file, data, text)
		}
	case "call_expression":
		if jsplatform.Same(p.ChildByFieldName("function"), e) {
			return []use{{owners: ownerChain(e, text), file: file}} // require('x')(…)
		}
	case "member_expression":
		if c := p.Parent(); c != nil && c.Type() == "call_expression" && jsplatform.Same(c.ChildByFieldName("function"), p) {
			return []use{{owners: ownerChain(e, text), file: file}} // require('x').sync(…)
		}
	}
	return []use{{unknown: true}}
}

// patternNames lists the identifiers a binding declares: the name itself,
// or those of a destructuring or an import clause.
func patternNames(n *sitter.Node) []*sitter.Node {
	if n == nil {
		return nil
	}
	switch n.Type() {
	case "identifier", "shorthand_property_identifier_pattern":
		return []*sitter.Node{n}
	case "pair_pattern":
		return patternNames(n.ChildByFieldName("value"))
	case "object_assignment_pattern", "assignment_pattern":
		return patternNames(n.ChildByFieldName("left"))
	case "import_specifier":
		if a := n.ChildByFieldName("alias"); a != nil {
			return []*sitter.Node{a}
		}
		return patternNames(n.ChildByFieldName("name"))
	}
	var out []*sitter.Node
	for i := 0; i < int(n.NamedChildCount()); i++ {
		out = append(out, patternNames(n.NamedChild(i))...)
	}
	return out
}

// scopeOf is the innermost function around n, nil at a module's top
// level.
func scopeOf(n *sitter.Node) *sitter.Node {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if isFunction(p) || p.Type() == "function_declaration" || p.Type() == "method_definition" {
			return p
		}
	}
	return nil
}

// usesOfName says what the uses of the binding id (declared in scope, or
// at the top level when scope is nil) do with the module's value: each
// use runs where the functions around it run, and a re-export hands it to
// this file's importers. A use that hands the value on (passes, stores
// or publishes it) does so only where it runs, so it is read the same
// way.
func usesOfName(id *sitter.Node, scope *sitter.Node, file string, data []byte, text func(*sitter.Node) string) []use {
	name := text(id)
	root := id
	for root.Parent() != nil {
		root = root.Parent()
	}
	lo, hi := root.StartByte(), root.EndByte()
	if scope != nil {
		lo, hi = scope.StartByte(), scope.EndByte()
	}
	pts := newPoints(data)
	var out []use
	for _, off := range wordOffsets(data, name) {
		if uint32(off) < lo || uint32(off) >= hi || uint32(off) == id.StartByte() {
			continue
		}
		n := root.NamedDescendantForPointRange(pts.at(off), pts.at(off+len(name)))
		if n == nil || n.Type() != "identifier" || text(n) != name {
			continue // a property's name, a string, a comment
		}
		if declaresIdentifier(n) || jsplatform.Shadowed(n, name, lo, hi, text, func(d *sitter.Node) bool { return d.StartByte() == id.StartByte() }) {
			continue // another variable of the name
		}
		if xid, ok := defaultExport(n, text); ok {
			out = append(out, use{again: true, file: file, id: xid})
			continue
		}
		// A call, a property's call, or the value handed on: each only
		// once the functions around it run (none: at once).
		out = append(out, use{owners: ownerChain(n, text), file: file})
	}
	return out
}

// declaresIdentifier reports an identifier that declares a variable of its
// name rather than using one: another binding of the same name.
func declaresIdentifier(n *sitter.Node) bool {
	p := n.Parent()
	if p == nil {
		return false
	}
	switch p.Type() {
	case "variable_declarator", "function_declaration", "class_declaration":
		return jsplatform.Same(p.ChildByFieldName("name"), n)
	case "formal_parameters", "required_parameter", "optional_parameter", "rest_pattern", "catch_clause",
		"import_specifier", "import_clause", "namespace_import":
		return true
	case "arrow_function":
		return jsplatform.Same(p.ChildByFieldName("parameter"), n)
	}
	return false
}

// scopedBinding is a name bound to one of node's built-in modules inside
// a bundle: the bytes it holds in, and where it is declared.
type scopedBinding struct {
	name       string
	lo, hi     uint32
	declaredAt uint32
	// mod is the bundle module it is bound to (bundleModules).
	mod string
}

// bundleBuiltins lists the names a bundle binds to its modules that are
// node's built-in ones: for 421: e => { e.exports = require("node:child_process") },
// each const s = i(421) binds s in the function around it.
func bundleBuiltins(root *sitter.Node, data []byte, text func(*sitter.Node) string) []scopedBinding {
	if !bytes.Contains(data, []byte("exports=require(")) && !bytes.Contains(data, []byte("exports = require(")) {
		return nil
	}
	pts := newPoints(data)
	var out []scopedBinding
	for _, off := range wordOffsets(data, "require") {
		n := root.NamedDescendantForPointRange(pts.at(off), pts.at(off+len("require")))
		if n == nil || n.Type() != "identifier" {
			continue
		}
		call := n.Parent()
		if call == nil || call.Type() != "call_expression" || !jsplatform.Same(call.ChildByFieldName("function"), n) {
			continue
		}
		spec, ok := requireOf(call, text)
		if !ok || !builtinSpec(spec) {
			continue
		}
		id, ok := defaultExport(call, text)
		if !ok || id == "" {
			continue
		}
		for _, req := range bundleRequires(root, data, id, text) {
			d := req.Parent()
			if d == nil || d.Type() != "variable_declarator" || !jsplatform.Same(d.ChildByFieldName("value"), req) {
				continue
			}
			name := d.ChildByFieldName("name")
			if name == nil || name.Type() != "identifier" {
				continue
			}
			out = append(out, scoped(root, name, text))
		}
	}
	return out
}

// bundle is what a bundle file says of its own modules.
type bundle struct {
	// bindings are the names bound to its require of one of its modules
	// (const n = t(738)), each in the function around it.
	bindings []scopedBinding
	// requires lists, for each module of the table, the ids of the
	// modules its function requires.
	requires map[string][]string
}

// bundleModules reads a bundle's module table: which module requires
// which, and the names bound to its modules, whose properties (n.sync)
// are functions of that module or of one it requires, not of another
// file's or of another module's of the bundle.
func bundleModules(root *sitter.Node, data []byte, text func(*sitter.Node) string) bundle {
	ms := requireBindings(data)
	if len(ms) == 0 {
		return bundle{}
	}
	pts := newPoints(data)
	b := bundle{requires: map[string][]string{}}
	calls := map[string]*regexp.Regexp{} // each module's require, by its name
	for _, k := range numberKeys(data) {
		n := root.NamedDescendantForPointRange(pts.at(k.lo), pts.at(k.hi))
		if n == nil || n.Type() != "number" || n.Parent() == nil || n.Parent().Type() != "pair" {
			continue
		}
		fn := n.Parent().ChildByFieldName("value")
		if fn == nil || !isFunction(fn) {
			continue
		}
		if key, _ := jsplatform.ModuleEntry(fn); !jsplatform.Same(key, n) {
			continue
		}
		var reqs []string
		if ps := jsplatform.Params(fn, text); len(ps) >= 3 && ps[2] != "" {
			call, ok := calls[ps[2]]
			if !ok {
				call = regexp.MustCompile(`(?:^|[^\w$.])` + regexp.QuoteMeta(ps[2]) + `\((\d+)\)`)
				calls[ps[2]] = call
			}
			for _, c := range call.FindAllStringSubmatch(text(fn), -1) {
				reqs = append(reqs, c[1])
			}
		}
		b.requires[text(n)] = reqs
	}
	for _, m := range ms {
		id := string(data[m.id.lo:m.id.hi])
		if _, ok := b.requires[id]; !ok {
			continue
		}
		name := root.NamedDescendantForPointRange(pts.at(m.name.lo), pts.at(m.name.hi))
		if name == nil || name.Type() != "identifier" {
			continue
		}
		var decl, value *sitter.Node
		switch p := name.Parent(); {
		case p == nil:
			continue
		case p.Type() == "variable_declarator" && jsplatform.Same(p.ChildByFieldName("name"), name):
			decl, value = name, p.ChildByFieldName("value")
		case p.Type() == "assignment_expression" && jsplatform.Same(p.ChildByFieldName("left"), name):
			// var s; if (…) { s = n(132) } else { s = n(778) }: the
			// declaration is the function's own var.
			decl, value = varIn(scopeOf(p), text(name), text), p.ChildByFieldName("right")
		}
		if decl == nil || value == nil || value.Type() != "call_expression" {
			continue
		}
		sb := scoped(root, decl, text)
		sb.mod = id
		b.bindings = append(b.bindings, sb)
	}
	return b
}

// objectConsts lists the consts a file declares with an object literal. A
// property of one (l.parse) is a function the file defines, loads or is
// handed by a call that names it: never another file's function that the
// file cannot reach.
func objectConsts(root *sitter.Node, data []byte, text func(*sitter.Node) string) []scopedBinding {
	ms := objectAssignments(data)
	if len(ms) == 0 {
		return nil
	}
	pts := newPoints(data)
	var out []scopedBinding
	for _, m := range ms {
		name := root.NamedDescendantForPointRange(pts.at(m.lo), pts.at(m.hi))
		if name == nil || name.Type() != "identifier" {
			continue
		}
		d := name.Parent()
		if d == nil || d.Type() != "variable_declarator" || !jsplatform.Same(d.ChildByFieldName("name"), name) {
			continue
		}
		if v := d.ChildByFieldName("value"); v == nil || v.Type() != "object" {
			continue
		}
		if decl := d.Parent(); decl == nil || decl.Type() != "lexical_declaration" || decl.ChildCount() == 0 || decl.Child(0).Type() != "const" {
			continue
		}
		out = append(out, scoped(root, name, text))
	}
	return out
}

// varIn returns the identifier a var or let statement of fn's body
// declares as name; nil when none does.
func varIn(fn *sitter.Node, name string, text func(*sitter.Node) string) *sitter.Node {
	if fn == nil {
		return nil
	}
	body := fn.ChildByFieldName("body")
	if body == nil || body.Type() != "statement_block" {
		return nil
	}
	for i := 0; i < int(body.NamedChildCount()); i++ {
		st := body.NamedChild(i)
		if st.Type() != "variable_declaration" && st.Type() != "lexical_declaration" {
			continue
		}
		for _, d := range declarators(st) {
			if id := d.ChildByFieldName("name"); id != nil && id.Type() == "identifier" && text(id) == name {
				return id
			}
		}
	}
	return nil
}

// reaches reports whether the bundle's module from is to, or requires it
// through the modules of the table; an id the table does not hold may
// reach any.
func (b bundle) reaches(from, to string) bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		if m == to {
			return true
		}
		reqs, ok := b.requires[m]
		if !ok {
			return true
		}
		for _, r := range reqs {
			if !seen[r] {
				seen[r] = true
				queue = append(queue, r)
			}
		}
	}
	return false
}

// moduleOf returns the key of the bundle module whose function holds n;
// "" when none does.
func moduleOf(n *sitter.Node, text func(*sitter.Node) string) string {
	for p := n; p != nil; p = p.Parent() {
		if isFunction(p) {
			if key, _ := jsplatform.ModuleEntry(p); key != nil {
				return text(key)
			}
		}
	}
	return ""
}

// scoped is the binding that the identifier id declares, held in the
// function around it (the file's top level when none).
func scoped(root, id *sitter.Node, text func(*sitter.Node) string) scopedBinding {
	scope := scopeOf(id)
	if scope == nil {
		scope = root
	}
	return scopedBinding{name: text(id), lo: scope.StartByte(), hi: scope.EndByte(), declaredAt: id.StartByte()}
}

// boundBy returns the bindings that the identifier o is, where they
// hold and are not shadowed.
func boundBy(o *sitter.Node, bindings []scopedBinding, text func(*sitter.Node) string) []scopedBinding {
	name := text(o)
	var out []scopedBinding
	for _, b := range bindings {
		if b.name != name || o.StartByte() < b.lo || o.EndByte() > b.hi {
			continue
		}
		own := func(id *sitter.Node) bool { return id.StartByte() == b.declaredAt }
		if !jsplatform.Shadowed(o, name, b.lo, b.hi, text, own) {
			out = append(out, b)
		}
	}
	return out
}
