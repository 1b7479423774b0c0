package childprocess

import (
	"bytes"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
)

// Bundlers (ncc, webpack) put each module of a bundle in a table keyed by
// its id, and an external module is one line of it:
//
//	var e = {421: e => { "use strict"; e.exports = require("node:child_process") }, …}
//	… 47: (e, t, i) => { const s = i(421); … s.spawn(cmd, args) … }
//
// The assignment to module.exports is then no escape of the module: each
// call of the bundle's require with that id is a require of child_process,
// and the names it binds hold only in the module function around that
// call, since a minified bundle reuses every short name. When any call
// with the id is not one of the bundle's require, the module counts as
// escaping, as before.

// bundleRequires are the names ncc and webpack give their require.
var bundleRequires = map[string]bool{"__nccwpck_require__": true, "__webpack_require__": true}

// bundleModule follows target = require('child_process') when target is
// the module.exports of a bundle's module function; false when it is not
// one, or the id is required in a way the analysis cannot read.
func (a *analysis) bundleModule(target *sitter.Node, v value) bool {
	if v != moduleValue || target == nil || target.Type() != "member_expression" ||
		a.text(target.ChildByFieldName("property")) != "exports" {
		return false
	}
	obj := target.ChildByFieldName("object")
	if obj == nil || obj.Type() != "identifier" {
		return false
	}
	fn := enclosingFunction(target)
	if fn == nil {
		return false
	}
	if ps := jsplatform.Params(fn, a.text); len(ps) == 0 || ps[0] != a.text(obj) {
		return false
	}
	key, table := jsplatform.ModuleEntry(fn)
	if key == nil {
		return false
	}
	id := a.text(key)
	if key.Type() == "string" {
		id = strings.Trim(id, `"'`)
	}
	if id == "" {
		return false
	}
	var sites []*sitter.Node
	var scopes []*sitter.Node
	for off := 0; ; {
		i := bytes.Index(a.src[off:], []byte(id))
		if i < 0 {
			break
		}
		start := off + i
		off = start + len(id)
		n := a.nodeAt(start, off)
		if n == nil {
			continue
		}
		if key.Type() == "string" {
			if n.Type() != "string_fragment" || n.Parent() == nil {
				continue
			}
			n = n.Parent()
			if strings.Trim(a.text(n), `"'`) != id {
				continue
			}
		} else if n.Type() != "number" || a.text(n) != id {
			continue
		}
		if n.Equal(key) {
			continue
		}
		args := n.Parent()
		if args == nil || args.Type() != "arguments" {
			continue // the id as a number or a string elsewhere
		}
		call := args.Parent()
		if len(namedArgs(args)) != 1 || call == nil || call.Type() != "call_expression" {
			return false
		}
		callee := call.ChildByFieldName("function")
		if callee != nil && callee.Type() == "identifier" && a.text(callee) == "require" {
			continue // the module's own require("child_process")
		}
		scope := a.bundleRequire(callee, table)
		if scope == nil {
			return false
		}
		sites = append(sites, call)
		scopes = append(scopes, scope)
	}
	for i, call := range sites {
		r := [2]uint32{scopes[i].StartByte(), scopes[i].EndByte()}
		a.scope = &r
		a.use(call, moduleValue)
	}
	a.scope = nil
	return true
}

// bundleRequire returns the node within which the names bound by a call
// of callee hold, when callee is the bundle's require: the third
// parameter of the module function around the call, or
// __nccwpck_require__ or __webpack_require__. The names hold in the
// innermost function around the call (the bundle's entry is a function
// of its own); nil when callee is no require.
func (a *analysis) bundleRequire(callee *sitter.Node, table *sitter.Node) *sitter.Node {
	if callee == nil || callee.Type() != "identifier" {
		return nil
	}
	name := a.text(callee)
	var inner *sitter.Node
	for n := callee.Parent(); n != nil; n = n.Parent() {
		if !isFunctionNode(n) && n.Type() != "method_definition" {
			continue
		}
		if inner == nil {
			inner = n
		}
		if _, t := jsplatform.ModuleEntry(n); t != nil && t.Equal(table) {
			if params := jsplatform.Params(n, a.text); len(params) >= 3 && params[2] == name {
				return inner
			}
			break
		}
	}
	if !bundleRequires[name] {
		return nil
	}
	if inner == nil {
		return a.root
	}
	return inner
}

func isFunctionNode(n *sitter.Node) bool {
	switch n.Type() {
	case "arrow_function", "function_expression", "function", "function_declaration":
		return true
	}
	return false
}

// shadowed reports whether the identifier n, a use of name inside the
// range r a bundle's binding holds in, is another variable of that name
// (jsplatform.Shadowed); declarations of the binding itself (a.decls) do
// not count.
func (a *analysis) shadowed(n *sitter.Node, name string, r [2]uint32) bool {
	return jsplatform.Shadowed(n, name, r[0], r[1], a.text, func(id *sitter.Node) bool { return a.decls[id.StartByte()] })
}
