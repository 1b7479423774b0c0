package modgraph

import (
	"bytes"
	"context"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// A load inside a function runs only when that function does. A
// function's value exists only through its name: a declaration's
// identifier, a method's or a property's name, the variable a function
// expression is bound to. So a function whose name no reached file
// mentions, other than where it is defined, is never called, and the
// loads in its body are not made:
//
//	async systemInformation () {
//	  const si = require('systeminformation')
//
// (@dotenvx/dotenvx's Session, which only its login command calls: the
// config() an app calls never loads systeminformation, whose calls run
// ioreg, lsblk and cat through a shell). The walk defers such a load until
// a reached file mentions the name, and makes it then.
//
// A mention is any word of a reached file, in code, strings and comments
// alike: a call, a reference passed on, an export, a string a dispatcher
// looks up (controller['index']). Names the runtime calls on its own
// (then, toJSON, a stream's _transform, a proxy's get) always count as
// mentioned. A load in a function with no name of its own (a callback, an
// IIFE) belongs to the function around it; one at top level, in a
// method whose name is computed, or in a function exported as default
// (whose importers call it default), runs with its module. What the walk
// cannot see is a name built at run time (obj['get' + kind]()).

// runtimeCalled are method names that node and the language call by name,
// with no mention in the code that defines them.
var runtimeCalled = map[string]bool{
	"constructor": true, "then": true, "catch": true, "finally": true, "toJSON": true, "toString": true,
	"valueOf": true, "toLocaleString": true, "inspect": true, "next": true, "return": true, "throw": true,
	"_read": true, "_write": true, "_writev": true, "_transform": true, "_flush": true, "_final": true,
	"_destroy": true, "_construct": true, "createConnection": true, "getName": true, "keepSocketAlive": true,
	"reuseSocket": true, "get": true, "set": true, "has": true, "apply": true, "construct": true,
	"deleteProperty": true, "defineProperty": true, "ownKeys": true, "getOwnPropertyDescriptor": true,
	"getPrototypeOf": true, "setPrototypeOf": true, "isExtensible": true, "preventExtensions": true,
	"resolve": true, "load": true, "initialize": true, "handleEvent": true, "default": true, "exports": true,
}

// lazyIndex is what the walk knows of the names that reached files
// mention and define.
type lazyIndex struct {
	// words counts each word's occurrences in the reached files, with the
	// files that hold it; defs counts the definitions of the functions
	// that hold deferred loads.
	words map[string]*wordStat
	defs  map[string]int
	// files are the reached files whose words were counted, in order: a
	// wordStat's files index them.
	files []string
	// pending are the deferred loads, by the name of their function.
	pending map[string][]deferred
}

// deferred is a load the walk makes when its function's name is
// mentioned.
type deferred struct {
	file string
	imp  *Import
	dyn  *Dynamic
}

func (x *lazyIndex) used(name string) bool {
	return runtimeCalled[name] || x.words[name].count() > x.defs[name]
}

// wordStat is one word of the reached files: how often it occurs, and
// in which files (indexes into lazyIndex.files, each once).
type wordStat struct {
	n     int
	files []int32
}

func (s *wordStat) count() int {
	if s == nil {
		return 0
	}
	return s.n
}

// deferLoads splits a file's loads into those made when the module runs and
// those held in named functions, by name; it counts those functions'
// definitions. Only a file with a load on an indented line is parsed: a
// function's body is indented in all but minified code, and a load on a
// line that starts at column 0 (top level, or a one-line bundle) is kept.
func (w *walker) deferLoads(ctx context.Context, src *source, imps []Import, dyn []Dynamic) ([]Import, []Dynamic, map[string][]deferred) {
	indented := func(off int) bool {
		if c := src.data[off]; c == ';' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			off++ // the character before an import that Scan's match starts with
		}
		start := bytes.LastIndexByte(src.data[:off], '\n') + 1
		return start < len(src.data) && (src.data[start] == ' ' || src.data[start] == '\t')
	}
	inner := false
	for _, i := range imps {
		inner = inner || indented(i.Offset)
	}
	for _, d := range dyn {
		inner = inner || indented(d.Offset)
	}
	if !inner || len(src.data) > maxLazyParse {
		return imps, dyn, nil
	}
	root := src.root(ctx)
	if root == nil {
		return imps, dyn, nil
	}
	lazy := map[string][]deferred{}
	defined := map[uintptr]bool{}
	owner := func(off int) string {
		n := root.NamedDescendantForPointRange(pointAt(src.data, off), pointAt(src.data, off+1))
		name, fn := ownerOf(n, src.text)
		if name != "" && !defined[fn] {
			defined[fn] = true
			w.lazy.defs[name]++
		}
		return name
	}
	var keptI []Import
	for k := range imps {
		if name := owner(imps[k].Offset); name != "" {
			lazy[name] = append(lazy[name], deferred{file: src.file, imp: &imps[k]})
			continue
		}
		keptI = append(keptI, imps[k])
	}
	var keptD []Dynamic
	for k := range dyn {
		if name := owner(dyn[k].Offset); name != "" {
			lazy[name] = append(lazy[name], deferred{file: src.file, dyn: &dyn[k]})
			continue
		}
		keptD = append(keptD, dyn[k])
	}
	return keptI, keptD, lazy
}

// FunctionName is the name of the innermost named function whose body
// holds n, as the walk names the functions that hold loads; "" when n
// runs with its module.
func FunctionName(n *sitter.Node, text func(*sitter.Node) string) string {
	name, _ := ownerOf(n, text)
	if runtimeCalled[name] {
		return "" // module.exports = function () {}, a constructor
	}
	return name
}

// Names reports whether a reached file names the function called name
// other than where it is defined, or the runtime calls it by that name:
// code in the body of a function for which it is false never runs. A
// function defined in more than one reached file counts each definition
// as a mention, so Names errs toward true; so does a graph that did not
// walk, or stopped before it read every file it reached.
func (g *Graph) Names(name string) bool {
	if g == nil || g.words == nil || g.Truncated || name == "" {
		return true
	}
	return runtimeCalled[name] || g.words[name].count() > 1
}

// ExportsDefault reports whether an export statement is export default,
// from its tokens: its text may be a whole function's.
func ExportsDefault(p *sitter.Node) bool {
	for i := 0; i < int(p.ChildCount()); i++ {
		if p.Child(i).Type() == "default" {
			return true
		}
	}
	return false
}

// maxLazyParse bounds the files parsed for their functions: a larger one
// (a bundle) keeps every load.
const maxLazyParse = 2 << 20

// ownerOf returns the name of the innermost named function whose body
// holds n, with that function node's identity; "" when the code runs with
// its module (top level, or inside a method whose name is computed).
func ownerOf(n *sitter.Node, text func(*sitter.Node) string) (string, uintptr) {
	for ; n != nil; n = n.Parent() {
		name, ok := functionNameOf(n, text)
		if !ok {
			continue
		}
		if name == "" {
			return "", 0
		}
		return name, nodeID(n)
	}
	return "", 0
}

// functionNameOf names the function n as the walk names the functions
// that hold loads and calls. ok is false when n is no function, or one
// with no name of its own (a callback, an IIFE, a returned closure: it
// runs only once the function around it has, so that one decides). The
// name is "" for a function called by names the walk cannot list: a
// method whose name is computed, a function exported as default (its
// importers call it default).
func functionNameOf(n *sitter.Node, text func(*sitter.Node) string) (name string, ok bool) {
	switch n.Type() {
	case "function_declaration", "generator_function_declaration":
		if p := n.Parent(); p != nil && p.Type() == "export_statement" && ExportsDefault(p) {
			// Its importers call it as default (a Next.js page's or
			// API route's handler), not by its own name.
			return "", true
		}
		if name := n.ChildByFieldName("name"); name != nil {
			return text(name), true
		}
	case "method_definition":
		name := n.ChildByFieldName("name")
		if name == nil {
			return "", true
		}
		switch name.Type() {
		case "property_identifier", "private_property_identifier":
			return strings.TrimPrefix(text(name), "#"), true
		case "string":
			if s := strings.Trim(text(name), `"'`); identWord(s) {
				return s, true
			}
		}
		return "", true // [computed]() {}: any caller may name it
	case "function_expression", "function", "arrow_function", "generator_function":
		if name := boundName(n, text); name != "" {
			return name, true
		}
		if name := wrappedName(n, text); name != "" {
			return name, true
		}
	}
	return "", false
}

// deferringWrappers take a function and return one that calls it when it
// is called, not before: lodash's once, memoize, debounce and throttle,
// onetime, memoize-one, and node's util.deprecate, promisify and
// callbackify.
var deferringWrappers = map[string]bool{
	"once": true, "onetime": true, "memoize": true, "memoizeOne": true, "debounce": true,
	"throttle": true, "deprecate": true, "promisify": true, "callbackify": true,
}

// wrappedName is the name that the result of a deferring wrapper called
// with fn as its first argument is bound to: const x = once(() => { … })
// runs the callback only where code calls x. A wrapper of that name that
// the same file defines must show it defers: its first parameter is used
// only inside the functions it returns.
func wrappedName(fn *sitter.Node, text func(*sitter.Node) string) string {
	args := fn.Parent()
	for args != nil && args.Type() == "parenthesized_expression" {
		args = args.Parent()
	}
	if args == nil || args.Type() != "arguments" || args.NamedChildCount() == 0 {
		return ""
	}
	if first := args.NamedChild(0); !jsplatform.Same(first, fn) && !jsplatform.Same(first, fn.Parent()) {
		return ""
	}
	call := args.Parent()
	if call == nil || call.Type() != "call_expression" {
		return ""
	}
	callee := unwrapCallee(call.ChildByFieldName("function"))
	wrapper := calleeName(callee, text)
	if !deferringWrappers[wrapper] {
		return ""
	}
	if callee.Type() == "identifier" {
		if def := topLevelFunction(call, wrapper, text); def != nil && !defers(def, text) {
			return ""
		}
	}
	return boundName(call, text)
}

// topLevelFunction finds the function declaration called name at the top
// level of the program that holds n.
func topLevelFunction(n *sitter.Node, name string, text func(*sitter.Node) string) *sitter.Node {
	root := n
	for root.Parent() != nil {
		root = root.Parent()
	}
	for i := 0; i < int(root.NamedChildCount()); i++ {
		c := root.NamedChild(i)
		if c.Type() == "function_declaration" && text(c.ChildByFieldName("name")) == name {
			return c
		}
	}
	return nil
}

// defers reports whether the function def uses its first parameter only
// inside functions that its body defines: it hands the parameter on,
// wrapped, rather than calling it.
func defers(def *sitter.Node, text func(*sitter.Node) string) bool {
	param := firstParam(def, text)
	body := def.ChildByFieldName("body")
	if param == "" || body == nil {
		return false
	}
	inner := false
	ok := true
	var walk func(n *sitter.Node, nested bool)
	walk = func(n *sitter.Node, nested bool) {
		if !ok {
			return
		}
		if isFunction(n) {
			nested = true
		}
		if n.Type() == "identifier" && text(n) == param {
			if !nested {
				ok = false
				return
			}
			inner = true
		}
		for i := 0; i < int(n.NamedChildCount()); i++ {
			walk(n.NamedChild(i), nested)
		}
	}
	walk(body, false)
	return ok && inner
}

// boundName is the name a function expression is bound to: a variable, a
// property of an object literal, an assignment's target, a class field.
func boundName(fn *sitter.Node, text func(*sitter.Node) string) string {
	p := fn.Parent()
	for p != nil && p.Type() == "parenthesized_expression" {
		p = p.Parent()
	}
	if p == nil {
		return ""
	}
	var name *sitter.Node
	switch p.Type() {
	case "variable_declarator":
		name = p.ChildByFieldName("name")
	case "pair":
		name = p.ChildByFieldName("key")
	case "assignment_expression":
		name = p.ChildByFieldName("left")
		if name != nil && name.Type() == "member_expression" {
			name = name.ChildByFieldName("property")
		}
	case "field_definition", "public_field_definition":
		name = p.ChildByFieldName("property")
		if name == nil {
			name = p.ChildByFieldName("name")
		}
	}
	if name == nil {
		return ""
	}
	s := strings.TrimPrefix(strings.Trim(text(name), `"'`), "#")
	if !identWord(s) {
		return "" // a destructuring pattern, a computed key
	}
	return s
}

func nodeID(n *sitter.Node) uintptr {
	return uintptr(n.StartByte())<<32 | uintptr(n.EndByte())
}

// identWord reports whether s is one word as words() splits text.
func identWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !wordByte(s[i]) || i == 0 && s[i] >= '0' && s[i] <= '9' {
			return false
		}
	}
	return true
}

func wordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// countWords adds the words of file's data to the index and returns those
// that name deferred loads.
func (x *lazyIndex) countWords(file string, data []byte) []string {
	cur := int32(len(x.files))
	x.files = append(x.files, file)
	var hits []string
	for i := 0; i < len(data); {
		if !wordByte(data[i]) {
			i++
			continue
		}
		j := i
		for j < len(data) && wordByte(data[j]) {
			j++
		}
		if c := data[i]; c < '0' || c > '9' {
			k := data[i:j]
			st := x.words[string(k)]
			if st == nil {
				st = &wordStat{}
				x.words[string(k)] = st
			}
			st.n++
			if len(st.files) == 0 || st.files[len(st.files)-1] != cur {
				st.files = append(st.files, cur)
			}
			if _, ok := x.pending[string(k)]; ok {
				hits = append(hits, string(k))
			}
		}
		i = j
	}
	return hits
}
