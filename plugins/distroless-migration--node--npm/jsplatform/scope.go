package jsplatform

import sitter "github.com/smacker/go-tree-sitter"

// Shadowed reports whether the identifier n, a use of name inside the
// byte range [lo, hi) where a binding of that name holds, is another
// variable of the name: a parameter, a declaration in a block, a catch's
// or a for loop's variable, or a function's or a class's name, between n
// and the range. Minified code reuses one short name in every function.
// own reports the declaring identifiers of the binding itself, which do
// not count.
func Shadowed(n *sitter.Node, name string, lo, hi uint32, text func(*sitter.Node) string, own func(*sitter.Node) bool) bool {
	d := declares{name: name, text: text, own: own}
	for p := n.Parent(); p != nil && p.StartByte() >= lo && p.EndByte() <= hi; p = p.Parent() {
		switch p.Type() {
		case "arrow_function", "function_expression", "function", "function_declaration",
			"generator_function", "generator_function_declaration", "method_definition":
			if ps := p.ChildByFieldName("parameters"); ps != nil && d.in(ps) {
				return true
			}
			if ps := p.ChildByFieldName("parameter"); ps != nil && d.in(ps) {
				return true
			}
		case "catch_clause":
			if ps := p.ChildByFieldName("parameter"); ps != nil && d.in(ps) {
				return true
			}
		case "for_statement", "for_in_statement":
			for _, f := range []string{"initializer", "left"} {
				if v := p.ChildByFieldName(f); v != nil && d.in(v) {
					return true
				}
			}
		case "statement_block", "program", "class_body", "switch_body":
			for i := 0; i < int(p.NamedChildCount()); i++ {
				c := p.NamedChild(i)
				switch c.Type() {
				case "lexical_declaration", "variable_declaration":
					for j := 0; j < int(c.NamedChildCount()); j++ {
						if v := c.NamedChild(j); v.Type() == "variable_declarator" && d.in(v.ChildByFieldName("name")) {
							return true
						}
					}
				case "function_declaration", "class_declaration", "generator_function_declaration":
					if id := c.ChildByFieldName("name"); id != nil && text(id) == name && !own(id) {
						return true
					}
				}
			}
		}
	}
	return false
}

type declares struct {
	name string
	text func(*sitter.Node) string
	own  func(*sitter.Node) bool
}

// in reports whether the parameters or the pattern n declare the name,
// other than as the binding itself.
func (d declares) in(n *sitter.Node) bool {
	if n == nil {
		return false
	}
	switch n.Type() {
	case "identifier", "shorthand_property_identifier_pattern":
		return d.text(n) == d.name && !d.own(n)
	case "variable_declarator":
		return d.in(n.ChildByFieldName("name"))
	case "assignment_pattern", "object_assignment_pattern":
		return d.in(n.ChildByFieldName("left"))
	case "pair_pattern":
		return d.in(n.ChildByFieldName("value"))
	}
	for i := 0; i < int(n.NamedChildCount()); i++ {
		if c := n.NamedChild(i); c.Type() != "comment" && d.in(c) {
			return true
		}
	}
	return false
}
