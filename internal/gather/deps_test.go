package gather

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/deps/depstest"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// lockedService writes a service whose package-lock.json pins pkgs
// (install path → tarball) served by reg, with an .npmrc naming reg.
func lockedService(t *testing.T, reg *depstest.Registry, app string, rootDeps map[string]string, pkgs map[string][]byte, names map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	packages := map[string]any{"": map[string]any{"name": "svc", "version": "1.0.0", "dependencies": rootDeps}}
	for p, tgz := range pkgs {
		name := names[p]
		packages[p] = map[string]any{"version": "1.0.0", "resolved": reg.Add(name, "1.0.0", tgz), "integrity": depstest.Integrity(tgz)}
	}
	lock, _ := json.Marshal(map[string]any{"name": "svc", "version": "1.0.0", "lockfileVersion": 3, "packages": packages})
	pj, _ := json.Marshal(map[string]any{"name": "svc", "version": "1.0.0", "main": "index.js", "dependencies": rootDeps})
	for name, body := range map[string]string{
		"package.json":      string(pj),
		"package-lock.json": string(lock),
		".npmrc":            "registry=" + reg.URL + "\n",
		"index.js":          app,
		"Dockerfile":        "FROM node:22\nWORKDIR /app\nCOPY package*.json ./\nRUN npm ci --omit=dev\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func childProcessFacts(t *testing.T, out *Outcome) (*probe.Result, *childprocess.Facts) {
	t.Helper()
	for i := range out.Context.Probes {
		r := &out.Context.Probes[i]
		if r.Probe == childprocess.Name {
			var f childprocess.Facts
			if err := json.Unmarshal(r.Facts, &f); err != nil {
				t.Fatal(err)
			}
			return r, &f
		}
	}
	t.Fatal("no child_process result")
	return nil, nil
}

// lockfileRun gathers dir with --deps lockfile (a fresh dependency
// cache).
func lockfileRun(t *testing.T, dir string) *Outcome {
	t.Helper()
	o := options(t)
	o.Task = "distroless-migration"
	o.Deps = &deps.Fetcher{Dir: t.TempDir()}
	out, err := Run(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lockfileFacts is lockfileRun's child_process result.
func lockfileFacts(t *testing.T, dir string) (*probe.Result, *childprocess.Facts) {
	t.Helper()
	return childProcessFacts(t, lockfileRun(t, dir))
}

// TestDepsLockfileFindsShellInDependency: a dependency that shells out
// when required, fetched from the lockfile, is a blocker with its import
// chain; its test file that shells out too does not count; warm equals
// cold.
func TestDepsLockfileFindsShellInDependency(t *testing.T) {
	reg := depstest.NewRegistry(t)
	shelly := depstest.Package(t, "shelly", "1.0.0", map[string]string{"inner": "^1.0.0"}, map[string]string{
		"index.js":         "module.exports = require('inner')\n",
		"test/run.js":      "require('child_process').execSync('rm -rf /tmp/x')\n",
		"lib/a.spec.js":    "require('child_process').exec('make')\n",
		"README.md":        "# shelly\n",
		"bin/cli.js":       "#!/usr/bin/env node\n",
		"lib/untouched.js": "module.exports = 1\n",
	})
	inner := depstest.Package(t, "inner", "1.0.0", nil, map[string]string{
		"index.js": "const { execSync } = require('child_process')\nmodule.exports = execSync('ls').toString()\n",
	})
	dir := lockedService(t, reg, "const s = require('shelly')\nconsole.log(s)\n",
		map[string]string{"shelly": "^1.0.0"},
		map[string][]byte{"node_modules/shelly": shelly, "node_modules/inner": inner},
		map[string]string{"node_modules/shelly": "shelly", "node_modules/inner": "inner"})

	o := options(t)
	o.Task = "distroless-migration"
	o.Deps = &deps.Fetcher{Dir: t.TempDir()}
	var cold, warm bytes.Buffer
	for _, buf := range []*bytes.Buffer{&cold, &warm} {
		out, err := Run(t.Context(), dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Encode(buf); err != nil {
			t.Fatal(err)
		}
		if buf != &cold {
			continue
		}
		res, facts := childProcessFacts(t, out)
		if res.Confidence != probe.High {
			t.Errorf("confidence %s (%s: %s), want high", res.Confidence, res.Reason, res.Detail)
		}
		var found bool
		tests := 0
		for _, f := range facts.Findings {
			switch f.File {
			case "node_modules/inner/index.js":
				found = true
				if f.Kind != childprocess.KindShell || f.Scope != childprocess.ScopeReachable || f.Package != "inner" {
					t.Errorf("inner's execSync: %+v", f)
				}
				want := "index.js:1 → node_modules/shelly/index.js:1 → node_modules/inner/index.js:2"
				if got := strings.Join(f.Chain, " → "); got != want {
					t.Errorf("chain %q, want %q", got, want)
				}
			case "node_modules/shelly/test/run.js", "node_modules/shelly/lib/a.spec.js":
				tests++
				if f.Scope != childprocess.ScopeNotReachable {
					t.Errorf("a package's test file counts: %+v", f)
				}
			}
		}
		if !found || tests != 2 {
			t.Fatalf("the dependency's execSync, or its two test files' calls, were not found: %+v", facts.Findings)
		}
		a := out.Context.Assessments["distroless_readiness"]
		var blocker bool
		for _, b := range a.Blockers {
			if b.ID == childprocess.WarnShellInDependency && b.Kind == probe.ShellAtRuntime {
				blocker = true
			}
		}
		if !blocker {
			t.Errorf("no shell_at_runtime blocker for the dependency: %+v", a)
		}
	}
	if !bytes.Equal(cold.Bytes(), warm.Bytes()) {
		t.Errorf("warm context differs from cold")
	}
	if n := reg.TotalServed(); n != 2 {
		t.Errorf("%d tarballs fetched, want 2 (each once)", n)
	}
}

// TestDepsLockfileOffline: a package that cannot be fetched is named, with
// a registered warning. The confidence is medium when nothing the
// entrypoint reaches loads it, and low when the service loads it: then the
// code the service runs was not read.
func TestDepsLockfileOffline(t *testing.T) {
	for _, tc := range []struct {
		name, index string
		want        probe.Confidence
		detail      string
	}{
		{"loaded", "require('a')\n", probe.Low, "the code the entrypoint reaches loads a@1.0.0"},
		{"not loaded", "module.exports = 1\n", probe.Medium, "(a@1.0.0;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := depstest.NewRegistry(t)
			a := depstest.Package(t, "a", "1.0.0", nil, map[string]string{"index.js": "module.exports = 1\n"})
			dir := lockedService(t, reg, tc.index, map[string]string{"a": "^1.0.0"},
				map[string][]byte{"node_modules/a": a}, map[string]string{"node_modules/a": "a"})
			o := options(t)
			o.Task = "distroless-migration"
			o.Deps = &deps.Fetcher{Dir: t.TempDir(), Offline: true}
			out, err := Run(t.Context(), dir, o)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := childProcessFacts(t, out)
			if res.Confidence != tc.want || res.Reason != childprocess.ReasonDependenciesUnavailable {
				t.Errorf("confidence %s, reason %s; want %s, %s", res.Confidence, res.Reason, tc.want, childprocess.ReasonDependenciesUnavailable)
			}
			if !strings.Contains(res.Detail, tc.detail) {
				t.Errorf("the detail does not name the package it lacks as %q: %s", tc.detail, res.Detail)
			}
			var warned bool
			for _, w := range res.Warnings {
				if w.ID == childprocess.WarnDependencyNotFetched && strings.Contains(w.Message, "a@1.0.0") {
					warned = true
				}
				if w.ID == childprocess.WarnDependencyNotInstalled {
					t.Errorf("also reported as not installed: %s", w.Message)
				}
			}
			if !warned {
				t.Errorf("no %s warning naming a@1.0.0: %+v", childprocess.WarnDependencyNotFetched, res.Warnings)
			}
			if reg.TotalServed() != 0 {
				t.Error("an offline run fetched")
			}
		})
	}
}

// TestDepsLockfileYarnBerry: a berry lockfile records no tarball hash, so
// the package comes from the registry .yarnrc.yml names, verified against
// the registry's hash, and says so.
func TestDepsLockfileYarnBerry(t *testing.T) {
	reg := depstest.NewRegistry(t)
	tgz := depstest.Package(t, "@s/shelly", "1.2.3", nil, map[string]string{"index.js": "require('child_process').exec('ls')\n"})
	reg.Add("@s/shelly", "1.2.3", tgz)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"package.json": `{"name": "svc", "version": "1.0.0", "main": "index.js", "dependencies": {"@s/shelly": "^1.2.0"}}`,
		"yarn.lock": "__metadata:\n  version: 8\n  cacheKey: 10c0\n\n\"@s/shelly@npm:^1.2.0\":\n  version: 1.2.3\n  resolution: \"@s/shelly@npm:1.2.3\"\n  checksum: 10c0/abcd\n  languageName: node\n  linkType: hard\n\n" +
			"\"svc@workspace:.\":\n  version: 0.0.0-use.local\n  resolution: \"svc@workspace:.\"\n  dependencies:\n    \"@s/shelly\": \"npm:^1.2.0\"\n  languageName: unknown\n  linkType: soft\n",
		".yarnrc.yml": "nodeLinker: node-modules\nnpmScopes:\n  s:\n    npmRegistryServer: \"" + reg.URL + "\"\n",
		"index.js":    "require('@s/shelly')\n",
		"Dockerfile":  "FROM node:22\nWORKDIR /app\nCOPY . .\nRUN yarn install --immutable\nCMD [\"node\", \"index.js\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, facts := lockfileFacts(t, dir)
	var found, warned bool
	for _, f := range facts.Findings {
		found = found || (f.File == "node_modules/@s/shelly/index.js" && f.Scope == childprocess.ScopeReachable)
	}
	for _, w := range res.Warnings {
		warned = warned || (w.ID == childprocess.WarnDependencyHashFromRegistry && strings.Contains(w.Message, "@s/shelly@1.2.3"))
	}
	if !found || !warned {
		t.Errorf("found %v, warned %v: %+v %+v", found, warned, facts.Findings, res.Warnings)
	}
	if reg.Served(depstest.TarballPath("@s/shelly", "1.2.3")) != 1 {
		t.Error("the scoped tarball was not fetched from the scope's registry")
	}
}

// TestDepsLockfileNestedFolder: a service in server/ with its own
// package-lock.json, beside a root lockfile of another package (a
// frontend), gets its dependencies mounted at server/node_modules, and
// their shell call is found from the service's entrypoint. (A real
// service's image ships server/ and its dependencies were never read.)
func TestDepsLockfileNestedFolder(t *testing.T) {
	reg := depstest.NewRegistry(t)
	shelly := depstest.Package(t, "shelly", "1.0.0", nil, map[string]string{"index.js": "require('child_process').execSync('ls')\n"})
	left := depstest.Package(t, "left-pad", "1.0.0", nil, map[string]string{"index.js": "module.exports = 1\n"})
	dir := lockedService(t, reg, "require('left-pad')\n", map[string]string{"left-pad": "^1.0.0"},
		map[string][]byte{"node_modules/left-pad": left}, map[string]string{"node_modules/left-pad": "left-pad"})
	server := lockedService(t, reg, "require('shelly')\nrequire('http').createServer().listen(3000)\n", map[string]string{"shelly": "^1.0.0"},
		map[string][]byte{"node_modules/shelly": shelly}, map[string]string{"node_modules/shelly": "shelly"})
	if err := os.Rename(server, filepath.Join(dir, "server")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "server", "Dockerfile")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM node:22-slim\nWORKDIR /app\nCOPY server/ .\nCMD [\"node\", \"index.js\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := lockfileRun(t, dir)
	_, facts := childProcessFacts(t, out)
	var found bool
	for _, f := range facts.Findings {
		if f.File == "server/node_modules/shelly/index.js" {
			found = true
			if f.Kind != childprocess.KindShell || f.Scope != childprocess.ScopeReachable {
				t.Errorf("shelly's execSync: %+v", f)
			}
		}
	}
	if !found {
		t.Fatalf("no finding in server/node_modules/shelly: %+v", facts.Findings)
	}
	if reg.TotalServed() != 2 {
		t.Errorf("%d fetches, want 2 (left-pad for the root, shelly for server/)", reg.TotalServed())
	}
	if a := out.Context.Assessments["distroless_readiness"]; a.Verdict != probe.Blocked {
		t.Errorf("verdict %s, want blocked", a.Verdict)
	}
}

// TestDepsLockfileMissingPeerIsAbsent: an image that keeps its
// devDependencies (RUN npm ci) is not the production set the lockfile run
// mounts, so a package the graph requires and node_modules lacks may be in
// the image, and leaves a dependency's unreached file counted as shipping.
// A package the lockfile does not pin at all (ws's optional bufferutil)
// cannot be there, and leaves nothing open: the unreached call is not
// reachable. A step that adds a package by name (npm install bufferutil)
// may put one there, and the file counts again.
func TestDepsLockfileMissingPeerIsAbsent(t *testing.T) {
	reg := depstest.NewRegistry(t)
	wsp := depstest.Package(t, "wsp", "1.0.0", nil, map[string]string{
		"index.js":    "let b\ntry { b = require('bufferutil') } catch (e) {}\nmodule.exports = b\n",
		"lib/tool.js": "require('child_process').execSync('make all')\n",
	})
	for _, tc := range []struct {
		name, run string
		want      childprocess.Scope
	}{
		{"lockfile install", "RUN npm ci", childprocess.ScopeNotReachable},
		{"named install after it", "RUN npm ci && npm install bufferutil", childprocess.ScopeUnresolved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := lockedService(t, reg, "require('wsp')\n", map[string]string{"wsp": "^1.0.0"},
				map[string][]byte{"node_modules/wsp": wsp}, map[string]string{"node_modules/wsp": "wsp"})
			df := "FROM node:22\nWORKDIR /app\nCOPY package*.json ./\n" + tc.run + "\nCOPY . .\nCMD [\"node\", \"index.js\"]\n"
			if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
				t.Fatal(err)
			}
			_, facts := lockfileFacts(t, dir)
			var found bool
			for _, f := range facts.Findings {
				if f.File != "node_modules/wsp/lib/tool.js" {
					continue
				}
				found = true
				if f.Scope != tc.want {
					t.Errorf("scope %s (%s), want %s", f.Scope, f.ScopeNote, tc.want)
				}
			}
			if !found {
				t.Fatalf("the dependency's execSync was not found: %+v", facts.Findings)
			}
		})
	}
}

// TestDepsLockfileDevDependenciesShipped: an image whose install omits
// nothing ships the devDependencies, so --deps lockfile mounts and scans
// them, and the app's load of one is followed into its code; an image
// whose install omits them does not get them mounted.
func TestDepsLockfileDevDependenciesShipped(t *testing.T) {
	reg := depstest.NewRegistry(t)
	devtool := depstest.Package(t, "devtool", "1.0.0", nil, map[string]string{
		"index.js": "require('child_process').execSync('make all')\n",
	})
	for _, tc := range []struct {
		name, run string
		found     bool
	}{
		{"install omits nothing", "RUN npm ci", true},
		{"install omits dev", "RUN npm ci --omit=dev", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lock, _ := json.Marshal(map[string]any{"name": "svc", "version": "1.0.0", "lockfileVersion": 3, "packages": map[string]any{
				"":                     map[string]any{"name": "svc", "version": "1.0.0", "devDependencies": map[string]string{"devtool": "^1.0.0"}},
				"node_modules/devtool": map[string]any{"version": "1.0.0", "dev": true, "resolved": reg.Add("devtool", "1.0.0", devtool), "integrity": depstest.Integrity(devtool)},
			}})
			for name, body := range map[string]string{
				"package.json":      `{"name":"svc","version":"1.0.0","devDependencies":{"devtool":"^1.0.0"}}`,
				"package-lock.json": string(lock),
				".npmrc":            "registry=" + reg.URL + "\n",
				"index.js":          "require('devtool')\n",
				"Dockerfile":        "FROM node:22\nWORKDIR /app\nCOPY package*.json ./\n" + tc.run + "\nCOPY . .\nCMD [\"node\", \"index.js\"]\n",
			} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, facts := lockfileFacts(t, dir)
			var scopes []childprocess.Scope
			for _, f := range facts.Findings {
				if f.File == "node_modules/devtool/index.js" {
					scopes = append(scopes, f.Scope)
				}
			}
			switch {
			case tc.found && (len(scopes) != 1 || scopes[0] != childprocess.ScopeReachable):
				t.Errorf("devtool's execSync: scopes %v, want one reachable", scopes)
			case !tc.found && len(scopes) > 0:
				t.Errorf("devtool was mounted for an image that omits devDependencies: %v", scopes)
			}
		})
	}
}
