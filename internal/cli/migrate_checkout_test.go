package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree lists dir without following links: each path's mode, and its
// bytes or link target.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var data []byte
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			var l string
			l, err = os.Readlink(p)
			data = []byte(l)
		case fi.Mode().IsRegular():
			data, err = os.ReadFile(p)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fi.Mode().String() + " " + string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// linkedService makes base/svc, a service whose compose build context ctx
// is a relative symlink to the sibling checkout base/other, which has,
// when committed, a launcher of its own. Its launcher would be generated
// into ctx.
func linkedService(t *testing.T, base string, committed bool) string {
	t.Helper()
	svc, other := filepath.Join(base, "svc"), filepath.Join(base, "other")
	for p, data := range map[string]string{
		"svc/Dockerfile":             "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"npm\", \"start\"]\n",
		"svc/package.json":           `{"name": "svc", "scripts": {"prestart": "node migrate.js", "start": "node server.js"}}` + "\n",
		"svc/docker-compose.yml":     "services:\n  web:\n    build:\n      context: ./ctx\n      dockerfile: ../Dockerfile\n",
		"other/.dockerignore":        "node_modules\n",
		"other/migrate.js":           "console.log('migrating');\n",
		"other/server.js":            "require('node:http').createServer((q, r) => r.end('ok')).listen(8080);\n",
		"other/codegenie-launch.cjs": "// other's launcher, committed\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(base, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{svc, other} {
		if err := os.Mkdir(filepath.Join(d, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join("..", "other"), filepath.Join(svc, "ctx")); err != nil {
		t.Fatal(err)
	}
	if !committed {
		if err := os.Remove(filepath.Join(other, "codegenie-launch.cjs")); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// TestMigrateStaysInTheCheckout: a generated file whose place resolves,
// through a symlinked build context, into another checkout is refused,
// naming the link; neither a dry run nor --write changes anything.
func TestMigrateStaysInTheCheckout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		args      []string
		committed bool
	}{
		{"dry-run", nil, true},
		{"write", []string{"--write"}, false},
		{"write-over", []string{"--write"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			svc := linkedService(t, base, tc.committed)
			before := tree(t, base)
			r := execute(t, t.Context(), append(append([]string{"migrate", "--no-gates", "--no-cache"}, tc.args...), svc)...)
			if diff := cmp.Diff(before, tree(t, base)); diff != "" {
				t.Errorf("migrate changed files (-want +got):\n%s", diff)
			}
			if r.code != ExitNotReady || !strings.Contains(r.stderr, "symlink ctx") || !strings.Contains(r.stderr, "outside the checkout") {
				t.Fatalf("exit %d, stderr %q; want 1 and a refusal naming the symlink ctx; stdout:\n%s", r.code, r.stderr, r.stdout)
			}
		})
	}
}

// TestPortfolioMigrateStaysInTheCheckout: portfolio --migrate refuses the
// same service, and changes no checkout.
func TestPortfolioMigrateStaysInTheCheckout(t *testing.T) {
	t.Setenv("CI", "1")
	src, out := t.TempDir(), t.TempDir()
	linkedService(t, src, true)
	before := tree(t, src)
	r := execute(t, t.Context(), "portfolio", "--no-sandbox", "--migrate", "--no-cache", "--out", out, src)
	if diff := cmp.Diff(before, tree(t, src)); diff != "" {
		t.Errorf("portfolio --migrate changed files (-want +got):\n%s", diff)
	}
	doc := readDocument(t, out)
	for _, e := range doc.Services {
		if e.Migration != nil && strings.Contains(e.Migration.Error, "symlink ctx") {
			return
		}
	}
	t.Fatalf("no service's migration was refused naming the symlink ctx (exit %d); services:\n%+v", r.code, doc.Services)
}
