package childprocess

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
		"node_modules/a/index.js":                        false,
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
