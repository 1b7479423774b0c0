package cli

import (
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/codegenie/codegenie/internal/report/sariftest"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// copyDir copies a fixture to a scratch directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestMigrateRefusals: the services no rewrite can move are refused with
// the blocker's rule and evidence, exit 1, and nothing is written.
func TestMigrateRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fixture, rule, why string }{
		{"bash-entrypoint", "entrypoint_script_logic", "does more than set defaults"},
		{"execsync-app", "shell_in_code", "runs /bin/sh"},
		{"spawn-git", "binary_at_runtime", "runs git"},
		{"shell-expand-cmd", "shell_command_line", "needs a shell"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := copyDir(t, fixture(t, tc.fixture))
			before, _ := os.ReadFile(filepath.Join(dir, "Dockerfile"))
			r := execute(t, t.Context(), "migrate", "--no-gates", "--write", "--cache-dir", t.TempDir(), dir)
			if r.code != ExitNotReady {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", r.code, ExitNotReady, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "refused:") || !strings.Contains(r.stdout, tc.rule) || !strings.Contains(r.stdout, tc.why) || !strings.Contains(r.stdout, "    at ") {
				t.Fatalf("want a refusal naming %s (%q) and its evidence; got:\n%s", tc.rule, tc.why, r.stdout)
			}
			after, _ := os.ReadFile(filepath.Join(dir, "Dockerfile"))
			if string(before) != string(after) {
				t.Fatal("a refused migration changed the Dockerfile")
			}
		})
	}
}

// TestMigrateNoGatesWrite: --no-gates prints an unproven rewrite and, with
// --write, applies it with its generated files; run again, it changes
// nothing.
func TestMigrateNoGatesWrite(t *testing.T) {
	t.Parallel()
	dir := copyDir(t, fixture(t, "hooks-launcher"))
	cache := t.TempDir()
	r := execute(t, t.Context(), "migrate", "--no-gates", "--write", "--cache-dir", cache, dir)
	if r.code != ExitOK || !strings.Contains(r.stdout, "unproven") || !strings.Contains(r.stdout, "+CMD [\"/app/codegenie-launch.cjs\"]") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "codegenie-launch.cjs")); err != nil {
		t.Fatalf("the launcher was not written: %v", err)
	}
	df, _ := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if !strings.Contains(string(df), "gcr.io/distroless/nodejs22-debian13") {
		t.Fatalf("Dockerfile not rewritten:\n%s", df)
	}
	again := execute(t, t.Context(), "migrate", "--no-gates", "--cache-dir", cache, dir)
	if again.code != ExitOK || !strings.Contains(again.stdout, "nothing to change") {
		t.Fatalf("second run: exit %d\n%s", again.code, again.stdout)
	}
}

func TestMigrateJSONAndSARIF(t *testing.T) {
	t.Parallel()
	dir := fixture(t, "var-prefix")
	r := execute(t, t.Context(), "migrate", "--no-gates", "--format", "json", "--no-cache", dir)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		SchemaVersion string `json:"schema_version"`
		Rewrite       struct {
			Changes []struct {
				Rule string `json:"rule"`
			} `json:"changes"`
		} `json:"rewrite"`
		Diffs []struct {
			Path string `json:"path"`
			Diff string `json:"diff"`
		} `json:"diffs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if out.SchemaVersion == "" || len(out.Rewrite.Changes) == 0 || len(out.Diffs) != 1 || !strings.Contains(out.Diffs[0].Diff, "+ENV APP_NAME") && !strings.Contains(out.Diffs[0].Diff, "+ENV NODE_ENV") {
		t.Fatalf("json: %+v", out)
	}
	d := execute(t, t.Context(), "migrate", "--no-gates", "--format", "diff", "--no-cache", fixture(t, "hooks-launcher"))
	if d.code != ExitOK || !strings.HasPrefix(d.stdout, "--- a/Dockerfile\n+++ b/Dockerfile\n@@ ") || !strings.Contains(d.stdout, "+++ b/codegenie-launch.cjs") || strings.Contains(d.stdout, "unproven") {
		t.Fatalf("--format diff: exit %d, want the patch alone:\n%s", d.code, d.stdout)
	}
	s := execute(t, t.Context(), "migrate", "--no-gates", "--format", "sarif", "--no-cache", fixture(t, "spawn-git"))
	if s.code != ExitNotReady {
		t.Fatalf("sarif exit %d: %s", s.code, s.stderr)
	}
	sariftest.Validate(t, []byte(s.stdout))
	var log map[string]any
	if err := strictjson.Unmarshal([]byte(s.stdout), &log); err != nil || !strings.Contains(s.stdout, `"refused.binary_at_runtime"`) || !strings.Contains(s.stdout, `"level": "error"`) {
		t.Fatalf("sarif (%v):\n%s", err, s.stdout)
	}
}

func TestMigrateBadInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate", "--no-gates", "--target-image", "busybox:latest", fixture(t, "var-prefix")},
		{"migrate", "--no-gates", "--format", "yaml", fixture(t, "var-prefix")},
		{"migrate", "--no-gates", filepath.Join(t.TempDir(), "missing")},
		{"migrate", "--no-gates", "--dockerfile", "nope.Dockerfile", fixture(t, "var-prefix")},
	} {
		r := execute(t, t.Context(), append(args, "--no-cache")...)
		if r.code != ExitUsage || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, r.code, r.stderr)
		}
	}
}

// TestMigrateMirrorPinWarns: a target pin read from a registry mirror is
// that mirror's digest, which a stand-in's is not the registry's: the
// rewrite pins it and says so, so nobody merges a pin gcr.io lacks.
func TestMigrateMirrorPinWarns(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/distroless/nodejs22-debian13:nonroot", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	dir := copyDir(t, fixture(t, "hooks-launcher"))
	r := execute(t, t.Context(), "migrate", "--no-gates", "--no-cache", "--registry-mirror", "gcr.io="+host, dir)
	if r.code != ExitOK || !strings.Contains(r.stdout, "nodejs22-debian13:nonroot@"+want.String()) {
		t.Fatalf("exit %d, want the target pinned to %s:\n%s\n%s", r.code, want, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "the digest the registry mirror "+host+" serves") {
		t.Errorf("no warning that the pin is the mirror's:\n%s", r.stdout)
	}
}
