package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatherNoDockerfile: a repository with no Dockerfile has no image to
// judge. It is bad input (exit 2), and the message says what to do next,
// never ready with exit 3 (issue 22, item 4).
func TestGatherNoDockerfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"package.json": `{"name": "svc", "scripts": {"start": "node server.js"}}`,
		"server.js":    "require('node:http').createServer().listen(8080);\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := execute(t, t.Context(), "--cache-dir", t.TempDir(), "gather", "--no-sandbox", "--format", "json", dir)
	if r.code != ExitUsage {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, ExitUsage, r.stderr)
	}
	if !strings.Contains(r.stderr, "no Dockerfile") || !strings.Contains(r.stderr, "--dockerfile") {
		t.Errorf("stderr %q: want it to say there is no Dockerfile and name --dockerfile", r.stderr)
	}
}
