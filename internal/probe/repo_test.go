package probe

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeTree(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRepoGlob(t *testing.T) {
	t.Parallel()
	dir := writeTree(t,
		"Dockerfile", "api.Dockerfile", "docker/Dockerfile", "docker/Dockerfile.prod",
		"a/b/c/Dockerfile", "node_modules/x/Dockerfile", ".git/Dockerfile", "package.json",
	)
	repo, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"Dockerfile", []string{"Dockerfile"}},
		{"package.json", []string{"package.json"}},
		{"missing.json", nil},
		{"**/Dockerfile", []string{"Dockerfile", "a/b/c/Dockerfile", "docker/Dockerfile"}},
		{"*.Dockerfile", []string{"api.Dockerfile"}},
		{"docker/Dockerfile.*", []string{"docker/Dockerfile.prod"}},
		{"**/Dockerfile*", []string{"Dockerfile", "a/b/c/Dockerfile", "docker/Dockerfile", "docker/Dockerfile.prod"}},
		{"node_modules/**/Dockerfile", []string{"node_modules/x/Dockerfile"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			got, err := repo.Glob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Glob(%q) (-want +got):\n%s", tt.pattern, diff)
			}
		})
	}
	if _, err := repo.Glob("[bad"); err == nil {
		t.Error("Glob of a malformed pattern succeeded")
	}
}

func TestOpenRepoErrors(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, "file")
	if _, err := OpenRepo(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenRepo(missing) error = %v, want not exist", err)
	}
	if _, err := OpenRepo(filepath.Join(dir, "file")); !errors.Is(err, ErrNotDirectory) {
		t.Errorf("OpenRepo(file) error = %v, want ErrNotDirectory", err)
	}
}

// TestOpenEscapes: a path that leads out of the repository through a
// symlink is refused with ErrPathEscapes, whether the file behind it
// exists or not, and whether the link is the file or a folder above it.
func TestOpenEscapes(t *testing.T) {
	t.Parallel()
	host := writeTree(t, "lib/util.js", "secret")
	dir := writeTree(t, "server.js", "in/real.js")
	for name, target := range map[string]string{
		"lib":        filepath.Join(host, "lib"),
		"dangling":   filepath.Join(host, "nothing", "here"),
		"secret":     filepath.Join(host, "secret"),
		"inside":     "in",
		"in/back.js": "real.js",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel    string
		escape bool
	}{
		{rel: "lib/util.js", escape: true},
		{rel: "lib/missing.js", escape: true},
		{rel: "lib/deeper/missing.js", escape: true},
		{rel: "dangling", escape: true},
		{rel: "dangling/x.js", escape: true},
		{rel: "secret", escape: true},
		{rel: "server.js"},
		{rel: "missing.js"},
		{rel: "inside/real.js"},
		{rel: "inside/missing.js"},
		{rel: "in/back.js"},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			t.Parallel()
			f, err := repo.Open(tt.rel)
			if err == nil {
				f.Close()
			}
			if got := errors.Is(err, ErrPathEscapes); got != tt.escape {
				t.Errorf("Open(%q) = %v, escapes %v, want %v", tt.rel, err, got, tt.escape)
			}
		})
	}
}

// TestMounts: a mounted folder is listed, read and globbed at its path; a
// deeper mount wins over a shallower one and both over the repository's
// own files.
func TestMounts(t *testing.T) {
	root, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir, rel, body string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "index.js", "app")
	write(root, "node_modules/a/stale.js", "hidden")
	write(a, "index.js", "a")
	write(a, "node_modules/b/old.js", "hidden by the deeper mount")
	write(b, "index.js", "b")
	r, err := OpenRepo(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddMounts(Mount{Path: "node_modules/a", Dir: a, Key: "ka"}, Mount{Path: "node_modules/a/node_modules/b", Dir: b}); err != nil {
		t.Fatal(err)
	}
	files, err := r.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"index.js", "node_modules/a/index.js", "node_modules/a/node_modules/b/index.js"}
	if strings.Join(files, ",") != strings.Join(want, ",") {
		t.Errorf("Files = %v, want %v", files, want)
	}
	for rel, body := range map[string]string{"node_modules/a/index.js": "a", "node_modules/a/node_modules/b/index.js": "b", "index.js": "app"} {
		got, err := r.ReadFile(rel)
		if err != nil || string(got) != body {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", rel, got, err, body)
		}
	}
	if !r.Exists("node_modules/a/index.js") || r.Exists("node_modules/a/stale.js") {
		t.Error("Exists does not follow the mounts")
	}
	if m, inside, ok := r.MountOf("node_modules/a/lib/x.js"); !ok || m.Key != "ka" || inside != "lib/x.js" {
		t.Errorf("MountOf = %+v %q %v", m, inside, ok)
	}
	g, err := r.Glob("node_modules/**/*.js")
	if err != nil || len(g) != 2 {
		t.Errorf("Glob = %v, %v", g, err)
	}
	if _, err := r.ReadFile("node_modules/a/../../../etc/passwd"); err == nil {
		t.Error("a path climbing out of a mount was read")
	}
	if abs := r.Abs("node_modules/a/../../../etc/passwd"); strings.HasPrefix(abs, a) || !strings.HasPrefix(abs, filepath.Dir(root)) {
		t.Errorf("Abs of a path climbing out of a mount = %s", abs)
	}
	if _, inside, ok := r.MountOf("node_modules/a/lib/../index.js"); !ok || inside != "index.js" {
		t.Errorf("MountOf an unclean path inside: %q, %v", inside, ok)
	}
	for _, bad := range []Mount{{Path: "../x", Dir: a}, {Path: "node_modules/c", Dir: "rel"}, {Path: "node_modules/a", Dir: a}} {
		if err := r.AddMounts(bad); err == nil {
			t.Errorf("AddMounts(%+v) accepted", bad)
		}
	}
}

// A repository named through a link to its folder is read whole: its
// walk began at the link and listed nothing ("no Dockerfile in the
// repository").
func TestOpenRepoThroughALink(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, "Dockerfile", "src/app.js")
	link := filepath.Join(t.TempDir(), "svc")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRepo(link)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "Dockerfile") || !slices.Contains(files, "src/app.js") {
		t.Errorf("files through a link = %v, want Dockerfile and src/app.js", files)
	}
}
