package childprocess

import (
	"regexp"
	"strconv"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/jsplatform"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/modgraph"
)

// A command wrapper is a function of the file that hands one of its
// parameters to a child_process function as the command, as hoppscotch's
// runChildProcessWithPrefix(command, args, prefix) does with spawn. The
// command is then whatever its callers pass: when every use of the
// function in the file is a call that passes a literal there, and nothing
// outside the file can call it (it is not exported), each call is judged
// as a call of the child_process function with that literal, at the
// caller's argument. Anything else (a caller that passes a variable, the
// function passed as a value or exported, the parameter reassigned) keeps
// the call a command that is not a literal.

// wrapped is one caller's literal command.
type wrapped struct {
	command string
	at      *sitter.Node
}

// wrapperCommands returns the literal commands the callers of the
// function around call c pass as its parameter cmd; ok is false when
// they are not all known.
func (a *analysis) wrapperCommands(c, cmd *sitter.Node) (out []wrapped, ok bool) {
	if cmd == nil || cmd.Type() != "identifier" {
		return nil, false
	}
	param := a.text(cmd)
	fn := enclosingFunction(c)
	if fn == nil {
		return nil, false
	}
	index := paramIndex(a, fn, param)
	if index < 0 {
		return nil, false
	}
	if a.reassigns(fn, param) {
		return nil, false
	}
	calls, ok := a.callers(fn)
	if !ok {
		return nil, false
	}
	for _, p := range calls {
		al := p.ChildByFieldName("arguments")
		if al == nil {
			return nil, false
		}
		args := namedArgs(al)
		if index >= len(args) {
			return nil, false
		}
		lit, isLit := a.literal(args[index])
		if !isLit || lit == "" {
			return nil, false
		}
		out = append(out, wrapped{command: lit, at: args[index]})
	}
	return out, true
}

// reassigns reports whether function fn gives its parameter param
// another value (or has no body to tell): what its callers pass is then
// not what it runs.
func (a *analysis) reassigns(fn *sitter.Node, param string) bool {
	body := fn.ChildByFieldName("body")
	return body == nil ||
		regexp.MustCompile(`(?:^|[^\w$.])`+regexp.QuoteMeta(param)+`\s*(?:[-+*/|&?]|\?\?)?=[^=]`).MatchString(a.text(body))
}

// enclosingFunction is the function whose body holds n, nil for one a
// method or the file's top level holds (callers by name are not read).
func enclosingFunction(n *sitter.Node) *sitter.Node {
	fn := n.Parent()
	for depth := 0; fn != nil && depth < maxDepth; depth++ {
		switch fn.Type() {
		case "function_declaration", "function_expression", "function", "arrow_function", "generator_function_declaration":
			return fn
		case "method_definition", "class_body", "program":
			return nil
		}
		fn = fn.Parent()
	}
	return nil
}

// callers returns the calls of function fn by its name in the file; ok
// is false when it may be called some other way: it is exported, or its
// name is passed, stored or returned, or nothing calls it.
func (a *analysis) callers(fn *sitter.Node) (calls []*sitter.Node, ok bool) {
	name := a.functionName(fn)
	if name == "" || exported(a.src, name) {
		return nil, false
	}
	for start, end := range a.words(name) {
		n := a.nodeAt(start, end)
		if n == nil || int(n.StartByte()) != start || int(n.EndByte()) != end || n.Type() != "identifier" {
			if n != nil && (n.Type() == "property_identifier" || n.Type() == "string_fragment" || n.Type() == "comment") {
				continue // obj.name, a string's text, a comment: not the function
			}
			return nil, false
		}
		p := n.Parent()
		if p != nil && (p.Equal(fn) || p.Type() == "variable_declarator" && p.ChildByFieldName("name") != nil && p.ChildByFieldName("name").Equal(n)) {
			continue // its own declaration
		}
		if p == nil || p.Type() != "call_expression" || p.ChildByFieldName("function") == nil || !p.ChildByFieldName("function").Equal(n) {
			return nil, false // passed, stored or returned: callers unknown
		}
		calls = append(calls, p)
	}
	return calls, len(calls) > 0
}

// callersPlatform is the other system every caller of the function
// around n is kept to (@prisma/streams-local's readDarwinTopMemBytes,
// called only after if (process.platform !== "darwin") return): n runs
// there only. "" when any caller may run on Linux, or they are unknown.
func (a *analysis) callersPlatform(n *sitter.Node) string {
	fn := enclosingFunction(n)
	if fn == nil {
		return ""
	}
	if p, ok := a.callerPlatforms[fn.StartByte()]; ok {
		return p
	}
	platform := ""
	if calls, ok := a.callers(fn); ok {
		for _, c := range calls {
			g := jsplatform.Guard(c, a.text)
			if g == "" || platform != "" && g != platform {
				platform = ""
				break
			}
			platform = g
		}
	}
	if a.callerPlatforms == nil {
		a.callerPlatforms = map[uint32]string{}
	}
	a.callerPlatforms[fn.StartByte()] = platform
	return platform
}

// paramIndex is the position of the parameter named param in function
// fn's parameter list, -1 when it is not a plain parameter of it.
func paramIndex(a *analysis, fn *sitter.Node, param string) int {
	if p := fn.ChildByFieldName("parameter"); p != nil { // x => spawn(x)
		if p.Type() == "identifier" && a.text(p) == param {
			return 0
		}
		return -1
	}
	ps := fn.ChildByFieldName("parameters")
	if ps == nil {
		return -1
	}
	i := 0
	for k := 0; k < int(ps.NamedChildCount()); k++ {
		p := ps.NamedChild(k)
		if p.Type() == "comment" {
			continue // function run(/* program */ cmd, args)
		}
		if p.Type() == "required_parameter" || p.Type() == "optional_parameter" { // TypeScript
			if pat := p.ChildByFieldName("pattern"); pat != nil {
				p = pat
			}
		}
		if p.Type() == "identifier" && a.text(p) == param {
			return i
		}
		i++
	}
	return -1
}

// functionName is the name a function is called by in its file: a
// declaration's, or the variable a function expression is assigned to.
func (a *analysis) functionName(fn *sitter.Node) string {
	if n := fn.ChildByFieldName("name"); n != nil && fn.Type() != "function_expression" && fn.Type() != "function" {
		return a.text(n)
	}
	if p := fn.Parent(); p != nil && p.Type() == "variable_declarator" {
		if n := p.ChildByFieldName("name"); n != nil && n.Type() == "identifier" {
			return a.text(n)
		}
	}
	return ""
}

// exported reports a name the file may export: in an export statement or
// list, or assigned to exports or module.exports.
func exported(src []byte, name string) bool {
	q := regexp.QuoteMeta(name)
	re := regexp.MustCompile(`\bexport\b[^;\n]*\b` + q + `\b|\bexports\.[\w$]+\s*=\s*` + q + `\b|\bexports\.` + q + `\b|module\.exports\s*=\s*(?:\{[^}]*\b` + q + `\b|` + q + `\b)|module\.exports\[` + strconv.Quote(name))
	return re.Match(src)
}

// exportedWrapper is a function the file exports that hands its
// parameter, or the parameter's first element, to a child_process
// function as the command (exportcalls.go).
type exportedWrapper struct {
	// export is the name importers bind it by: "default" for
	// module.exports = fn and export default fn.
	export string
	param  int
	// element: the command is the parameter's first element, args[0] of
	// runCmd(args).
	element bool
}

// exportedWrapper reports whether call c's command cmd is a parameter (or
// its first element) of the function around c, which the file exports and
// which does not give that parameter another value.
func (a *analysis) exportedWrapper(c, cmd *sitter.Node) *exportedWrapper {
	element := false
	if cmd.Type() == "subscript_expression" {
		idx := cmd.ChildByFieldName("index")
		if idx == nil || idx.Type() != "number" || a.text(idx) != "0" {
			return nil
		}
		cmd, element = cmd.ChildByFieldName("object"), true
	}
	if cmd == nil || cmd.Type() != "identifier" {
		return nil
	}
	param := a.text(cmd)
	// The nearest function that declares the parameter: a callback inside
	// the wrapper (a Promise's executor) sees it too.
	fn, index := enclosingFunction(c), -1
	for ; fn != nil; fn = enclosingFunction(fn) {
		if index = paramIndex(a, fn, param); index >= 0 {
			break
		}
	}
	if fn == nil {
		return nil
	}
	if a.reassigns(fn, param) {
		return nil
	}
	name := a.exportName(fn)
	if name == "" {
		return nil
	}
	return &exportedWrapper{export: name, param: index, element: element}
}

// exportName is the name the file exports function fn by: "default" for
// module.exports = fn (through a chain such as module.exports = exports =
// fn) and export default fn; the property's name for exports.x = fn, and
// the function's for export function x; "" when the file does not export
// it, as far as these forms show.
func (a *analysis) exportName(fn *sitter.Node) string {
up:
	for p := fn.Parent(); p != nil; p = p.Parent() {
		switch p.Type() {
		case "assignment_expression":
			left := a.text(p.ChildByFieldName("left"))
			switch {
			case left == "module.exports" || left == "exports":
				return "default"
			case strings.HasPrefix(left, "module.exports.") || strings.HasPrefix(left, "exports."):
				name := left[strings.LastIndexByte(left, '.')+1:]
				if jsIdentRE.MatchString(name) {
					return name
				}
				return ""
			}
			continue // a = b = fn: the outer assignment decides
		case "export_statement":
			if modgraph.ExportsDefault(p) {
				return "default"
			}
			if n := fn.ChildByFieldName("name"); n != nil {
				return a.text(n)
			}
			return ""
		case "parenthesized_expression", "as_expression":
			continue
		}
		break up
	}
	name := a.functionName(fn)
	if name == "" {
		return ""
	}
	q := regexp.QuoteMeta(name)
	switch {
	case regexp.MustCompile(`(?:\bmodule\.exports|\bexport\s+default)\s*=?\s*` + q + `\s*(?:;|\n|$)`).Match(a.src):
		return "default"
	case regexp.MustCompile(`\bexport\s+(?:const|let|var|function)\s+` + q + `\b`).Match(a.src):
		return name
	}
	if m := regexp.MustCompile(`\b(?:module\.)?exports\.([A-Za-z_$][\w$]*)\s*=\s*` + q + `\s*(?:;|\n|$)`).FindSubmatch(a.src); m != nil {
		return string(m[1])
	}
	return ""
}

var jsIdentRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*$`)
