package modgraph

import (
	"context"
	"path"
	"regexp"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// An app that loads its plugins by listing them with a glob
// (outline's PluginManager: glob.sync(path.join(rootDir,
// "plugins/*/server/index.[jt]s")).forEach((f) => require(path.join(cwd,
// f)))) loads the files that glob matches, not any file of the app. A
// computed load whose enclosing function (or one around it) lists files
// with a glob call given a literal pattern reaches the app's files that
// pattern matches, wherever they sit (the pattern may be joined to a
// folder that only the build makes: build/plugins holds the compiled
// plugins/ sources). A pattern the path package cannot match (**, {a,b})
// or that matches nothing leaves the load computed, and the app open.

// globCallRE is a call that lists files by a glob: glob.sync, globSync,
// glob, globby, fast-glob's fg and sync.
var globCallRE = regexp.MustCompile(`\b(?:glob|globSync|globby|globbySync|fg|fastGlob|sync)\s*\(`)

// wildRE is a string literal that holds a wildcard.
var wildRE = regexp.MustCompile(`"([^"\n]*[*?][^"\n]*)"|'([^'\n]*[*?][^'\n]*)'` + "|`([^`$\\n]*[*?][^`$\\n]*)`")

// globLoads takes out of dyn, the computed loads of the app file src,
// those that load what a glob of the function around them lists, and
// makes each file that glob matches reached from the load's line.
func (w *walker) globLoads(ctx context.Context, src *source, dyn []Dynamic) []Dynamic {
	if !appComputed(src, dyn) || !globCallRE.Match(src.data) {
		return dyn
	}
	return w.takeLoads(ctx, src, dyn, func(d Dynamic, n *sitter.Node) bool {
		files := w.globbed(enclosingGlobs(n, src.text))
		w.reach(files, src.file, d.Line)
		return len(files) > 0
	})
}

// takeLoads passes each computed load of the app file src that has no
// literal start and is not an environment variable, with the syntax node
// at it, to take, and returns dyn without those take handled. It parses
// src only for an app file with such loads.
func (w *walker) takeLoads(ctx context.Context, src *source, dyn []Dynamic, take func(Dynamic, *sitter.Node) bool) []Dynamic {
	if !appComputed(src, dyn) {
		return dyn
	}
	root := src.root(ctx)
	if root == nil {
		return dyn
	}
	kept := dyn[:0:0]
	for _, d := range dyn {
		if d.Prefix == "" && d.Env == "" && take(d, root.NamedDescendantForPointRange(pointAt(src.data, d.Offset), pointAt(src.data, d.Offset+1))) {
			continue
		}
		kept = append(kept, d)
	}
	return kept
}

// appComputed reports whether src is an app file, small enough to parse,
// with computed loads: the cheap test that comes before any other look
// at its text, since the walk reads every dependency file too.
func appComputed(src *source, dyn []Dynamic) bool {
	return len(dyn) > 0 && PackageOf(src.file) == "" && len(src.data) <= maxLazyParse
}

// appSource reports whether f is a source file of the app's own (a
// loadable file with an extension, outside node_modules).
func appSource(f string) bool {
	return loadable(f) && path.Ext(f) != "" && !strings.Contains(f, "node_modules/")
}

// reach makes files reached from line of from, those not reached yet.
func (w *walker) reach(files []string, from string, line int) {
	for _, f := range files {
		if _, seen := w.g.parent[f]; seen {
			continue
		}
		w.g.parent[f] = from
		w.g.line[f] = line
		w.queue = append(w.queue, f)
	}
}

// enclosingGlobs returns the literal patterns of the glob calls in the
// innermost function around n that makes one.
func enclosingGlobs(n *sitter.Node, text func(*sitter.Node) string) []string {
	for ; n != nil; n = n.Parent() {
		switch n.Type() {
		case "function_declaration", "generator_function_declaration", "method_definition",
			"function_expression", "function", "arrow_function", "generator_function":
		default:
			continue
		}
		body := text(n)
		var pats []string
		for _, loc := range globCallRE.FindAllStringIndex(body, -1) {
			args, _ := argument(body, loc[1])
			for _, m := range wildRE.FindAllStringSubmatch(args, -1) {
				pats = append(pats, m[1]+m[2]+m[3])
			}
		}
		if len(pats) > 0 {
			return pats
		}
	}
	return nil
}

// globbed returns the app's loadable files that one of pats matches as
// the end of their path; nil when a pattern is one path.Match cannot read.
func (w *walker) globbed(pats []string) []string {
	var out []string
	for _, p := range pats {
		p = strings.TrimPrefix(path.Clean(p), "./")
		if strings.Contains(p, "**") || strings.ContainsAny(p, "{}") || path.IsAbs(p) || strings.HasPrefix(p, "../") {
			return nil
		}
		if _, err := path.Match(p, ""); err != nil {
			return nil
		}
		segs := strings.Count(p, "/") + 1
		for _, f := range w.files {
			if !appSource(f) {
				continue
			}
			parts := strings.Split(f, "/")
			if len(parts) < segs {
				continue
			}
			if ok, _ := path.Match(p, strings.Join(parts[len(parts)-segs:], "/")); ok {
				out = append(out, f)
			}
		}
	}
	return out
}
