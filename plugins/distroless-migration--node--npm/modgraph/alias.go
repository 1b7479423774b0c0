package modgraph

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// A bare specifier of the app's own code that is neither installed nor a
// declared dependency is one of two things. It may be an alias that names
// a file of the repository: a tsconfig or jsconfig "paths" entry or
// "baseUrl", a module-alias "_moduleAliases" entry in package.json, or a
// bundler's or NODE_PATH's name for a folder of the app ("@/x", "~/x",
// "lib/x" where lib is a folder of the package). Or it is a package that
// is simply not there (a guarded require('statsd-client'), a package some
// other dependency happens to install): it names no file of the app, so it
// is an unresolved edge and leaves the rest of the graph as it is.

// alias is what the walk makes of an undeclared, uninstalled bare
// specifier.
type alias int

const (
	// aliasNone: not an alias; the load is an unresolved edge.
	aliasNone alias = iota
	// aliasFile: an alias the walk followed to a file.
	aliasFile
	// aliasOpen: an alias the walk cannot follow (its map is not read, or
	// its target is not in the repository): the files of the package stay
	// possibly loaded.
	aliasOpen
)

// aliasOf resolves spec, loaded by from, through the alias maps of from's
// package, and otherwise says whether it looks like an alias.
func (w *walker) aliasOf(from, spec string) (string, alias) {
	if t, matched := w.tsconfigPaths(from, spec); matched {
		if t != "" {
			return t, aliasFile
		}
		return "", aliasOpen
	}
	if t, matched := w.moduleAlias(from, spec); matched {
		if t != "" {
			return t, aliasFile
		}
		return "", aliasOpen
	}
	if t, matched := w.svelteKitAlias(from, spec); matched {
		if t != "" {
			return t, aliasFile
		}
		if !strings.HasPrefix(spec, "$lib") {
			return "", aliasNone // a virtual module the build provides
		}
		return "", aliasOpen
	}
	if strings.HasPrefix(spec, "@/") || strings.HasPrefix(spec, "~") || strings.HasPrefix(spec, "$") {
		return "", aliasOpen // a bundler's conventional alias for the source folder
	}
	// NODE_PATH or a baseUrl this walk did not find makes "lib/x" the
	// package's lib folder: a name that is a folder or file of the
	// package (or of its src folder) may be one.
	first, _, _ := strings.Cut(spec, "/")
	root := w.packageRoot(from)
	for _, dir := range []string{root, path.Join(root, "src")} {
		p := path.Join(dir, first)
		if w.hasDir(p) {
			return "", aliasOpen
		}
		if _, ok := w.file(p); ok {
			return "", aliasOpen
		}
	}
	return "", aliasNone
}

// packageRoot is the folder of the package.json nearest to from ("." when
// none).
func (w *walker) packageRoot(from string) string {
	for dir := path.Dir(from); ; dir = path.Dir(dir) {
		if w.manifestAt(dir) != nil {
			return dir
		}
		if dir == "." || dir == "/" {
			return "."
		}
	}
}

// tsconfig is the part of a tsconfig.json or jsconfig.json that maps
// module names to files.
type tsconfig struct {
	Extends         json.RawMessage `json:"extends"`
	CompilerOptions struct {
		BaseURL *string             `json:"baseUrl"`
		Paths   map[string][]string `json:"paths"`
		OutDir  *string             `json:"outDir"`
		RootDir *string             `json:"rootDir"`
	} `json:"compilerOptions"`
	Include []string `json:"include"`
}

// tsPaths is a tsconfig's resolved mapping: the folder its baseUrl names
// ("" when it sets none) and its paths, relative to that folder (or, with
// no baseUrl, to the tsconfig's own folder).
type tsPaths struct {
	baseURL  string
	pathsDir string
	paths    map[string][]string
	// outDir is where tsc writes, and roots the folders whose sources it
	// compiles there (rootDir, else the tsconfig's folder and the folders
	// its "include" patterns start with); "" and nil when it sets none.
	outDir string
	roots  []string
}

// tsconfigPaths resolves spec through the nearest tsconfig.json or
// jsconfig.json above from: a "paths" pattern, then "baseUrl". matched
// reports that a pattern names spec, even when none of its targets is a
// file of the repository (t is then "").
func (w *walker) tsconfigPaths(from, spec string) (t string, matched bool) {
	cfg := w.tsconfigFor(path.Dir(from))
	if cfg == nil {
		return "", false
	}
	// The longest matching pattern wins, as TypeScript decides.
	keys := make([]string, 0, len(cfg.paths))
	for k := range cfg.paths {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		star := ""
		switch {
		case k == spec:
		case strings.Count(k, "*") == 1:
			pre, suf, _ := strings.Cut(k, "*")
			if !strings.HasPrefix(spec, pre) || !strings.HasSuffix(spec, suf) || len(spec) < len(pre)+len(suf) {
				continue
			}
			star = spec[len(pre) : len(spec)-len(suf)]
		default:
			continue
		}
		for _, target := range cfg.paths[k] {
			p := path.Join(cfg.pathsDir, strings.Replace(target, "*", star, 1))
			if f, ok := w.file(p); ok {
				return f, true
			}
			if f, ok := w.fromSource(p); ok {
				return f, true
			}
			if w.inPrismaOutput(p) {
				// The client prisma generate writes there loads
				// @prisma/client's runtime, and nothing of the app.
				if f, ok := w.resolve(from, "@prisma/client"); ok {
					return f, true
				}
			}
		}
		return "", true
	}
	if cfg.baseURL != "" {
		p := path.Join(cfg.baseURL, spec)
		if f, ok := w.file(p); ok {
			return f, true
		}
	}
	return "", false
}

// tsconfigFor reads the tsconfig.json (else jsconfig.json) of dir or the
// nearest folder above it, following a relative "extends" for the fields
// the file does not set. The result is cached by folder.
func (w *walker) tsconfigFor(dir string) *tsPaths {
	if w.tscfg == nil {
		w.tscfg = map[string]*tsPaths{}
	}
	if c, ok := w.tscfg[dir]; ok {
		return c
	}
	var c *tsPaths
	for _, name := range []string{"tsconfig.json", "jsconfig.json"} {
		if p := path.Join(dir, name); w.index[p] {
			c = w.readTsconfig(p, 0)
			break
		}
	}
	if c == nil && dir != "." && dir != "/" {
		c = w.tsconfigFor(path.Dir(dir))
	}
	w.tscfg[dir] = c
	return c
}

// readTsconfig reads one tsconfig file and what it extends (at most 8
// files deep). An unreadable file maps nothing.
func (w *walker) readTsconfig(p string, depth int) *tsPaths {
	data, err := w.repo.ReadFile(p)
	if err != nil || depth > 8 {
		return nil
	}
	var cfg tsconfig
	if json.Unmarshal(stripJSONC(data), &cfg) != nil {
		return nil
	}
	out := &tsPaths{}
	var ext string
	if json.Unmarshal(cfg.Extends, &ext) == nil && (strings.HasPrefix(ext, "./") || strings.HasPrefix(ext, "../")) {
		target := path.Join(path.Dir(p), ext)
		if !strings.HasSuffix(target, ".json") && !w.index[target] {
			target += ".json"
		}
		if base := w.readTsconfig(target, depth+1); base != nil {
			*out = *base
		}
	}
	dir := path.Dir(p)
	if cfg.CompilerOptions.BaseURL != nil {
		out.baseURL = path.Join(dir, *cfg.CompilerOptions.BaseURL)
		if out.paths == nil {
			out.pathsDir = out.baseURL
		}
	}
	if cfg.CompilerOptions.Paths != nil {
		out.paths = cfg.CompilerOptions.Paths
		out.pathsDir = dir
		if out.baseURL != "" {
			out.pathsDir = out.baseURL
		}
	}
	if o := cfg.CompilerOptions.OutDir; o != nil {
		out.outDir, out.roots = path.Join(dir, *o), []string{dir}
		if r := cfg.CompilerOptions.RootDir; r != nil {
			out.roots = []string{path.Join(dir, *r)}
		} else {
			// With no rootDir, tsc writes below outDir each source's path
			// from the folder common to them all: often the folder an
			// include pattern starts with.
			for _, inc := range cfg.Include {
				if first, _, _ := strings.Cut(strings.TrimPrefix(inc, "./"), "/"); first != "" && !strings.ContainsAny(first, "*?[.") {
					out.roots = append(out.roots, path.Join(dir, first))
				}
			}
		}
	}
	return out
}

// fromOutDir maps p, a file below a tsconfig's outDir (dist/index.js from
// server/tsconfig.json's "outDir": "../dist"), to the source it was
// compiled from.
func (w *walker) fromOutDir(p string) (string, bool) {
	if w.outDirs == nil {
		w.outDirs = []*tsPaths{}
		for _, f := range w.files {
			if path.Base(f) != "tsconfig.json" || strings.Contains(f, "node_modules/") {
				continue
			}
			if cfg := w.readTsconfig(f, 0); cfg != nil && cfg.outDir != "" {
				w.outDirs = append(w.outDirs, cfg)
			}
		}
	}
	for _, cfg := range w.outDirs {
		rest, ok := strings.CutPrefix(p, cfg.outDir+"/")
		if !ok {
			continue
		}
		for _, root := range cfg.roots {
			if t, ok := w.file(path.Join(root, rest)); ok {
				return t, true
			}
		}
	}
	return "", false
}

// moduleAlias resolves spec through the "_moduleAliases" of the nearest
// package.json (the module-alias package reads it at run time): a key
// equal to spec or followed by "/" in it.
func (w *walker) moduleAlias(from, spec string) (t string, matched bool) {
	root := w.packageRoot(from)
	m := w.manifestAt(root)
	if m == nil || len(m.ModuleAliases) == 0 {
		return "", false
	}
	best := ""
	for k := range m.ModuleAliases {
		if (spec == k || strings.HasPrefix(spec, k+"/")) && len(k) > len(best) {
			best = k
		}
	}
	if best == "" {
		return "", false
	}
	p := path.Join(root, m.ModuleAliases[best], strings.TrimPrefix(spec, best))
	if f, ok := w.file(p); ok {
		return f, true
	}
	if f, ok := w.fromSource(p); ok {
		return f, true
	}
	return "", true
}

// stripJSONC removes the // and /* */ comments and trailing commas that
// tsconfig files allow, outside strings.
func stripJSONC(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inStr := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inStr:
			out = append(out, c)
			if c == '\\' && i+1 < len(data) {
				i++
				out = append(out, data[i])
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out = append(out, c)
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if i < len(data) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			i += 2
			for i+1 < len(data) && (data[i] != '*' || data[i+1] != '/') {
				i++
			}
			i++
		case c == ',':
			j := i + 1
			for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue // a trailing comma
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// prismaOutputRE reads a Prisma schema's generator output folder.
var prismaOutputRE = regexp.MustCompile(`(?s)generator\s+\w+\s*\{[^}]*?\boutput\s*=\s*"([^"]+)"`)

// inPrismaOutput reports a path in the folder a Prisma schema of the
// repository generates its client into (generator client { output =
// "../src/generated/prisma" }): code prisma generate writes at build time.
func (w *walker) inPrismaOutput(p string) bool {
	if w.prismaOut == nil {
		w.prismaOut = []string{}
		for _, f := range w.files {
			if path.Ext(f) != ".prisma" || strings.Contains(f, "node_modules/") {
				continue
			}
			data, err := w.repo.ReadFile(f)
			if err != nil {
				continue
			}
			for _, m := range prismaOutputRE.FindAllSubmatch(data, -1) {
				w.prismaOut = append(w.prismaOut, path.Join(path.Dir(f), string(m[1])))
			}
		}
	}
	for _, out := range w.prismaOut {
		if p == out || strings.HasPrefix(p, out+"/") {
			return true
		}
	}
	return false
}

// svelteKitVirtual are the modules SvelteKit's build provides, which name
// no file of the app: $app/environment, $app/navigation, $env/static/…,
// $env/dynamic/…, $service-worker.
var svelteKitVirtual = []string{"$app", "$env", "$service-worker"}

// svelteKitAlias resolves SvelteKit's $lib alias in a package with a
// svelte.config file: $lib is its src/lib folder (kit.files.lib's
// default; kener's src/lib/server/queues/alertingQueue.ts imports
// "$lib/server/notification/webhook_notification.js"). A virtual module
// ($app/…, $env/…) matches with no target. A package that moves its lib
// folder (kit.alias, kit.files.lib) may point $lib elsewhere: a $lib
// specifier whose file is not under src/lib matches with no target too,
// and stays open.
func (w *walker) svelteKitAlias(from, spec string) (t string, matched bool) {
	if !strings.HasPrefix(spec, "$") {
		return "", false
	}
	root := w.packageRoot(from)
	if !slices.ContainsFunc([]string{".js", ".ts", ".mjs", ".cjs"}, func(ext string) bool { return w.index[path.Join(root, "svelte.config"+ext)] }) {
		return "", false
	}
	first, rest, _ := strings.Cut(spec, "/")
	if first != "$lib" {
		return "", slices.Contains(svelteKitVirtual, first)
	}
	p := path.Join(root, "src", "lib", rest)
	if f, ok := w.file(p); ok {
		return f, true
	}
	if f, ok := w.fromSource(p); ok {
		return f, true
	}
	return "", true
}
