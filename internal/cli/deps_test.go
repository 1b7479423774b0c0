package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/deps/depstest"
	"github.com/codegenie/codegenie/internal/fleet"
)

// TestGatherDepsLockfile: --deps lockfile fetches the pinned tarball into
// CACHE/deps and the dependency's shell call is a blocker; --deps none
// fetches nothing; a bad mode is a usage error.
func TestGatherDepsLockfile(t *testing.T) {
	t.Parallel()
	reg := depstest.NewRegistry(t)
	tgz := depstest.Package(t, "shelly", "1.0.0", nil, map[string]string{"index.js": "require('child_process').execSync('ls')\n"})
	url := reg.Add("shelly", "1.0.0", tgz)
	dir := t.TempDir()
	lock, _ := json.Marshal(map[string]any{"lockfileVersion": 3, "packages": map[string]any{
		"":                    map[string]any{"name": "svc", "dependencies": map[string]string{"shelly": "^1.0.0"}},
		"node_modules/shelly": map[string]any{"version": "1.0.0", "resolved": url, "integrity": depstest.Integrity(tgz)},
	}})
	for name, body := range map[string]string{
		"package.json":      `{"name": "svc", "version": "1.0.0", "main": "index.js", "dependencies": {"shelly": "^1.0.0"}}`,
		"package-lock.json": string(lock),
		".npmrc":            "registry=" + reg.URL + "\n",
		"index.js":          "require('shelly')\n",
		"Dockerfile":        "FROM node:22\nWORKDIR /app\nCOPY . .\nRUN npm ci --omit=dev\nCMD [\"node\", \"index.js\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cacheDir := t.TempDir()
	none := execute(t, t.Context(), "--cache-dir", cacheDir, "gather", "--no-sandbox", "--format", "json", dir)
	if reg.TotalServed() != 0 || strings.Contains(none.stdout, "node_modules/shelly/index.js") {
		t.Errorf("without --deps: %d fetches; the dependency was scanned", reg.TotalServed())
	}
	r := execute(t, t.Context(), "--cache-dir", cacheDir, "gather", "--no-sandbox", "--deps", "lockfile", "--format", "json", dir)
	if r.code != ExitNotReady {
		t.Fatalf("exit %d, want %d (blocked): %s", r.code, ExitNotReady, r.stderr)
	}
	if !strings.Contains(r.stdout, `"shell_at_runtime"`) || !strings.Contains(r.stdout, "node_modules/shelly/index.js") {
		t.Errorf("no shell_at_runtime blocker in the dependency:\n%s", r.stdout)
	}
	if entries, err := os.ReadDir(filepath.Join(cacheDir, "deps")); err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "sha512-") {
		t.Errorf("CACHE/deps holds %v (%v), want the one package by its sha512", entries, err)
	}
	if reg.TotalServed() != 1 {
		t.Errorf("%d fetches, want 1", reg.TotalServed())
	}
	// migrate judges from the same verdict: with --deps lockfile it
	// refuses what gather calls blocked, before any rewrite; without, it
	// rewrites, unproven.
	m := execute(t, t.Context(), "--cache-dir", cacheDir, "migrate", "--no-gates", "--deps", "lockfile", "--format", "json", dir)
	if m.code != ExitNotReady || !strings.Contains(m.stdout, `"refusals"`) || !strings.Contains(m.stdout, "node_modules/shelly/index.js") {
		t.Errorf("migrate --deps lockfile: exit %d, want %d with a refusal citing the dependency:\n%s\n%s", m.code, ExitNotReady, m.stdout, m.stderr)
	}
	if m := execute(t, t.Context(), "--cache-dir", cacheDir, "migrate", "--no-gates", "--format", "json", dir); m.code != 0 || strings.Contains(m.stdout, "node_modules/shelly/index.js") {
		t.Errorf("migrate without --deps: exit %d:\n%s\n%s", m.code, m.stdout, m.stderr)
	}
	bad := execute(t, t.Context(), "gather", "--no-sandbox", "--deps", "install", dir)
	if bad.code != ExitUsage || !strings.Contains(bad.stderr, "want none or lockfile") {
		t.Errorf("--deps install: exit %d, %q", bad.code, bad.stderr)
	}
}

// TestPortfolioRunnerReleasesDeps: without a cache, a portfolio runner's
// dependency packages go into a temporary folder that its release removes
// (the Temporal client and workers once left one behind per runner).
func TestPortfolioRunnerReleasesDeps(t *testing.T) {
	t.Parallel()
	g := &globals{stdout: io.Discard, stderr: io.Discard}
	r, release, err := portfolioRunner(g, fleet.Settings{Deps: "lockfile", NoCache: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Options.Deps == nil {
		t.Fatal("--deps lockfile gave no fetcher")
	}
	dir := r.Options.Deps.Dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the fetcher's folder: %v", err)
	}
	release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after release (%v)", dir, err)
	}
}
