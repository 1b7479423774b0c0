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
	// perFile are the names whose answer depends on the file asked
	// about: a mention of one is local, a property of a module, or
	// this.name in a class with its own.
	perFile map[string]bool
	// reach memoizes Graph.reaches, computed Graph.DynamicIn.
	reach, computed map[string]bool
	// methods are the files and names (file NUL name) of the methods and
	// class fields seen.
	methods map[string]bool
	// bindings holds each file's bindings of modules, read once
	// (bindingsOf); importers each file's loads (exports.go).
	bindings  map[int32]fileBindings
	importers map[string][]loadSite
	parsed    int
	bytes     int
	steps     int
	w         walker // its parsers
}

func newLiveness() *liveness {
	return &liveness{memo: map[string]bool{}, namedIn: map[string][]string{}, mentions: map[string][]mention{}, perFile: map[string]bool{}, reach: map[string]bool{}, computed: map[string]bool{}, methods: map[string]bool{},
		bindings: map[int32]fileBindings{}}
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
	// mentionDefault: published as its module's default export (alias:
	// a bundle module's id), which runs where its importers call it
	// (exports.go).
	mentionDefault
)

type mention struct {
	kind   mentionKind
	owners []string
	alias  string
	// file is the index of the file that holds it; local is set for a
	// bare name of a function of that file's own, or a private name,
	// which name that one, not another file's.
	file  int32
	local bool
	// receiver is the file a property mention's object is bound to by a
	// load (X.sync, const X = require('glob')): it names only functions
	// of the files that one reaches.
	receiver string
	// method is set for this.name in a class that defines a method of
	// the name: it names methods, not a function of a file.
	method bool
	// str is set for a string that is the name, other than the key of a
	// subscript: it names a function only once it flows to a subscript,
	// so only one of a file its own file reaches, or that a computed
	// load may reach (a TypeScript enum's "sync" names no package's
	// sync that its file never loads).
	str bool
	// inMod is the module of a bundle whose function holds it; bmods are
	// the bundle modules a property's object is bound to (n.sync, where
	// n = t(738)).
	inMod string
	bmods []string
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
	return g.liveNameIn(ctx, file, "", name, stack)
}

// liveNameIn is liveName for the property name of what the module mod of
// the bundle file exports ("" for a function of the file): a mention in
// the bundle names it only where it may hold that module.
func (g *Graph) liveNameIn(ctx context.Context, file, mod, name string, stack []string) (live, cyc bool) {
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
	if mod != "" {
		key = file + "\x00" + mod + "\x00" + name
	}
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
		if m.receiver != "" && !g.reaches(m.receiver, file) {
			continue // a property of a module that never loads file
		}
		if m.method && !x.methods[file+"\x00"+name] {
			continue // this.name of a class that has its own
		}
		if mod != "" && mfile == file && !x.inModule(m, mod) {
			continue // a name of another module of the bundle
		}
		if m.str && !g.reaches(mfile, file) && !x.computedIn(g, file) {
			continue // a string in a file that never holds this one's exports
		}
		switch m.kind {
		case mentionNone: // mentionsOf leaves these out
		case mentionRuns:
			x.memo[key] = true
			return true, false
		case mentionDefault, mentionAs:
			l, c, by := false, false, m.alias
			if m.kind == mentionDefault {
				l, c = g.liveDefault(ctx, mfile, m.alias, stack)
				by = "its importers"
			} else {
				l, c = g.liveNameIn(ctx, mfile, m.inMod, m.alias, stack)
			}
			cyc = cyc || c
			if l {
				x.memo[key] = true
				return true, false
			}
			in = append(in, by)
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

// inModule reports whether the mention m, in a bundle, may name the
// property of what the bundle's module mod exports: a bare name of a
// function of another module names that one, and a property of a
// binding of modules that never require mod names none of mod's.
func (x *liveness) inModule(m mention, mod string) bool {
	if m.local && m.inMod != "" && m.inMod != mod {
		return false
	}
	if len(m.bmods) == 0 {
		return true
	}
	b := x.bindings[m.file].bundle
	return slices.ContainsFunc(m.bmods, func(from string) bool { return b.reaches(from, mod) })
}

// computedIn reports, once per file, whether a computed load may reach
// file (Graph.DynamicIn reads every computed load of the graph).
func (x *liveness) computedIn(g *Graph, file string) bool {
	v, ok := x.computed[file]
	if !ok {
		_, v = g.DynamicIn(file)
		x.computed[file] = v
	}
	return v
}

// key is what liveness memoizes the name of a function of file under:
// the name alone, unless the answer depends on the file (perFile).
func (x *liveness) key(file, name string) string {
	if x.perFile[name] {
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
		var fb *fileBindings
		for _, off := range wordOffsets(data, name) {
			n := root.NamedDescendantForPointRange(pts.at(off), pts.at(off+len(name)))
			if g.guardOf(file, data, n, src.text) != "" {
				continue // it never runs in this image
			}
			if fb == nil {
				b := x.bindingsOf(i, root, data, src.text)
				fb = &b
			}
			o := propertyObject(n)
			if o != nil && len(boundBy(o, fb.builtins, src.text)) > 0 {
				continue // s.spawn, where the bundle's s is child_process
			}
			bare := bareAny
			if n != nil && (n.Type() == "identifier" || n.Type() == "shorthand_property_identifier") {
				if bare = resolveBare(n, name, src.text); bare == bareVar {
					continue // a parameter or a variable of its own: no function of a package
				}
			}
			if isMethodName(n, name, src.text) {
				x.methods[file+"\x00"+name] = true
			}
			m := classifyMention(n, name, src.text, fb.loads)
			m.file = i
			m.method = classMethod(n, name, src.text)
			if s := stringNode(n); s != nil && subscriptOf(s) == nil {
				m.str = true
			}
			if o != nil {
				if b, ok := fb.loads[src.text(o)]; ok {
					if t, ok := g.loadAt(file, b.start, b.end); ok {
						m.receiver = t
					}
				} else if bs := boundBy(o, fb.bundle.bindings, src.text); len(bs) > 0 {
					m.receiver = file // n.sync, where the bundle's n is a module of its own
					for _, b := range bs {
						m.bmods = append(m.bmods, b.mod)
					}
				} else if len(boundBy(o, fb.objects, src.text)) > 0 {
					// l.parse, where const l = { parse, … }: what this
					// file defines or loads.
					m.receiver = file
				}
			}
			if fb.bundle.requires != nil {
				m.inMod = moduleOf(n, src.text)
			}
			switch {
			case m.kind == mentionNone, m.kind == mentionAs && m.alias == name:
			case m.kind == mentionIn && slices.Contains(m.owners, name):
				// In its own body: it runs only once it has.
			default:
				// this.#name, and a bare name of the file's own function,
				// name that one only.
				m.local = bare == bareOwn || n != nil && n.Type() == "private_property_identifier"
				if m.local || m.receiver != "" || m.method || m.str {
					x.perFile[name] = true
				}
				here = append(here, m)
			}
		}
		src.close()
		for _, m := range here {
			if m.kind == mentionRuns && !m.local && m.receiver == "" && !m.str {
				return []mention{m}, true
			}
		}
		out = append(out, here...)
	}
	return out, true
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

// bareKind is what the nearest declaration of a bare name around a
// mention declares.
type bareKind int

const (
	// bareAny: an import, a destructuring, a variable set from a load,
	// or no declaration in the file (a global): it may be any file's.
	bareAny bareKind = iota
	// bareVar: a parameter, a catch's or a loop's variable, or a
	// plain variable whose value is neither a function nor a load. No
	// function of a package is under that name: any path that makes it
	// hold one names the function on the way (return spawn, obj.spawn).
	bareVar
	// bareOwn: a function or a class of the file itself, which the
	// mention names and no other file's.
	bareOwn
)

// resolveBare reads the nearest declaration of name around its bare
// mention n, through the scopes up to the file's top level.
func resolveBare(n *sitter.Node, name string, text func(*sitter.Node) string) bareKind {
	for p := n.Parent(); p != nil; p = p.Parent() {
		switch p.Type() {
		case "arrow_function", "function_expression", "function", "function_declaration",
			"generator_function", "generator_function_declaration", "method_definition":
			if ps := p.ChildByFieldName("parameters"); ps != nil && paramDeclares(ps, name, text) {
				return bareVar
			}
			if ps := p.ChildByFieldName("parameter"); ps != nil && text(ps) == name {
				return bareVar
			}
		case "catch_clause":
			if ps := p.ChildByFieldName("parameter"); ps != nil && ps.Type() == "identifier" && text(ps) == name {
				return bareVar
			}
		case "statement_block", "program", "switch_body":
			for i := 0; i < int(p.NamedChildCount()); i++ {
				c := p.NamedChild(i)
				switch c.Type() {
				case "lexical_declaration", "variable_declaration":
					for _, d := range declarators(c) {
						id := d.ChildByFieldName("name")
						if id == nil || id.Type() != "identifier" || text(id) != name {
							continue
						}
						v := d.ChildByFieldName("value")
						if v == nil {
							return bareAny // let x; x = require(…)
						}
						if isFunction(v) {
							return bareOwn
						}
						if _, load := requireOf(v, text); load {
							return bareAny
						}
						return bareVar
					}
				case "function_declaration", "class_declaration", "generator_function_declaration":
					if id := c.ChildByFieldName("name"); id != nil && text(id) == name {
						return bareOwn
					}
				}
			}
		}
	}
	return bareAny
}

// paramDeclares reports whether a parameter list declares name as a plain
// parameter or one with a default.
func paramDeclares(ps *sitter.Node, name string, text func(*sitter.Node) string) bool {
	for i := 0; i < int(ps.NamedChildCount()); i++ {
		c := ps.NamedChild(i)
		switch c.Type() {
		case "assignment_pattern":
			c = c.ChildByFieldName("left")
		case "required_parameter", "optional_parameter":
			c = c.ChildByFieldName("pattern")
		case "rest_pattern":
			c = c.NamedChild(0)
		}
		if c != nil && c.Type() == "identifier" && text(c) == name {
			return true
		}
	}
	return false
}

// isMethodName reports whether the occurrence n of name is the name of
// a method or a field of a class (not of an object literal: swc's
// bindings object's transform() is not what this.transform in a class
// with its own names).
func isMethodName(n *sitter.Node, name string, text func(*sitter.Node) string) bool {
	if n == nil || text(n) != name {
		return false
	}
	p := n.Parent()
	if p == nil {
		return false
	}
	switch p.Type() {
	case "method_definition":
		body := p.Parent()
		return jsplatform.Same(p.ChildByFieldName("name"), n) && body != nil && body.Type() == "class_body"
	case "field_definition", "public_field_definition":
		return jsplatform.Same(p.ChildByFieldName("property"), n) || jsplatform.Same(p.ChildByFieldName("name"), n)
	}
	return false
}

// classMethod reports this.name in a method of a class (or an arrow
// function inside one, which keeps its this) that defines a method or a
// field of the name itself: this is an instance of that class or of one
// that extends it, so the mention names methods of the name. A plain
// function of the name gets there only by an assignment, which names it
// by itself.
func classMethod(n *sitter.Node, name string, text func(*sitter.Node) string) bool {
	if n == nil || n.Type() != "property_identifier" {
		return false
	}
	p := n.Parent()
	if p == nil || p.Type() != "member_expression" || !jsplatform.Same(p.ChildByFieldName("property"), n) {
		return false
	}
	if o := p.ChildByFieldName("object"); o == nil || o.Type() != "this" {
		return false
	}
	for a := p.Parent(); a != nil; a = a.Parent() {
		switch a.Type() {
		case "arrow_function":
			continue
		case "function_expression", "function", "function_declaration", "generator_function", "generator_function_declaration":
			return false // a this of its own
		case "class_body":
			for i := 0; i < int(a.NamedChildCount()); i++ {
				c := a.NamedChild(i)
				for _, f := range []string{"name", "property"} {
					if id := c.ChildByFieldName(f); id != nil && isMethodName(id, name, text) {
						return true
					}
				}
			}
			return false
		}
	}
	return false
}

// eventMethods take an event's name first: an emitter calls the
// listeners, never a method of that name.
var eventMethods = map[string]bool{
	"on": true, "once": true, "off": true, "emit": true, "addListener": true, "removeListener": true,
	"prependListener": true, "prependOnceListener": true, "removeAllListeners": true, "listeners": true, "listenerCount": true,
}

// eventName reports a string that is the first argument of an emitter's
// method (x.on('spawn', …)).
func eventName(n *sitter.Node, text func(*sitter.Node) string) bool {
	if n.Type() == "string_fragment" {
		n = n.Parent()
	}
	args := n.Parent()
	if args == nil || args.Type() != "arguments" || args.NamedChildCount() == 0 || !jsplatform.Same(args.NamedChild(0), n) {
		return false
	}
	call := args.Parent()
	if call == nil || call.Type() != "call_expression" {
		return false
	}
	fn := call.ChildByFieldName("function")
	return fn != nil && fn.Type() == "member_expression" && eventMethods[text(fn.ChildByFieldName("property"))]
}

// propertyObject returns the identifier object of the property mention
// n (s in s.spawn, or in s["spawn"]), nil when n is none.
func propertyObject(n *sitter.Node) *sitter.Node {
	if s := stringNode(n); s != nil {
		if p := subscriptOf(s); p != nil {
			if o := p.ChildByFieldName("object"); o != nil && o.Type() == "identifier" {
				return o
			}
		}
		return nil
	}
	if n == nil || n.Type() != "property_identifier" {
		return nil
	}
	p := n.Parent()
	if p == nil || p.Type() != "member_expression" || !jsplatform.Same(p.ChildByFieldName("property"), n) {
		return nil
	}
	if o := p.ChildByFieldName("object"); o != nil && o.Type() == "identifier" {
		return o
	}
	return nil
}

// assignedInto reports whether n is the object of the member expression an
// assignment sets (n.exists = …, x.n.exists = …): its value is read only
// to hold the property.
func assignedInto(n *sitter.Node) bool {
	e := n
	if p := n.Parent(); p != nil && p.Type() == "member_expression" && jsplatform.Same(p.ChildByFieldName("property"), n) {
		e = p // x.n
	}
	p := e.Parent()
	if p == nil || p.Type() != "member_expression" || !jsplatform.Same(p.ChildByFieldName("object"), e) {
		return false
	}
	a := p.Parent()
	return a != nil && a.Type() == "assignment_expression" && jsplatform.Same(a.ChildByFieldName("left"), p)
}

// stringNode returns the string literal that n is or is the text of; nil
// when n is none.
func stringNode(n *sitter.Node) *sitter.Node {
	switch {
	case n == nil:
		return nil
	case n.Type() == "string_fragment":
		return n.Parent()
	case n.Type() == "string", n.Type() == "template_string":
		return n
	}
	return nil
}

// subscriptOf returns the subscript expression whose key the string s is
// (x["spawn"]), nil when it is none.
func subscriptOf(s *sitter.Node) *sitter.Node {
	p := s.Parent()
	if p == nil || p.Type() != "subscript_expression" || !jsplatform.Same(p.ChildByFieldName("index"), s) {
		return nil
	}
	return p
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
		case op.Type() == "&&", op.Type() == "||":
			// n.file && n.sync ? …: an operand of a test is tested.
			return onlyTested(p)
		}
	case "if_statement", "while_statement", "do_statement":
		return jsplatform.Same(p.ChildByFieldName("condition"), e)
	case "ternary_expression":
		return jsplatform.Same(p.ChildByFieldName("condition"), e)
	}
	return false
}

// classifyMention says what the occurrence n of name does.
func classifyMention(n *sitter.Node, name string, text func(*sitter.Node) string, bindings map[string]moduleBinding) mention {
	if n == nil {
		return mention{kind: mentionRuns}
	}
	switch n.Type() {
	case "comment", "regex_pattern", "regex", "regex_flags":
		return mention{kind: mentionNone} // calls nothing
	case "string_fragment", "string", "template_string":
		// Only a string that is the name itself can name it, as a
		// computed key (x["name"]()): "next:start-server" cannot, nor
		// can an event's name (child.once('spawn', …)).
		if s := strings.Trim(text(n), "\"'`"); s != name || eventName(n, text) {
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
		if p.Type() != "pair" && p.Type() != "variable_declarator" && jsplatform.Same(p.ChildByFieldName("property"), n) {
			return mention{kind: mentionNone} // class { sync = true }: a field's name
		}
	}
	if id, ok := defaultExport(n, text); ok {
		return mention{kind: mentionDefault, alias: id} // module.exports = x: its importers call it
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
		if o := p.ChildByFieldName("object"); o != nil && o.Type() == "identifier" && (builtinNamespaces[text(o)] || bindings[text(o)].builtin) {
			return mention{kind: mentionNone} // JSON.parse, cp.spawn: the language's or node's
		}
		if onlyTested(p) {
			return mention{kind: mentionNone} // if (!v.isWasm): its value is read, not called
		}
	}
	if assignedInto(n) {
		return mention{kind: mentionNone} // x.sync.exists = …: a property set on it, no call
	}
	if n.Type() == "property_identifier" && p.Type() == "member_expression" {
		if a := p.Parent(); a != nil && a.Type() == "assignment_expression" && jsplatform.Same(a.ChildByFieldName("left"), p) {
			// Foo.prototype.x = function, exports.x = …, isexe.sync =
			// sync: a definition, or a publication, of the property;
			// what is assigned is a mention of its own.
			return mention{kind: mentionNone}
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
	key, _ := jsplatform.ModuleEntry(fn)
	if key == nil {
		return "", false
	}
	if ps := jsplatform.Params(fn, text); len(ps) == 0 || ps[0] != text(m) {
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
