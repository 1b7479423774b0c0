package modgraph

import (
	"bytes"
	"context"
	"path"
	"regexp"
	"slices"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
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
	// Uses are words of which one is in the app's files (package.json
	// included) when the app drives the runner: `knex migrate:latest` or
	// knex.migrate.latest(). Without one, the runner loads nothing, as
	// for an app that uses knex only to query. Empty: its options say it.
	Uses []string
	// Open leaves the app open when the runner is driven and none of its
	// folders is found: it always loads from a folder, which is then one
	// codegenie cannot name. A runner that loads by path only when an
	// option says so (typeorm's globs) does not.
	Open bool
	// Call is the text of a load in the package that Scan does not count
	// as computed (a method: node-pg-migrate's jitiInstance.import(path)).
	Call string
	// Callback is the option whose function the runner calls with each
	// migration file's path, for the app to load it itself (umzug's
	// migrations.resolve): a computed load in the app's function of that
	// name, in a file that drives the runner and names one of its Keys,
	// loads the migration files, not any file of the app.
	Callback string
	// Own are the files of the package (paths inside it) whose computed
	// loads were read to load the app's files and none of the package's
	// own: they leave its other files unreached.
	Own []string
	// Says is where each of these was read.
	Says string
}

// appLoaders are the migration runners whose loads were read.
var appLoaders = []appLoader{
	{
		Package: "knex", Dirs: []string{"migrations"}, Keys: []string{"directory"},
		Config: []string{"knexfile.js", "knexfile.cjs", "knexfile.mjs", "knexfile.ts"}, Uses: []string{"migrate"}, Open: true,
		Says: "knex 3.1.0: lib/migrations/util/import-file.js require(filepath)s each file of migrations.directory " +
			"(default './migrations', lib/migrations/migrate/migrator-configuration-merger.js) and, from bin/cli.js, the knexfile found up from the working directory",
	},
	{
		Package: "umzug", Dirs: []string{"migrations"}, Keys: []string{"glob"}, Uses: []string{"Umzug"}, Open: true, Callback: "resolve",
		Says: "umzug 3.8.3: lib/umzug.js's defaultResolver require(filepath)s each file that migrations.glob matches, " +
			"or migrations.resolve({ name, path, context }), the app's own, is called with each; umzug 2 read migrations.path (default 'migrations')",
	},
	{
		Package: "sequelize-cli", Dirs: []string{"migrations"}, Keys: []string{"migrations-path"}, Config: []string{".sequelizerc"},
		Uses: []string{"db:migrate"}, Open: true,
		Says: "sequelize-cli 6.6.5: lib/core/migrator.js gives umzug 2 migrations.path, the migrations-path option (default 'migrations', lib/core/yargs.js), " +
			"which .sequelizerc in the working directory may set; lib/helpers/import-helper.js require(modulePath)s the config it names",
	},
	{
		Package: "typeorm", Keys: []string{"migrations", "entities", "subscribers"},
		Config: []string{"ormconfig.js", "ormconfig.cjs", "ormconfig.mjs", "ormconfig.ts", "ormconfig.json"},
		Own:    []string{"util/ImportUtils.js", "connection/ConnectionOptionsReader.js", "util/DirectoryExportedClassesLoader.js"},
		Says: "typeorm 1.1.1: util/ImportUtils.js importOrRequireFile require(filePath)s each file that a DataSource's " +
			"migrations, entities and subscribers globs match; classes given there are literal imports; " +
			"typeorm 0.3.12: connection/ConnectionOptionsReader.js loads the ormconfig of the app's root " +
			"(importOrRequireFile, or require(configFile) for ormconfig.json), and util/DirectoryExportedClassesLoader.js " +
			"the files the DataSource's directory globs match (importOrRequireFile, or require() of the .json ones)",
	},
	{
		Package: "node-pg-migrate", Dirs: []string{"migrations"}, Keys: []string{"dir"}, Uses: []string{"node-pg-migrate", "runner("},
		Open: true, Call: "jitiInstance.import(",
		Says: "node-pg-migrate 9.0.0: dist/bundle/index.js imports each file of dir (default 'migrations', bin/node-pg-migrate.js) with jitiInstance.import(filePath)",
	},
	{
		Package: "db-migrate", Dirs: []string{"migrations"}, Keys: []string{"migrations-dir"}, Uses: []string{"db-migrate"}, Open: true,
		Says: "db-migrate 0.11.14: connect.js reads migrations-dir (default 'migrations') and lib/ require()s each file of it",
	},
	{
		Package: "kysely", Dirs: []string{"migrations"}, Keys: []string{"migrationFolder"}, Uses: []string{"FileMigrationProvider"}, Open: true,
		Says: "kysely 0.28.19: dist/cjs/migration/file-migration-provider.js require()s each .js, .ts, .mjs and .mts file of migrationFolder",
	},
	{
		Package: "postgrator", Keys: []string{"migrationPattern"}, Uses: []string{"Postgrator"}, Open: true,
		Says: "postgrator 8.0.0: postgrator.js import()s each .js, .cjs and .mjs file that migrationPattern matches",
	},
	{
		Package: "migrate-mongo", Dirs: []string{"migrations"}, Keys: []string{"migrationsDir"}, Config: []string{"migrate-mongo-config.js"}, Open: true,
		Says: "migrate-mongo 14.0.7: lib/env/migrationsDir.js loads each file of migrationsDir (default 'migrations', from the working directory) " +
			"through lib/utils/module-loader.js's import(importPath), and lib/env/config.js the migrate-mongo-config.js of the working directory",
	},
	{
		Package: "knex-migrator", Keys: []string{"migrationPath"}, Config: []string{"MigratorConfig.js", "MigratorConfig.cjs", "MigratorConfig.mjs"}, Open: true,
		Says: "knex-migrator 6.2.1: lib/utils.js require()s the MigratorConfig.js, .cjs or .mjs of the working directory (or --mgpath) " +
			"and each file of migrationPath's init and versions folders; lib/index.js its hooks folder",
	},
	{
		Package: "@mikro-orm/core", Dirs: []string{"migrations"}, Keys: []string{"pathTs", "entities", "entitiesTs"},
		Config: []string{"mikro-orm.config.js", "mikro-orm.config.ts", "mikro-orm.config.mjs", "mikro-orm.config.cjs"},
		Says: "@mikro-orm/core 7.2.1: utils/fs-utils.js dynamicImport import()s each migration of the Migrator's path or pathTs " +
			"(default './migrations', or './dist/migrations' and './src/migrations', utils/AbstractMigrator.js), each entity file that " +
			"entities or entitiesTs names by path (metadata/discover-entities.js), and the mikro-orm.config of the working directory " +
			"or its src, dist and build folders; 6.x the same through Utils.dynamicImport, with umzug",
	},
	{
		Package: "@oclif/core", Dirs: []string{"commands"}, Keys: []string{"commands"}, Uses: []string{"oclif"}, Open: true,
		Says: "@oclif/core 5.1.9: lib/config/plugin.js finds the CLI's commands in the folder package.json's oclif.commands names " +
			"(a path, or { strategy: 'pattern', target }), and lib/module-loader.js import()s or require()s each command file it runs " +
			"(oclif.hooks, which load the same way, are not read here)",
	},
}

// loadsOnlyApp reports a computed load at file, a file of the runner's
// package, that was read to load only the app's files.
func (l appLoader) loadsOnlyApp(file string) bool {
	i := strings.LastIndex(file, "node_modules/"+l.Package+"/")
	return i >= 0 && slices.Contains(l.Own, file[i+len("node_modules/"+l.Package+"/"):])
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

// callSite returns the line of a runner's Call in a file of its package.
func callSite(f string, data []byte) (appLoader, int, bool) {
	l, ok := loaderOf(PackageOf(f))
	if !ok || l.Call == "" {
		return l, 0, false
	}
	i := bytes.Index(data, []byte(l.Call))
	if i < 0 {
		return l, 0, false
	}
	return l, 1 + bytes.Count(data[:i], []byte("\n")), true
}

// optionRE finds `key: value` (or 'key': value) in source text; the value
// is read by literalDirs.
func optionRE(key string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s{,(])['"]?` + regexp.QuoteMeta(key) + `['"]?\s*:\s*`)
}

// dirnameRE is __dirname alone, as a value.
var dirnameRE = regexp.MustCompile(`^__dirname\s*(?:[,)}\];\n]|$)`)

var stringRE = regexp.MustCompile(`^(?:"([^"\n]*)"|'([^'\n]*)'|` + "`([^`$\\n]*)`)")

// literalDirs reads an option's value at the start of v: a string, a path
// join of strings (from __dirname, process.cwd() or nothing), or an array
// whose strings are such. Each is returned as a folder: a glob is cut
// before its first wildcard. fromFile is set for a join from __dirname.
func literalDirs(v string) (dirs []string, fromFile bool, ok bool) {
	one := func(s string) (string, bool, bool) {
		if m := stringRE.FindStringSubmatch(s); m != nil {
			return m[1] + m[2] + m[3], false, true
		}
		if dirnameRE.MatchString(s) {
			return ".", true, true // the folder of the file that names it
		}
		loc := pathCallRE.FindStringIndex(s) // path.join(__dirname, 'db', 'migrations')
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
		joined := path.Join(parts...)
		if base := strings.TrimSpace(splitTop(args)[0]); strings.Contains(s[:loc[1]], "join") && (base == "__dirname" || base == "process.cwd()") {
			// path.join(__dirname, '/api') is __dirname's api: only
			// resolve starts over at an absolute part.
			joined = strings.TrimPrefix(joined, "/")
		}
		return joined, file, true
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
				continue // typeorm's entities: [User, "dist/models/*.js"]: a class is a literal import
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
	offs, _ := topCommas(s)
	out := make([]string, 0, len(offs)+1)
	from := 0
	for _, i := range offs {
		out = append(out, s[from:i])
		from = i + 1
	}
	return append(out, s[from:])
}

// loadAppFiles makes the app files that the migration runner l loads
// reached from its load at site, once per runner. When the app drives the
// runner and none is found, a runner that always reads a folder leaves
// the app open: a site of the graph that says so.
func (w *walker) loadAppFiles(l appLoader, site Site) {
	if w.loaded == nil {
		w.loaded = map[string]bool{}
	}
	if w.loaded[l.Package] {
		return
	}
	w.loaded[l.Package] = true
	texts := w.appTexts()
	if len(l.Uses) > 0 && !slices.ContainsFunc(texts, func(t appText) bool {
		return slices.ContainsFunc(l.Uses, func(u string) bool { return strings.Contains(t.text, u) })
	}) {
		return
	}
	var files []string
	for _, f := range w.files {
		if strings.Contains(f, "node_modules/") {
			continue
		}
		if slices.Contains(l.Config, path.Base(f)) {
			files = append(files, f)
		}
		if slices.Contains(l.Dirs, path.Base(path.Dir(f))) && appSource(f) {
			files = append(files, f)
		}
	}
	for _, key := range l.Keys {
		for _, dir := range optionDirs(texts, key) {
			for _, f := range w.files {
				if (dir == "." || strings.HasPrefix(f, dir+"/")) && appSource(f) {
					files = append(files, f)
				}
			}
		}
	}
	if len(files) == 0 {
		if l.Open {
			what := "a folder its options name with a literal"
			if len(l.Dirs) > 0 {
				what += " nor a " + strings.Join(l.Dirs, " or ") + " folder"
			}
			w.g.Dynamic = append(w.g.Dynamic, Site{File: site.File, Line: site.Line, App: true,
				Why: l.Package + " loads the app's migration files, and codegenie found neither " + what})
		}
		return
	}
	slices.Sort(files)
	w.reach(slices.Compact(files), site.File, site.Line)
}

// appText is an app file's text. code is set for JavaScript, TypeScript
// and dotfiles such as .sequelizerc, whose options are read; the others
// (package.json, Dockerfiles, compose files, shell scripts) can only show
// that the app drives a runner (`npx knex migrate:latest` in a CMD).
type appText struct {
	file, text string
	code       bool
}

// appTexts reads the app's own files outside node_modules that may drive
// or configure a runner, once.
func (w *walker) appTexts() []appText {
	if w.texts != nil {
		return *w.texts
	}
	var out []appText
	for _, f := range w.files {
		base := path.Base(f)
		code := appSource(f) || strings.HasPrefix(base, ".") && path.Ext(base) == base
		drives := base == "package.json" || strings.HasPrefix(base, "Dockerfile") || strings.HasSuffix(base, ".Dockerfile") ||
			slices.Contains([]string{".sh", ".yml", ".yaml"}, path.Ext(base))
		if !code && !drives || strings.Contains(f, "node_modules/") {
			continue
		}
		data, err := w.repo.ReadFile(f)
		if err != nil {
			continue
		}
		out = append(out, appText{f, string(data), code})
	}
	w.texts = &out
	return out
}

// optionDirs returns the repository folders that the app's files name
// with a literal value of option key, each tried against the folder of
// the file that names it (for a join from __dirname) or against every
// folder above that file (the working directory is one of them).
func optionDirs(texts []appText, key string) []string {
	re := optionRE(key)
	var out []string
	for _, t := range texts {
		if !t.code || !strings.Contains(t.text, key) {
			continue
		}
		for _, m := range re.FindAllStringIndex(t.text, -1) {
			dirs, fromFile, ok := literalDirs(t.text[m[1]:])
			if !ok {
				dirs, fromFile, ok = namedDirs(t.text, t.text[m[1]:])
			}
			if !ok {
				continue
			}
			out = append(out, resolveDirs(t.file, dirs, fromFile)...)
		}
	}
	return out
}

// resolveDirs returns the repository folders that the literal folders
// dirs, named in file, may be: for a join from __dirname (fromFile), the
// one under file's folder; else one under each folder above file, the
// working directory being one of them. Absolute folders and those above
// the repository are left out.
func resolveDirs(file string, dirs []string, fromFile bool) []string {
	var out []string
	for _, d := range dirs {
		d = strings.TrimPrefix(d, "./")
		if path.IsAbs(d) {
			continue
		}
		if fromFile {
			if j := path.Join(path.Dir(file), d); !strings.HasPrefix(j, "../") {
				out = append(out, j)
			}
			continue
		}
		if strings.HasPrefix(d, "../") {
			continue
		}
		for base := path.Dir(file); ; base = path.Dir(base) {
			out = append(out, path.Join(base, d))
			if base == "." || base == "/" {
				break
			}
		}
	}
	return out
}

// nameRE is a name, or a member of one (Database.knexMigrationsPath), at
// the start of an option's value.
var nameRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\s*[,}\n]`)

// namedDirs reads an option's value that is a name (or a member: its last
// part) given a literal in the same file: `static knexMigrationsPath =
// "./db/knex_migrations"`, `const dir = path.join(__dirname, "migrations")`
// or `dir: "migrations"`. Every such assignment counts; none leaves the
// value unread.
func namedDirs(text, v string) (dirs []string, fromFile bool, ok bool) {
	m := nameRE.FindString(v)
	if m == "" {
		return nil, false, false
	}
	name := strings.TrimRight(m, " \t\r\n,}")
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	re := regexp.MustCompile(`(?:^|[^\w$.])` + regexp.QuoteMeta(name) + `\s*[=:]`)
	for _, loc := range re.FindAllStringIndex(text, -1) {
		rest := text[loc[1]:]
		if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ">") {
			continue // ==, =>
		}
		d, f, good := literalDirs(rest)
		if good {
			dirs, fromFile, ok = append(dirs, d...), fromFile || f, true
		}
	}
	return dirs, fromFile, ok
}

// runnerCallbacks takes out of dyn, the computed loads of the app file
// src, those in a function it gives a migration runner as its Callback
// option (outline's `resolve: ({ path }) => require(path)` for umzug): the
// runner calls it with each migration file's path, so each such load
// reaches the runner's migration files, from that line, and leaves the
// rest of the app unreached.
func (w *walker) runnerCallbacks(ctx context.Context, src *source, dyn []Dynamic) []Dynamic {
	if !appComputed(src, dyn) {
		return dyn
	}
	has := func(word string) bool { return bytes.Contains(src.data, []byte(word)) }
	var runners []appLoader
	for _, l := range appLoaders {
		if l.Callback != "" && slices.ContainsFunc(l.Uses, has) && slices.ContainsFunc(l.Keys, has) {
			runners = append(runners, l)
		}
	}
	if len(runners) == 0 {
		return dyn
	}
	return w.takeLoads(ctx, src, dyn, func(d Dynamic, n *sitter.Node) bool {
		name, _ := ownerOf(n, src.text)
		i := slices.IndexFunc(runners, func(l appLoader) bool { return l.Callback == name })
		if i >= 0 {
			w.loadAppFiles(runners[i], Site{File: src.file, Line: d.Line})
		}
		return i >= 0
	})
}
