package modgraph

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// A migration runner loads the app's own migration files by a computed
// path: knex's `migrate:latest`, umzug, sequelize-cli. Its computed load
// is in its own package, which by itself leaves only that package open, so
// a migration that runs a shell (outline's execSync of `node script`)
// would be unreachable, and a service whose start runs its migrations
// could be called ready. Instead, once the walk reaches a runner's
// computed load, the app files the runner loads are reached from it: the
// folders its configuration names with a literal, its default folder
// anywhere in the app, and the configuration files it reads itself. When
// none of those is found, the app stays open, as for the app's own
// computed load. Folders are read whole and wherever they sit (the working
// directory of the image is not needed): more reachable code, never less.

// appLoader is a package whose computed loads read the app's files.
type appLoader struct {
	Package string
	// Dirs are the default folders, by base name, that it loads from.
	Dirs []string
	// Keys are the option names whose literal value (a folder, a glob, or
	// a list of them) names where it loads from.
	Keys []string
	// Config are the base names of the configuration files it loads
	// itself from the working directory.
	Config []string
	// Says is where each of these was read.
	Says string
}

// appLoaders are the migration runners whose loads were read.
var appLoaders = []appLoader{
	{
		Package: "knex",
		Dirs:    []string{"migrations"},
		Keys:    []string{"directory"},
		Config:  []string{"knexfile.js", "knexfile.cjs", "knexfile.mjs", "knexfile.ts"},
		Says: "knex 3.1.0: lib/migrations/util/import-file.js require(filepath)s each file of migrations.directory " +
			"(default './migrations', lib/migrations/migrate/migrator-configuration-merger.js) and, from bin/cli.js, the knexfile found up from the working directory",
	},
	{
		Package: "umzug",
		Dirs:    []string{"migrations"},
		Keys:    []string{"glob"},
		Says: "umzug 3.8.3: lib/umzug.js's defaultResolver require(filepath)s each file that migrations.glob matches; " +
			"umzug 2 read migrations.path (default 'migrations')",
	},
	{
		Package: "sequelize-cli",
		Dirs:    []string{"migrations"},
		Keys:    []string{"migrations-path"},
		Config:  []string{".sequelizerc"},
		Says:    "sequelize-cli: db:migrate loads each file of migrations-path (default './migrations'), set in .sequelizerc",
	},
}

// loaderOf returns the migration runner that pkg (a node_modules package
// folder) is.
func loaderOf(pkg string) (appLoader, bool) {
	for _, l := range appLoaders {
		if strings.HasSuffix(pkg, "node_modules/"+l.Package) {
			return l, true
		}
	}
	return appLoader{}, false
}

// optionRE finds `key: value` (or 'key': value) in source text; the value
// is read by literalDirs.
func optionRE(key string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s{,(])['"]?` + regexp.QuoteMeta(key) + `['"]?\s*:\s*`)
}

var (
	stringRE = regexp.MustCompile(`^(?:"([^"\n]*)"|'([^'\n]*)'|` + "`([^`$\\n]*)`)")
	// path.join(__dirname, 'db', 'migrations'), path.resolve('migrations').
	pathJoinRE = regexp.MustCompile(`^[\w$.]*\b(?:join|resolve)\s*\(`)
)

// literalDirs reads an option's value at the start of v: a string, a path
// join of strings (from __dirname, process.cwd() or nothing), or an array
// whose strings are such. Each is returned as a folder: a glob is cut
// before its first wildcard. fromFile is set for a join from __dirname.
func literalDirs(v string) (dirs []string, fromFile bool, ok bool) {
	one := func(s string) (string, bool, bool) {
		if m := stringRE.FindStringSubmatch(s); m != nil {
			return m[1] + m[2] + m[3], false, true
		}
		loc := pathJoinRE.FindStringIndex(s)
		if loc == nil {
			return "", false, false
		}
		args, closed := argument(s, loc[1])
		if !closed {
			return "", false, false
		}
		var parts []string
		file := false
		for i, a := range splitTop(args) {
			a = strings.TrimSpace(a)
			switch {
			case i == 0 && a == "__dirname":
				file = true
			case i == 0 && a == "process.cwd()":
			default:
				m := stringRE.FindStringSubmatch(a)
				if m == nil || len(m[0]) != len(a) {
					return "", false, false
				}
				parts = append(parts, m[1]+m[2]+m[3])
			}
		}
		return path.Join(parts...), file, true
	}
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "[") {
		inner, _ := argument(v, 1)
		if end := 1 + len(inner); end >= len(v) || v[end] != ']' {
			return nil, false, false
		}
		for _, e := range splitTop(inner) {
			e = strings.TrimSpace(e)
			if e == "" || strings.HasPrefix(e, "{") {
				continue // umzug's [glob, {cwd}]: the glob is read, its options are not
			}
			d, f, good := one(e)
			if !good {
				return nil, false, false
			}
			dirs, fromFile = append(dirs, globDir(d)), fromFile || f
		}
		return dirs, fromFile, len(dirs) > 0
	}
	d, f, good := one(v)
	if !good {
		return nil, false, false
	}
	return []string{globDir(d)}, f, true
}

// globDir is the folder part of a glob before its first wildcard
// ("migrations/*.js" is migrations, "dist/**/migrations/*.js" is dist).
func globDir(g string) string {
	i := strings.IndexAny(g, "*?[{")
	if i < 0 {
		return path.Clean(g)
	}
	return path.Clean(path.Dir(g[:i] + "x"))
}

// splitTop splits s at its commas outside brackets and strings.
func splitTop(s string) []string {
	var out []string
	for {
		i := firstComma(s)
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// firstComma is the offset of the first comma of s outside brackets and
// strings, or -1.
func firstComma(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		case '"', '\'', '`':
			end := closingQuote(s, i)
			if end < 0 {
				return -1
			}
			i = end
		}
	}
	return -1
}

// loadAppFiles makes the app files that the migration runner l loads
// reached from its computed load at site, once per runner. When it finds
// none, the app stays open: a site of the graph that says so.
func (w *walker) loadAppFiles(l appLoader, site Site) {
	if w.loaded == nil {
		w.loaded = map[string]bool{}
	}
	if w.loaded[l.Package] {
		return
	}
	w.loaded[l.Package] = true
	var files []string
	add := func(dir string) {
		dir = path.Clean(dir)
		for _, f := range w.files {
			if (dir == "." || strings.HasPrefix(f, dir+"/")) && loadable(f) && !strings.Contains(f, "node_modules/") && path.Ext(f) != "" {
				files = append(files, f)
			}
		}
	}
	for _, f := range w.files {
		if strings.Contains(f, "node_modules/") {
			continue
		}
		if slices.Contains(l.Config, path.Base(f)) {
			files = append(files, f)
		}
		if slices.Contains(l.Dirs, path.Base(path.Dir(f))) && loadable(f) && path.Ext(f) != "" {
			files = append(files, f)
		}
	}
	for _, key := range l.Keys {
		for _, dir := range w.optionDirs(key) {
			add(dir)
		}
	}
	if len(files) == 0 {
		w.g.Dynamic = append(w.g.Dynamic, Site{File: site.File, Line: site.Line, App: true,
			Why: l.Package + " loads the app's migration files, and codegenie found neither a folder its options name with a literal nor a " + strings.Join(l.Dirs, " or ") + " folder"})
		return
	}
	slices.Sort(files)
	for _, f := range slices.Compact(files) {
		if _, seen := w.g.parent[f]; seen {
			continue
		}
		w.g.parent[f] = site.File
		w.g.line[f] = site.Line
		w.queue = append(w.queue, f)
	}
}

// optionDirs returns the repository folders that the app's files name
// with a literal value of option key, each tried against the folder of
// the file that names it (for a join from __dirname) or against the build
// context and every folder above that file (the working directory is one
// of them).
func (w *walker) optionDirs(key string) []string {
	re := optionRE(key)
	var out []string
	for _, f := range w.files {
		if strings.Contains(f, "node_modules/") || !loadable(f) && !strings.HasPrefix(path.Base(f), ".") {
			continue
		}
		data, err := w.repo.ReadFile(f)
		if err != nil || !strings.Contains(string(data), key) {
			continue
		}
		text := string(data)
		for _, m := range re.FindAllStringIndex(text, -1) {
			dirs, fromFile, ok := literalDirs(text[m[1]:])
			if !ok {
				continue
			}
			for _, d := range dirs {
				d = strings.TrimPrefix(d, "./")
				if path.IsAbs(d) || strings.HasPrefix(d, "../") {
					continue
				}
				if fromFile {
					out = append(out, path.Join(path.Dir(f), d))
					continue
				}
				for base := path.Dir(f); ; base = path.Dir(base) {
					out = append(out, path.Join(base, d))
					if base == "." || base == "/" {
						break
					}
				}
			}
		}
	}
	return out
}
