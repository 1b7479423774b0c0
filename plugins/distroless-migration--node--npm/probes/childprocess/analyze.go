package childprocess

import (
	"bytes"
	"context"
	"iter"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/modgraph"
)

// language is the grammar a file is parsed with.
type language uint8

const (
	langJS language = iota + 1
	langTS
	langTSX
)

func (l language) grammar() *sitter.Language {
	switch l {
	case langTS:
		return typescript.GetLanguage()
	case langTSX:
		return tsx.GetLanguage()
	case langJS:
	}
	return javascript.GetLanguage()
}

// The functions of child_process that start a process.
const (
	fnExec         = "exec"
	fnExecSync     = "execSync"
	fnExecFile     = "execFile"
	fnExecFileSync = "execFileSync"
	fnSpawn        = "spawn"
	fnSpawnSync    = "spawnSync"
	fnFork         = "fork"
)

func isProcessFunc(name string) bool {
	switch name {
	case fnExec, fnExecSync, fnExecFile, fnExecFileSync, fnSpawn, fnSpawnSync, fnFork:
		return true
	}
	return false
}

// shells are the basenames of programs that are a shell.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true, "ksh": true, "mksh": true, "yash": true,
}

// scanner parses files for one worker. It is not safe for concurrent use.
type scanner struct {
	parsers [langTSX + 1]*sitter.Parser
	buf     []byte
}

func newScanner() *scanner { return &scanner{} }

func (sc *scanner) close() {
	for _, p := range sc.parsers {
		if p != nil {
			p.Close()
		}
	}
}

func (sc *scanner) parser(l language) *sitter.Parser {
	if sc.parsers[l] == nil {
		p := sitter.NewParser()
		p.SetLanguage(l.grammar())
		sc.parsers[l] = p
	}
	return sc.parsers[l]
}

// position is a 1-based line and column (in code points).
type position struct{ line, column int }

// call is one finding inside a file.
type call struct {
	line, column int
	function     string
	kind         Kind
	command      string
	binary       string
	// platform is the other system a process.platform guard restricts
	// the call to ("win32"), or "".
	platform string
	// within is the name of the function whose body holds the call
	// (modgraph.FunctionName), or "" when it runs with its module.
	within string
	// shape is the known shape the call is part of (shapes.go).
	shape string
	// wrapper is set when the command is a parameter of a function the
	// file exports (exportcalls.go): its importers' literals are calls
	// of their own.
	wrapper *exportedWrapper
}

// fileScan is what parsing one file found.
type fileScan struct {
	calls []call
	// syntaxErr is the first syntax error, nil when the file parsed
	// cleanly.
	syntaxErr *position
}

// scan parses src and finds its child_process uses. It never panics on any
// input; an error means the parse was cancelled.
func (sc *scanner) scan(ctx context.Context, l language, src []byte) (fileScan, error) {
	return sc.scanFor(ctx, l, src, true)
}

// scanFor is scan; wrappers says whether to look for exported command
// wrappers (exportcalls.go), which only the app's own files are read for.
func (sc *scanner) scanFor(ctx context.Context, l language, src []byte, wrappers bool) (fileScan, error) {
	tree, err := sc.parser(l).ParseCtx(ctx, nil, src)
	if err != nil {
		// A cancelled tree-sitter parser resumes the old parse on its next
		// call, and its cancellation flag may still be set: start afresh.
		sc.parsers[l].Close()
		sc.parsers[l] = nil
		return fileScan{}, err
	}
	defer tree.Close()
	root := tree.RootNode()
	a := &analysis{
		src:      src,
		root:     root,
		lines:    lineStarts(src),
		bindings: make(map[string]value),
		decls:    make(map[uint32]bool),
		seen:     make(map[findingKey]bool),
		wrappers: wrappers,
	}
	a.run()
	var fs fileScan
	fs.calls = a.calls
	sort.Slice(fs.calls, func(i, j int) bool {
		x, y := fs.calls[i], fs.calls[j]
		if x.line != y.line {
			return x.line < y.line
		}
		if x.column != y.column {
			return x.column < y.column
		}
		return x.function < y.function
	})
	if root.HasError() {
		p := a.firstError()
		fs.syntaxErr = &p
	}
	return fs, nil
}

// value is what an expression denotes: the child_process module (fn == "")
// or one of its functions. mod names a spawn-compatible package whose
// export this is (crossSpawnValue).
type value struct{ fn, mod string }

var moduleValue = value{}

// crossSpawnValue is what require('cross-spawn') denotes: its spawn, with
// spawn and sync (spawnSync) as properties. On Linux cross-spawn hands the
// command, its arguments and its options to child_process's function
// unchanged (7.0.3 and 7.0.6, lib/parse.js: parseNonShell returns the
// call as it is unless the platform is win32, and a shell option goes
// through to child_process), so a call of it is judged as spawn's.
var crossSpawnValue = value{fn: fnSpawn, mod: "cross-spawn"}

// specValue is what loading the module spec (one of moduleSpecs)
// denotes.
func specValue(spec string) value {
	if spec == "cross-spawn" {
		return crossSpawnValue
	}
	return moduleValue
}

// property is v.name: a function of child_process, or of a
// spawn-compatible package; ok is false for anything else.
func property(v value, name string) (value, bool) {
	switch {
	case v == moduleValue && isProcessFunc(name):
		return value{fn: name}, true
	case v == moduleValue && name == "default":
		return v, true
	case v == crossSpawnValue && name == "spawn":
		return value{fn: fnSpawn}, true
	case v == crossSpawnValue && name == "sync":
		return value{fn: fnSpawnSync}, true
	case v == crossSpawnValue && name == "default":
		return v, true
	}
	return value{}, false
}

type findingKey struct {
	start uint32
	fn    string
}

// analysis follows child_process through one syntax tree. Rather than walk
// every node, it searches the source bytes for the module name and for each
// binding's name, and asks the tree what sits at each occurrence: only the
// few nodes near a use are ever materialised.
type analysis struct {
	src   []byte
	root  *sitter.Node
	lines []int // byte offset of each line's start

	bindings map[string]value
	queue    []string
	decls    map[uint32]bool // start bytes of binding declarations
	seen     map[findingKey]bool
	calls    []call
	// callerPlatforms caches callersPlatform by the function's start
	// byte: a file's findings often share one function.
	callerPlatforms map[uint32]string
	// scope, while set, is the node within which the names bound now
	// hold (a bundle's module function, bundle.go); scopes records it
	// for each such name.
	scope  *[2]uint32
	scopes map[string][2]uint32
	// wrappers: a call whose command is a parameter of a function the
	// file exports is marked (call.wrapper).
	wrappers bool
}

// maxDepth bounds walks up the tree through wrappers.
const maxDepth = 64

func (a *analysis) run() {
	sources := make(map[uint32]bool)
	for _, nd := range needles {
		a.sources(nd, sources)
	}
	for len(a.queue) > 0 {
		name := a.queue[0]
		a.queue = a.queue[1:]
		a.references(name)
	}
}

// sources starts the analysis at each string literal that is one of
// moduleSpecs and holds nd.
func (a *analysis) sources(nd []byte, sources map[uint32]bool) {
	for off := 0; ; {
		i := bytes.Index(a.src[off:], nd)
		if i < 0 {
			break
		}
		start := off + i
		off = start + len(nd)
		n := a.nodeAt(start, off)
		if n == nil || n.Type() != "string_fragment" {
			continue
		}
		str := n.Parent()
		if str == nil || sources[str.StartByte()] {
			continue
		}
		if t := str.Type(); t != "string" && t != "template_string" {
			continue
		}
		raw := a.text(str)
		if !isModuleSpecifier(raw) {
			continue
		}
		sources[str.StartByte()] = true
		a.source(str, specValue(raw[1:len(raw)-1]))
	}
}

// isModuleSpecifier reports whether the source text of a string literal is
// child_process or node:child_process between matching quotes, with no
// escapes: exactly what mentionsModule lets through to the parser.
func isModuleSpecifier(raw string) bool {
	if len(raw) < 2 || raw[0] != raw[len(raw)-1] {
		return false
	}
	switch raw[0] {
	case '\'', '"', '`':
	default:
		return false
	}
	return slices.Contains(moduleSpecs, raw[1:len(raw)-1])
}

// nodeAt returns the smallest named node spanning the bytes [start, end).
func (a *analysis) nodeAt(start, end int) *sitter.Node {
	return a.root.NamedDescendantForPointRange(a.point(start), a.point(end))
}

func (a *analysis) point(off int) sitter.Point {
	row := sort.Search(len(a.lines), func(i int) bool { return a.lines[i] > off }) - 1
	return sitter.Point{Row: uint32(row), Column: uint32(off - a.lines[row])}
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, b := range src {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// pos converts a node's start to a 1-based line and code-point column.
func (a *analysis) pos(n *sitter.Node) position {
	off := int(n.StartByte())
	if off > len(a.src) {
		off = len(a.src)
	}
	row := sort.Search(len(a.lines), func(i int) bool { return a.lines[i] > off }) - 1
	return position{line: row + 1, column: utf8.RuneCount(a.src[a.lines[row]:off]) + 1}
}

func (a *analysis) text(n *sitter.Node) string {
	if n == nil {
		return ""
	}
	s, e := n.StartByte(), n.EndByte()
	if e > uint32(len(a.src)) || s > e {
		return ""
	}
	return string(a.src[s:e])
}

// source handles a string literal naming child_process (or one of
// moduleSpecs), whose load denotes v.
func (a *analysis) source(str *sitter.Node, v value) {
	p := str.Parent()
	if p == nil {
		return
	}
	switch p.Type() {
	case "arguments": // require('child_process') or import('child_process')
		if args := namedArgs(p); len(args) == 0 || !args[0].Equal(str) {
			return
		}
		c := p.Parent()
		if c == nil || c.Type() != "call_expression" {
			return
		}
		fn := c.ChildByFieldName("function")
		if fn == nil {
			return
		}
		if fn.Type() == "import" || (fn.Type() == "identifier" && a.text(fn) == "require") {
			a.use(c, v)
		}
	case "import_statement":
		if isField(p, "source", str) && !hasKeyword(p, "type") {
			a.importStatement(p, v)
		}
	case "import_require_clause": // TypeScript: import cp = require('child_process')
		if s := p.Parent(); s != nil && hasKeyword(s, "type") {
			return
		}
		for i := 0; i < int(p.NamedChildCount()); i++ {
			if c := p.NamedChild(i); c.Type() == "identifier" {
				a.bind(c, v)
				return
			}
		}
	case "export_statement":
		if isField(p, "source", str) && !hasKeyword(p, "type") {
			a.exportFrom(p)
		}
	}
}

// importStatement binds the names an ESM import of child_process (or of
// a module whose load denotes v) declares.
func (a *analysis) importStatement(s *sitter.Node, v value) {
	var clause *sitter.Node
	for i := 0; i < int(s.NamedChildCount()); i++ {
		if c := s.NamedChild(i); c.Type() == "import_clause" {
			clause = c
		}
	}
	if clause == nil {
		return // import 'child_process' for its side effects: none
	}
	for i := 0; i < int(clause.NamedChildCount()); i++ {
		c := clause.NamedChild(i)
		switch c.Type() {
		case "identifier": // default import
			a.bind(c, v)
		case "namespace_import":
			for j := 0; j < int(c.NamedChildCount()); j++ {
				if id := c.NamedChild(j); id.Type() == "identifier" {
					a.bind(id, v)
				}
			}
		case "named_imports":
			for j := 0; j < int(c.NamedChildCount()); j++ {
				sp := c.NamedChild(j)
				if sp.Type() != "import_specifier" || hasKeyword(sp, "type") {
					continue
				}
				name := sp.ChildByFieldName("name")
				local := sp.ChildByFieldName("alias")
				if local == nil {
					local = name
				}
				if name == nil || local == nil || local.Type() != "identifier" {
					continue
				}
				a.decls[name.StartByte()] = true
				if pv, ok := property(v, a.nameOf(name)); ok {
					a.bind(local, pv)
				}
			}
		}
	}
}

// exportFrom reports a re-export of child_process: what it exports escapes.
func (a *analysis) exportFrom(s *sitter.Node) {
	var clause *sitter.Node
	for i := 0; i < int(s.NamedChildCount()); i++ {
		if c := s.NamedChild(i); c.Type() == "export_clause" {
			clause = c
		}
	}
	if clause == nil { // export * from, export * as ns from
		a.escape(s, moduleValue)
		return
	}
	for i := 0; i < int(clause.NamedChildCount()); i++ {
		sp := clause.NamedChild(i)
		if sp.Type() != "export_specifier" || hasKeyword(sp, "type") {
			continue
		}
		name := sp.ChildByFieldName("name")
		exported := a.nameOf(name)
		switch {
		case exported == "default":
			a.escape(sp, moduleValue)
		case isProcessFunc(exported):
			a.escape(sp, value{fn: exported})
		}
	}
}

// nameOf is the name a node spells: a string literal's value (import
// { "exec" as x }, { "exec": x }), else the node's source text.
func (a *analysis) nameOf(n *sitter.Node) string {
	if s, ok := a.literal(n); ok {
		return s
	}
	return a.text(n)
}

// bind records that the identifier id denotes v, and queues its uses.
func (a *analysis) bind(id *sitter.Node, v value) {
	a.decls[id.StartByte()] = true
	name := a.text(id)
	if name == "" {
		return
	}
	_, scoped := a.scopes[name]
	switch {
	case a.scope != nil && !scoped:
		if _, ok := a.bindings[name]; ok {
			return // bound in the whole file already
		}
		if a.scopes == nil {
			a.scopes = map[string][2]uint32{}
		}
		a.scopes[name] = *a.scope
	case a.scope == nil && scoped:
		delete(a.scopes, name) // now bound in the whole file
		a.bindings[name] = v
		a.queue = append(a.queue, name)
		return
	}
	if old, ok := a.bindings[name]; ok && old == v {
		return
	}
	a.bindings[name] = v
	a.queue = append(a.queue, name)
}

// words yields the start and end of each occurrence of name in the
// source as a whole word: no identifier byte on either side.
func (a *analysis) words(name string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		pat := []byte(name)
		for off := 0; len(pat) > 0 && off < len(a.src); {
			i := bytes.Index(a.src[off:], pat)
			if i < 0 {
				return
			}
			start, end := off+i, off+i+len(pat)
			off = end
			if (start > 0 && isIdentByte(a.src[start-1])) || (end < len(a.src) && isIdentByte(a.src[end])) {
				continue
			}
			if !yield(start, end) {
				return
			}
		}
	}
}

// references finds the uses of a bound name.
func (a *analysis) references(name string) {
	for start, off := range a.words(name) {
		n := a.nodeAt(start, off)
		if n == nil || int(n.StartByte()) != start || int(n.EndByte()) != off || a.decls[n.StartByte()] {
			continue
		}
		v := a.bindings[name]
		if r, ok := a.scopes[name]; ok {
			if n.StartByte() < r[0] || n.EndByte() > r[1] || a.shadowed(n, name, r) {
				continue // another variable of the same name
			}
			a.scope = &r // names bound from this use hold in the same range
		}
		switch n.Type() {
		case "identifier":
			if !declares(n) {
				a.use(n, v)
			}
		case "shorthand_property_identifier": // { exec } in an object literal
			a.escape(n, v)
		}
		a.scope = nil
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9')
}

// declares reports whether the identifier n declares a new variable of its
// name (a parameter, a function name, a pattern element), shadowing the
// binding rather than using it.
func declares(n *sitter.Node) bool {
	p := n.Parent()
	if p == nil {
		return false
	}
	switch p.Type() {
	case "formal_parameters", "required_parameter", "optional_parameter", "rest_pattern",
		"array_pattern", "object_pattern", "catch_clause", "import_specifier", "import_clause",
		"namespace_import", "export_specifier", "labeled_statement", "break_statement",
		"continue_statement", "import_require_clause":
		return true
	case "function_declaration", "function_expression", "function", "generator_function_declaration",
		"generator_function", "class_declaration", "class", "variable_declarator":
		return isField(p, "name", n)
	case "arrow_function":
		return isField(p, "parameter", n)
	case "pair_pattern":
		return isField(p, "value", n)
	case "assignment_pattern", "object_assignment_pattern", "assignment_expression", "for_in_statement":
		return isField(p, "left", n)
	}
	return false
}

// use follows an expression n that denotes v to what is done with it.
func (a *analysis) use(n *sitter.Node, v value) {
	for range maxDepth {
		p := n.Parent()
		if p == nil {
			return
		}
		switch p.Type() {
		case "parenthesized_expression", "await_expression", "as_expression", "non_null_expression",
			"satisfies_expression", "type_assertion":
			n = p
			continue
		case "sequence_expression":
			// (0, cp.execSync)(...), compiled TypeScript's and Babel's
			// call without a this: the sequence's value is its last.
			if last := p.NamedChild(int(p.NamedChildCount()) - 1); last == nil || last.StartByte() != n.StartByte() || last.EndByte() != n.EndByte() {
				return
			}
			n = p
			continue
		case "member_expression":
			if !isField(p, "object", n) {
				return
			}
			prop := p.ChildByFieldName("property")
			a.member(p, v, a.text(prop))
		case "subscript_expression":
			if !isField(p, "object", n) {
				a.escape(n, v)
				return
			}
			if s, ok := a.literal(p.ChildByFieldName("index")); ok {
				a.member(p, v, s)
			} else if v == moduleValue {
				a.escape(p, v) // cp[name](...): which function is unknown
			}
		case "call_expression":
			if isField(p, "function", n) {
				if v != moduleValue {
					a.call(p, v.fn)
				}
				return
			}
			a.escape(n, v)
		case "arguments":
			c := p.Parent()
			if v != moduleValue && c != nil && c.Type() == "call_expression" && a.isPromisify(c.ChildByFieldName("function")) {
				n = c // util.promisify(exec) runs what exec runs
				continue
			}
			a.escape(n, v)
		case "variable_declarator":
			if !isField(p, "value", n) {
				return
			}
			a.assign(n, p.ChildByFieldName("name"), v)
		case "assignment_expression":
			if !isField(p, "right", n) {
				return
			}
			a.assign(n, p.ChildByFieldName("left"), v)
		case "expression_statement", "unary_expression":
			// A bare reference, typeof, void: nothing runs.
		case "binary_expression":
			switch op := p.ChildByFieldName("operator"); {
			case op == nil:
			case op.Type() == "||" || op.Type() == "&&" || op.Type() == "??":
				a.escape(n, v) // the value flows on
			}
		default:
			a.escape(n, v)
		}
		return
	}
}

// member handles v.prop (or v['prop']) at node m.
func (a *analysis) member(m *sitter.Node, v value, prop string) {
	if pv, ok := property(v, prop); ok {
		a.use(m, pv)
		return
	}
	switch {
	case prop == "then" && (v == moduleValue || v == crossSpawnValue):
		a.escape(m, v) // import('child_process').then(...)
	case v == moduleValue:
		// Anything else (ChildProcess, constants) starts nothing.
	case v == crossSpawnValue && strings.HasPrefix(prop, "_"):
		// cross-spawn's _parse and _enoent start nothing.
	default:
		a.escape(m, v) // exec.call, exec.bind, ...: the function is used
	}
}

// assign handles `target = n` where n denotes v.
func (a *analysis) assign(n, target *sitter.Node, v value) {
	if target == nil || a.bundleModule(target, v) {
		return
	}
	switch target.Type() {
	case "identifier":
		a.bind(target, v)
	case "object_pattern":
		if v == moduleValue || v == crossSpawnValue {
			a.destructure(target, v)
			return
		}
		a.escape(n, v)
	default:
		a.escape(n, v)
	}
}

// destructure binds the names of an object pattern taken from the module
// v denotes.
func (a *analysis) destructure(pat *sitter.Node, v value) {
	for i := 0; i < int(pat.NamedChildCount()); i++ {
		c := pat.NamedChild(i)
		switch c.Type() {
		case "shorthand_property_identifier_pattern": // { exec }
			if pv, ok := property(v, a.text(c)); ok {
				a.bind(c, pv)
			}
		case "object_assignment_pattern": // { exec = fallback }
			if left := c.ChildByFieldName("left"); left != nil {
				if pv, ok := property(v, a.text(left)); ok {
					a.bind(left, pv)
				}
			}
		case "pair_pattern": // { execSync: run } or { execSync: run = fallback }
			key := c.ChildByFieldName("key")
			local := c.ChildByFieldName("value")
			if local != nil && local.Type() == "assignment_pattern" {
				local = local.ChildByFieldName("left")
			}
			if local == nil || local.Type() != "identifier" {
				continue
			}
			if pv, ok := property(v, a.nameOf(key)); ok {
				a.bind(local, pv)
			}
		case "rest_pattern": // { ...rest }: rest holds the functions
			for j := 0; j < int(c.NamedChildCount()); j++ {
				if id := c.NamedChild(j); id.Type() == "identifier" {
					a.bind(id, v)
				}
			}
		}
	}
}

// isPromisify reports util.promisify or a bare promisify, also as
// compiled code calls it: (0, _util.promisify)(…).
func (a *analysis) isPromisify(fn *sitter.Node) bool {
	for fn != nil && (fn.Type() == "parenthesized_expression" || fn.Type() == "sequence_expression") && fn.NamedChildCount() > 0 {
		fn = fn.NamedChild(int(fn.NamedChildCount()) - 1)
	}
	switch {
	case fn == nil:
		return false
	case fn.Type() == "identifier":
		return a.text(fn) == "promisify"
	case fn.Type() == "member_expression":
		return a.text(fn.ChildByFieldName("property")) == "promisify"
	}
	return false
}

// escape records a use that cannot be followed: the module or a function
// stored, passed or exported.
func (a *analysis) escape(n *sitter.Node, v value) {
	if v == moduleValue {
		a.add(n, call{function: FunctionModule, kind: KindDynamic})
		return
	}
	c := call{function: v.fn, kind: KindDynamic}
	switch v.fn {
	case fnExec, fnExecSync:
		c.kind = KindShell
	case fnFork:
		c.kind = KindNode
	}
	a.add(n, c)
}

func (a *analysis) add(n *sitter.Node, c call) {
	k := findingKey{n.StartByte(), c.function}
	if a.seen[k] {
		return
	}
	a.seen[k] = true
	p := a.pos(n)
	c.line, c.column = p.line, p.column
	c.platform = jsplatform.Guard(n, a.text)
	if c.platform == "" {
		c.platform = a.callersPlatform(n)
	}
	c.within = modgraph.FunctionName(n, a.text)
	c.shape = a.shapeOf(n, c)
	a.calls = append(a.calls, c)
}

// shellOption is what a call's options say about the shell.
type shellOption uint8

const (
	shellOff shellOption = iota
	shellOn
	shellUnknown
)

// call classifies a call of the child_process function fn.
func (a *analysis) call(c *sitter.Node, fn string) {
	var args []*sitter.Node
	if al := c.ChildByFieldName("arguments"); al != nil && al.Type() == "arguments" {
		args = namedArgs(al)
	}
	r := call{function: fn}
	var cmd string
	cmdLiteral := false
	prefix := ""
	if len(args) > 0 {
		cmd, cmdLiteral = a.literal(args[0])
		if cmdLiteral {
			r.command = cmd
			prefix = cmd + " "
		} else {
			prefix = a.staticPrefix(args[0])
		}
	}
	switch fn {
	case fnExec, fnExecSync:
		r.kind = KindShell
		r.binary = firstWord(prefix)
	case fnFork:
		r.kind = KindNode // Node forces shell: false for fork
	default:
		switch a.shellOption(args) {
		case shellOn:
			r.kind = KindShell
			r.binary = firstWord(prefix)
		case shellUnknown:
			r.kind = KindMaybeShell
			r.binary = firstWord(prefix)
		case shellOff:
			fallthrough
		default:
			switch {
			case cmdLiteral && shells[path.Base(cmd)]:
				r.kind, r.binary = KindShell, cmd
			case cmdLiteral:
				r.kind, r.binary = KindBinary, cmd
			case len(args) > 0 && a.isExecPath(args[0]):
				r.kind = KindNode
			case len(args) > 0:
				if ws, ok := a.wrapperCommands(c, args[0]); ok {
					// The callers' literals, each judged at its call.
					for _, w := range ws {
						wr := call{function: fn, command: w.command, binary: w.command, kind: KindBinary}
						if shells[path.Base(w.command)] {
							wr.kind = KindShell
						}
						a.add(w.at, wr)
					}
					return
				}
				r.kind = KindDynamic
			default:
				r.kind = KindDynamic
			}
		}
	}
	if a.wrappers && !cmdLiteral && len(args) > 0 && (r.kind == KindDynamic || r.kind == KindMaybeShell) {
		r.wrapper = a.exportedWrapper(c, args[0])
	}
	a.add(c, r)
}

// shellOption reads the shell option of spawn, spawnSync, execFile or
// execFileSync. Options are an object literal after the command (spawn's
// and execFile's args may be left out), or any non-literal expression in
// the third position. In the second position a non-literal is taken to be
// the argument list.
func (a *analysis) shellOption(args []*sitter.Node) shellOption {
	for i := 1; i < len(args) && i < 3; i++ {
		switch t := args[i].Type(); t {
		case "object":
			return a.objectShell(args[i])
		case "array", "null", "undefined", "arrow_function", "function_expression", "function":
		default:
			if i == 2 && !isLiteralType(t) {
				return shellUnknown
			}
		}
	}
	return shellOff
}

func isLiteralType(t string) bool {
	switch t {
	case "string", "template_string", "number", "true", "false", "null", "undefined", "regex":
		return true
	}
	return false
}

// objectShell evaluates the shell property of an options object literal.
// Later properties override earlier ones, as in JavaScript.
func (a *analysis) objectShell(obj *sitter.Node) shellOption {
	state := shellOff
	for i := 0; i < int(obj.NamedChildCount()); i++ {
		c := obj.NamedChild(i)
		switch c.Type() {
		case "spread_element":
			state = shellUnknown // ...opts may set shell
		case "shorthand_property_identifier": // { shell }
			if a.text(c) == "shell" {
				state = shellUnknown
			}
		case "pair":
			key := c.ChildByFieldName("key")
			name, ok := a.literal(key)
			if !ok && key != nil && key.Type() == "property_identifier" {
				name, ok = a.text(key), true
			}
			if !ok {
				if key != nil && key.Type() == "computed_property_name" {
					state = shellUnknown
				}
				continue
			}
			if name == "shell" {
				state = a.shellValue(c.ChildByFieldName("value"))
			}
		}
	}
	return state
}

// shellValue is what Node makes of a shell value: true or a non-empty
// string runs a shell, other literals do not, anything else is unknown.
func (a *analysis) shellValue(v *sitter.Node) shellOption {
	if v == nil {
		return shellUnknown
	}
	switch v.Type() {
	case "true":
		return shellOn
	case "false", "null", "undefined", "number":
		return shellOff
	}
	if s, ok := a.literal(v); ok {
		if s == "" {
			return shellOff
		}
		return shellOn
	}
	return shellUnknown
}

// isExecPath reports process.execPath or process.argv[0]: node itself.
func (a *analysis) isExecPath(n *sitter.Node) bool {
	switch n.Type() {
	case "member_expression":
		return a.text(n) == "process.execPath"
	case "subscript_expression":
		return a.text(n.ChildByFieldName("object")) == "process.argv" && a.text(n.ChildByFieldName("index")) == "0"
	}
	return false
}

// literal returns the value of a string literal, or of a template literal
// without substitutions.
func (a *analysis) literal(n *sitter.Node) (string, bool) {
	if n == nil || (n.Type() != "string" && n.Type() != "template_string") {
		return "", false
	}
	return a.fragments(n, 0)
}

// fragments joins the text of a string's named children from the from'th
// on: false when one of them is not text (a substitution, or something
// unexpected).
func (a *analysis) fragments(n *sitter.Node, from int) (string, bool) {
	var b strings.Builder
	for i := from; i < int(n.NamedChildCount()); i++ {
		c := n.NamedChild(i)
		switch c.Type() {
		case "string_fragment":
			b.WriteString(a.text(c))
		case "escape_sequence":
			b.WriteString(unescape(a.text(c)))
		default:
			return "", false
		}
	}
	return b.String(), true
}

// staticPrefix returns the literal text an expression starts with: the
// text of a template literal before its first substitution, or the left
// side of a string concatenation.
func (a *analysis) staticPrefix(n *sitter.Node) string {
	for range maxDepth {
		if n == nil {
			return ""
		}
		switch n.Type() {
		case "template_string":
			var b strings.Builder
			for i := 0; i < int(n.NamedChildCount()); i++ {
				c := n.NamedChild(i)
				switch c.Type() {
				case "string_fragment":
					b.WriteString(a.text(c))
				case "escape_sequence":
					b.WriteString(unescape(a.text(c)))
				default:
					return b.String()
				}
			}
			return b.String()
		case "string":
			s, _ := a.literal(n)
			return s
		case "binary_expression":
			if op := n.ChildByFieldName("operator"); op == nil || op.Type() != "+" {
				return ""
			}
			n = n.ChildByFieldName("left")
		case "parenthesized_expression":
			n = n.NamedChild(0)
		default:
			return ""
		}
	}
	return ""
}

// firstWord returns the program a shell command line starts with, skipping
// VAR=value assignments, when the prefix holds it in full (a space follows
// it).
func firstWord(prefix string) string {
	for {
		prefix = strings.TrimLeft(prefix, " \t\r\n")
		i := strings.IndexAny(prefix, " \t\r\n;&|<>()")
		if i <= 0 {
			return ""
		}
		w := prefix[:i]
		if eq := strings.IndexByte(w, '='); eq > 0 && isName(w[:eq]) {
			prefix = prefix[i:]
			continue
		}
		return strings.Trim(w, `"'`)
	}
}

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		letter := b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
		digit := i > 0 && '0' <= b && b <= '9'
		if !letter && !digit {
			return false
		}
	}
	return s != ""
}

// unescape decodes one JavaScript escape sequence.
func unescape(e string) string {
	if len(e) < 2 || e[0] != '\\' {
		return e
	}
	switch e[1] {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case 'b':
		return "\b"
	case 'f':
		return "\f"
	case 'v':
		return "\v"
	case '0':
		if len(e) == 2 {
			return "\x00"
		}
	case '\n', '\r', 0xe2: // line continuation
		return ""
	case 'x', 'u':
		h := strings.Trim(e[2:], "{}")
		if r, err := strconv.ParseUint(h, 16, 32); err == nil && utf8.ValidRune(rune(r)) {
			return string(rune(r))
		}
		return e
	}
	return e[1:]
}

// namedArgs returns the arguments of an arguments node, without comments.
func namedArgs(al *sitter.Node) []*sitter.Node {
	var out []*sitter.Node
	for i := 0; i < int(al.NamedChildCount()); i++ {
		if c := al.NamedChild(i); c.Type() != "comment" {
			out = append(out, c)
		}
	}
	return out
}

// isField reports whether child is p's child in the named field.
func isField(p *sitter.Node, field string, child *sitter.Node) bool {
	f := p.ChildByFieldName(field)
	return f != nil && f.Equal(child)
}

// hasKeyword reports whether n has the anonymous child token kw (as the
// "type" of a TypeScript `import type`).
func hasKeyword(n *sitter.Node, kw string) bool {
	for i := 0; i < int(n.ChildCount()); i++ {
		if c := n.Child(i); !c.IsNamed() && c.Type() == kw {
			return true
		}
	}
	return false
}

// firstError returns the position of the first ERROR or MISSING node.
func (a *analysis) firstError() position {
	n := a.root
	for range 1 << 16 {
		if n.IsError() || n.IsMissing() {
			return a.pos(n)
		}
		next := (*sitter.Node)(nil)
		for i := 0; i < int(n.ChildCount()); i++ {
			c := n.Child(i)
			if c.IsError() || c.IsMissing() {
				return a.pos(c)
			}
			if c.HasError() {
				next = c
				break
			}
		}
		if next == nil {
			return a.pos(n)
		}
		n = next
	}
	return a.pos(n)
}
