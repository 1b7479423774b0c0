package childprocess

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
)

// scopeRepo ships src/ and node_modules/ through a builder stage; the
// entrypoint reaches lib/x.js and the dependency a, not b or unused.js;
// scripts/ is never copied.
var scopeRepo = map[string]string{
	"Dockerfile": `FROM node:22 AS build
WORKDIR /app
COPY package.json ./
COPY src ./src
COPY node_modules ./node_modules

FROM gcr.io/distroless/nodejs22-debian13
WORKDIR /app
COPY --from=build /app /app
CMD ["src/server.js"]
`,
	"package.json":                `{"name":"svc","dependencies":{"a":"1","b":"1"}}`,
	"src/server.js":               "const x = require('./lib/x');\nx();\n",
	"src/lib/x.js":                "// loads a\nconst a = require('a');\nmodule.exports = a;\n",
	"src/unused.js":               "require('child_process').execSync('make unused');\n",
	"scripts/ci.js":               "require('child_process').execSync('npm test');\n",
	"node_modules/a/package.json": `{"name":"a","version":"1.0.0","main":"lib/main.js"}`,
	"node_modules/a/lib/main.js":  "const cp = require('child_process');\n\nmodule.exports = () => cp.execSync('getconf LONG_BIT');\n",
	"node_modules/b/package.json": `{"name":"b","version":"1.0.0"}`,
	"node_modules/b/index.js":     "require('child_process').exec('uname');\n",
}

type scoped struct {
	File  string
	Scope Scope
	Chain []string
}

func scopesOf(t *testing.T, files map[string]string) []scoped {
	t.Helper()
	dir := t.TempDir()
	writeRepo(t, dir, files)
	out := runProbe(t, dir)
	var got []scoped
	for _, f := range out.Facts.(*Facts).Findings {
		got = append(got, scoped{File: f.File, Scope: f.Scope, Chain: f.Chain})
	}
	return got
}

func TestScopes(t *testing.T) {
	t.Parallel()
	want := []scoped{
		{File: "node_modules/a/lib/main.js", Scope: ScopeReachable, Chain: []string{"src/server.js:1", "src/lib/x.js:2", "node_modules/a/lib/main.js:3"}},
		{File: "node_modules/b/index.js", Scope: ScopeNotReachable},
		{File: "scripts/ci.js", Scope: ScopeNotInImage},
		{File: "src/unused.js", Scope: ScopeNotReachable},
	}
	if diff := cmp.Diff(want, scopesOf(t, scopeRepo)); diff != "" {
		t.Errorf("scopes (-want +got):\n%s", diff)
	}
}

// TestScopesComputedRequire: a computed require in the app makes every app
// file in the image possibly loaded, and says so, while files outside the
// image stay out.
func TestScopesComputedRequire(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range scopeRepo {
		files[k] = v
	}
	files["src/server.js"] = "const x = require('./lib/x');\nconst plugin = require(process.env.PLUGIN);\nx();\n"
	got := scopesOf(t, files)
	want := map[string]Scope{
		"node_modules/a/lib/main.js": ScopeReachable,
		"node_modules/b/index.js":    ScopeNotReachable,
		"scripts/ci.js":              ScopeNotInImage,
		"src/unused.js":              ScopeUnresolved,
	}
	for _, g := range got {
		if want[g.File] != g.Scope {
			t.Errorf("%s: scope %s, want %s", g.File, g.Scope, want[g.File])
		}
	}
}

// TestScopesNoEntrypoint: when the entrypoint cannot be found, nothing in
// the image is dropped.
func TestScopesNoEntrypoint(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range scopeRepo {
		files[k] = v
	}
	files["Dockerfile"] = "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"dist/missing.js\"]\n"
	for _, g := range scopesOf(t, files) {
		if g.Scope != ScopeUnresolved {
			t.Errorf("%s: scope %s, want %s with no entrypoint file", g.File, g.Scope, ScopeUnresolved)
		}
	}
}

func TestPackageTestFile(t *testing.T) {
	for rel, want := range map[string]bool{
		"node_modules/a/test/run.js":                     true,
		"node_modules/a/tests/run.js":                    true,
		"node_modules/a/lib/__tests__/x.js":              true,
		"node_modules/a/lib/x.test.js":                   true,
		"node_modules/a/x.spec.mjs":                      true,
		"node_modules/@s/n/test/run.js":                  true,
		"node_modules/a/node_modules/b/test/index.js":    true,
		"node_modules/f/benchmark/bench-cmp-branch.js":   true,
		"node_modules/a/bench/run.js":                    true,
		"node_modules/a/lib/benchmarks/x.js":             true,
		"node_modules/a/index.js":                        false,
		"node_modules/a/lib/benchmark.js":                false,
		"node_modules/test/index.js":                     false, // a package named test
		"node_modules/@s/test/index.js":                  false,
		"node_modules/a/lib/testing.js":                  false,
		"test/app.test.js":                               false, // the application's own
		"node_modules/a/node_modules/test/lib/helper.js": false,
	} {
		if got := packageTestFile(rel); got != want {
			t.Errorf("packageTestFile(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestPackageToolFile(t *testing.T) {
	for rel, want := range map[string]bool{
		"node_modules/knex/scripts/clean.js":               true,
		"node_modules/@s/n/scripts/build/x.js":             true,
		"node_modules/a/node_modules/b/scripts/release.js": true,
		"node_modules/a/lib/scripts/x.js":                  false, // not the package's top-level folder
		"node_modules/scripts/index.js":                    false, // a package named scripts
		"scripts/deploy.js":                                false, // the application's own
	} {
		if got := packageToolFile(rel); got != want {
			t.Errorf("packageToolFile(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestScopesMissingPackageInImage: a dependency that loads a package
// node_modules lacks (an optional peer, required in a try block) leaves
// the reachability of that dependency's other files open when
// node_modules is the repository's; on a traced run, whose node_modules
// is the image's and was read whole, the absent package holds no file, so
// a file the entrypoint does not reach is not reachable.
func TestScopesMissingPackageInImage(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range scopeRepo {
		files[k] = v
	}
	// kerberos is an optional peer, aws4 is not declared at all: both are
	// required in try blocks, the way mongodb does.
	files["node_modules/a/package.json"] = `{"name":"a","version":"1.0.0","main":"lib/main.js","peerDependencies":{"kerberos":"2"},"peerDependenciesMeta":{"kerberos":{"optional":true}}}`
	files["node_modules/a/lib/main.js"] = "let k = null;\ntry {\n  k = require('kerberos');\n} catch (e) {\n  k = null;\n}\ntry {\n  k = require('aws4');\n} catch (e) {\n  k = null;\n}\nmodule.exports = () => k;\n"
	files["node_modules/a/etc/prepare.js"] = "require('child_process').spawnSync('npm', ['run', 'build'], { shell: true });\n"
	dir := t.TempDir()
	writeRepo(t, dir, files)
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	sc, g, err := newScoper(t.Context(), repo, &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.MissingPackages, "kerberos") {
		t.Fatalf("the graph's missing packages are %v, want kerberos among them", g.MissingPackages)
	}
	f := Finding{File: "node_modules/a/etc/prepare.js", Line: 1, Origin: OriginDependency}
	sc.scope(&f)
	if f.Scope != ScopeUnresolved || !strings.Contains(f.ScopeNote, "node_modules lacks aws4, kerberos") || strings.Contains(f.ScopeNote, "computed") {
		t.Fatalf("from the repository's node_modules: scope %s (%s), want %s for the missing package", f.Scope, f.ScopeNote, ScopeUnresolved)
	}
	sc.image = &imagedeps.Installed{Ref: &imagedeps.Ref{Workdir: "/app", Roots: []string{"/app/node_modules"}}, AppDir: "/app", Prefixes: []string{"node_modules"}}
	f = Finding{File: "node_modules/a/etc/prepare.js", Line: 1, Origin: OriginDependency}
	sc.scope(&f)
	if f.Scope != ScopeNotReachable {
		t.Fatalf("from the image's node_modules, read whole: scope %s (%s), want %s", f.Scope, f.ScopeNote, ScopeNotReachable)
	}
	sc.image.Ref.Truncated = true
	f = Finding{File: "node_modules/a/etc/prepare.js", Line: 1, Origin: OriginDependency}
	sc.scope(&f)
	if f.Scope != ScopeUnresolved {
		t.Fatalf("from the image's node_modules, read in part: scope %s (%s), want %s", f.Scope, f.ScopeNote, ScopeUnresolved)
	}
}

// TestScopesMissingPackageLockfile: on a --deps lockfile run that mounted
// every production package, for an image whose install leaves out
// devDependencies, node_modules is the image's: a package it lacks can
// load nothing there either. An install that keeps devDependencies, or a
// package the fetch could not provide, leaves reachability open as
// before. (A real service's node-pre-gyp requires aws-sdk and nock in try
// blocks, which made every dependency finding count.)
//
// With the lockfiles' names (Mentions): an image that installs from the
// lockfile and then adds packages by name (rallly's npm add prisma@7) may
// hold packages the lockfile does not pin, but only those the added ones
// bring: when the lockfile pins every added package, one it does not name
// is still not in the image. An added package it does not pin, or an
// adding step whose packages are unknown, leaves it open.
func TestScopesMissingPackageLockfile(t *testing.T) {
	t.Parallel()
	pinned := map[string]bool{"a": true, "prisma": true}
	for _, tc := range []struct {
		name, install string
		unavailable   bool
		want          Scope
		mentions      bool
		lost          string // the package not fetched; b by default
	}{
		{"npm ci --omit=dev", "RUN npm ci --omit=dev", false, ScopeNotReachable, false, ""},
		{"NODE_ENV=production", "ENV NODE_ENV=production\nRUN npm ci", false, ScopeNotReachable, false, ""},
		{"a prune", "RUN npm ci && npm run build && npm prune --production", false, ScopeNotReachable, false, ""},
		{"devDependencies kept", "RUN npm ci", false, ScopeUnresolved, false, ""},
		{"a package not fetched", "RUN npm ci --omit=dev", true, ScopeUnresolved, false, ""},
		{"added package pinned", "RUN npm ci\nRUN npm add prisma@7", false, ScopeNotReachable, true, ""},
		{"added package not pinned", "RUN npm ci\nRUN npm add left-pad", false, ScopeUnresolved, true, ""},
		{"added package unknown", "RUN npm ci\nRUN npm add ${EXTRA}", false, ScopeUnresolved, true, ""},
		// The lockfile pins aws-sdk as a devDependency (or only mentions
		// it): an image without devDependencies lacks it, whatever else
		// could not be fetched; only the unfetched package itself may be
		// what the walk misses.
		{"not fetched, the missing one a dev pin", "RUN npm ci --omit=dev", true, ScopeNotReachable, true, ""},
		{"not fetched, the missing one it", "RUN npm ci --omit=dev", true, ScopeUnresolved, true, "aws-sdk"},
		{"not fetched, devDependencies kept", "RUN npm ci", true, ScopeUnresolved, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"Dockerfile":                    "FROM node:22\nWORKDIR /app\nCOPY package*.json ./\n" + tc.install + "\nCOPY src ./src\nCMD [\"node\", \"src/server.js\"]\n",
				"package.json":                  `{"name":"svc","dependencies":{"a":"1"}}`,
				"src/server.js":                 "require('a');\n",
				"node_modules/a/package.json":   `{"name":"a","version":"1.0.0","main":"lib/main.js"}`,
				"node_modules/a/lib/main.js":    "try { require('aws-sdk'); } catch (e) {}\nmodule.exports = 1;\n",
				"node_modules/a/etc/prepare.js": "require('child_process').execSync('npm run build');\n",
			}
			dir := t.TempDir()
			writeRepo(t, dir, files)
			repo, err := probe.OpenRepo(dir)
			if err != nil {
				t.Fatal(err)
			}
			d := &probe.Dependencies{Lockfile: "package-lock.json", Installed: 1}
			if tc.mentions {
				// In the cases with a package not fetched, the lockfile
				// also pins aws-sdk, as a devDependency.
				d.Mentions = func(name string) bool { return pinned[name] || tc.unavailable && name == "aws-sdk" }
			}
			if tc.unavailable {
				lost := tc.lost
				if lost == "" {
					lost = "b"
				}
				d.Unavailable = []probe.UnavailableDependency{{Name: lost, Version: "1.0.0", Path: "node_modules/" + lost, Kind: "unreachable"}}
			}
			sc, g, err := newScoper(t.Context(), repo, &probe.Context{Image: probe.ImageRef{Dockerfile: "Dockerfile", Target: "0"}, Dependencies: d})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(g.MissingPackages, "aws-sdk") {
				t.Fatalf("missing packages %v, want aws-sdk", g.MissingPackages)
			}
			f := Finding{File: "node_modules/a/etc/prepare.js", Line: 1, Origin: OriginDependency}
			sc.scope(&f)
			if f.Scope != tc.want {
				t.Fatalf("scope %s (%s), want %s", f.Scope, f.ScopeNote, tc.want)
			}
		})
	}
}
