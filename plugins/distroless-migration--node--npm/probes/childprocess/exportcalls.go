package childprocess

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/modgraph"
)

// An app module may export a command wrapper: a function that hands its
// parameter, or the parameter's first element, to spawn as the command
// (etherpad's src/node/utils/run_cmd.ts, module.exports = (args, opts) =>
// … spawn(args[0], args.slice(1), opts)). Its callers are other files,
// which the file's own analysis cannot see: to it the command is not a
// literal. So once the module graph is known, each app file that loads
// the wrapper with a literal load (const runCmd = require('./run_cmd'),
// import runCmd from …, const { run } = require(…), or the whole module:
// const util = require(…), import * as util from …) is read for its calls
// of the binding (util.run(…), compiled TypeScript's (0, util_1.run)(…)), and each literal command one passes (runCmd(['pnpm',
// '--version'])) is a call of its own, judged at that argument: the
// program runs wherever that file's code does. The call in the wrapper
// stays a command that is not a literal: a caller may pass anything, and
// one that passes a variable says nothing. Only the app's own modules are
// read so: a dependency's wrappers are called by code whose literals the
// same analysis would need from every importer in node_modules. A module
// that re-exports the wrapper (a barrel's export { run } from './run', or
// export * from './run') exports it too, and its importers are read the
// same way; CommonJS re-exports (module.exports = require('./run')) are
// not followed.

// wrapperCalls adds to results the calls that the app files loading an
// exported wrapper make through it with literal commands.
func (s *session) wrapperCalls(ctx context.Context, tasks []task, results []result, g *modgraph.Graph) error {
	if g == nil {
		return nil
	}
	index := map[string]int{}
	for i, t := range tasks {
		if t.origin == OriginApp {
			index[t.path] = i
		}
	}
	// use is one load of a wrapper's module, at off in its importer.
	type use struct {
		off  int
		wrap call
	}
	byImporter := map[string][]use{}
	// exported adds the loads of module file, which exports wrap (its own
	// or one it re-exports), each once.
	done := map[string]bool{}
	exported := func(file string, wrap call) {
		for _, site := range g.Importers(file) {
			key := fmt.Sprintf("%s\x00%d\x00%s\x00%d:%d", site.File, site.Offset, wrap.wrapper.export, wrap.line, wrap.column)
			if _, ok := index[site.File]; ok && !done[key] {
				done[key] = true
				byImporter[site.File] = append(byImporter[site.File], use{off: site.Offset, wrap: wrap})
			}
		}
	}
	for i, t := range tasks {
		if t.origin != OriginApp {
			continue
		}
		for _, c := range results[i].calls {
			if c.wrapper != nil {
				exported(t.path, c)
			}
		}
	}
	sc := newScanner()
	defer sc.close()
	// One analysis per file, whose seen set keeps a call that two loads
	// of the module reach to one finding. A file that re-exports the
	// wrapper (a barrel's export { run } from './run') adds its own
	// importers, read in the next round.
	files := map[string]*analysis{}
	var trees []*sitter.Tree
	defer func() {
		for _, t := range trees {
			t.Close()
		}
	}()
	for round := 0; len(byImporter) > 0 && round < maxDepth; round++ {
		pending := byImporter
		byImporter = map[string][]use{}
		for _, file := range slices.Sorted(maps.Keys(pending)) {
			a, ok := files[file]
			if !ok {
				src, err := s.repo.ReadFile(file)
				if err != nil || len(src) > MaxParseBytes {
					continue // unreadable or too large: its own scan says so
				}
				tree, err := sc.parser(tasks[index[file]].lang).ParseCtx(ctx, nil, src)
				if err != nil {
					return err
				}
				trees = append(trees, tree)
				a = &analysis{src: src, root: tree.RootNode(), lines: lineStarts(src), bindings: map[string]value{}, decls: map[uint32]bool{}, seen: map[findingKey]bool{}}
				files[file] = a
			}
			for _, u := range pending[file] {
				if name := a.reExport(u.off, u.wrap.wrapper.export); name != "" {
					w := *u.wrap.wrapper
					w.export = name
					re := u.wrap
					re.wrapper = &w
					exported(file, re)
					continue
				}
				if name, ns := a.loadBinding(u.off, u.wrap.wrapper.export); name != "" {
					a.wrapperUses(name, ns, u.wrap)
				}
				if c := a.directCall(u.off); c != nil && u.wrap.wrapper.export == "default" {
					a.wrapperCall(c, u.wrap) // require('./run')('git')
				}
			}
		}
	}
	for _, file := range slices.Sorted(maps.Keys(files)) {
		a, i := files[file], index[file]
		if len(a.calls) == 0 {
			continue
		}
		results[i].calls = append(results[i].calls, a.calls...)
		if !results[i].parsed && !results[i].tokenScanned {
			results[i].parsed = true
		}
	}
	return nil
}

// reExport is the name under which the statement at off hands on the
// module's export: export { export } from …, export { export as name }
// from …, export { default as name } from …, and export * from … (which
// hands on every export but the default). "" for any other load.
func (a *analysis) reExport(off int, export string) string {
	st := a.loadNode(off)
	if st != nil && st.Type() == "export" {
		st = st.Parent()
	}
	if st == nil || st.Type() != "export_statement" || st.ChildByFieldName("source") == nil {
		return ""
	}
	for i := 0; i < int(st.NamedChildCount()); i++ {
		c := st.NamedChild(i)
		switch c.Type() {
		case "namespace_export":
			return "" // export * as ns from …: a property of a namespace
		case "export_clause":
			for j := 0; j < int(c.NamedChildCount()); j++ {
				sp := c.NamedChild(j)
				name, alias := sp.ChildByFieldName("name"), sp.ChildByFieldName("alias")
				if sp.Type() != "export_specifier" || name == nil || a.text(name) != export {
					continue
				}
				if alias != nil {
					return a.text(alias)
				}
				return export
			}
			return ""
		}
	}
	if export != "default" && strings.Contains(a.text(st), "*") {
		return export // export * from …
	}
	return ""
}

// loadBinding is the name the load at off binds the module's export to:
// the default export (module.exports) is what const x = require(…) and
// import x from … bind; a named one, const { name: x } = require(…),
// const x = require(…).name and import { name as x } from …. A load that
// binds the whole module to a name (const util = require(…), import * as
// util from …) binds a named export as a property of it: ns is true, and
// the calls are util.name(…) and compiled TypeScript's (0, util.name)(…).
// "" when the load binds it to no plain name.
func (a *analysis) loadBinding(off int, export string) (name string, ns bool) {
	n := a.loadNode(off)
	for depth := 0; n != nil && depth < maxDepth; depth++ {
		switch n.Type() {
		case "import_statement":
			return a.importBinding(n, export)
		case "variable_declarator":
			name := n.ChildByFieldName("name")
			switch {
			case name == nil:
				return "", false
			case name.Type() == "identifier":
				return a.text(name), export != "default"
			case name.Type() == "object_pattern" && export != "default":
				return a.patternBinding(name, export), false
			}
			return "", false
		case "member_expression":
			if prop := n.ChildByFieldName("property"); prop == nil || a.text(prop) != export || export == "default" {
				return "", false
			}
			if p := n.Parent(); p != nil && p.Type() == "variable_declarator" {
				if name := p.ChildByFieldName("name"); name != nil && name.Type() == "identifier" {
					return a.text(name), false
				}
			}
			return "", false
		case "call_expression", "await_expression", "parenthesized_expression", "as_expression", "string", "string_fragment", "identifier", "arguments", "import":
			n = n.Parent()
			continue
		}
		return "", false
	}
	return "", false
}

// loadNode is the node of the word a load's text starts with at off
// (require, import): the scan's match may start at the character before.
func (a *analysis) loadNode(off int) *sitter.Node {
	for off < len(a.src) && !isIdentByte(a.src[off]) {
		off++
	}
	return a.nodeAt(off, off+1)
}

// importBinding is the name an import statement binds export to, and
// whether that name is the module's namespace (import * as ns).
func (a *analysis) importBinding(s *sitter.Node, export string) (string, bool) {
	for i := 0; i < int(s.NamedChildCount()); i++ {
		cl := s.NamedChild(i)
		if cl.Type() != "import_clause" {
			continue
		}
		for j := 0; j < int(cl.NamedChildCount()); j++ {
			c := cl.NamedChild(j)
			switch {
			case c.Type() == "identifier" && export == "default":
				return a.text(c), false
			case c.Type() == "namespace_import" && export != "default":
				for k := 0; k < int(c.NamedChildCount()); k++ {
					if id := c.NamedChild(k); id.Type() == "identifier" {
						return a.text(id), true
					}
				}
			case c.Type() == "named_imports":
				for k := 0; k < int(c.NamedChildCount()); k++ {
					sp := c.NamedChild(k)
					if sp.Type() != "import_specifier" {
						continue
					}
					name, alias := sp.ChildByFieldName("name"), sp.ChildByFieldName("alias")
					if name == nil || a.text(name) != export {
						continue
					}
					if alias != nil {
						return a.text(alias), false
					}
					return a.text(name), false
				}
			}
		}
	}
	return "", false
}

// patternBinding is the name { export } or { export: name } binds.
func (a *analysis) patternBinding(pat *sitter.Node, export string) string {
	for i := 0; i < int(pat.NamedChildCount()); i++ {
		c := pat.NamedChild(i)
		switch c.Type() {
		case "shorthand_property_identifier_pattern":
			if a.text(c) == export {
				return export
			}
		case "pair_pattern":
			k, v := c.ChildByFieldName("key"), c.ChildByFieldName("value")
			if k != nil && v != nil && a.text(k) == export && v.Type() == "identifier" {
				return a.text(v)
			}
		}
	}
	return ""
}

// wrapperUses judges each call of name in the file as a call of the
// wrapper (wrapperCall); when name is the module's namespace (ns), each
// call of its property the wrapper's export names.
func (a *analysis) wrapperUses(name string, ns bool, wrap call) {
	for start, end := range a.words(name) {
		n := a.nodeAt(start, end)
		if n == nil || n.Type() != "identifier" || int(n.StartByte()) != start {
			continue
		}
		if ns {
			m := n.Parent()
			if m == nil || m.Type() != "member_expression" || !isField(m, "object", n) {
				continue
			}
			if prop := m.ChildByFieldName("property"); prop == nil || a.text(prop) != wrap.wrapper.export {
				continue
			}
			n = m
			// (0, util.name)(…): how TypeScript's CommonJS output calls
			// an imported function.
			if seq := n.Parent(); seq != nil && seq.Type() == "sequence_expression" && isLast(seq, n) {
				if p := seq.Parent(); p != nil && p.Type() == "parenthesized_expression" {
					n = p
				}
			}
		}
		if c := n.Parent(); c != nil && c.Type() == "call_expression" && isField(c, "function", n) {
			a.wrapperCall(c, wrap)
		}
	}
}

// wrapperCall judges call c of the wrapper: its literal command, where the
// wrapper takes it, is a call of the wrapper's child_process function.
// The call runs on the systems the wrapper's own call does (a
// process.platform guard around it holds for every caller). When the
// wrapper's options may set shell: true (its own call is maybe_shell), a
// literal that holds more than one word is a command line that only a
// shell runs as such: maybe_shell too, with its first word as the
// program.
func (a *analysis) wrapperCall(c *sitter.Node, wrap call) {
	w := *wrap.wrapper
	al := c.ChildByFieldName("arguments")
	if al == nil {
		return
	}
	args := namedArgs(al)
	if w.param >= len(args) {
		return
	}
	arg := args[w.param]
	if w.element {
		if arg.Type() != "array" {
			return
		}
		elems := namedArgs(arg)
		if len(elems) == 0 {
			return
		}
		arg = elems[0]
	}
	cmd, ok := a.literal(arg)
	if !ok || cmd == "" {
		return
	}
	r := call{function: wrap.function, command: cmd, binary: cmd, kind: KindBinary}
	switch {
	case wrap.kind == KindMaybeShell && strings.ContainsAny(cmd, " \t;&|<>$`()"):
		r.kind, r.binary = KindMaybeShell, firstWord(cmd)
	case shells[path.Base(cmd)]:
		r.kind = KindShell
	}
	n0 := len(a.calls)
	a.add(arg, r)
	if len(a.calls) > n0 && a.calls[n0].platform == "" {
		a.calls[n0].platform = wrap.platform
	}
}

// directCall is the call of a require's result at off, as in
// require('./run')('git'); nil when the load is not called there.
func (a *analysis) directCall(off int) *sitter.Node {
	n := a.loadNode(off)
	if n == nil || n.Type() != "identifier" || a.text(n) != "require" {
		return nil
	}
	req := n.Parent()
	if req == nil || req.Type() != "call_expression" || !isField(req, "function", n) {
		return nil
	}
	if c := req.Parent(); c != nil && c.Type() == "call_expression" && isField(c, "function", req) {
		return c
	}
	return nil
}

// isLast reports whether c is n's last named child.
func isLast(n, c *sitter.Node) bool {
	k := int(n.NamedChildCount())
	return k > 0 && n.NamedChild(k-1).Equal(c)
}
