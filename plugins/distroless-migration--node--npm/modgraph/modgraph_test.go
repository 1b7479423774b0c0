package modgraph

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/probe/probetest"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
)

func TestScan(t *testing.T) {
	t.Parallel()
	src := `// require('commented-out')
// a regular expression that looks like a comment opener: /^\/*/
/* import x from 'also-commented' */
const a = require('./a');
import b from "./b.js";
import { c } from './c';
export * from './d';
import './side-effect';
const e = await import('./e.mjs');
const s = "require('in-a-string')";
const lazy = require(name);
const plug = require('./plugins/' + kind);
const tpl = require(` + "`./t/${n}`" + `);
db.import(rows);
x.require('./not-a-load');
// the next line's import is code
import f from './f';
/**
 * @param {import('./types').Options} o
 */
`
	imps, dyn := Scan([]byte(src))
	var specs []string
	for _, i := range imps {
		specs = append(specs, i.Spec)
	}
	// A load on a comment's line is none; one in a string that only looks
	// like a call is an extra edge: more code is reachable, never less.
	want := []string{"./a", "in-a-string", "./b.js", "./c", "./d", "./f", "./side-effect", "./e.mjs"}
	if diff := cmp.Diff(want, specs); diff != "" {
		t.Errorf("specifiers (-want +got):\n%s", diff)
	}
	if imps[0].Line != 4 {
		t.Errorf("line of ./a = %d, want 4", imps[0].Line)
	}
	var prefixes []string
	for _, d := range dyn {
		prefixes = append(prefixes, d.Prefix)
	}
	if diff := cmp.Diff([]string{"", "./plugins/", "./t/"}, prefixes); diff != "" {
		t.Errorf("computed loads (-want +got):\n%s", diff)
	}
}

// TestScanJoinedLiteral: string literals joined by + are one literal
// specifier; a join with anything else stays computed.
func TestScanJoinedLiteral(t *testing.T) {
	t.Parallel()
	src := "const u = require('u' + 'rl');\nconst v = require(\"./a\" + /* x */ '/b');\n" +
		"const w = require('u' + name);\nconst t = require(`./t/${n}` + '.js');\n"
	imps, dyn := Scan([]byte(src))
	var specs []string
	for _, i := range imps {
		specs = append(specs, i.Spec)
	}
	if diff := cmp.Diff([]string{"url", "./a/b"}, specs); diff != "" {
		t.Errorf("specifiers (-want +got):\n%s", diff)
	}
	// A regular expression's text is no load.
	_, re := Scan([]byte("const p = /(\\b(?:exports|import(?:\\s+static)?|module)\\s+)/;\nconst q = /require(?=x)|require(*)/;\n"))
	if len(re) != 0 {
		t.Errorf("regular expressions read as computed loads: %+v", re)
	}
	if len(dyn) != 2 || dyn[0].Prefix != "u" || dyn[1].Line != 4 {
		t.Errorf("computed loads = %+v, want require('u' + name) and the template", dyn)
	}
}

// TestScanTemplateText: an import statement in a template literal's text
// (a page's inline <script type="module">) is no load; its specifier
// holds the template's ${…}.
func TestScanTemplateText(t *testing.T) {
	t.Parallel()
	src := "import env from './env';\nconst page = `\n  <script type=\"module\">\n" +
		"    import RefreshRuntime from \"${viteHost}/static/@react-refresh\"\n  </script>`;\n"
	imps, dyn := Scan([]byte(src))
	if len(imps) != 1 || imps[0].Spec != "./env" || len(dyn) != 0 {
		t.Errorf("loads = %+v and %+v, want only ./env", imps, dyn)
	}
}

// TestScanComment: a keyword and a parenthesis in a comment's prose is no
// computed load; one after code on the line still is.
func TestScanComment(t *testing.T) {
	t.Parallel()
	src := "  // Don't cache a rejected import (e.g. a chunk-load failure)\n" +
		"/* require (x) */\n/**\n * Calls require (name) lazily.\n */\n" +
		"const a = require(name); // the load\nconst u = 'http://x'; import(u);\n/* c8 ignore next */ require(b);\n"
	_, dyn := Scan([]byte(src))
	var lines []int
	for _, d := range dyn {
		lines = append(lines, d.Line)
	}
	slices.Sort(lines)
	if diff := cmp.Diff([]int{6, 7, 8}, lines); diff != "" {
		t.Errorf("computed load lines (-want +got):\n%s", diff)
	}
}

// TestScanCommentedLoad: a literal load that a comment's line holds is
// none; a load after a template literal that closes on a line with a //
// in it (minified code) is still one.
func TestScanCommentedLoad(t *testing.T) {
	t.Parallel()
	src := "// const gqlTools = require('graphql-tools')\n" +
		"/** @type {import('./types').Options} */\n" +
		"const m = `Read more:\nhttps://x.org/docs`, y = require('./after-template');\n" +
		"x = 1; // require('./trailing')\n"
	imps, dyn := Scan([]byte(src))
	var specs []string
	for _, i := range imps {
		specs = append(specs, i.Spec)
	}
	if diff := cmp.Diff([]string{"./after-template"}, specs); diff != "" {
		t.Errorf("specifiers (-want +got):\n%s", diff)
	}
	if len(dyn) != 0 {
		t.Errorf("computed loads = %+v, want none", dyn)
	}
}

// TestScanTypeOnly: TypeScript's type-only imports and exports are erased
// at compile time, so they load nothing; a default import named type, and
// an import with inline type modifiers (which keeps a side-effect import),
// still load.
func TestScanTypeOnly(t *testing.T) {
	t.Parallel()
	src := "import type { Pixel } from '@/generated/prisma/client';\n" +
		"import type Koa from 'koa';\n" +
		"import type * as ns from './ns';\n" +
		"export type { A } from './a';\n" +
		"export type * from './all';\n" +
		"import type from './default-named-type';\n" +
		"import type, { b } from './default-and-named';\n" +
		"import { type C, d } from './inline';\n" +
		"import typeorm from 'typeorm';\n"
	imps, _ := Scan([]byte(src))
	var specs []string
	for _, i := range imps {
		specs = append(specs, i.Spec)
	}
	if diff := cmp.Diff([]string{"./default-named-type", "./default-and-named", "./inline", "typeorm"}, specs); diff != "" {
		t.Errorf("specifiers (-want +got):\n%s", diff)
	}
}

// TestScanKeywordInsideAWord: a keyword inside a longer word ("Re-export",
// "xrequire") is neither a load nor a reason to miss the load after it.
func TestScanKeywordInsideAWord(t *testing.T) {
	t.Parallel()
	src := "/** Re-export public API */\nexport { A } from './common';\n" +
		"const f = xrequire; require('./after')\n" +
		"reimport; import('./dyn')\n"
	imps, _ := Scan([]byte(src))
	var specs []string
	for _, i := range imps {
		specs = append(specs, i.Spec)
	}
	if diff := cmp.Diff([]string{"./after", "./common", "./dyn"}, specs); diff != "" {
		t.Errorf("specifiers (-want +got):\n%s", diff)
	}
	if imps[1].Offset != strings.Index(src, "\nexport") {
		t.Errorf("offset of the export statement = %d, want the newline before it (%d)", imps[1].Offset, strings.Index(src, "\nexport"))
	}
}

func graphOf(t *testing.T, files map[string]string) *Graph {
	t.Helper()
	repo := probetest.Repo(t, files)
	g, err := Of.Of(t.Context(), repo, &probe.Context{}) // the default image
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestExportPatterns: of the subpath patterns that match a load, the one
// node picks (the longest part before the "*", then the longest key:
// "./*.js" over "./*") decides the file, on every
// run: the walk once took whichever a Go map gave first. The same rule
// picks among "imports" patterns. An imports target that names a package
// loads that package (not the next condition's file), and a null target
// exports nothing: the package's main file is not what it loads. A
// conditions object is read in the file's order: "default" before "node"
// wins, and a "node" whose nested conditions match no require lets the
// require after it win.
func TestExportPatterns(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                           "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"index.js\"]\n",
		"package.json":                         `{"name":"svc","imports":{"#*":"./src/*.js","#db/*":"./db/*.js","#dep":{"node":"dep-native","default":"./dep-polyfill.js"}}}`,
		"index.js":                             "require('sdk/_shims/auto/runtime');\nrequire('sdk/util.js');\nrequire('#db/pool');\nrequire('#dep');\nrequire('sdk/internal/secret');\nrequire('ord');\nrequire('nest');\n",
		"node_modules/ord/package.json":        `{"exports": {"default": "./a.js", "node": "./b.js"}}`,
		"node_modules/ord/a.js":                "",
		"node_modules/ord/b.js":                "",
		"node_modules/nest/package.json":       `{"exports": {".": {"node": {"import": "./n.mjs"}, "require": "./r.js"}}}`,
		"node_modules/nest/n.mjs":              "",
		"node_modules/nest/r.js":               "",
		"dep-polyfill.js":                      "",
		"node_modules/dep-native/package.json": `{"main": "index.js"}`,
		"node_modules/dep-native/index.js":     "",
		"node_modules/sdk/main.js":             "",
		"node_modules/sdk/internal/secret.js":  "",
		"src/db/pool.js":                       "",
		"db/pool.js":                           "",
		"node_modules/sdk/package.json": `{"main": "main.js", "exports": {
			"./internal/*": null,
			"./*": {"types": "./*.d.ts", "require": "./*.js", "default": "./*.mjs"},
			"./_shims/auto/*": {"browser": {"require": "./_shims/auto/*.js"}, "node": {"require": "./_shims/auto/*-node.js"}, "require": "./_shims/auto/*.js"},
			"./*.js": {"default": "./lib/*.js"}
		}}`,
		"node_modules/sdk/_shims/auto/runtime.js":      "",
		"node_modules/sdk/_shims/auto/runtime-node.js": "",
		"node_modules/sdk/util.js":                     "",
		"node_modules/sdk/lib/util.js":                 "",
	}
	for range 20 {
		g := graphOf(t, files)
		for _, f := range []string{"node_modules/sdk/_shims/auto/runtime-node.js", "node_modules/sdk/lib/util.js", "db/pool.js", "node_modules/dep-native/index.js", "node_modules/ord/a.js", "node_modules/nest/r.js"} {
			if !g.Reached(f) {
				t.Fatalf("%s not reached; reached %v", f, g.Files())
			}
		}
		for _, f := range []string{"node_modules/sdk/_shims/auto/runtime.js", "node_modules/sdk/util.js", "src/db/pool.js", "dep-polyfill.js", "node_modules/sdk/main.js", "node_modules/ord/b.js", "node_modules/nest/n.mjs"} {
			if g.Reached(f) {
				t.Fatalf("%s reached; node loads another file", f)
			}
		}
	}
}

func TestResolution(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":   "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"--require=./otel.js\", \"index.js\"]\n",
		"package.json": `{"name":"svc"}`,
		"otel.js":      "require('@scope/tracer');\n",
		"index.js":     "require('./lib');\nrequire('exp');\nrequire('exp/sub');\nrequire('fs');\nrequire('node:path');\n",
		"lib/index.js": "module.exports = require('../data.json');\n",
		"data.json":    "{}",
		"node_modules/@scope/tracer/package.json": `{"main": "dist/main"}`,
		"node_modules/@scope/tracer/dist/main.js": "",
		"node_modules/exp/package.json":           `{"exports": {".": {"import": "./esm.mjs", "require": "./cjs.js"}, "./sub": "./sub.js"}}`,
		"node_modules/exp/cjs.js":                 "",
		"node_modules/exp/esm.mjs":                "",
		"node_modules/exp/sub.js":                 "",
		"node_modules/exp/unused.js":              "",
	})
	for _, f := range []string{"otel.js", "index.js", "lib/index.js", "data.json", "node_modules/@scope/tracer/dist/main.js", "node_modules/exp/cjs.js", "node_modules/exp/sub.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if g.Reached("node_modules/exp/unused.js") {
		t.Error("unused.js reached")
	}
	if diff := cmp.Diff([]string{"otel.js", "index.js"}, g.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"index.js", "lib/index.js", "data.json"}, g.Chain("data.json")); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
}

// TestCompiledOutputMapsToSources: the image runs dist/, the repository
// holds src/ in TypeScript that imports "./x.js" for ./x.ts.
func TestCompiledOutputMapsToSources(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":   "FROM node:22 AS b\nWORKDIR /app\nCOPY . .\nRUN npx tsc\nFROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY --from=b /app/dist ./dist\nCMD [\"dist/main.js\"]\n",
		"package.json": "{}",
		"src/main.ts":  "import { run } from './run.js';\nrun();\n",
		"src/run.ts":   "export const run = () => {};\n",
		"src/other.ts": "",
	})
	if diff := cmp.Diff([]string{"src/main.ts"}, g.Entries); diff != "" {
		t.Fatalf("entries (-want +got):\n%s (%s)", diff, g.EntryWhy)
	}
	if !g.Reached("src/run.ts") || g.Reached("src/other.ts") {
		t.Errorf("reached run.ts=%v other.ts=%v; want true, false", g.Reached("src/run.ts"), g.Reached("src/other.ts"))
	}
}

// TestCompiledOutputOfAMonorepoApp: an Nx or Nest CLI monorepo builds
// dist/apps/api/main.js from apps/api/src/main.ts; the builder copies a
// package.json beside the bundle, so the folder is the repository's and
// the build's. The image copies dist/apps, or dist/apps/api as the app.
func TestCompiledOutputOfAMonorepoApp(t *testing.T) {
	t.Parallel()
	builder := "FROM node:22 AS builder\nWORKDIR /repo\nCOPY package.json ./\nRUN npm ci\nCOPY apps apps/\n" +
		"RUN npx nx run-many -t build\nWORKDIR /repo/dist/apps/api\nCOPY package.json ./\n"
	for name, final := range map[string]string{
		"apps":       "FROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /repo/dist/apps /srv/apps/\nWORKDIR /srv/apps/api\nCMD [\"main\"]\n",
		"as the app": "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY --from=builder /repo/dist/apps/api ./\nCMD [\"main.js\"]\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := graphOf(t, map[string]string{
				"Dockerfile":                     builder + final,
				"package.json":                   "{}",
				"apps/api/src/main.ts":           "import { AppModule } from './app/app.module';\nAppModule();\n",
				"apps/api/src/app/app.module.ts": "export const AppModule = () => {};\n",
				"apps/worker/src/main.ts":        "require('child_process').execSync('x');\n",
			})
			if diff := cmp.Diff([]string{"apps/api/src/main.ts"}, g.Entries); diff != "" {
				t.Fatalf("entries (-want +got):\n%s (%s)", diff, g.EntryWhy)
			}
			if !g.Reached("apps/api/src/app/app.module.ts") || g.Reached("apps/worker/src/main.ts") {
				t.Errorf("reached app.module=%v worker=%v; want true, false", g.Reached("apps/api/src/app/app.module.ts"), g.Reached("apps/worker/src/main.ts"))
			}
		})
	}
}

// TestCompiledOutputOfAWorkspacePackage: one builder stage builds three
// workspace packages, and the image copies the backend's dist/src as
// dist/ (hedgedoc): node dist/main.js starts at backend/src/main.ts, not
// at the sources of the other packages the same stage compiled.
func TestCompiledOutputOfAWorkspacePackage(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile": "FROM node:24 AS builder\nWORKDIR /usr/src/app\nCOPY . .\nRUN yarn install --immutable && yarn build\n" +
			"FROM gcr.io/distroless/nodejs24-debian13\nWORKDIR /usr/src/app\n" +
			"COPY --from=builder /usr/src/app/backend/dist/src backend/dist\n" +
			"COPY --from=builder /usr/src/app/database/dist database/dist\n" +
			"COPY --from=builder /usr/src/app/commons/dist commons/dist\n" +
			"WORKDIR /usr/src/app/backend\nCMD [\"dist/main.js\"]\n",
		"package.json":          `{"workspaces":["backend","database","commons"]}`,
		"backend/package.json":  `{"name":"@x/backend"}`,
		"backend/src/main.ts":   "import { boot } from './app';\nboot();\n",
		"backend/src/app.ts":    "export const boot = () => {};\n",
		"database/package.json": `{"name":"@x/database"}`,
		"database/src/main.ts":  "require('child_process').execSync('x');\n",
		"commons/package.json":  `{"name":"@x/commons"}`,
		"commons/src/index.ts":  "export const x = 1;\n",
	})
	if diff := cmp.Diff([]string{"backend/src/main.ts"}, g.Entries); diff != "" {
		t.Fatalf("entries (-want +got):\n%s (%s)", diff, g.EntryWhy)
	}
	if !g.Reached("backend/src/app.ts") || g.Reached("database/src/main.ts") {
		t.Errorf("reached app=%v database main=%v; want true, false", g.Reached("backend/src/app.ts"), g.Reached("database/src/main.ts"))
	}
}

// TestShebangScriptStep: a start that runs a file by its path (oclif's
// cd packages/server/bin && ./run start, behind run-script-os) starts the
// graph at that file when its first line runs node; a shell script's path
// leaves the entry unknown.
func TestShebangScriptStep(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		head string
		want []string
	}{
		"node":  {"#!/usr/bin/env node\n", []string{"packages/server/bin/run"}},
		"shell": {"#!/bin/sh\n", nil},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := graphOf(t, map[string]string{
				"Dockerfile":                   "FROM node:24\nWORKDIR /usr/src/flowise\nCOPY . .\nCMD [\"npm\", \"start\"]\n",
				"package.json":                 `{"scripts":{"start":"run-script-os","start:windows":"cd packages/server/bin && run start","start:default":"cd packages/server/bin && ./run start"}}`,
				"packages/server/bin/run":      tc.head + "require('../src/index.js')\n",
				"packages/server/src/index.js": "module.exports = 1;\n",
			})
			if diff := cmp.Diff(tc.want, g.Entries); diff != "" {
				t.Fatalf("entries (-want +got):\n%s (%s)", diff, g.EntryWhy)
			}
			if tc.want != nil && !g.Reached("packages/server/src/index.js") {
				t.Errorf("src/index.js not reached")
			}
		})
	}
}

// TestOclifCommands: an oclif CLI started by its bin (./run start) loads
// its commands from the folder package.json's oclif.commands names, by a
// computed load in @oclif/core: the app's command files are reached (from
// their sources when the folder is the build's), not left out.
func TestOclifCommands(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":                            "FROM node:24\nWORKDIR /srv\nCOPY . .\nRUN npm ci && npm run build\nCMD [\"npm\", \"start\"]\n",
		"package.json":                          `{"name":"cli","scripts":{"start":"./bin/run start"},"dependencies":{"@oclif/core":"5"},"oclif":{"bin":"cli","commands":"./dist/commands"}}`,
		"bin/run":                               "#!/usr/bin/env node\nconst oclif = require('@oclif/core')\noclif.run()\n",
		"node_modules/@oclif/core/package.json": `{"name":"@oclif/core","main":"lib/index.js"}`,
		"node_modules/@oclif/core/lib/index.js": "module.exports = require('./module-loader');\n",
		"node_modules/@oclif/core/lib/module-loader.js": "exports.load = async (filePath) => require(filePath);\n",
		"src/commands/start.ts":                         "import { boot } from '../server';\nboot();\n",
		"src/server.ts":                                 "export const boot = () => {};\n",
		"src/unrelated.ts":                              "",
	})
	if diff := cmp.Diff([]string{"bin/run"}, g.Entries); diff != "" {
		t.Fatalf("entries (-want +got):\n%s (%s)", diff, g.EntryWhy)
	}
	for _, f := range []string{"src/commands/start.ts", "src/server.ts"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
}

// TestCompiledOutputOfATsconfigOutDir: dist/index.js is what
// server/tsconfig.json's "outDir": "../dist" holds of server/index.ts (as
// overseerr builds), with or without rootDir, and through an include.
func TestCompiledOutputOfATsconfigOutDir(t *testing.T) {
	t.Parallel()
	dockerfile := "FROM node:22 AS b\nWORKDIR /app\nCOPY . .\nRUN yarn build\nFROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY --from=b /app/dist ./dist\nCMD [\"dist/index.js\"]\n"
	for name, cfg := range map[string][2]string{
		"outDir":            {"server/tsconfig.json", `{"compilerOptions": {"outDir": "../dist"}}`},
		"rootDir":           {"tsconfig.json", `{"compilerOptions": {"outDir": "dist", "rootDir": "server"}}`},
		"include, comments": {"tsconfig.json", "{\n  // the server only\n  \"compilerOptions\": {\"outDir\": \"./dist\",},\n  \"include\": [\"server/**/*.ts\"]\n}"},
	} {
		g := graphOf(t, map[string]string{
			"Dockerfile":        dockerfile,
			"package.json":      "{}",
			cfg[0]:              cfg[1],
			"server/index.ts":   "import { run } from './lib/run';\nrun();\n",
			"server/lib/run.ts": "export const run = () => {};\n",
		})
		if len(g.Entries) != 1 || g.Entries[0] != "server/index.ts" || !g.Reached("server/lib/run.ts") {
			t.Errorf("%s: entries %v (%s), run.ts reached %v; want server/index.ts, reached", name, g.Entries, g.EntryWhy, g.Reached("server/lib/run.ts"))
		}
	}
}

func TestEntryThroughInitAndNpmStart(t *testing.T) {
	t.Parallel()
	for name, files := range map[string]map[string]string{
		"tini": {
			"Dockerfile": "FROM node:22\nWORKDIR /srv\nCOPY . .\nENTRYPOINT [\"tini\", \"--\"]\nCMD [\"node\", \"app.js\"]\n",
			"app.js":     "",
		},
		"npm start": {
			"Dockerfile":   "FROM node:22\nWORKDIR /srv\nCOPY . .\nCMD [\"npm\", \"start\"]\n",
			"package.json": `{"scripts": {"start": "NODE_ENV=production node app.js"}}`,
			"app.js":       "",
		},
		"shebang file": {
			"Dockerfile": "FROM node:22\nWORKDIR /srv\nCOPY . .\nCMD [\"./app.js\"]\n",
			"app.js":     "#!/usr/bin/env node\n",
		},
	} {
		g := graphOf(t, files)
		if len(g.Entries) != 1 || g.Entries[0] != "app.js" {
			t.Errorf("%s: entries %v (%s), want app.js", name, g.Entries, g.EntryWhy)
		}
	}
}

func TestDynamicInScopesByPrefix(t *testing.T) {
	t.Parallel()
	g := &Graph{Dynamic: []Site{{File: "src/server.js", Line: 3, Prefix: "./plugins/"}, {File: "node_modules/a/index.js", Line: 1}}}
	for file, want := range map[string]bool{
		"src/plugins/x.js":        true,
		"src/tools/y.js":          false,
		"node_modules/a/lib/z.js": true,
		"node_modules/b/index.js": false,
	} {
		if _, got := g.DynamicIn(file); got != want {
			t.Errorf("DynamicIn(%s) = %v, want %v", file, got, want)
		}
	}
}

// TestDynamicEnvLoad: a dependency's require(process.env.X) loads the
// module the deployment names (mongodb 4's
// require(process.env.MONGODB_CLIENT_ENCRYPTION_OVERRIDE) in lib/utils.js,
// which left every mongodb file, etc/prepare.js's spawn of npm among
// them, counted as loaded). It leaves the package's other files
// unreached; the app's own such load still leaves the app's files open.
func TestDynamicEnvLoad(t *testing.T) {
	t.Parallel()
	_, dyn := Scan([]byte("a = require(process.env.MONGODB_OVERRIDE);\nb = require(process.env['CFG'] )\nc = require(process.env.X || './x')\nd = require(env.Y)\n"))
	var envs []string
	for _, d := range dyn {
		envs = append(envs, d.Env)
	}
	if diff := cmp.Diff([]string{"MONGODB_OVERRIDE", "CFG", "", ""}, envs); diff != "" {
		t.Errorf("Env of the computed loads (-want +got):\n%s", diff)
	}
	g := &Graph{Dynamic: []Site{
		{File: "node_modules/mongodb/lib/utils.js", Line: 1067, Env: "MONGODB_OVERRIDE"},
		{File: "server.js", Line: 2, Env: "CONFIG_MODULE"},
		{File: "node_modules/knex/lib/index.js", Line: 9},
	}}
	for file, want := range map[string]bool{
		"node_modules/mongodb/etc/prepare.js": false,
		"src/config/prod.js":                  true,
		"node_modules/knex/lib/migrate.js":    true,
	} {
		if _, got := g.DynamicIn(file); got != want {
			t.Errorf("DynamicIn(%s) = %v, want %v", file, got, want)
		}
	}
}

// TestDynamicJSONLoad: a computed load of a .json file reads data (next's
// server requires path.join(dir, distDir, SERVER_FILES_MANIFEST + '.json'),
// which left all of next counted as loaded); any other computed load stays.
func TestDynamicJSONLoad(t *testing.T) {
	t.Parallel()
	src := "a = require(/* turbopackIgnore: true */ _nodepath.default.join(/* turbopackIgnore: true */ dir, config.distDir, _constants1.SERVER_FILES_MANIFEST + '.json')).config\n" +
		"b = require(`${root}/package.json`)\n" +
		"c = require(dir + \"/x.json\")\n" +
		"d = require(name + '.json' + suffix)\n" +
		"e = require(path.join(dir, 'plugin.js'))\n" +
		"f = require(x, (y) => ')')\n" +
		"g = require(path.join(dir, 'x.json', rest))\n" +
		"class BloomFilter {\n  import(data) {\n    this.numItems = data.numItems\n  }\n  static require(id) { return id }\n}\n"
	_, dyn := Scan([]byte(src))
	var lines []int
	for _, d := range dyn {
		lines = append(lines, d.Line)
	}
	if diff := cmp.Diff([]int{4, 5, 6, 7}, lines); diff != "" {
		t.Errorf("lines of the computed loads kept (-want +got):\n%s", diff)
	}
}

// TestDynamicOtherPackage: a dependency's computed load whose literal
// start names another package (sharp's
// require(`@img/sharp-${runtimePlatform}/versions`)) leaves its own files
// unreached, and the packages it may name open; one that may name itself,
// or any relative or app load, leaves its own package open.
func TestDynamicOtherPackage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		site, prefix, file string
		want               bool
	}{
		{"node_modules/sharp/dist/utility.cjs", "@img/sharp-", "node_modules/sharp/dist/libvips.cjs", false},
		{"node_modules/sharp/dist/utility.cjs", "lodash/", "node_modules/sharp/dist/libvips.cjs", false},
		{"node_modules/sharp/dist/utility.cjs", "sharp/dist/", "node_modules/sharp/dist/libvips.cjs", true},
		{"node_modules/sharp/dist/utility.cjs", "sha", "node_modules/sharp/dist/libvips.cjs", true},
		{"node_modules/@img/sharp/a.js", "@img/sharp/", "node_modules/@img/sharp/b.js", true},
		{"node_modules/@img/sharp/a.js", "@img/", "node_modules/@img/sharp/b.js", true},
		{"node_modules/sharp/dist/utility.cjs", "", "node_modules/sharp/dist/libvips.cjs", true},
		{"src/plugins.js", "@/plugins/", "src/plugins/a.js", true},
		{"src/plugins.js", "plugin-", "src/plugins/a.js", true},
		// ... and the packages it may name are open.
		{"node_modules/sharp/dist/utility.cjs", "@img/sharp-", "node_modules/@img/sharp-linux-x64/lib/index.js", true},
		{"node_modules/sharp/dist/utility.cjs", "@img/sharp-", "node_modules/@img/colour/index.js", false},
		{"src/plugins.js", "plugin-", "node_modules/plugin-auth/index.js", true},
		{"src/plugins.js", "lodash/", "node_modules/lodash/map.js", true},
		{"src/plugins.js", "lodash/", "node_modules/lodash-es/map.js", false},
	} {
		g := &Graph{Dynamic: []Site{{File: tc.site, Line: 1, Prefix: tc.prefix}}}
		if _, got := g.DynamicIn(tc.file); got != tc.want {
			t.Errorf("load of %q + x in %s: DynamicIn(%s) = %v, want %v", tc.prefix, tc.site, tc.file, got, tc.want)
		}
	}
}

// TestInstalledLoaders: typescript.js's computed load resolves a plugin's
// module name, an installed package, so typescript's own files (the
// typings installer, which runs as a process of its own) stay unreached;
// the same load in another package leaves that package open.
func TestInstalledLoaders(t *testing.T) {
	t.Parallel()
	loader := "const sys = {\n  require: (baseDir, moduleName) => {\n    const modulePath = resolveJSModule(moduleName, baseDir)\n    return { module: require(modulePath) }\n  }\n}\nmodule.exports = { sys }\n"
	files := map[string]string{
		"Dockerfile":                           "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json":                         `{"name":"svc","dependencies":{"typescript":"5","tslike":"1"}}`,
		"index.js":                             "require('typescript')\nrequire('tslike')\n",
		"node_modules/typescript/package.json": `{"name":"typescript","main":"./lib/typescript.js"}`,
		"node_modules/typescript/lib/typescript.js":        loader,
		"node_modules/typescript/lib/_typingsInstaller.js": "require('child_process').execSync('npm install')\n",
		"node_modules/tslike/package.json":                 `{"name":"tslike","main":"./lib/typescript.js"}`,
		"node_modules/tslike/lib/typescript.js":            loader,
		"node_modules/tslike/lib/other.js":                 "",
	}
	g := graphOf(t, files)
	if d, ok := g.DynamicIn("node_modules/typescript/lib/_typingsInstaller.js"); ok {
		t.Errorf("typescript's typings installer counted as loaded by %s:%d", d.File, d.Line)
	}
	if _, ok := g.DynamicIn("node_modules/tslike/lib/other.js"); !ok {
		t.Error("the same computed load in a package not read leaves its files closed")
	}
}

// TestGraphHoles: loads the walk cannot follow but that may name a
// repository file leave that package's files possibly loaded; workspace
// packages, "#" imports, export subpaths, .mjs for .mts and fork targets
// are followed. A workspace package the walk finds in the repository
// (its compiled main mapped to its source, as Flowise's flowise-components)
// is no package node_modules lacks.
func TestGraphHoles(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":                       "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.mjs\"]\n",
		"package.json":                     `{"name":"svc","dependencies":{"@acme/git":"workspace:*","comp":"workspace:^","lib":"1"},"imports":{"#util/*":"./util/*.mjs"}}`,
		"server.mjs":                       "import '@acme/git';\nimport 'comp';\nimport 'comp/server';\nimport '#util/log';\nimport 'lib/sub';\nimport './b.mjs';\nfork('./worker.js');\nimport x from '@/alias';\n",
		"packages/comp/package.json":       `{"name":"comp","main":"dist/src/index","exports":{".":{"types":"./dist/src/index.d.ts","default":"./dist/src/index.js"},"./server":"./src/server.ts"}}`,
		"packages/comp/src/index.ts":       "",
		"packages/comp/src/server.ts":      "",
		"b.mts":                            "",
		"worker.js":                        "",
		"util/log.mjs":                     "",
		"packages/git/package.json":        `{"name":"@acme/git","main":"index.js"}`,
		"packages/git/index.js":            "",
		"node_modules/lib/package.json":    `{"exports":{".":"./main.js","./sub":"./lib/sub-impl.js"}}`,
		"node_modules/lib/lib/sub-impl.js": "",
	})
	for _, f := range []string{"packages/git/index.js", "packages/comp/src/index.ts", "packages/comp/src/server.ts", "util/log.mjs", "node_modules/lib/lib/sub-impl.js", "b.mts", "worker.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if len(g.MissingPackages) > 0 {
		t.Errorf("missing packages %v: each is a workspace package the repository holds, or installed", g.MissingPackages)
	}
	if _, ok := g.DynamicIn("other.js"); !ok {
		t.Error("an undeclared bare import (an alias) does not leave the app's other files possibly loaded")
	}
}

// TestSubpathImportOfBuildOutput: "#src/*": "./build/*" names the
// compiled output; the graph follows it to the TypeScript source the
// build compiles (logto's core), not to a computed load.
func TestSubpathImportOfBuildOutput(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":           "FROM node:22 AS b\nWORKDIR /app\nCOPY . .\nRUN npx tsc\nFROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY --from=b /app /app\nCMD [\"build/index.js\"]\n",
		"package.json":         `{"name":"core","type":"module","imports":{"#src/*":"./build/*"}}`,
		"src/index.ts":         "import { EnvSet } from '#src/env-set/index.js';\nEnvSet();\n",
		"src/env-set/index.ts": "export const EnvSet = () => {};\n",
		"scripts/release.js":   "require('child_process').execSync('git push');\n",
	})
	if !g.Reached("src/env-set/index.ts") {
		t.Errorf("src/env-set/index.ts not reached (entries %v, unresolved %v)", g.Entries, g.Unresolved)
	}
	if len(g.Dynamic) > 0 {
		t.Errorf("computed loads %v: the #src import names a source", g.Dynamic)
	}
}

// TestPrismaGeneratedClient: an alias into the folder a Prisma schema
// generates its client into (@/generated/prisma/client, written by prisma
// generate at build time) loads @prisma/client's runtime, and leaves the
// app closed; another missing alias target still opens it.
func TestPrismaGeneratedClient(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":           "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"src/server.js\"]\n",
		"package.json":         `{"name":"svc","dependencies":{"@prisma/client":"7"}}`,
		"tsconfig.json":        `{"compilerOptions":{"paths":{"@/*":["./src/*"]}}}`,
		"prisma/schema.prisma": "generator client {\n  provider = \"prisma-client\"\n  output   = \"../src/generated/prisma\"\n}\n",
		"src/server.js":        "import { Prisma } from '@/generated/prisma/client';\n",
		"src/unrelated.js":     "",
		"node_modules/@prisma/client/package.json": `{"name":"@prisma/client","main":"index.js"}`,
		"node_modules/@prisma/client/index.js":     "",
	}
	g := graphOf(t, files)
	if !g.Reached("node_modules/@prisma/client/index.js") {
		t.Errorf("@prisma/client not reached (unresolved %v)", g.Unresolved)
	}
	if _, open := g.DynamicIn("src/unrelated.js"); open {
		t.Error("the generated client's alias leaves the app open")
	}
	files["src/server.js"] = "import { x } from '@/generated/other/thing';\n"
	if _, open := graphOf(t, files).DynamicIn("src/unrelated.js"); !open {
		t.Error("an alias to a missing folder that no generator names does not leave the app open")
	}
}

func TestNodeOptionsPreload(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":     "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nENV NODE_OPTIONS=\"--require ./lib/tracing.js\"\nCMD [\"server.js\"]\n",
		"server.js":      "",
		"lib/tracing.js": "",
	})
	if !g.Reached("lib/tracing.js") {
		t.Errorf("the NODE_OPTIONS preload is not reached (entries %v)", g.Entries)
	}
}

// TestUndeclaredPackageIsAnEdge: a literal load of a package that is
// neither installed nor declared, and that no alias names, is an
// unresolved edge: it does not leave the app's other files possibly loaded
// (issue 21: one such import made 18 test files blockers). Aliases the
// app's tsconfig (with comments and extends), jsconfig or module-alias map
// are followed to their files; one whose map is not read stays open.
func TestUndeclaredPackageIsAnEdge(t *testing.T) {
	t.Parallel()
	dockerfile := "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n"
	t.Run("missing package", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, map[string]string{
			"Dockerfile":     dockerfile,
			"package.json":   `{"name":"svc","dependencies":{}}`,
			"server.js":      "try { require('statsd-client') } catch {}\nrequire('@scope/absent/sub');\n",
			"test/a.test.js": "",
		})
		if _, ok := g.DynamicIn("test/a.test.js"); ok {
			t.Errorf("an undeclared, uninstalled package leaves the app's files possibly loaded (dynamic %v)", g.Dynamic)
		}
		want := []string{
			"cannot resolve @scope/absent/sub from server.js (not installed, not a declared dependency, no alias names it)",
			"cannot resolve statsd-client from server.js (not installed, not a declared dependency, no alias names it)",
		}
		if diff := cmp.Diff(want, g.Unresolved); diff != "" {
			t.Errorf("unresolved (-want +got):\n%s", diff)
		}
	})
	t.Run("aliases followed", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, map[string]string{
			"Dockerfile":   dockerfile,
			"package.json": `{"name":"svc","_moduleAliases":{"@models":"src/models"}}`,
			"tsconfig.base.json": `{
  // shared settings
  "compilerOptions": {"baseUrl": "./src", "paths": {"@app/*": ["app/*", "fallback/*"], "@cfg": ["config/index.ts"],},},
}`,
			"tsconfig.json":       `{"extends": "./tsconfig.base", /* no paths of its own */ "compilerOptions": {"strict": true}}`,
			"server.js":           "require('@app/run');\nrequire('@cfg');\nrequire('lib/util');\nrequire('@models/user');\n",
			"src/app/run.ts":      "",
			"src/config/index.ts": "",
			"src/lib/util.js":     "",
			"src/models/user.js":  "",
			"test/a.test.js":      "",
		})
		for _, f := range []string{"src/app/run.ts", "src/config/index.ts", "src/lib/util.js", "src/models/user.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached through its alias (unresolved %v)", f, g.Unresolved)
			}
		}
		if len(g.Dynamic) > 0 || len(g.MissingPackages) > 0 {
			t.Errorf("followed aliases left computed loads %v or missing packages %v", g.Dynamic, g.MissingPackages)
		}
	})
	t.Run("alias not followed", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, map[string]string{
			"Dockerfile":     dockerfile,
			"package.json":   `{"name":"svc"}`,
			"tsconfig.json":  `{"compilerOptions": {"paths": {"@gen/*": ["generated/*"]}}}`,
			"server.js":      "require('@gen/client');\nrequire('~/x');\nrequire('routes/index');\n",
			"routes/a.js":    "",
			"test/a.test.js": "",
		})
		if len(g.Dynamic) != 3 {
			t.Errorf("computed loads %v, want the three aliases the walk cannot follow", g.Dynamic)
		}
		if _, ok := g.DynamicIn("test/a.test.js"); !ok {
			t.Error("an alias the walk cannot follow does not leave the app's files possibly loaded")
		}
	})
}

// TestEntryBehindWrappers: the graph starts at the command an init or user
// wrapper runs, as dockerfile.SplitInit reads it (its options with values,
// gosu's user), the one list of wrappers.
func TestEntryBehindWrappers(t *testing.T) {
	t.Parallel()
	for name, start := range map[string]string{
		"tini with a value option": `ENTRYPOINT ["/sbin/tini", "-e", "143", "node", "server.js"]`,
		"gosu":                     `CMD ["gosu", "app", "node", "server.js"]`,
		"catatonit":                `ENTRYPOINT ["catatonit", "--", "node", "server.js"]`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := graphOf(t, map[string]string{
				"Dockerfile":   "FROM node:22-bookworm-slim\nWORKDIR /app\nCOPY . .\n" + start + "\n",
				"package.json": `{"name":"svc"}`,
				"server.js":    "require('./lib/a');\n",
				"lib/a.js":     "",
			})
			if !g.Reached("lib/a.js") {
				t.Errorf("lib/a.js not reached behind the wrapper (entries %v: %s)", g.Entries, g.EntryWhy)
			}
		})
	}
}

// TestNodeCommandsBehindWrappers: NodeCommands reads a step's wrappers
// with dockerfile.SplitInit, so a user wrapper and an option with a value
// are skipped as the start command's own reading skips them.
func TestNodeCommandsBehindWrappers(t *testing.T) {
	t.Parallel()
	for _, argv := range [][]string{
		{"gosu", "app", "node", "server.js"},
		{"su-exec", "node", "node", "server.js"},
		{"/sbin/tini", "-e", "143", "node", "server.js"},
		{"docker-init", "--", "node", "server.js"},
	} {
		got, why := NodeCommands(&npmscripts.Chain{Program: argv, Steps: []npmscripts.Step{{Argv: argv}}})
		if want := []NodeCommand{{Args: []string{"server.js"}}}; !cmp.Equal(got, want) {
			t.Errorf("NodeCommands(%q) = %v (%s); want %v", argv, got, why, want)
		}
	}
}

// TestNodeCommandsTypeScriptRunners: tsx and ts-node run node on a
// TypeScript file; the graph starts there. Watch mode, an evaluated line
// and a REPL are not the service's file.
func TestNodeCommandsTypeScriptRunners(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		argv []string
		want []NodeCommand
	}{
		{[]string{"tsx", "./backend/index.ts"}, []NodeCommand{{Args: []string{"./backend/index.ts"}}}},
		{[]string{"/usr/local/bin/tsx", "--tsconfig", "tsconfig.prod.json", "src/main.ts", "--port", "80"},
			[]NodeCommand{{Args: []string{"src/main.ts", "--port", "80"}}}},
		{[]string{"dumb-init", "--", "ts-node", "-T", "-r", "tsconfig-paths/register", "-P", "tsconfig.json", "src/app.ts"},
			[]NodeCommand{{Args: []string{"--require", "tsconfig-paths/register", "src/app.ts"}}}},
		{[]string{"tsx", "watch", "src/main.ts"}, nil},
		{[]string{"ts-node", "-e", "console.log(1)"}, nil},
	} {
		got, why := NodeCommands(&npmscripts.Chain{Program: tc.argv, Steps: []npmscripts.Step{{Argv: tc.argv}}})
		if !cmp.Equal(got, tc.want) {
			t.Errorf("NodeCommands(%q) = %v (%s); want %v", tc.argv, got, why, tc.want)
		}
	}
	g := graphOf(t, map[string]string{
		"Dockerfile":        "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"tsx\", \"./backend/index.ts\"]\n",
		"package.json":      `{"name":"svc"}`,
		"backend/index.ts":  "import { serve } from './server';\n",
		"backend/server.ts": "",
		"extra/release.ts":  "",
	})
	if !g.Reached("backend/server.ts") || g.Reached("extra/release.ts") {
		t.Errorf("entries %v (%s): backend/server.ts reached %v, extra/release.ts reached %v", g.Entries, g.EntryWhy, g.Reached("backend/server.ts"), g.Reached("extra/release.ts"))
	}
}

// TestNextProductionMode: the standalone server runs next with its
// development flags off, so the loads they guard (the dev server, the dev
// bundler, telemetry, next's own test harness) are not made: umami's
// blockers were 34 of 37 through them. Bundled third-party code keeps its
// own flags, and a custom server, which may start next in development
// mode, keeps every load.
func TestNextProductionMode(t *testing.T) {
	t.Parallel()
	next := map[string]string{
		"node_modules/next/package.json":                         `{"name":"next","main":"./dist/server/next.js"}`,
		"node_modules/next/dist/server/lib/start-server.js":      "require('../next')\nrequire('./router-server')\nrequire('../../compiled/bundle/index.js')\nrequire('../config').loadConfig()\nrequire('../../compiled/webpack/loader.js')\n",
		"node_modules/next/dist/server/config.js":                "async function loadConfig(path, config) {\n  if (process.env.__NEXT_PRIVATE_STANDALONE_CONFIG) return JSON.parse(process.env.__NEXT_PRIVATE_STANDALONE_CONFIG)\n  require('../build/transpile-config')\n  await import(require.resolve(config.adapterPath))\n  return import(path)\n}\nexports.loadConfig = loadConfig\n",
		"node_modules/next/dist/build/transpile-config.js":       "",
		"node_modules/next/dist/cli/next-upgrade.js":             "",
		"node_modules/next/dist/server/lib/router-server.js":     "async function initialize(opts) {\n  if (process.env.TURBOPACK) { require('./turbopack-warning') }\n  if (opts.dev) {\n    const { Telemetry } = require('../../telemetry/storage')\n  } else {\n    require('./prod-handler')\n  }\n  if (!opts.dev) return\n  require('./dev-overlay')\n}\n",
		"node_modules/next/dist/server/lib/prod-handler.js":      "",
		"node_modules/next/dist/server/lib/dev-overlay.js":       "",
		"node_modules/next/dist/server/lib/turbopack-warning.js": "",
		"node_modules/next/dist/telemetry/storage.js":            "",
		"node_modules/next/dist/server/next.js":                  "class NextServer {\n  createServer(options) {\n    if (options.dev) { return require('./dev/next-dev-server') }\n    return (process.env.__NEXT_TEST_MODE === 'jest') ? require('./test-hook') : require('./next-server')\n  }\n}\nmodule.exports = (options) => new NextServer(options).createServer(options)\n",
		"node_modules/next/dist/server/dev/next-dev-server.js":   "",
		"node_modules/next/dist/server/next-server.js":           "",
		"node_modules/next/dist/server/test-hook.js":             "",
		"node_modules/next/dist/compiled/bundle/index.js":        "if (dev) require('./dev-part')\n",
		"node_modules/next/dist/compiled/bundle/dev-part.js":     "",
		"node_modules/next/dist/compiled/webpack/loader.js":      "module.exports = (id) => require(id)\n",
	}
	standalone := map[string]string{
		"Dockerfile": "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nRUN npm ci && npm run build\n" +
			"FROM node:22-slim\nWORKDIR /app\nCOPY --from=builder /app/.next/standalone ./\nCMD [\"node\", \"server.js\"]\n",
		"package.json":   `{"name":"web","dependencies":{"next":"16.3.1"}}`,
		"next.config.js": "module.exports = { output: 'standalone' }\n",
		"pages/index.js": "export default function Home() { return null }\n",
	}
	custom := map[string]string{
		"Dockerfile":   "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"server.js\"]\n",
		"package.json": `{"name":"web","dependencies":{"next":"16.3.1"}}`,
		"server.js":    "const next = require('next')\nrequire('next/dist/server/lib/start-server')\nconst app = next({ dev: process.env.NODE_ENV !== 'production' })\n",
	}
	for k, v := range next {
		standalone[k], custom[k] = v, v
	}
	dev := []string{"node_modules/next/dist/server/dev/next-dev-server.js", "node_modules/next/dist/telemetry/storage.js",
		"node_modules/next/dist/server/lib/dev-overlay.js", "node_modules/next/dist/server/test-hook.js",
		"node_modules/next/dist/server/lib/turbopack-warning.js", // TURBOPACK: only next dev and next build set it
		"node_modules/next/dist/build/transpile-config.js"}       // after loadConfig's return of the standalone configuration
	prod := []string{"node_modules/next/dist/server/next-server.js", "node_modules/next/dist/server/lib/prod-handler.js",
		"node_modules/next/dist/compiled/bundle/dev-part.js"}
	g := graphOf(t, standalone)
	// next's computed loads (its server's, and its bundled loaders') read
	// the app's config and build output and the packages they name, not
	// next's own files: those stay unreached.
	if d, ok := g.DynamicIn("node_modules/next/dist/cli/next-upgrade.js"); ok {
		t.Errorf("standalone: next's files counted as loaded by %s:%d", d.File, d.Line)
	}
	for _, f := range prod {
		if !g.Reached(f) {
			t.Errorf("standalone: %s not reached", f)
		}
	}
	for _, f := range dev {
		if g.Reached(f) {
			t.Errorf("standalone: %s reached, though only development mode loads it", f)
		}
	}
	turbo := map[string]string{}
	for k, v := range standalone {
		turbo[k] = v
	}
	turbo["Dockerfile"] = strings.Replace(standalone["Dockerfile"], "FROM node:22-slim\n", "FROM node:22-slim\nENV TURBOPACK=1\n", 1)
	if g := graphOf(t, turbo); !g.Reached("node_modules/next/dist/server/lib/turbopack-warning.js") {
		t.Error("standalone with ENV TURBOPACK=1: what process.env.TURBOPACK guards not reached")
	}
	g = graphOf(t, custom)
	if _, ok := g.DynamicIn("node_modules/next/dist/cli/next-upgrade.js"); !ok {
		t.Error("custom server: config.js's computed loads do not count")
	}
	for _, f := range append(prod, dev...) {
		if !g.Reached(f) {
			t.Errorf("custom server: %s not reached", f)
		}
	}
}

// TestModeConditions: a condition the standalone server sets (On) keeps
// its else, and what follows an early exit on it, from running; one it
// clears (Off) keeps its then.
func TestModeConditions(t *testing.T) {
	t.Parallel()
	const on = "process.env.__NEXT_PRIVATE_STANDALONE_CONFIG"
	for _, tc := range []struct {
		cond  string
		holds bool
		off   bool
	}{
		{on, false, true},             // if (on) return …; what follows
		{"(" + on + ")", false, true}, // parenthesised
		{"!" + on, true, true},        // if (!on) { … }
		{"!" + on + " && x", true, true},
		{on, true, false},
		{"!" + on, false, false},
		{on + " || x", false, false},
		{on + " && x", false, false}, // after if (on && x) return: x may be false
		{"opts.dev", true, true},
		{"!opts.dev", false, true},
		{"opts.dev", false, false},
	} {
		if got := nextProduction.condition(tc.cond, tc.holds) != ""; got != tc.off {
			t.Errorf("condition(%q, holds %v) keeps the branch off: %v, want %v", tc.cond, tc.holds, got, tc.off)
		}
	}
}

// TestEntriesFromEveryStep: the graph starts from each step the start
// comes down to: a script's node_modules/.bin command (the JS file its
// package's "bin" names) and node's script. A step whose code cannot be
// found (a build's output) leaves the graph with no entry, not with the
// other steps' alone.
func TestEntriesFromEveryStep(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                       "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD npm run migrate && npm start\n",
		"package.json":                     `{"name":"svc","scripts":{"migrate":"knex migrate:latest","start":"cross-env NODE_ENV=production node server.js"}}`,
		"server.js":                        "require('./lib/a');\n",
		"lib/a.js":                         "",
		"node_modules/knex/package.json":   `{"name":"knex","bin":{"knex":"bin/cli.js"}}`,
		"node_modules/knex/bin/cli.js":     "require('../lib/migrate');\n",
		"node_modules/knex/lib/migrate.js": "",
		"node_modules/knex/scripts/x.js":   "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"lib/a.js", "node_modules/knex/lib/migrate.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached (entries %v: %s)", f, g.Entries, g.EntryWhy)
		}
	}
	if g.Reached("node_modules/knex/scripts/x.js") {
		t.Error("a file nothing loads is reached")
	}
	files["package.json"] = `{"name":"svc","scripts":{"migrate":"node dist/migrate.js","start":"node server.js"}}`
	if g := graphOf(t, files); len(g.Entries) > 0 {
		t.Errorf("entries %v, want none: dist/migrate.js is not in the repository (%s)", g.Entries, g.EntryWhy)
	}
}

// TestNextStandaloneServer: `node server.js` on a copied .next/standalone
// runs the server.js `next build` wrote, which is in no repository. The
// graph starts at next's start-server and at the app's server-side
// sources (umami, homepage and the OpenTelemetry demo's frontend ship
// this way), not nowhere: with no entry, every file in node_modules
// counted as in the image.
func TestNextStandaloneServer(t *testing.T) {
	t.Parallel()
	df := "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nRUN npm ci && npm run build\n" +
		"FROM node:22-slim\nWORKDIR /app\nCOPY --from=builder /app/.next/standalone ./\nCOPY --from=builder /app/.next/static ./.next/static\nCMD [\"node\", \"server.js\"]\n"
	files := map[string]string{
		"Dockerfile":                                        df,
		"package.json":                                      `{"name":"web","dependencies":{"next":"15.0.0","pinger":"1.0.0","unused":"1.0.0"}}`,
		"next.config.js":                                    "require('dotenv-expand')\nmodule.exports = { output: 'standalone' }\n",
		"src/pages/index.tsx":                               "import Card from '../components/Card'\nexport default function Home() { return Card() }\n",
		"src/pages/api/ping.js":                             "import ping from 'pinger'\nexport default async function h(req, res) { res.json(await ping('x')) }\n",
		"src/components/Card.tsx":                           "export default function Card() { return null }\n",
		"src/lib/unused-helper.js":                          "module.exports = 1\n",
		"src/pages/index.test.tsx":                          "import { render } from '@testing-library/react'\n",
		"src/pages/__tests__/api.js":                        "require('supertest')\n",
		"src/app/test/page.tsx":                             "export default function T() { return null }\n",
		"node_modules/next/package.json":                    `{"name":"next","main":"./dist/server/next.js"}`,
		"node_modules/next/dist/server/next.js":             "",
		"node_modules/next/dist/server/lib/start-server.js": "require('../next')\n",
		"node_modules/next/dist/cli/next-dev.js":            "",
		"node_modules/pinger/package.json":                  `{"name":"pinger","main":"index.js"}`,
		"node_modules/pinger/index.js":                      "",
		"node_modules/unused/package.json":                  `{"name":"unused","main":"index.js"}`,
		"node_modules/unused/index.js":                      "",
		"node_modules/dotenv-expand/package.json":           `{"name":"dotenv-expand","main":"main.js"}`,
		"node_modules/dotenv-expand/main.js":                "",
	}
	g := graphOf(t, files)
	// Test files are no entries (rallly's *.test.tsx under src/app named
	// @testing-library/react, a package the image lacks); a route folder
	// named test is a route.
	want := []string{"node_modules/next/dist/server/lib/start-server.js", "src/app/test/page.tsx", "src/pages/api/ping.js", "src/pages/index.tsx"}
	if diff := cmp.Diff(want, g.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s\nwhy: %s", diff, g.EntryWhy)
	}
	if len(g.MissingPackages) > 0 {
		t.Errorf("missing packages %v: only test files name them", g.MissingPackages)
	}
	for _, f := range []string{"node_modules/next/dist/server/next.js", "node_modules/pinger/index.js", "src/components/Card.tsx"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	// next.config runs at build time: the standalone server.js carries
	// the config it made, so what next.config requires does not ship.
	for _, f := range []string{"node_modules/unused/index.js", "node_modules/next/dist/cli/next-dev.js", "src/lib/unused-helper.js", "next.config.js", "node_modules/dotenv-expand/main.js"} {
		if g.Reached(f) {
			t.Errorf("%s reached", f)
		}
	}

	// A monorepo's standalone output mirrors the workspace: the app's
	// server.js is apps/web/server.js in it (rallly).
	mono := map[string]string{
		"Dockerfile": "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nRUN pnpm build\n" +
			"FROM node:22-slim\nWORKDIR /app\nCOPY --from=builder /app/apps/web/.next/standalone ./\nCMD [\"node\", \"apps/web/server.js\"]\n",
		"package.json":                                               `{"name":"root","private":true}`,
		"apps/web/package.json":                                      `{"name":"web","dependencies":{"next":"15.0.0"}}`,
		"apps/web/next.config.js":                                    "module.exports = { output: 'standalone' }\n",
		"apps/web/src/app/page.tsx":                                  "export default function Page() { return null }\n",
		"apps/docs/package.json":                                     `{"name":"docs","dependencies":{"next":"15.0.0"}}`,
		"apps/docs/next.config.js":                                   "module.exports = {}\n",
		"apps/web/node_modules/next/package.json":                    `{"name":"next","main":"./dist/server/next.js"}`,
		"apps/web/node_modules/next/dist/server/next.js":             "",
		"apps/web/node_modules/next/dist/server/lib/start-server.js": "require('../next')\n",
	}
	if g := graphOf(t, mono); !g.Reached("apps/web/src/app/page.tsx") || !g.Reached("apps/web/node_modules/next/dist/server/next.js") {
		t.Errorf("monorepo standalone: entries %v (%s)", g.Entries, g.EntryWhy)
	}

	// server.js copied from anywhere else is not Next's.
	files["Dockerfile"] = strings.Replace(df, "/app/.next/standalone ./", "/app/build ./", 1)
	if g := graphOf(t, files); len(g.Entries) != 0 {
		t.Errorf("a server.js from /app/build started at %v", g.Entries)
	}
}

// TestPlatformGuardedLoads: a module loaded only in a switch case or an
// if for another system is never loaded in a Linux image
// (@opentelemetry/resources' getMachineId-darwin, -bsd and -win run a
// shell); the Linux case and an unguarded load are followed.
func TestPlatformGuardedLoads(t *testing.T) {
	t.Parallel()
	g := graphOf(t, map[string]string{
		"Dockerfile":   "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json": `{"name":"svc"}`,
		"index.js":     "require('./machine-id')\nrequire('./clip')\n",
		"machine-id.js": `const process = require('process');
async function getMachineId() {
  switch (process.platform) {
    case 'darwin':
      return (await import('./id-darwin.js')).get();
    case 'linux':
      return (await import('./id-linux.js')).get();
    case 'freebsd':
    case 'openbsd':
      return (await import('./id-bsd.js')).get();
    default:
      return (await import('./id-unsupported.js')).get();
  }
}
module.exports = getMachineId;
`,
		"clip.js":           "if (process.platform === 'win32') {\n  module.exports = require('./clip-win');\n} else {\n  module.exports = require('./clip-posix');\n}\nconst name = process.platform === 'darwin' ? require('./name-mac') : 'x';\n",
		"id-darwin.js":      "",
		"id-linux.js":       "",
		"id-bsd.js":         "",
		"id-unsupported.js": "",
		"clip-win.js":       "",
		"clip-posix.js":     "",
		"name-mac.js":       "",
	})
	for _, f := range []string{"id-linux.js", "id-unsupported.js", "clip-posix.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	for _, f := range []string{"id-darwin.js", "id-bsd.js", "clip-win.js", "name-mac.js"} {
		if g.Reached(f) {
			t.Errorf("%s reached, though only another system loads it", f)
		}
	}
}

// TestLoadsInUncalledFunctions: a load in the body of a function that no
// reached file names is not made (@dotenvx/dotenvx's Session loads
// systeminformation only in systemInformation(), which only its login
// command calls); it is made once a reached file names the function, in
// any way (a comment or a string too), and a load in a callback or an IIFE
// belongs to the function around it.
func TestLoadsInUncalledFunctions(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                        "FROM node:22\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"package.json":                      `{"name":"svc","dependencies":{"dotenvx":"1"}}`,
		"index.js":                          "const { config } = require('dotenvx')\nconfig()\nrequire('./late')\nimport('./route.mjs').then((m) => m.default)\n",
		"node_modules/dotenvx/package.json": `{"name":"dotenvx","main":"lib/main.js"}`,
		"node_modules/dotenvx/lib/main.js": `const Session = require('./session')
const config = function (options = {}) {
  const opts = options
  return require('./parse')(opts)
}
module.exports = { config }
`,
		"node_modules/dotenvx/lib/parse.js": "module.exports = (o) => o\n",
		"node_modules/dotenvx/lib/session.js": `class Session {
  constructor () {
    this.store = require('./store')
  }

  async systemInformation () {
    const si = require('systeminformation')
    return si.system()
  }

  async [Symbol.asyncIterator] () {
    require('./iter')
  }

  toJSON () {
    return require('./json')
  }
}
const helpers = {
  unused: function () { require('./helper-a') },
  used: () => { [1].forEach(() => require('./helper-used')) },
}
;(function boot () {
  require('./boot')
})()
function outer () {
  return () => require('./closure')
}
helpers.used()
module.exports = Session
`,
		"node_modules/dotenvx/lib/store.js":           "",
		"node_modules/dotenvx/lib/iter.js":            "",
		"node_modules/dotenvx/lib/json.js":            "",
		"node_modules/dotenvx/lib/helper-a.js":        "",
		"node_modules/dotenvx/lib/helper-used.js":     "",
		"node_modules/dotenvx/lib/boot.js":            "",
		"node_modules/dotenvx/lib/closure.js":         "",
		"node_modules/systeminformation/package.json": `{"name":"systeminformation","main":"lib/index.js"}`,
		"node_modules/systeminformation/lib/index.js": "",
		"late.js":     "// nothing here",
		"route.mjs":   "export default async function handler (req) {\n  const { run } = await import('./handled.mjs')\n  return run(req)\n}\n",
		"handled.mjs": "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"node_modules/dotenvx/lib/parse.js", "node_modules/dotenvx/lib/store.js",
		"node_modules/dotenvx/lib/iter.js", "node_modules/dotenvx/lib/json.js", "node_modules/dotenvx/lib/helper-used.js",
		"node_modules/dotenvx/lib/boot.js", "route.mjs", "handled.mjs"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	for _, f := range []string{"node_modules/systeminformation/lib/index.js", "node_modules/dotenvx/lib/helper-a.js",
		"node_modules/dotenvx/lib/closure.js"} {
		if g.Reached(f) {
			t.Errorf("%s reached, though no reached file names the function that loads it: %v", f, g.Chain(f))
		}
	}

	// A reached file that names the function, even one reached after
	// the definition, makes its loads.
	files["late.js"] = "exports.run = (s) => s.systemInformation()\nexports.o = 'outer'\n"
	g = graphOf(t, files)
	for _, f := range []string{"node_modules/systeminformation/lib/index.js", "node_modules/dotenvx/lib/closure.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached, though late.js names the function that loads it", f)
		}
	}
}

// TestMigrationRunners: a migration runner's computed load reaches the
// app's migration files (from the folder its options name with a literal,
// or its default folder) and the configuration it loads itself; when
// neither is found, the app stays open.
func TestMigrationRunners(t *testing.T) {
	t.Parallel()
	knex := map[string]string{
		"node_modules/knex/package.json":       `{"name":"knex","main":"knex.js","bin":{"knex":"bin/cli.js"}}`,
		"node_modules/knex/knex.js":            "module.exports = require('./lib/import-file');\n",
		"node_modules/knex/lib/import-file.js": "module.exports = async function importFile(p) {\n  return require(p);\n};\n",
		"node_modules/umzug/package.json":      `{"name":"umzug","main":"lib/index.js"}`,
		"node_modules/umzug/lib/index.js":      "const load = async (p) => require(p);\nmodule.exports = { load };\n",
		"node_modules/other/package.json":      `{"name":"other","main":"index.js"}`,
		"node_modules/other/index.js":          "module.exports = (p) => require(p);\n",
		"package.json":                         `{"name":"svc"}`,
		"Dockerfile":                           "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"db/migrate/001_init.js":               "",
		"db/migrate/002_backfill.js":           "require('../../scripts/backfill');\n",
		"scripts/backfill.js":                  "",
		"migrations/old.js":                    "",
		"src/unrelated.js":                     "",
		"knexfile.js":                          "module.exports = { migrations: { directory: './db/migrate' } };\n",
	}
	with := func(extra map[string]string) map[string]string {
		files := map[string]string{}
		for k, v := range knex {
			files[k] = v
		}
		for k, v := range extra {
			files[k] = v
		}
		return files
	}
	t.Run("knex", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{"server.js": "const knex = require('knex');\n"}))
		for _, f := range []string{"knexfile.js", "db/migrate/001_init.js", "db/migrate/002_backfill.js", "scripts/backfill.js", "migrations/old.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached", f)
			}
		}
		if g.Reached("src/unrelated.js") {
			t.Error("src/unrelated.js reached")
		}
		if _, open := g.DynamicIn("src/unrelated.js"); open {
			t.Error("the app is open, though knex's folders were found")
		}
		want := []string{"server.js", "node_modules/knex/knex.js", "node_modules/knex/lib/import-file.js", "db/migrate/002_backfill.js", "scripts/backfill.js"}
		if diff := cmp.Diff(want, g.Chain("scripts/backfill.js")); diff != "" {
			t.Errorf("chain (-want +got):\n%s", diff)
		}
	})
	t.Run("umzug glob from __dirname", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"server.js":       "const { load } = require('umzug');\nconst db = require('./src/db');\n",
			"src/db.js":       "new Umzug({ migrations: { glob: path.join(__dirname, '..', 'src', 'schema', '*.js') } });\n",
			"src/schema/1.js": "",
			"knexfile.js":     "",
		}))
		for _, f := range []string{"src/schema/1.js", "migrations/old.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached", f)
			}
		}
		for _, f := range []string{"knexfile.js", "db/migrate/001_init.js"} {
			if g.Reached(f) {
				t.Errorf("%s reached: umzug reads no knexfile and no directory option", f)
			}
		}
	})
	t.Run("nothing found", func(t *testing.T) {
		t.Parallel()
		files := with(map[string]string{"server.js": "const { Umzug } = require('umzug');\nnew Umzug({ migrations: { glob: process.env.DIR } });\n"})
		delete(files, "migrations/old.js")
		g := graphOf(t, files)
		d, open := g.DynamicIn("src/unrelated.js")
		if !open || !strings.Contains(d.Why, "umzug loads the app's migration files") {
			t.Errorf("DynamicIn(src/unrelated.js) = %+v, %v; want the app open, saying why", d, open)
		}
	})
	t.Run("knex only to query", func(t *testing.T) {
		t.Parallel()
		files := with(map[string]string{"server.js": "const knex = require('knex');\n"})
		delete(files, "knexfile.js")
		delete(files, "db/migrate/001_init.js")
		delete(files, "db/migrate/002_backfill.js")
		g := graphOf(t, files)
		if g.Reached("migrations/old.js") {
			t.Error("migrations/old.js reached, though nothing in the app migrates")
		}
		if _, open := g.DynamicIn("src/unrelated.js"); open {
			t.Error("the app is open, though nothing in the app migrates")
		}
	})
	t.Run("knex driven from a script", func(t *testing.T) {
		t.Parallel()
		files := with(map[string]string{
			"server.js":    "const knex = require('knex');\n",
			"bin/start.sh": "#!/bin/sh\nnpx knex migrate:latest\n",
		})
		delete(files, "knexfile.js")
		delete(files, "db/migrate/001_init.js")
		delete(files, "db/migrate/002_backfill.js")
		g := graphOf(t, files)
		if !g.Reached("migrations/old.js") {
			t.Error("migrations/old.js not reached, though a script runs knex migrate:latest")
		}
	})
	t.Run("typeorm globs, classes and no folder", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"node_modules/typeorm/package.json":        `{"name":"typeorm","main":"index.js"}`,
			"node_modules/typeorm/index.js":            "require('./util/ImportUtils');\n",
			"node_modules/typeorm/util/ImportUtils.js": "exports.load = (filePath) => require(filePath);\n",
			"server.js":           "require('typeorm');\nconst User = require('./src/user');\nnew DataSource({ entities: [User, 'dist/models/*.js'], migrations: ['dist/db/*.js'] });\n",
			"src/user.js":         "",
			"src/models/post.ts":  "",
			"src/db/1-init.ts":    "",
			"dist/models/post.js": "",
		}))
		for _, f := range []string{"dist/models/post.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached", f)
			}
		}
		if _, open := g.DynamicIn("src/unrelated.js"); open {
			t.Error("typeorm opened the app")
		}
	})
	t.Run("typeorm's ormconfig load leaves its own files unreached", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"node_modules/typeorm/package.json":                          `{"name":"typeorm","main":"index.js"}`,
			"node_modules/typeorm/index.js":                              "require('./connection/ConnectionOptionsReader');\nrequire('./platform/PlatformTools');\n",
			"node_modules/typeorm/connection/ConnectionOptionsReader.js": "exports.read = (configFile) => require(configFile);\n",
			"node_modules/typeorm/platform/PlatformTools.js":             "",
			"node_modules/typeorm/commands/InitCommand.js":               "require('child_process').exec('npm install');\n",
			"server.js":      "require('typeorm');\n",
			"ormconfig.json": "{}",
		}))
		if site, open := g.DynamicIn("node_modules/typeorm/commands/InitCommand.js"); open {
			t.Errorf("typeorm's own files opened by %s:%d", site.File, site.Line)
		}
		// Another computed load in the package still opens them.
		files := with(map[string]string{
			"node_modules/typeorm/package.json":              `{"name":"typeorm","main":"index.js"}`,
			"node_modules/typeorm/index.js":                  "require('./platform/PlatformTools');\n",
			"node_modules/typeorm/platform/PlatformTools.js": "exports.load = (name) => require(name);\n",
			"node_modules/typeorm/commands/InitCommand.js":   "",
			"server.js": "require('typeorm');\n",
		})
		if _, open := graphOf(t, files).DynamicIn("node_modules/typeorm/commands/InitCommand.js"); !open {
			t.Error("a computed load outside the files read left typeorm's own files unreached")
		}
		// One by a node_modules path loads an installed package (typeorm
		// 0.3's PlatformTools.load fallback), none of its own files.
		files["node_modules/typeorm/platform/PlatformTools.js"] = "exports.load = (name) => {\n  try { return require(name); } catch (err) {}\n  return require(path.resolve(process.cwd() + \"/node_modules/\" + name));\n};\n"
		if site, open := graphOf(t, files).DynamicIn("node_modules/typeorm/commands/InitCommand.js"); !open || site.Line != 2 {
			t.Errorf("typeorm's own files: open %v by line %d, want open by line 2's require(name) only", open, site.Line)
		}
		files["node_modules/typeorm/platform/PlatformTools.js"] = "exports.load = (name) => require(path.resolve(process.cwd() + \"/node_modules/\" + name));\n"
		if site, open := graphOf(t, files).DynamicIn("node_modules/typeorm/commands/InitCommand.js"); open {
			t.Errorf("a load by a node_modules path opened typeorm's own files (%s:%d)", site.File, site.Line)
		}
	})
	t.Run("node-pg-migrate's method load", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"node_modules/node-pg-migrate/package.json":  `{"name":"node-pg-migrate","main":"dist/index.js"}`,
			"node_modules/node-pg-migrate/dist/index.js": "const loader = async (filePaths) => {\n  for (const p of filePaths) await jitiInstance.import(p);\n};\n",
			"package.json": `{"name":"svc","scripts":{"migrate":"node-pg-migrate up"}}`,
			"server.js":    "require('node-pg-migrate');\n",
			"knexfile.js":  "",
		}))
		if !g.Reached("migrations/old.js") {
			t.Error("migrations/old.js not reached")
		}
		if diff := cmp.Diff([]string{"server.js", "node_modules/node-pg-migrate/dist/index.js", "migrations/old.js"}, g.Chain("migrations/old.js")); diff != "" {
			t.Errorf("chain (-want +got):\n%s", diff)
		}
		if got := g.LoadLine("migrations/old.js"); got != 2 {
			t.Errorf("load line = %d, want 2 (the jitiInstance.import call)", got)
		}
	})
	t.Run("knex-migrator's MigratorConfig", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"node_modules/knex-migrator/package.json": `{"name":"knex-migrator","main":"lib/index.js"}`,
			"node_modules/knex-migrator/lib/index.js": "exports.readTasks = (dir, file) => require(path.join(dir, file));\n",
			"server.js":         "require('knex-migrator');\n",
			"MigratorConfig.js": "module.exports = { migrationPath: path.join(__dirname, 'core/data/migrations') };\n",
			"core/data/migrations/versions/5.0/2022-add-x.js": "",
			"core/data/migrations/hooks/init/index.js":        "",
		}))
		for _, f := range []string{"MigratorConfig.js", "core/data/migrations/versions/5.0/2022-add-x.js", "core/data/migrations/hooks/init/index.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached", f)
			}
		}
		if g.Reached("migrations/old.js") {
			t.Error("migrations/old.js reached: knex-migrator has no default folder")
		}
	})
	t.Run("migrate-mongo's default folder and config", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{
			"node_modules/migrate-mongo/package.json":               `{"name":"migrate-mongo","main":"lib/migrate-mongo.js"}`,
			"node_modules/migrate-mongo/lib/migrate-mongo.js":       "require('./utils/module-loader.js');\n",
			"node_modules/migrate-mongo/lib/utils/module-loader.js": "module.exports = {\n  import(importPath) {\n    return import(importPath);\n  },\n};\n",
			"server.js":                  "require('migrate-mongo');\n",
			"migrate-mongo-config.js":    "module.exports = { migrationsDir: 'db/mongo' };\n",
			"db/mongo/20240101-users.js": "",
		}))
		for _, f := range []string{"migrate-mongo-config.js", "db/mongo/20240101-users.js", "migrations/old.js"} {
			if !g.Reached(f) {
				t.Errorf("%s not reached", f)
			}
		}
	})
	t.Run("mikro-orm's entities by path, no folder", func(t *testing.T) {
		t.Parallel()
		files := with(map[string]string{
			"node_modules/@mikro-orm/core/package.json":      `{"name":"@mikro-orm/core","main":"index.js"}`,
			"node_modules/@mikro-orm/core/index.js":          "require('./utils/fs-utils');\n",
			"node_modules/@mikro-orm/core/utils/fs-utils.js": "exports.dynamicImport = async (id) => import(id);\n",
			"server.js":                "require('@mikro-orm/core');\nMikroORM.init({ entities: ['./dist/modules/*.entity.js'] });\n",
			"dist/modules/a.entity.js": "",
		})
		delete(files, "migrations/old.js")
		g := graphOf(t, files)
		if !g.Reached("dist/modules/a.entity.js") {
			t.Error("dist/modules/a.entity.js not reached")
		}
		delete(files, "dist/modules/a.entity.js")
		files["server.js"] = "require('@mikro-orm/core');\nMikroORM.init({ entities: [User] });\n"
		if _, open := graphOf(t, files).DynamicIn("src/unrelated.js"); open {
			t.Error("mikro-orm given its entities as classes opened the app")
		}
	})
	t.Run("not a runner", func(t *testing.T) {
		t.Parallel()
		g := graphOf(t, with(map[string]string{"server.js": "require('other');\n"}))
		if g.Reached("migrations/old.js") || g.Reached("knexfile.js") {
			t.Error("another package's computed load reached the app's migrations")
		}
		if _, open := g.DynamicIn("src/unrelated.js"); open {
			t.Error("another package's computed load opened the app")
		}
	})
}

func TestLiteralDirs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		want     []string
		fromFile bool
		ok       bool
	}{
		{`"server/migrations", tableName: "x"`, []string{"server/migrations"}, false, true},
		{`'./db/migrate' }`, []string{"db/migrate"}, false, true},
		{`["migrations/*.js", { cwd: path.resolve("server") }]`, []string{"migrations"}, false, true},
		{`path.join(__dirname, 'db', 'migrations'),`, []string{"db/migrations"}, true, true},
		{`path.resolve(process.cwd(), "dist/**/migrations/*.js")`, []string{"dist"}, false, true},
		{`["a/*.js", "b/c/*.ts"]`, []string{"a", "b/c"}, false, true},
		{`dir,`, nil, false, false},
		{`path.join(root, 'migrations')`, nil, false, false},
	} {
		got, fromFile, ok := literalDirs(tc.in)
		if ok != tc.ok || fromFile != tc.fromFile || !cmp.Equal(got, tc.want) {
			t.Errorf("literalDirs(%q) = %q, %v, %v; want %q, %v, %v", tc.in, got, fromFile, ok, tc.want, tc.fromFile, tc.ok)
		}
	}
}

func TestNamedDirs(t *testing.T) {
	t.Parallel()
	text := "class Database {\n  static knexMigrationsPath = \"./db/knex_migrations\";\n}\n" +
		"if (a == b) {}\nconst f = (x) => x;\n" +
		"knex({ migrations: { directory: Database.knexMigrationsPath } });\n"
	v := text[strings.Index(text, "Database.knexMigrationsPath }"):]
	dirs, fromFile, ok := namedDirs(text, v)
	if !ok || fromFile || !cmp.Equal(dirs, []string{"db/knex_migrations"}) {
		t.Errorf("namedDirs = %q, %v, %v; want [db/knex_migrations], false, true", dirs, fromFile, ok)
	}
	if _, _, ok := namedDirs("const dir = process.env.DIR;\n", "dir,"); ok {
		t.Error("a name given no literal was read")
	}
}

// TestRunnerCallback: the app's own load in the function it gives umzug
// as migrations.resolve loads the migration files, not any app file.
func TestRunnerCallback(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":                      "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"package.json":                    `{"name":"svc"}`,
		"node_modules/umzug/package.json": `{"name":"umzug","main":"index.js"}`,
		"node_modules/umzug/index.js":     "module.exports = { Umzug: class {} };\n",
		"server.js":                       "require('./db');\n",
		"db.js": "const { Umzug } = require('umzug');\n" +
			"function runner(glob) {\n  return new Umzug({\n    migrations: {\n      glob,\n" +
			"      resolve: ({ name, path }) => {\n        const m = require(path);\n        return { name, up: () => m.up() };\n      },\n    },\n  });\n}\n" +
			"exports.migrations = runner(['migrations/*.js', { cwd: __dirname }]);\n",
		"migrations/001.js": "require('../scripts/fix');\n",
		"scripts/fix.js":    "",
		"build.js":          "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"migrations/001.js", "scripts/fix.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if diff := cmp.Diff([]string{"server.js", "db.js", "migrations/001.js", "scripts/fix.js"}, g.Chain("scripts/fix.js")); diff != "" {
		t.Errorf("chain (-want +got):\n%s", diff)
	}
	if got := g.LoadLine("migrations/001.js"); got != 7 {
		t.Errorf("load line = %d, want 7 (the require in resolve)", got)
	}
	if d, open := g.DynamicIn("build.js"); open {
		t.Errorf("build.js open through %+v: the callback's load opened the app", d)
	}
	// The same load outside the callback still opens the app.
	files["db.js"] = strings.Replace(files["db.js"], "resolve:", "load:", 1)
	if _, open := graphOf(t, files).DynamicIn("build.js"); !open {
		t.Error("a computed load in a function that is not the runner's callback left the app closed")
	}
}

// TestGlobLoads: a computed load of what a glob in the function around it
// lists reaches the files the glob matches; a pattern path.Match cannot
// read leaves the app open.
func TestGlobLoads(t *testing.T) {
	t.Parallel()
	manager := "const glob = require('glob');\nclass PluginManager {\n  static loadPlugins() {\n" +
		"    const rootDir = process.env.NODE_ENV === 'test' ? '' : 'build';\n" +
		"    glob.sync(path.join(rootDir, 'plugins/*/server/index.[jt]s')).forEach((filePath) => {\n" +
		"      require(path.join(process.cwd(), filePath));\n    });\n  }\n}\nPluginManager.loadPlugins();\n"
	files := map[string]string{
		"Dockerfile":                     "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"package.json":                   `{"name":"svc"}`,
		"server.js":                      "require('./plugins.js');\n",
		"plugins.js":                     manager,
		"plugins/slack/server/index.ts":  "require('./hooks');\n",
		"plugins/slack/server/hooks.ts":  "",
		"plugins/slack/client/index.tsx": "",
		"scripts/release.js":             "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"plugins/slack/server/index.ts", "plugins/slack/server/hooks.ts"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if g.Reached("plugins/slack/client/index.tsx") {
		t.Error("a file the glob does not match was reached")
	}
	if got := g.LoadLine("plugins/slack/server/index.ts"); got != 6 {
		t.Errorf("load line = %d, want 6 (the require)", got)
	}
	if d, open := g.DynamicIn("scripts/release.js"); open {
		t.Errorf("scripts/release.js open through %+v", d)
	}
	files["plugins.js"] = strings.Replace(manager, "'plugins/*/server/index.[jt]s'", "'plugins/**/index.js'", 1)
	if _, open := graphOf(t, files).DynamicIn("scripts/release.js"); !open {
		t.Error("a ** pattern, which path.Match cannot read, left the app closed")
	}
	files["plugins.js"] = strings.Replace(manager, "glob.sync(", "list(", 1)
	if _, open := graphOf(t, files).DynamicIn("scripts/release.js"); !open {
		t.Error("a computed load with no glob around it left the app closed")
	}
}

// TestDirLoads: a helper that loads every file of the folder its callers
// name reaches the files of the folders its callers pass as literals; one
// caller whose folder is not a literal, or no caller that imports it,
// leaves the app open.
func TestDirLoads(t *testing.T) {
	t.Parallel()
	helper := "import path from 'node:path';\nimport fs from 'fs-extra';\n" +
		"export function getFilenamesInDirectory(dirName: string): string[] {\n" +
		"  return fs.readdirSync(dirName).filter((f) => f.match(/\\.[jt]s$/));\n}\n" +
		"export function requireDirectory<T>(dirName: string): [T, string][] {\n" +
		"  return getFilenamesInDirectory(dirName).map((fileName) => {\n" +
		"    const filePath = path.join(dirName, fileName);\n" +
		"    return [require(filePath), fileName];\n  });\n}\n"
	tasks := "import { requireDirectory } from '@server/utils/fs';\n" +
		"requireDirectory<{ default: unknown }>(__dirname).forEach(([m]) => m);\n"
	files := map[string]string{
		"Dockerfile":                    "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server/index.js\"]\n",
		"package.json":                  `{"name":"svc"}`,
		"server/index.js":               "require('./utils/fs');\nrequire('./tasks');\nrequire('./emails');\n",
		"server/utils/fs.ts":            helper,
		"server/tasks/index.ts":         tasks,
		"server/tasks/CleanupTask.ts":   "",
		"server/tasks/nested/Deep.ts":   "",
		"server/emails/index.ts":        "const { requireDirectory } = require('../utils/fs');\nrequireDirectory(path.join(__dirname, 'templates'));\n",
		"server/emails/templates/Hi.ts": "",
		"scripts/release.js":            "",
		// Node's fs, not the helper's file: its requireDirectory is another.
		"scripts/other.js": "const fs = require('fs');\nconst { requireDirectory } = require('require-directory-lib');\nrequireDirectory(process.env.DIR);\n",
	}
	g := graphOf(t, files)
	for _, f := range []string{"server/tasks/CleanupTask.ts", "server/emails/templates/Hi.ts"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if got := g.LoadLine("server/tasks/CleanupTask.ts"); got != 9 {
		t.Errorf("load line = %d, want 9 (the require)", got)
	}
	for _, f := range []string{"server/tasks/nested/Deep.ts", "scripts/release.js"} {
		if g.Reached(f) {
			t.Errorf("%s, in no folder a caller names, was reached", f)
		}
		if d, open := g.DynamicIn(f); open {
			t.Errorf("%s open through %+v", f, d)
		}
	}
	// A helper that loads its parameter as a module name lists no folder,
	// though its file lists one elsewhere.
	loader := map[string]string{}
	for k, v := range files {
		loader[k] = v
	}
	loader["server/utils/fs.ts"] = helper + "export function loadModule(name: string) {\n  return require(name);\n}\n"
	loader["server/tasks/index.ts"] = "import { loadModule } from '@server/utils/fs';\nloadModule('./CleanupTask');\n"
	if _, open := graphOf(t, loader).DynamicIn("scripts/release.js"); !open {
		t.Error("a helper that loads its parameter as a module name left the app closed")
	}
	files["server/emails/index.ts"] = strings.Replace(files["server/emails/index.ts"], "path.join(__dirname, 'templates')", "process.env.TEMPLATES", 1)
	if _, open := graphOf(t, files).DynamicIn("scripts/release.js"); !open {
		t.Error("a caller whose folder is not a literal left the app closed")
	}
	files["server/emails/index.ts"] = ""
	files["server/tasks/index.ts"] = strings.Replace(tasks, "@server/utils/fs", "other-helpers", 1)
	if _, open := graphOf(t, files).DynamicIn("scripts/release.js"); !open {
		t.Error("a helper called only from files that do not import it left the app closed")
	}
}

// TestListedFolderLoads: a file that lists a folder with readdir and
// loads each entry joined to that folder (sequelize's models/index.js,
// web-check's route loader) reaches that folder's files and its
// subfolders' index files, not the rest of the app. A load joined to
// another folder than the one listed, or to a folder that is not a
// literal, leaves the app open.
func TestListedFolderLoads(t *testing.T) {
	t.Parallel()
	models := "const fs = require('fs');\nconst path = require('path');\nconst db = {};\n" +
		"fs.readdirSync(__dirname)\n  .filter((file) => file !== 'index.js')\n" +
		"  .forEach((file) => {\n    const model = require(path.join(__dirname, file))(db);\n  });\nmodule.exports = db;\n"
	server := "import fs from 'fs';\nimport path from 'path';\nconst API_DIR = '/api'; // handlers\n" +
		"const dirPath = path.join(__dirname, API_DIR);\n" +
		"fs.readdirSync(dirPath, { withFileTypes: true })\n  .filter((dirent) => dirent.isFile())\n" +
		"  .forEach(async (dirent) => {\n    const m = await import(path.join(dirPath, dirent.name));\n  });\n" +
		"require('./models');\n"
	files := map[string]string{
		"Dockerfile":           "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"package.json":         `{"name":"svc"}`,
		"server.js":            server,
		"api/status.js":        "",
		"api/trace-route.js":   "",
		"api/nested/index.js":  "",
		"api/nested/deep/x.js": "",
		"models/index.js":      models,
		"models/user.js":       "",
		"scripts/release.js":   "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"api/status.js", "api/trace-route.js", "api/nested/index.js", "models/user.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	if got := g.LoadLine("api/status.js"); got != 8 {
		t.Errorf("load line = %d, want 8 (the import)", got)
	}
	if got := g.LoadLine("models/user.js"); got != 7 {
		t.Errorf("load line = %d, want 7 (the require)", got)
	}
	for _, f := range []string{"api/nested/deep/x.js", "scripts/release.js"} {
		if g.Reached(f) {
			t.Errorf("%s, in no listed folder, was reached", f)
		}
		if d, open := g.DynamicIn(f); open {
			t.Errorf("%s open through %+v", f, d)
		}
	}
	// A recursive listing reaches every file below the folder.
	rec := maps.Clone(files)
	rec["server.js"] = strings.Replace(server, "{ withFileTypes: true }", "{ withFileTypes: true, recursive: true }", 1)
	if g := graphOf(t, rec); !g.Reached("api/nested/deep/x.js") {
		t.Error("a recursive listing did not reach a file two folders down")
	}
	staysOpen(t, files, "server.js", "scripts/release.js", map[string][2]string{
		"a load joined to another folder than the one listed": {"import(path.join(dirPath, dirent.name))", "import(path.join(__dirname, dirent.name))"},
		"a folder that is not a literal":                      {"path.join(__dirname, API_DIR);", "path.join(__dirname, process.env.API);"},
		"a name declared twice":                               {"const API_DIR = '/api';", "let API_DIR = '/api';\nif (x) { var API_DIR = '/v2'; }"},
		"a load of more than the entry":                       {"dirent.name));", "dirent.name, 'index.js'));"},
	})
}

// staysOpen checks that each change of files[file] (its first text
// replaced by its second) leaves probe, an app file no literal load
// reaches, open.
func staysOpen(t *testing.T, files map[string]string, file, probe string, changes map[string][2]string) {
	t.Helper()
	for name, change := range changes {
		changed := maps.Clone(files)
		changed[file] = strings.Replace(files[file], change[0], change[1], 1)
		if changed[file] == files[file] {
			t.Fatalf("%s: the change did not apply", name)
		}
		if _, open := graphOf(t, changed).DynamicIn(probe); !open {
			t.Errorf("%s left the app closed", name)
		}
	}
}

// TestOpenAppLoadsDependencies: a package that only app files a computed
// load leaves open load is open through that load, though not reached; a
// package only a test file loads is not, nor is one no app file loads.
func TestOpenAppLoadsDependencies(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":          "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"package.json":        `{"name":"svc"}`,
		"server.js":           "const path = require('path');\nconst r = require(path.join(__dirname, 'routes', process.env.ROUTE));\n",
		"routes/backup.js":    "require('archiver-tool');\n",
		"test/backup.test.js": "require('lint-helper');\n",
		"node_modules/archiver-tool/package.json": `{"name":"archiver-tool","main":"index.js"}`,
		"node_modules/archiver-tool/index.js":     "require('./lib/tar');\n",
		"node_modules/archiver-tool/lib/tar.js":   "",
		"node_modules/lint-helper/package.json":   `{"name":"lint-helper","main":"index.js"}`,
		"node_modules/lint-helper/index.js":       "",
		"node_modules/other/package.json":         `{"name":"other","main":"index.js"}`,
		"node_modules/other/index.js":             "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"node_modules/archiver-tool/index.js", "node_modules/archiver-tool/lib/tar.js"} {
		if g.Reached(f) {
			t.Errorf("%s reached: no literal load leads to it from the entrypoint", f)
		}
		if d, open := g.DynamicIn(f); !open || d.File != "server.js" || d.Line != 2 {
			t.Errorf("%s: open = %v through %+v, want open through server.js:2", f, open, d)
		}
	}
	for _, f := range []string{"node_modules/lint-helper/index.js", "node_modules/other/index.js"} {
		if d, open := g.DynamicIn(f); open {
			t.Errorf("%s open through %+v", f, d)
		}
	}
}

// TestNamedLoads: a computed load of a name the file declares once with a
// literal path (a path.join from __dirname, or a string) is a literal load
// of that path; a name given another value, or a path joined to another
// folder than __dirname, keeps the load computed and the app open.
func TestNamedLoads(t *testing.T) {
	t.Parallel()
	server := "const path = require('path');\n" +
		"const ssrHandlerPath = path.join(__dirname, 'dist', 'server', 'entry.mjs');\n" +
		"const plugin = './plugins/main.js';\n" +
		"import(ssrHandlerPath).then((m) => m.handler);\nrequire(plugin);\n"
	files := map[string]string{
		"Dockerfile":            "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"server.js\"]\n",
		"package.json":          `{"name":"svc"}`,
		"server.js":             server,
		"dist/server/entry.mjs": "",
		"plugins/main.js":       "",
		"scripts/release.js":    "",
	}
	g := graphOf(t, files)
	for f, line := range map[string]int{"dist/server/entry.mjs": 4, "plugins/main.js": 5} {
		if !g.Reached(f) || g.LoadLine(f) != line {
			t.Errorf("%s: reached %v at line %d, want line %d", f, g.Reached(f), g.LoadLine(f), line)
		}
	}
	if d, open := g.DynamicIn("scripts/release.js"); open {
		t.Errorf("the app is open through %+v", d)
	}
	staysOpen(t, files, "server.js", "scripts/release.js", map[string][2]string{
		"a name given another value":        {"require(plugin);", "plugin = process.env.PLUGIN;\nrequire(plugin);"},
		"a join from the working directory": {"path.join(__dirname, 'dist'", "path.join(process.cwd(), 'dist'"},
	})
}

// TestSvelteKitAliases: in a package with a svelte.config file, $lib is
// its src/lib folder and $app/…, $env/… are modules the build provides:
// neither opens the app. Without svelte.config, $lib stays an alias the
// walk cannot follow.
func TestSvelteKitAliases(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Dockerfile":       "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY . .\nCMD [\"scripts/main.js\"]\n",
		"package.json":     `{"name":"svc"}`,
		"svelte.config.js": "export default {};\n",
		"scripts/main.js":  "import q from '../src/lib/server/queue.ts';\n",
		"src/lib/server/queue.ts": "import send from \"$lib/server/notify/webhook.js\";\n" +
			"import { env } from '$env/dynamic/private';\nimport { browser } from '$app/environment';\n",
		"src/lib/server/notify/webhook.ts": "",
		"tools/release.js":                 "",
	}
	g := graphOf(t, files)
	if !g.Reached("src/lib/server/notify/webhook.ts") {
		t.Error("$lib/server/notify/webhook.js did not reach src/lib/server/notify/webhook.ts")
	}
	if d, open := g.DynamicIn("tools/release.js"); open {
		t.Errorf("the app is open through %+v", d)
	}
	delete(files, "svelte.config.js")
	if _, open := graphOf(t, files).DynamicIn("tools/release.js"); !open {
		t.Error("$lib without svelte.config left the app closed")
	}
}

// TestEntrypointScriptSteps: an entrypoint script that does more than set
// defaults (it migrates, then execs node) still needs its shell, but the
// graph starts from the node commands it runs: the npx bin and the server.
// A script that runs a command built at run time leaves the entry unknown.
func TestEntrypointScriptSteps(t *testing.T) {
	t.Parallel()
	script := "#!/bin/sh\nset -ex\necho \"Running database migrations\"\nnpx migrator up\nmkdir -p /data\n" +
		"if [ -n \"$SEED\" ]; then npx migrator seed; fi\nexec node main \"$@\"\n"
	files := map[string]string{
		"Dockerfile":                         "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"/app/entrypoint.sh\"]\n",
		"package.json":                       `{"name":"svc","dependencies":{"migrator":"1.0.0"}}`,
		"entrypoint.sh":                      script,
		"main.js":                            "require('./lib');\n",
		"lib.js":                             "",
		"tools/release.js":                   "",
		"node_modules/migrator/package.json": `{"name":"migrator","bin":{"migrator":"cli.js"}}`,
		"node_modules/migrator/cli.js":       "require('./run');\n",
		"node_modules/migrator/run.js":       "",
		"node_modules/other/package.json":    `{"name":"other","main":"index.js"}`,
		"node_modules/other/index.js":        "",
	}
	g := graphOf(t, files)
	if diff := cmp.Diff([]string{"node_modules/migrator/cli.js", "main.js"}, g.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s (why: %s)", diff, g.EntryWhy)
	}
	for _, f := range []string{"lib.js", "node_modules/migrator/run.js"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached", f)
		}
	}
	for _, f := range []string{"tools/release.js", "node_modules/other/index.js"} {
		if g.Reached(f) {
			t.Errorf("%s reached", f)
		}
	}
	files["entrypoint.sh"] = strings.Replace(script, "mkdir -p /data", "$SETUP_COMMAND", 1)
	if g := graphOf(t, files); len(g.Entries) != 0 {
		t.Errorf("entries %v, though the script runs a command built at run time", g.Entries)
	}
}

// TestNitroOutput: a Nuxt app's .output, copied into the image and
// started with node server/index.mjs, starts the graph at nitro's
// node-server runtime, Nuxt's server runtime and the app's server and app
// sources; build tooling its package.json also installs is not reached.
// A specifier npm cannot publish is not a missing package.
func TestNitroOutput(t *testing.T) {
	t.Parallel()
	df := "FROM node:22 AS build\nWORKDIR /app\nCOPY src ./\nRUN npm ci && npm run build\n" +
		"FROM node:22-slim\nWORKDIR /app\nCOPY --from=build /app/.output /app\nCMD [\"node\", \"server/index.mjs\"]\n"
	files := map[string]string{
		"Dockerfile":                                          df,
		"src/package.json":                                    `{"name":"web","dependencies":{"nuxt":"4.5.2","pinger":"1.0.0"},"devDependencies":{"vite":"8.0.0"}}`,
		"src/nuxt.config.ts":                                  "export default defineNuxtConfig({ modules: [] })\n",
		"src/server/api/ping.get.ts":                          "import ping from 'pinger'\nexport default defineEventHandler(() => ping('x'))\n",
		"src/server/utils/cmd.ts":                             "export const gen = () => `import x from \"() => import(\\\".\"`\n",
		"src/app/pages/index.vue":                             "<script setup>\nconst a = 1\n</script>\n",
		"src/app/composables/useX.ts":                         "export const useX = () => 1\n",
		"src/scripts/release.ts":                              "",
		"src/node_modules/nuxt/package.json":                  `{"name":"nuxt","main":"dist/index.mjs"}`,
		"src/node_modules/nuxt/dist/index.mjs":                "",
		"src/node_modules/nuxt/dist/runtime/server/render.js": "",
		"src/node_modules/nuxt/dist/app/nuxt.js":              "",
		"src/node_modules/nitropack/package.json":             `{"name":"nitropack","main":"dist/index.mjs"}`,
		"src/node_modules/nitropack/dist/presets/node/runtime/node-server.mjs": "import 'h3'\n",
		"src/node_modules/nitropack/dist/runtime/app.mjs":                      "",
		"src/node_modules/nitropack/dist/cli/build.mjs":                        "",
		"src/node_modules/h3/package.json":                                     `{"name":"h3","main":"index.mjs"}`,
		"src/node_modules/h3/index.mjs":                                        "",
		"src/node_modules/pinger/package.json":                                 `{"name":"pinger","main":"index.js"}`,
		"src/node_modules/pinger/index.js":                                     "",
		"src/node_modules/vite/package.json":                                   `{"name":"vite","main":"index.js"}`,
		"src/node_modules/vite/index.js":                                       "",
	}
	g := graphOf(t, files)
	for _, f := range []string{"src/node_modules/nitropack/dist/presets/node/runtime/node-server.mjs", "src/node_modules/h3/index.mjs",
		"src/node_modules/nuxt/dist/runtime/server/render.js", "src/server/api/ping.get.ts", "src/node_modules/pinger/index.js",
		"src/app/composables/useX.ts", "src/nuxt.config.ts"} {
		if !g.Reached(f) {
			t.Errorf("%s not reached (entries %v, %s)", f, g.Entries, g.EntryWhy)
		}
	}
	for _, f := range []string{"src/node_modules/vite/index.js", "src/node_modules/nitropack/dist/cli/build.mjs", "src/scripts/release.ts"} {
		if g.Reached(f) {
			t.Errorf("%s reached", f)
		}
	}
	if len(g.MissingPackages) != 0 {
		t.Errorf("missing packages %v: a string of code is not a package", g.MissingPackages)
	}
	// index.mjs copied from anywhere else is not Nitro's.
	files["Dockerfile"] = strings.Replace(df, "/app/.output /app", "/app/dist /app", 1)
	if g := graphOf(t, files); len(g.Entries) != 0 {
		t.Errorf("a server/index.mjs from /app/dist started at %v", g.Entries)
	}
}
