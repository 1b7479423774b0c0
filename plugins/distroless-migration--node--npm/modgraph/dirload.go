package modgraph

import (
	"context"
	"path"
	"regexp"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// An app helper that loads every file of a folder its caller names
// (outline's `requireDirectory(dirName)`: readdirSync(dirName), then
// require(path.join(dirName, file)) for each) makes a computed load whose
// folder is known only at its call sites: `requireDirectory(__dirname)` in
// server/queues/tasks/index.ts loads server/queues/tasks. A computed load
// in a named function whose first parameter its body uses, in a file that
// lists a folder (readdir), is such a helper's load when every call of the
// helper in the app's files that import it passes a literal folder: then
// the loadable files of each such folder are reached from the load's
// line, and the load leaves the app closed. One call with a folder that
// is not a literal, or no call found, keeps the load computed.

// readdirRE is a call that lists a folder.
var readdirRE = regexp.MustCompile(`\breaddir(?:Sync)?\s*\(`)

// dirLoads takes out of dyn, the computed loads of the app file src, those
// of a folder-loading helper whose every caller names its folder with a
// literal, and makes the files of those folders reached from the load.
func (w *walker) dirLoads(ctx context.Context, src *source, dyn []Dynamic) []Dynamic {
	if !appComputed(src, dyn) || !readdirRE.Match(src.data) {
		return dyn
	}
	return w.takeLoads(ctx, src, dyn, func(d Dynamic, n *sitter.Node) bool {
		if w.listedLoad(src, d) {
			return true
		}
		name, param, body := helperOf(n, src.text)
		if name == "" || !listsFolder(string(src.data), body, param) {
			return false
		}
		dirs, ok := w.callerDirs(src.file, name)
		if !ok {
			return false
		}
		var files []string
		for _, f := range w.files {
			if appSource(f) && dirs[path.Dir(f)] {
				files = append(files, f)
			}
		}
		w.reach(files, src.file, d.Line)
		return true
	})
}

// helperOf returns the name of the innermost named function around n,
// its first parameter and its body, when its body uses that parameter;
// "" otherwise.
func helperOf(n *sitter.Node, text func(*sitter.Node) string) (name, param, body string) {
	for ; n != nil; n = n.Parent() {
		name = ""
		switch n.Type() {
		case "function_declaration", "generator_function_declaration":
			name = text(n.ChildByFieldName("name"))
		case "method_definition":
			if id := n.ChildByFieldName("name"); id != nil && id.Type() == "property_identifier" {
				name = text(id)
			}
		case "function_expression", "function", "arrow_function", "generator_function":
			name = boundName(n, text)
		default:
			continue
		}
		if name == "" {
			continue // a callback: the function around it is the helper
		}
		param = firstParam(n, text)
		b := n.ChildByFieldName("body")
		if param == "" || b == nil || !wordIn(text(b), param) {
			return "", "", ""
		}
		return name, param, text(b)
	}
	return "", "", ""
}

// listsFolder reports whether body, a helper's, lists the folder its
// parameter param names: it calls readdir itself, or passes param to a
// function of the same file (src) that does (outline's requireDirectory
// calls getFilenamesInDirectory(dirName)). A helper that loads its
// parameter as a module name is not a folder's loader.
func listsFolder(src, body, param string) bool {
	if readdirRE.MatchString(body) {
		return true
	}
	passes := regexp.MustCompile(`\b([A-Za-z_$][\w$]*)\s*\(\s*` + regexp.QuoteMeta(param) + `\b`)
	for _, m := range passes.FindAllStringSubmatch(body, -1) {
		def := regexp.MustCompile(`(?:function\s*\*?\s*` + regexp.QuoteMeta(m[1]) + `\s*(?:<[^()]*>)?\s*\(|\b` +
			regexp.QuoteMeta(m[1]) + `\s*=\s*(?:async\s*)?(?:function\b[^(]*)?\()`)
		loc := def.FindStringIndex(src)
		if loc == nil {
			continue
		}
		open := strings.IndexByte(src[loc[1]:], '{')
		if open < 0 {
			continue
		}
		if callee, _ := argument(src, loc[1]+open+1); readdirRE.MatchString(callee) {
			return true
		}
	}
	return false
}

// firstParam is the name of a function node's first parameter; "" when
// it has none, or its first is a pattern.
func firstParam(fn *sitter.Node, text func(*sitter.Node) string) string {
	if p := fn.ChildByFieldName("parameter"); p != nil { // x => …
		return text(p)
	}
	params := fn.ChildByFieldName("parameters")
	if params == nil || params.NamedChildCount() == 0 {
		return ""
	}
	p := params.NamedChild(0)
	if pat := p.ChildByFieldName("pattern"); pat != nil { // TypeScript: dirName: string
		p = pat
	}
	if p.Type() != "identifier" {
		return ""
	}
	return text(p)
}

// wordIn reports whether word is a whole word of s.
func wordIn(s, word string) bool {
	for i := strings.Index(s, word); i >= 0; {
		end := i + len(word)
		if (i == 0 || !wordByte(s[i-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		j := strings.Index(s[end:], word)
		if j < 0 {
			return false
		}
		i = end + j
	}
	return false
}

// callerDirs returns the folders that the calls of helper name, defined in
// the app file def, pass as their first argument, from the app's files
// that import def (or def itself); ok is false when one passes a folder
// that is not a literal, or none calls it.
func (w *walker) callerDirs(def, name string) (map[string]bool, bool) {
	call := regexp.MustCompile(`(?:^|[^\w$])` + regexp.QuoteMeta(name) + `\s*(?:<[^()<>]*>)?\s*\(`)
	stem := strings.TrimSuffix(path.Base(def), path.Ext(def))
	// A specifier with a folder that ends in def's name: a bare 'fs' is
	// node's module, not the app's fs.ts.
	imports := regexp.MustCompile(`['"][^'"\n]*/` + regexp.QuoteMeta(stem) + `(?:\.[cm]?[jt]s)?['"]`)
	dirs := map[string]bool{}
	for _, t := range w.appTexts() {
		if !t.code || !strings.Contains(t.text, name) || t.file != def && !imports.MatchString(t.text) {
			continue
		}
		for _, loc := range call.FindAllStringIndex(t.text, -1) {
			args, closed := argument(t.text, loc[1])
			if !closed {
				return nil, false
			}
			end := loc[1] + len(args) + 1
			after := strings.TrimLeft(t.text[end:min(end+64, len(t.text))], " \t\r\n")
			if strings.HasPrefix(after, "{") || strings.HasPrefix(after, ":") && strings.Contains(args, ":") {
				continue // the helper's own definition, or a method's: (dirName: string): T[] {
			}
			first := strings.TrimSpace(splitTop(args)[0])
			ds, fromFile, ok := literalDirs(first)
			if !ok {
				return nil, false
			}
			for _, d := range resolveDirs(t.file, ds, fromFile) {
				dirs[d] = true
			}
		}
	}
	return dirs, len(dirs) > 0
}

// A file that lists a folder and loads each entry itself (sequelize's
// generated models/index.js: fs.readdirSync(__dirname).forEach((file) =>
// require(path.join(__dirname, file))); web-check's server.js:
// readdirSync(dirPath, { withFileTypes: true }) then
// import(path.join(dirPath, dirent.name))) makes a computed load that
// joins a folder to an entry's name. When the same file lists that folder
// with readdir, and the folder is a literal (__dirname, a path join of
// strings, or a name the file declares once with such a value), the load
// reaches the loadable files of that folder, and the index file of each
// of its subfolders (a folder's entry loads as a folder). A recursive
// listing reaches every file below it.

// entryRE is what a listed folder's entry is joined as: a name, or an
// entry's .name (a Dirent of withFileTypes).
var entryRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*(?:\.name)?$`)

// templateJoinRE is a template literal that joins a folder to an entry:
// `${dir}/${file}`.
var templateJoinRE = regexp.MustCompile("^`\\$\\{([^{}`]+)\\}/\\$\\{([^{}`]+)\\}`$")

// listedLoad reports whether the computed load d of the app file src
// loads the entries of a folder the file lists, and if so makes that
// folder's files reached from the load's line.
func (w *walker) listedLoad(src *source, d Dynamic) bool {
	text := string(src.data)
	arg, ok := loadArg(text, d)
	if !ok {
		return false
	}
	folder, ok := joinedFolder(arg)
	if !ok {
		return false
	}
	dirs, ok := folderDirs(text, src.file, folder)
	if !ok {
		return false
	}
	recursive := false
	listed := false
	for _, loc := range readdirRE.FindAllStringIndex(text, -1) {
		args, closed := argument(text, loc[1])
		if !closed {
			continue
		}
		parts := splitTop(args)
		got, ok := folderDirs(text, src.file, strings.TrimSpace(parts[0]))
		if !ok || !slices.Equal(got, dirs) {
			continue
		}
		listed = true
		recursive = recursive || len(parts) > 1 && strings.Contains(parts[1], "recursive")
	}
	if !listed {
		return false
	}
	var files []string
	for _, f := range w.files {
		if !appSource(f) {
			continue
		}
		parent := path.Dir(f)
		stem := strings.TrimSuffix(path.Base(f), path.Ext(f))
		for _, dir := range dirs {
			if parent == dir || stem == "index" && path.Dir(parent) == dir || recursive && strings.HasPrefix(f, dir+"/") {
				files = append(files, f)
				break
			}
		}
	}
	w.reach(files, src.file, d.Line)
	return true
}

// joinedFolder returns the folder expression of a load's argument that
// joins a folder to a listed entry's name: path.join(folder, file),
// path.join(a, b, dirent.name) (the folder is then path.join(a, b)), or
// `${folder}/${file}`.
func joinedFolder(arg string) (string, bool) {
	arg = strings.TrimSpace(arg)
	if m := templateJoinRE.FindStringSubmatch(arg); m != nil {
		return strings.TrimSpace(m[1]), entryRE.MatchString(strings.TrimSpace(m[2]))
	}
	loc := pathCallRE.FindStringIndex(arg)
	if loc == nil || !strings.Contains(arg[:loc[1]], "join") {
		return "", false
	}
	inner, ok := argument(arg, loc[1])
	if !ok || strings.TrimSpace(arg[loc[1]+len(inner):]) != ")" {
		return "", false
	}
	parts := splitTop(inner)
	if len(parts) < 2 || !entryRE.MatchString(strings.TrimSpace(parts[len(parts)-1])) {
		return "", false
	}
	if len(parts) == 2 {
		return strings.TrimSpace(parts[0]), true
	}
	return "path.join(" + strings.Join(parts[:len(parts)-1], ",") + ")", true
}

// folderDirs resolves a folder expression of the app file file, whose
// text is text, to the repository folders it may be: a literal folder
// (literalDirs), with each name in it that the file declares once as a
// string replaced by that string, or such a name whose one declaration
// is a literal folder.
func folderDirs(text, file, expr string) ([]string, bool) {
	if nameOnlyRE.MatchString(expr) && expr != "__dirname" {
		v, ok := declared(text, expr)
		if !ok {
			return nil, false
		}
		expr = v
	}
	if loc := pathCallRE.FindStringIndex(expr); loc != nil {
		if inner, ok := argument(expr, loc[1]); ok {
			parts := splitTop(inner)
			for i, a := range parts {
				a = strings.TrimSpace(a)
				if nameOnlyRE.MatchString(a) && a != "__dirname" {
					if v, ok := declared(text, a); ok && stringRE.MatchString(v) {
						parts[i] = stringRE.FindString(v)
					}
				}
			}
			expr = expr[:loc[1]] + strings.Join(parts, ",") + expr[loc[1]+len(inner):]
		}
	}
	ds, fromFile, ok := literalDirs(expr)
	if !ok {
		return nil, false
	}
	out := resolveDirs(file, ds, fromFile)
	slices.Sort(out)
	return slices.Compact(out), len(out) > 0
}

// nameOnlyRE is a name alone.
var nameOnlyRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*$`)

// declared returns the value text of the one declaration of name in
// text (const, let or var), up to the end of its statement or line; ok
// is false when there is none, or more than one.
func declared(text, name string) (string, bool) {
	re := regexp.MustCompile(`\b(?:const|let|var)\s+` + regexp.QuoteMeta(name) + `\s*(?::\s*string\s*)?=\s*`)
	locs := re.FindAllStringIndex(text, 2)
	if len(locs) != 1 {
		return "", false
	}
	// Nor is it given another value.
	set := regexp.MustCompile(`(?:^|[^\w$.])` + regexp.QuoteMeta(name) + `\s*(?::\s*string\s*)?(?:[-+*/|&?]|\?\?)?=[^=>]`)
	if len(set.FindAllStringIndex(text, 2)) != 1 {
		return "", false
	}
	rest := text[locs[0][1]:]
	if i := strings.IndexAny(rest, ";\n"); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimSpace(rest), true
}

// A computed load whose argument is a name the file declares once, with a
// path as its value (web-check's const ssrHandlerPath =
// path.join(__dirname, 'dist', 'server', 'entry.mjs'), then
// import(ssrHandlerPath)), loads that path: it is a literal load, of a
// file relative to the file that names it when the path is joined to
// __dirname, else of the string as written.

// namedLoads takes out of dyn, the computed loads of the app file src,
// those whose argument is such a name, and returns them as literal loads.
func namedLoads(src *source, imps []Import, dyn []Dynamic) ([]Import, []Dynamic) {
	if !appComputed(src, dyn) {
		return imps, dyn
	}
	text := string(src.data)
	kept := dyn[:0:0]
	for _, d := range dyn {
		if spec, ok := namedPath(text, d); ok {
			imps = append(imps, Import{Spec: spec, Line: d.Line, Offset: d.Offset})
			continue
		}
		kept = append(kept, d)
	}
	return imps, kept
}

// namedPath returns the specifier a computed load d of text loads when its
// argument is a name declared once with a literal path.
func namedPath(text string, d Dynamic) (string, bool) {
	if d.Prefix != "" || d.Env != "" {
		return "", false
	}
	arg, ok := loadArg(text, d)
	if !ok || !nameOnlyRE.MatchString(arg) || arg == "__dirname" {
		return "", false
	}
	v, ok := declared(text, arg)
	if !ok || strings.HasPrefix(v, "[") {
		return "", false
	}
	if m := stringRE.FindStringSubmatch(v); m != nil && len(m[0]) == len(v) {
		return m[1] + m[2] + m[3], m[1]+m[2]+m[3] != ""
	}
	loc := pathCallRE.FindStringIndex(v)
	if loc == nil {
		return "", false
	}
	inner, ok := argument(v, loc[1])
	if !ok || strings.TrimSpace(v[loc[1]+len(inner):]) != ")" || strings.TrimSpace(splitTop(inner)[0]) != "__dirname" {
		return "", false
	}
	ds, fromFile, ok := literalDirs(v)
	if !ok || !fromFile || len(ds) != 1 || ds[0] == "." || strings.ContainsAny(ds[0], "*?[{") {
		return "", false
	}
	return "./" + ds[0], true
}

// loadArg is the argument of the computed load d of text, comments
// dropped and trimmed; ok is false when its parentheses do not close.
func loadArg(text string, d Dynamic) (string, bool) {
	open := strings.IndexByte(text[d.Offset:], '(')
	if open < 0 {
		return "", false
	}
	arg, closed := argument(text, d.Offset+open+1)
	return strings.TrimSpace(stripComments(arg)), closed
}
