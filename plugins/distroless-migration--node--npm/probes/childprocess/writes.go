package childprocess

// What the reachable application code writes and listens on, with literal
// arguments: the directories a service that ran as root writes into, and
// its ports below 1024, are what a move to a non-root user can break
// (readiness/nonroot.go, rule nonroot_user). Only the app's own files that
// the module graph reaches are read, and only those that name a file
// system module are parsed.

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"

	"github.com/codegenie/codegenie/internal/probe"
)

// Write is a call of the app's reachable code that writes a file or makes
// a directory at a literal path.
type Write struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function"`
	// Arg is the path argument as written (a literal, or path.join of
	// __dirname or process.cwd() and literals).
	Arg string `json:"arg"`
	// Path is where it writes: absolute, or relative to the process's
	// working directory when CwdRelative is set.
	Path        string `json:"path"`
	CwdRelative bool   `json:"cwd_relative,omitempty"`
	// MakesDir is set when the call makes Path as a directory, and
	// Recursive when it may find it made already.
	MakesDir  bool `json:"makes_dir,omitempty"`
	Recursive bool `json:"recursive,omitempty"`
}

// Listen is a listen call of the app's reachable code with a literal port.
type Listen struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Port int    `json:"port"`
}

// writeFuncs are the file system functions (node:fs, fs/promises,
// fs-extra, mkdirp) that write a file or make a directory at their first
// argument: "file" writes a file, "dir" makes a directory (recursive
// says whether an existing one is fine).
var writeFuncs = map[string]struct {
	dir, recursive bool
}{
	"writeFile": {}, "writeFileSync": {}, "appendFile": {}, "appendFileSync": {}, "createWriteStream": {},
	"outputFile": {}, "outputFileSync": {}, "outputJson": {}, "outputJsonSync": {}, "outputJSON": {}, "outputJSONSync": {},
	"writeJson": {}, "writeJsonSync": {}, "writeJSON": {}, "writeJSONSync": {},
	"mkdir": {dir: true}, "mkdirSync": {dir: true},
	"ensureDir": {dir: true, recursive: true}, "ensureDirSync": {dir: true, recursive: true}, "mkdirp": {dir: true, recursive: true},
	"mkdirs": {dir: true, recursive: true}, "mkdirsSync": {dir: true, recursive: true},
}

// fsModuleRE finds a quoted file system module specifier.
var fsModuleRE = regexp.MustCompile(`['"](node:)?(fs|fs/promises|fs-extra|graceful-fs|mkdirp)['"]`)

// maxWriteScanFiles bounds the files the write scan parses.
const maxWriteScanFiles = 5000

// scanWrites finds the literal writes and listens of the reachable app
// files (not node_modules): those the module graph reaches from the
// entrypoint.
func (s *scoper) scanWrites(ctx context.Context, repo *probe.Repo) ([]Write, []Listen, error) {
	if s == nil || s.g == nil {
		return nil, nil, nil
	}
	sc := newScanner()
	defer sc.close()
	var writes []Write
	var listens []Listen
	n := 0
	for _, f := range s.g.Files() {
		if strings.HasPrefix(f, "node_modules/") || strings.Contains(f, "/node_modules/") {
			continue
		}
		l, ok := languageFor(f, appExts)
		if !ok {
			continue
		}
		if n++; n > maxWriteScanFiles {
			break
		}
		src, err := repo.ReadFile(f)
		if err != nil || len(src) > MaxParseBytes {
			continue // unreadable or too large: no literal write is claimed
		}
		imageDir := ""
		if p, ok := s.set.ImagePath(f); ok {
			imageDir = path.Dir(p)
		}
		w, ls, err := sc.fileWrites(ctx, l, src, f, imageDir)
		if err != nil {
			return nil, nil, err
		}
		writes = append(writes, w...)
		listens = append(listens, ls...)
	}
	return writes, listens, nil
}

// fileWrites parses src, the source of file, if it names a file system
// module or calls listen, and returns its literal writes and listens.
func (sc *scanner) fileWrites(ctx context.Context, l language, src []byte, file, imageDir string) ([]Write, []Listen, error) {
	fsMod := fsModuleRE.Match(src)
	if !fsMod && !bytes.Contains(src, []byte(".listen(")) {
		return nil, nil, nil
	}
	tree, err := sc.parser(l).ParseCtx(ctx, nil, src)
	if err != nil {
		sc.parsers[l].Close()
		sc.parsers[l] = nil
		return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
	}
	defer tree.Close()
	a := &analysis{src: src, root: tree.RootNode(), lines: lineStarts(src)}
	w, ls := a.writes(file, imageDir, fsMod)
	return w, ls, nil
}

// callNameRE finds the name of a call scanWrites looks for, before its
// opening parenthesis.
var callNameRE = func() *regexp.Regexp {
	names := []string{"listen"}
	for n := range writeFuncs {
		names = append(names, n)
	}
	sort.Strings(names)
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\s*\(`)
}()

// writes finds the calls scanWrites looks for; fsMod is set when the file
// names a file system module. imageDir is the file's directory in the
// image ("" when unknown), which __dirname names. As the child_process
// analysis does, it searches the bytes for the names and asks the tree
// only what sits there, so a large file's other nodes are never made.
func (a *analysis) writes(file, imageDir string, fsMod bool) ([]Write, []Listen) {
	var writes []Write
	var listens []Listen
	e := &pathEval{a: a, imageDir: imageDir}
	for _, m := range callNameRE.FindAllSubmatchIndex(a.src, -1) {
		id := a.nodeAt(m[2], m[3])
		if id == nil || (id.Type() != "identifier" && id.Type() != "property_identifier") {
			continue // in a string or a comment
		}
		fnNode := id
		if p := id.Parent(); p != nil && p.Type() == "member_expression" && isField(p, "property", id) {
			fnNode = p
		}
		call := fnNode.Parent()
		if call == nil || call.Type() != "call_expression" || !isField(call, "function", fnNode) {
			continue
		}
		name := a.text(id)
		var args []*sitter.Node
		if al := call.ChildByFieldName("arguments"); al != nil && al.Type() == "arguments" {
			args = namedArgs(al)
		}
		if len(args) == 0 {
			continue
		}
		line := a.pos(call).line
		if fn, ok := writeFuncs[name]; ok && fsMod {
			if p, rel, ok := e.pathArg(args[0]); ok {
				w := Write{File: file, Line: line, Function: name, Arg: a.text(args[0]), Path: p, CwdRelative: rel, MakesDir: fn.dir, Recursive: fn.recursive}
				if fn.dir && !fn.recursive && len(args) > 1 && strings.Contains(a.text(args[1]), "recursive: true") {
					w.Recursive = true
				}
				writes = append(writes, w)
			}
		}
		if name == "listen" && args[0].Type() == "number" {
			if port, err := strconv.Atoi(a.text(args[0])); err == nil {
				listens = append(listens, Listen{File: file, Line: line, Port: port})
			}
		}
	}
	return writes, listens
}

// dirnameTemplate is the path of a template literal that is __dirname
// followed by literal text.
func (a *analysis) dirnameTemplate(n *sitter.Node, imageDir string) (string, bool) {
	if imageDir == "" || n.NamedChildCount() == 0 {
		return "", false
	}
	first := n.NamedChild(0)
	if first.Type() != "template_substitution" || strings.TrimSpace(strings.Trim(a.text(first), "${}")) != "__dirname" {
		return "", false
	}
	rest, ok := a.fragments(n, 1)
	if !ok {
		return "", false
	}
	return path.Join(imageDir, rest), true
}

// pathEval evaluates path arguments in one file.
type pathEval struct {
	a *analysis
	// imageDir is the file's directory in the image, which __dirname
	// names ("" when unknown).
	imageDir string
	// consts maps a name to the values it is declared with in the file,
	// as each is first asked for.
	consts map[string][]*sitter.Node
	depth  int
}

// constValue is the value of the one declaration of name in the file
// (const, let or var); nil when there is none or more than one. It looks
// only where the name occurs.
func (e *pathEval) constValue(name string) *sitter.Node {
	if e.consts == nil {
		e.consts = map[string][]*sitter.Node{}
	}
	if vs, ok := e.consts[name]; ok {
		return one(vs)
	}
	var vs []*sitter.Node
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for _, m := range re.FindAllIndex(e.a.src, -1) {
		id := e.a.nodeAt(m[0], m[1])
		if id == nil || id.Type() != "identifier" {
			continue
		}
		if d := id.Parent(); d != nil && d.Type() == "variable_declarator" && isField(d, "name", id) {
			vs = append(vs, d.ChildByFieldName("value"))
		}
	}
	e.consts[name] = vs
	return one(vs)
}

// one is the only node of vs, nil unless there is exactly one.
func one(vs []*sitter.Node) *sitter.Node {
	if len(vs) == 1 {
		return vs[0]
	}
	return nil
}

// pathArg is the path a path argument names: a literal, or path.join or
// path.resolve of __dirname or process.cwd() and literals. rel is set when
// it is relative to the process's working directory.
func (e *pathEval) pathArg(n *sitter.Node) (p string, rel bool, ok bool) {
	a, imageDir := e.a, e.imageDir
	if n == nil || e.depth > 8 {
		return "", false, false
	}
	e.depth++
	defer func() { e.depth-- }()
	switch n.Type() {
	case "parenthesized_expression":
		if n.NamedChildCount() == 1 {
			return e.pathArg(n.NamedChild(0))
		}
	case "binary_expression":
		// process.env.CONFIG_DIR ?? path.join(__dirname, 'config'): the
		// literal default is where it writes unless the variable is set.
		if op := n.ChildByFieldName("operator"); op != nil && (op.Type() == "??" || op.Type() == "||") {
			return e.pathArg(n.ChildByFieldName("right"))
		}
	case "ternary_expression":
		// CONFIG ? `${CONFIG}/x` : path.join(__dirname, 'x'): the branch
		// that is a literal path.
		if p, rel, ok := e.pathArg(n.ChildByFieldName("alternative")); ok {
			return p, rel, true
		}
		return e.pathArg(n.ChildByFieldName("consequence"))
	case "identifier":
		// const DATA_DIR = path.join(__dirname, 'data'), declared once in
		// the file.
		if v := e.constValue(a.text(n)); v != nil {
			return e.pathArg(v)
		}
		return "", false, false
	case "template_string":
		// `${__dirname}/config`
		if p, ok := a.dirnameTemplate(n, imageDir); ok {
			return p, false, true
		}
	}
	if s, ok := a.literal(n); ok {
		if s == "" {
			return "", false, false
		}
		return s, !path.IsAbs(s), true
	}
	if n.Type() != "call_expression" {
		return "", false, false
	}
	callee := a.text(n.ChildByFieldName("function"))
	if !strings.HasSuffix(callee, ".join") && !strings.HasSuffix(callee, ".resolve") && callee != "join" && callee != "resolve" {
		return "", false, false
	}
	al := n.ChildByFieldName("arguments")
	if al == nil || al.Type() != "arguments" {
		return "", false, false
	}
	args := namedArgs(al)
	if len(args) == 0 {
		return "", false, false
	}
	var parts []string
	base, rel := "", true
	for i, x := range args {
		t := a.text(x)
		switch {
		case i == 0 && t == "__dirname":
			if imageDir == "" {
				return "", false, false
			}
			base, rel = imageDir, false
		case i == 0 && t == "process.cwd()":
		default:
			s, ok := a.literal(x)
			if !ok {
				return "", false, false
			}
			if path.IsAbs(s) && strings.HasSuffix(callee, "resolve") {
				parts, base, rel = nil, s, false
				continue
			}
			parts = append(parts, s)
		}
	}
	joined := path.Join(append([]string{base}, parts...)...)
	if joined == "" || joined == "." {
		return "", false, false
	}
	return joined, rel && !path.IsAbs(joined), true
}
