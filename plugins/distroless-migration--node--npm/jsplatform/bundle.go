package jsplatform

import sitter "github.com/smacker/go-tree-sitter"

// A bundler (ncc, webpack) puts each module of a bundle in a table keyed by
// its id: {421: (e, t, i) => { … }, "./a.js": function (module, exports,
// __webpack_require__) { … }}. The module function's first parameter is
// its module object and its third the bundle's require.

// ModuleEntry returns the key of the module table's entry whose value is
// the function fn (a number or a string), with the table; nil when fn is
// no module function.
func ModuleEntry(fn *sitter.Node) (key, table *sitter.Node) {
	p := fn.Parent()
	if p == nil || p.Type() != "pair" || !Same(p.ChildByFieldName("value"), fn) {
		return nil, nil
	}
	k := p.ChildByFieldName("key")
	if k == nil || (k.Type() != "number" && k.Type() != "string") {
		return nil, nil
	}
	t := p.Parent()
	if t == nil || t.Type() != "object" {
		return nil, nil
	}
	return k, t
}

// Params lists a function's plain parameter names ("" for a pattern).
func Params(fn *sitter.Node, text func(*sitter.Node) string) []string {
	if p := fn.ChildByFieldName("parameter"); p != nil { // e => …
		return []string{text(p)}
	}
	params := fn.ChildByFieldName("parameters")
	if params == nil {
		return nil
	}
	var out []string
	for i := 0; i < int(params.NamedChildCount()); i++ {
		c := params.NamedChild(i)
		if c.Type() == "identifier" {
			out = append(out, text(c))
		} else {
			out = append(out, "")
		}
	}
	return out
}
