package childprocess

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
)

func writeRepo(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runProbe(t *testing.T, dir string) probe.Output {
	t.Helper()
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := New().Run(t.Context(), repo, &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("invalid output: %v", err)
	}
	var reg probe.Warnings
	reg.MustRegister(Warnings...)
	for _, w := range out.Warnings {
		if _, ok := reg.Lookup(w.ID); !ok {
			t.Errorf("unregistered warning %s", w.ID)
		}
		if strings.Contains(w.Message, "\n") {
			t.Errorf("warning %s message has a newline: %q", w.ID, w.Message)
		}
	}
	return out
}

func warningIDs(out probe.Output) []string {
	var ids []string
	for _, w := range out.Warnings {
		ids = append(ids, w.ID)
	}
	sort.Strings(ids)
	return ids
}

// fixture is a service with production dependencies (one nested, one
// hoisted, one scoped, a cycle), a devDependency and an unused package
// that shell out, and an optional dependency that is not installed.
var fixture = map[string]string{
	"package.json": `{
  "name": "svc", "version": "1.0.0",
  "dependencies": {"arch": "^2.2.0", "@acme/util": "1.0.0"},
  "optionalDependencies": {"fsevents": "*"},
  "devDependencies": {"devtool": "1.0.0"}
}`,
	"src/index.js": "const { execSync } = require('child_process');\n" +
		"const rev = execSync('git rev-parse HEAD').toString();\n",
	"src/server.ts": "import { spawn } from 'node:child_process';\n" +
		"// child_process is only used for the health check\n" +
		"export function check() { return spawn('curl', ['-f', 'http://localhost/']); }\n",
	"src/comment.js":    "// we never use child_process here\nmodule.exports = 1;\n",
	"src/types.d.ts":    "import { exec } from 'child_process';\nexec('not code');\n",
	"src/README.md":     "require('child_process').exec('docs')\n",
	"test/util.test.js": "const cp = require('child_process');\ncp.fork('./helper.js');\n",

	"node_modules/arch/package.json": `{"name":"arch","version":"2.2.0","dependencies":{"inner":"^1.0.0"}}`,
	"node_modules/arch/index.js": "var cp = require('child_process')\n" +
		"module.exports = function arch () {\n" +
		"  var bits = cp.execSync('getconf LONG_BIT', { encoding: 'utf8' })\n" +
		"}\n",
	"node_modules/arch/README.md":                       "cp.execSync('getconf LONG_BIT') from child_process\n",
	"node_modules/arch/node_modules/inner/package.json": `{"name":"inner","version":"1.0.0","dependencies":{"hoisted":"3"}}`,
	"node_modules/arch/node_modules/inner/lib/run.js":   "const { spawn } = require('child_process');\nspawn('ffmpeg', ['-version']);\n",
	"node_modules/hoisted/package.json":                 `{"name":"hoisted","version":"3.1.0","dependencies":{"arch":"2"},"devDependencies":{"devtool":"1"}}`,
	"node_modules/hoisted/index.mjs":                    "import { fork } from 'node:child_process';\nfork('./w.js');\n",
	"node_modules/@acme/util/package.json":              `{"name":"@acme/util","version":"1.0.0","peerDependencies":{"not-installed-peer":"1"}}`,
	"node_modules/@acme/util/index.cjs":                 "const cp = require('child_process');\nexports.run = (cmd) => cp.spawn(cmd, { shell: process.platform === 'win32' });\n",
	"node_modules/@acme/util/index.d.ts":                "child_process",
	// Not reached: the root's inner is shadowed by arch's nested copy.
	"node_modules/inner/package.json": `{"name":"inner","version":"1.5.0"}`,
	"node_modules/inner/index.js":     "require('child_process').execSync('rm -rf /tmp/x');\n",
	// A devDependency that shells out.
	"node_modules/devtool/package.json": `{"name":"devtool","version":"1.0.0"}`,
	"node_modules/devtool/index.js":     "require('child_process').execSync('make');\n",
}

func TestRunRepository(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, fixture)
	out := runProbe(t, dir)
	if out.Confidence != probe.High || out.Uncacheable {
		t.Fatalf("confidence %s (%s: %s), uncacheable %v; want high and cacheable", out.Confidence, out.Reason, out.Detail, out.Uncacheable)
	}
	want := &Facts{
		Findings: []Finding{
			{File: "node_modules/@acme/util/index.cjs", Line: 2, Column: 24, Function: "spawn", Kind: KindMaybeShell, Origin: OriginDependency, Package: "@acme/util", PackageVersion: "1.0.0", Within: "run"},
			{File: "node_modules/arch/index.js", Line: 3, Column: 14, Function: "execSync", Kind: KindShell, Command: "getconf LONG_BIT", Binary: "getconf", Origin: OriginDependency, Package: "arch", PackageVersion: "2.2.0"},
			{File: "node_modules/arch/node_modules/inner/lib/run.js", Line: 2, Column: 1, Function: "spawn", Kind: KindBinary, Command: "ffmpeg", Binary: "ffmpeg", Origin: OriginDependency, Package: "inner", PackageVersion: "1.0.0"},
			{File: "node_modules/hoisted/index.mjs", Line: 2, Column: 1, Function: "fork", Kind: KindNode, Command: "./w.js", Origin: OriginDependency, Package: "hoisted", PackageVersion: "3.1.0"},
			{File: "src/index.js", Line: 2, Column: 13, Function: "execSync", Kind: KindShell, Command: "git rev-parse HEAD", Binary: "git", Origin: OriginApp},
			{File: "src/server.ts", Line: 3, Column: 34, Function: "spawn", Kind: KindBinary, Command: "curl", Binary: "curl", Origin: OriginApp, Within: "check"},
			{File: "test/util.test.js", Line: 2, Column: 1, Function: "fork", Kind: KindNode, Command: "./helper.js", Origin: OriginApp},
		},
		Counts: Counts{
			App:        KindCounts{Shell: 1, Binary: 1, Node: 1},
			Dependency: KindCounts{Shell: 1, MaybeShell: 1, Binary: 1, Node: 1},
		},
		// App: index.js, server.ts, comment.js, util.test.js. Dependencies:
		// arch/index.js, inner/lib/run.js, hoisted/index.mjs,
		// @acme/util/index.cjs. comment.js names child_process in prose
		// only, so it is not parsed.
		FilesScanned:        8,
		FilesParsed:         7,
		NodeModules:         true,
		DependenciesScanned: 4,
	}
	// Scopes need a Dockerfile; TestScopes covers them.
	ignoreScope := cmpopts.IgnoreFields(Finding{}, "Scope", "ScopeNote", "Chain")
	if diff := cmp.Diff(want, out.Facts, ignoreScope, cmpopts.IgnoreFields(Facts{}, "Graph")); diff != "" {
		t.Errorf("facts (-want +got):\n%s", diff)
	}
	wantIDs := []string{
		WarnBinaryInApp, WarnBinaryInDependency, WarnMaybeShellInDependency, WarnShellInApp, WarnShellInDependency,
	}
	if diff := cmp.Diff(wantIDs, warningIDs(out)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(out.Evidence) != len(want.Findings) {
		t.Errorf("%d evidence entries, want one per finding (%d)", len(out.Evidence), len(want.Findings))
	}
	for _, w := range out.Warnings {
		if w.ID == WarnShellInDependency && w.Message != `arch@2.2.0 node_modules/arch/index.js:3: execSync("getconf LONG_BIT") runs a shell` {
			t.Errorf("message %q", w.Message)
		}
	}
}

func TestRunConfidence(t *testing.T) {
	t.Parallel()
	// spawn needs a parse to classify: a token scan leaves the file unread.
	big := "// " + strings.Repeat("x", MaxParseBytes) + "\nrequire('child_process').spawn(cmd)\n"
	tests := []struct {
		name       string
		files      map[string]string
		reason     probe.Reason
		ids        []string
		findings   int
		missing    []MissingDependency
		parseErrs  []string
		tooLarge   []string
		wantFacts  bool
		uncachable bool
	}{
		{
			name: "no node_modules",
			files: map[string]string{
				"package.json": `{"dependencies":{"arch":"2"}}`,
				"index.js":     "require('child_process').exec('ls')",
			},
			reason: ReasonDependenciesNotInstalled, ids: []string{WarnDependencyNotInstalled, WarnShellInApp}, findings: 1,
		},
		{
			name: "dependency missing",
			files: map[string]string{
				"package.json":                   `{"dependencies":{"arch":"2","gone":"1"}}`,
				"node_modules/arch/package.json": `{"name":"arch","version":"2.0.0","dependencies":{"also-gone":"1"}}`,
			},
			reason: ReasonDependenciesNotInstalled, ids: []string{WarnDependencyNotInstalled, WarnDependencyNotInstalled},
			missing: []MissingDependency{{Name: "also-gone", RequiredBy: "arch@2.0.0"}, {Name: "gone", RequiredBy: "package.json"}},
		},
		{
			name: "syntax error",
			files: map[string]string{
				"a.js": "const cp = require('child_process');\ncp.exec('ls');\nfunction (( {\n",
			},
			reason: ReasonParseErrors, ids: []string{WarnParseError, WarnShellInApp}, findings: 1, parseErrs: []string{"a.js"},
		},
		{
			name: "too large",
			files: map[string]string{
				"bundle.js": big,
				"prose.js":  "// " + strings.Repeat("y", MaxParseBytes) + "\n// child_process\n",
				"small.js":  "// 'child_process'\n",
			},
			reason: ReasonFilesTooLarge, ids: []string{WarnFileTooLarge}, tooLarge: []string{"bundle.js"},
		},
		{
			name: "invalid root package.json",
			files: map[string]string{
				"package.json":                   `{"dependencies": [}`,
				"node_modules/arch/package.json": `{}`,
			},
			reason: ReasonInvalidPackageJSON, ids: []string{WarnInvalidPackageJSON},
		},
		{
			name: "invalid dependency package.json",
			files: map[string]string{
				"package.json":                   `{"dependencies":{"arch":"2"}}`,
				"node_modules/arch/package.json": `{"name": 7}`,
				"node_modules/arch/index.js":     "require('child_process').execSync('getconf LONG_BIT')",
			},
			reason: ReasonInvalidPackageJSON, ids: []string{WarnInvalidPackageJSON, WarnShellInDependency}, findings: 1,
		},
		{
			name: "hostile dependency names stay in node_modules",
			files: map[string]string{
				"package.json":                   `{"dependencies":{"../src":"1","@x/../../y":"1","arch":"2"}}`,
				"node_modules/arch/package.json": `{"dependencies":{"/etc":"1"}}`,
				"src/package.json":               `{}`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeRepo(t, dir, tt.files)
			out := runProbe(t, dir)
			wantConf := probe.High
			if tt.reason != "" {
				wantConf = probe.Medium
			}
			if out.Confidence != wantConf || out.Reason != tt.reason {
				t.Errorf("confidence %s/%s (%s), want %s/%s", out.Confidence, out.Reason, out.Detail, wantConf, tt.reason)
			}
			if diff := cmp.Diff(tt.ids, warningIDs(out)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			f := out.Facts.(*Facts)
			if len(f.Findings) != tt.findings {
				t.Errorf("findings = %+v, want %d", f.Findings, tt.findings)
			}
			if diff := cmp.Diff(tt.missing, f.MissingDependencies); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.parseErrs, f.ParseErrors); diff != "" {
				t.Errorf("parse errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.tooLarge, f.TooLarge); diff != "" {
				t.Errorf("too large (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMentionsModule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{"require('child_process')", true},
		{`import x from "node:child_process"`, true},
		{"await import(`child_process`)", true},
		{"// uses child_process for builds", false},
		{"'child_process\"", false},
		{"'node:child_process", false},
		{"child_process'", false},
		{"x:child_process'", false},
		{"'child_processes'", false},
		{"child_process child_process 'child_process'", true},
		{`import cp from "promisify-child-process"`, true},
		{"require('child-process-promise')", true},
		{"'my-child-process'", false},
		{"'promisify-child-process-extra'", false},
		{`import spawn from 'cross-spawn'`, true},
		{"'cross-spawn-async'", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := mentionsModule([]byte(tt.src)); got != tt.want {
			t.Errorf("mentionsModule(%q) = %v, want %v", tt.src, got, tt.want)
		}
		// Streamed, with the match across every possible chunk boundary.
		for cut := 0; cut <= len(tt.src); cut++ {
			r := io.MultiReader(strings.NewReader(tt.src[:cut]), strings.NewReader(tt.src[cut:]))
			if got, err := streamMentions(r); err != nil || got != tt.want {
				t.Errorf("streamMentions(%q cut at %d) = %v, %v; want %v", tt.src, cut, got, err, tt.want)
			}
		}
	}
}

func TestParseErrorEvidence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{"lib/a.js": "const cp = require('child_process');\ncp.exec('ls');\nfunction (( {\n"})
	out := runProbe(t, dir)
	var got []probe.Evidence
	for _, w := range out.Warnings {
		if w.ID == WarnParseError {
			got = append(got, w.Evidence...)
		}
	}
	if diff := cmp.Diff([]probe.Evidence{{File: "lib/a.js", Line: 3, Column: 1}}, got); diff != "" {
		t.Errorf("parse error evidence (-want +got):\n%s", diff)
	}
}

// TestSymlinks covers a pnpm layout (node_modules/<name> is a symlink into
// node_modules/.pnpm) and a source file linking outside the repository.
func TestSymlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outside := t.TempDir()
	store := "node_modules/.pnpm/arch@2.2.0/node_modules/"
	writeRepo(t, dir, map[string]string{
		"package.json":              `{"dependencies":{"arch":"2"}}`,
		store + "arch/package.json": `{"name":"arch","version":"2.2.0","dependencies":{"dep":"1"}}`,
		store + "arch/index.js":     "require('child_process').execSync('getconf LONG_BIT')\n",
		"node_modules/.pnpm/dep@1.0.0/node_modules/dep/package.json": `{"name":"dep","version":"1.0.0"}`,
		"node_modules/.pnpm/dep@1.0.0/node_modules/dep/index.js":     "require('child_process').spawn('git')\n",
	})
	writeRepo(t, outside, map[string]string{"secret.js": "require('child_process').exec('outside')\n"})
	links := map[string]string{
		"node_modules/arch": ".pnpm/arch@2.2.0/node_modules/arch",
		store + "dep":       "../../dep@1.0.0/node_modules/dep",
		"src/evil.js":       filepath.Join(outside, "secret.js"),
		"src/same.js":       "../node_modules/.pnpm/arch@2.2.0/node_modules/arch/index.js",
		"src/dangling.js":   "nowhere.js",
	}
	for name, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	out := runProbe(t, dir)
	if !out.Uncacheable {
		t.Error("an output that followed symlinks is cacheable")
	}
	f := out.Facts.(*Facts)
	var got []string
	for _, x := range f.Findings {
		got = append(got, x.File+" "+x.Package+" "+string(x.Kind))
	}
	want := []string{
		"node_modules/.pnpm/arch@2.2.0/node_modules/arch/index.js arch shell",
		"node_modules/.pnpm/dep@1.0.0/node_modules/dep/index.js dep binary",
		"src/same.js  shell",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if !cmp.Equal([]string{WarnBinaryInDependency, WarnOutsideRepository, WarnShellInApp, WarnShellInDependency}, warningIDs(out)) {
		t.Errorf("warnings = %v", warningIDs(out))
	}
}

func TestDesc(t *testing.T) {
	t.Parallel()
	d := New().Desc()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.Name != Name || d.Heaviness != probe.Light || d.CacheStrategy != probe.CacheContent {
		t.Errorf("desc = %+v", d)
	}
	var reg probe.Warnings
	for _, w := range Warnings {
		if !strings.HasPrefix(w.ID, Name+".") {
			t.Errorf("warning %s is not in the probe's namespace", w.ID)
		}
		if err := reg.Register(w); err != nil {
			t.Error(err)
		}
	}
}

// TestDeclaredInputsCoverOutput runs the probe through the pipeline with a
// cache: an unchanged repository is a hit with identical bytes, and every
// kind of change the output depends on is a miss.
func TestDeclaredInputsCoverOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, fixture)
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg := probe.NewRegistry()
	reg.Warnings().MustRegister(Warnings...)
	reg.MustRegister(New())
	p := &pipeline.Pipeline{Registry: reg, Cache: c, Version: "test"}
	gather := func() pipeline.Record {
		t.Helper()
		repo, err := probe.OpenRepo(dir)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := p.Run(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		return recs[0]
	}
	first := gather()
	if first.CacheHit || !first.Cacheable || first.Result.Confidence != probe.High {
		t.Fatalf("first run: hit %v, cacheable %v, %s (%s)", first.CacheHit, first.Cacheable, first.Result.Confidence, first.Result.Detail)
	}
	if again := gather(); !again.CacheHit || !bytes.Equal(again.Raw, first.Raw) {
		t.Fatalf("unchanged repository: hit %v, identical %v", again.CacheHit, bytes.Equal(again.Raw, first.Raw))
	}
	changes := []struct{ file, body string }{
		{"src/index.js", "require('child_process').exec('changed')\n"},
		{"src/new/thing.tsx", "import { exec } from 'child_process'; exec('new');\n"},
		{"package.json", `{"dependencies":{"arch":"^2.2.0"}}`},
		{"node_modules/arch/index.js", "require('child_process').exec('changed')\n"},
		{"node_modules/arch/lib/extra.cjs", "require('child_process').exec('new file')\n"},
		{"node_modules/arch/node_modules/inner/package.json", `{"name":"inner","version":"1.0.1"}`},
		{"node_modules/hoisted/index.mjs", "\n"},
	}
	for _, ch := range changes {
		writeRepo(t, dir, map[string]string{ch.file: ch.body})
		rec := gather()
		if rec.CacheHit {
			t.Errorf("after changing %s: cache hit", ch.file)
		}
		if again := gather(); !again.CacheHit {
			t.Errorf("after changing %s: second run missed", ch.file)
		}
	}
}

// TestWorkspaceMembersDependencies: the root's workspace packages' own
// dependencies are production code, hoisted or not; a member whose
// dependency the image leaves out is not a missing dependency.
func TestWorkspaceMembersDependencies(t *testing.T) {
	t.Parallel()
	shelly := `const { exec } = require("child_process"); module.exports = (n) => exec("command -v " + n);`
	tests := []struct {
		name, root string
		more       map[string]string
		want       []string // packages scanned
	}{
		{name: "workspaces list", root: `{"private": true, "workspaces": ["apps/*"]}`, want: []string{"shelly"}},
		{name: "workspaces object", root: `{"private": true, "workspaces": {"packages": ["apps/**"]}}`, want: []string{"shelly"}},
		{name: "pnpm-workspace.yaml", root: `{"private": true}`, more: map[string]string{"pnpm-workspace.yaml": "packages:\n  - 'apps/*'\n"}, want: []string{"shelly"}},
		{name: "a negated member", root: `{"private": true, "workspaces": ["apps/*", "!apps/api"]}`},
		{name: "no workspaces", root: `{"private": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{
				"package.json":                     tt.root,
				"apps/api/package.json":            `{"name": "api", "dependencies": {"shelly": "1.0.0", "left-out": "1.0.0"}}`,
				"apps/api/index.js":                `require("shelly")("git");`,
				"node_modules/shelly/package.json": `{"name": "shelly", "version": "1.0.0"}`,
				"node_modules/shelly/index.js":     shelly,
				"docs/package.json":                `{"name": "docs", "dependencies": {"other": "1.0.0"}}`,
				"node_modules/other/package.json":  `{"name": "other", "version": "1.0.0"}`,
				"node_modules/other/index.js":      shelly,
			}
			for k, v := range tt.more {
				files[k] = v
			}
			writeRepo(t, dir, files)
			out := runProbe(t, dir)
			f := out.Facts.(*Facts)
			var got []string
			for _, x := range f.Findings {
				if x.Origin == "dependency" {
					got = append(got, x.Package)
				}
			}
			if !cmp.Equal(got, tt.want) || len(f.MissingDependencies) != 0 {
				t.Errorf("dependency findings in %q, missing %v; want %q and none missing", got, f.MissingDependencies, tt.want)
			}
		})
	}
}

// TestCompatibleModules: an app's call of a package that exports
// child_process's own functions (promisify-child-process) with a literal
// command is judged like child_process's.
func TestCompatibleModules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"package.json": `{"name":"svc","version":"1.0.0"}`,
		"server.ts": "import childProcessAsync from \"promisify-child-process\";\n" +
			"export async function networks() {\n  return childProcessAsync.spawn(\"docker\", [\"network\", \"ls\"], { encoding: \"utf-8\" });\n}\n" +
			"export const ps = () => childProcessAsync.exec(\"docker ps | head -1\");\n",
	})
	out := runProbe(t, dir)
	var got []string
	for _, f := range out.Facts.(*Facts).Findings {
		got = append(got, fmt.Sprintf("%s:%d %s %s %s", f.File, f.Line, f.Function, f.Kind, f.Command))
	}
	want := []string{"server.ts:3 spawn binary docker", "server.ts:5 exec shell docker ps | head -1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestCrossSpawn: cross-spawn's export is spawn, with spawn and sync
// (spawnSync) as properties; on Linux it passes its arguments and options
// to child_process's function unchanged, so the app's calls of it are
// judged as spawn's, in each way it is loaded.
func TestCrossSpawn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"package.json": `{"name":"svc","version":"1.0.0"}`,
		"run.ts": "import spawn from 'cross-spawn';\n" +
			"export const version = () => spawn('pnpm', ['--version']);\n" +
			"export const gitSync = () => spawn.sync('git', ['status']);\n" +
			"export const viaShell = () => spawn('ls', ['-l'], { shell: true });\n" +
			"export const run = (args: string[]) => spawn(args[0], args.slice(1));\n" +
			"export const parsed = spawn._parse;\n",
		"lib.js": "const crossSpawn = require('cross-spawn');\nconst { sync } = require('cross-spawn');\n" +
			"crossSpawn.spawn('ffmpeg', ['-version']);\nsync('convert', ['in.png', 'out.jpg']);\n",
		"named.mjs": "import { sync as spawnSync } from 'cross-spawn';\nspawnSync('node', ['x.js']);\n",
		"other.js":  "const spawn = require('cross-spawn-async');\nspawn('make');\n",
	})
	got := findingLines(runProbe(t, dir))
	want := []string{
		"lib.js:3 spawn binary ffmpeg",
		"lib.js:4 spawnSync binary convert",
		"named.mjs:2 spawnSync binary node",
		"run.ts:2 spawn binary pnpm",
		"run.ts:3 spawnSync binary git",
		"run.ts:4 spawn shell ls",
		"run.ts:5 spawn dynamic",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// TestExportedWrapperCalls: the literal commands that app files pass to a
// function another app module exports, which hands that parameter (or its
// first element) to spawn, are calls of their own at those arguments, for
// each way a module exports the function and an importer binds it. A
// caller that passes a variable adds nothing, a function that gives the
// parameter another value is no wrapper, and the wrapper's own call stays
// a command that is not a literal. A module that loads the wrapper's
// module whole calls it as a property, and a barrel that re-exports it
// exports it too.
func TestExportedWrapperCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRepo(t, dir, map[string]string{
		"package.json": `{"name":"svc","version":"1.0.0","main":"index.js"}`,
		"Dockerfile":   "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
		"index.js":     "require('./a'); require('./b'); require('./c.mjs'); require('./d'); require('./e'); require('./f'); require('./g.mjs'); require('./h.mjs');\n",
		"win.js": "const { spawn } = require('child_process');\n" +
			"exports.open = (target) => {\n  if (process.platform !== 'win32') return;\n  spawn(target, [], { detached: true });\n};\n",
		"commented.js": "const { execFileSync } = require('child_process');\n" +
			"function run(/* program */ cmd, args) { return execFileSync(cmd, args); }\nmodule.exports = run;\n",
		"e.js": "const { open } = require('./win');\nopen('explorer.exe');\n" +
			"const runCmd = require('./run_cmd');\nrunCmd(['ls -la | wc -l'], { shell: true });\n" +
			"function later() {\n  const runCmd = require('./run_cmd');\n  return runCmd(['yarn', 'install']);\n}\nexports.later = later;\n" +
			"require('./commented')('git', ['--version']);\nconst run = require('./commented');\nrun('hg', ['id']);\n",
		"run_cmd.js": "const { spawn } = require('child_process');\n" +
			"module.exports = exports = (args, opts = {}) => new Promise((resolve) => {\n" +
			"  spawn(args[0], args.slice(1), { stdio: 'inherit', ...opts }).on('exit', resolve);\n" +
			"});\n",
		"tools.mjs": "import { spawnSync } from 'node:child_process';\n" +
			"export function tool(cmd, args) { return spawnSync(cmd, args); }\n" +
			"export default function (cmd) { return spawnSync(cmd); }\n",
		"exec.js": "const cp = require('child_process');\n" +
			"function run(cmd) { return cp.spawnSync(cmd, []); }\n" +
			"exports.run = run;\n" +
			"exports.again = (cmd) => { cmd = 'sh'; return cp.spawnSync(cmd, []); };\n",
		"a.js":  "const runCmd = require('./run_cmd');\nrunCmd(['pnpm', '--version']);\nconst x = process.env.X;\nrunCmd([x]);\n",
		"b.js":  "const { run: exec } = require('./exec');\nexec('git');\nconst again = require('./exec').again;\nagain('make');\n",
		"c.mjs": "import anyTool, { tool as t } from './tools.mjs';\nt('ffmpeg', ['-version']);\nanyTool('convert');\n",
		"d.js":  "const { run } = require('./exec');\nrun('bash');\n",
		"f.js": "const util = require('./exec');\nutil.run('rsync');\nconst exec_1 = require(\"./exec\");\n(0, exec_1.run)(\"curl\");\n" +
			"util.again.run('no');\nutil.other('no');\n",
		"g.mjs":      "import * as tools from './tools.mjs';\ntools.tool('sox', []);\ntools.default('no');\n",
		"barrel.mjs": "export { tool } from './tools.mjs';\nexport { default as anyTool } from './tools.mjs';\nexport * from './run2.mjs';\n",
		"run2.mjs":   "import { execFileSync } from 'node:child_process';\nexport function r2(cmd) { return execFileSync(cmd); }\n",
		"h.mjs":      "import { tool, anyTool, r2 } from './barrel.mjs';\ntool('magick');\nanyTool('gm');\nr2('zip');\n",
	})
	got := findingLines(runProbe(t, dir))
	want := []string{
		"a.js:2 spawn binary pnpm",
		"b.js:2 spawnSync binary git",
		"c.mjs:2 spawnSync binary ffmpeg",
		"c.mjs:3 spawnSync binary convert",
		"commented.js:2 execFileSync dynamic",
		"d.js:2 spawnSync shell bash",
		"e.js:2 spawn binary explorer.exe win32",
		"e.js:4 spawn maybe_shell ls -la | wc -l",
		"e.js:7 spawn binary yarn",
		"e.js:10 execFileSync binary git",
		"e.js:12 execFileSync binary hg",
		"exec.js:2 spawnSync dynamic",
		"exec.js:4 spawnSync dynamic",
		"f.js:2 spawnSync binary rsync",
		"f.js:4 spawnSync binary curl",
		"g.mjs:2 spawnSync binary sox",
		"h.mjs:2 spawnSync binary magick",
		"h.mjs:3 spawnSync binary gm",
		"h.mjs:4 execFileSync binary zip",
		"run2.mjs:2 execFileSync dynamic",
		"run_cmd.js:3 spawn maybe_shell",
		"tools.mjs:2 spawnSync dynamic",
		"tools.mjs:3 spawnSync dynamic",
		"win.js:4 spawn dynamic  win32",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
}

// findingLines writes each finding as "file:line function kind command
// platform", trimmed.
func findingLines(out probe.Output) []string {
	var got []string
	for _, f := range out.Facts.(*Facts).Findings {
		got = append(got, strings.TrimSpace(fmt.Sprintf("%s:%d %s %s %s %s", f.File, f.Line, f.Function, f.Kind, f.Command, f.Platform)))
	}
	return got
}
