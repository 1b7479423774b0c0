package migrate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gather"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

// entry is one file of a tree listing: its mode, owner, and its bytes or
// link target.
type entry struct {
	Mode     fs.FileMode
	UID, GID uint32
	Data     string
}

// listing lists the tree at dir without following links.
func listing(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{Mode: fi.Mode()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			e.UID, e.GID = st.Uid, st.Gid
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Data, err = os.Readlink(p)
		case fi.Mode().IsRegular():
			var b []byte
			b, err = os.ReadFile(p)
			e.Data = string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = e
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// linkedCheckout makes base/repo, a checkout whose build context ctx is a
// symlink (made by link) to base/outside, which holds a launcher of its
// own. It returns base.
func linkedCheckout(t *testing.T, link func(base string) string) string {
	t.Helper()
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	write(t, filepath.Join(repo, "Dockerfile"), "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nCMD [\"npm\", \"start\"]\n")
	write(t, filepath.Join(repo, "package.json"), `{"name": "svc", "scripts": {"prestart": "node migrate.js", "start": "node server.js"}}`+"\n")
	write(t, filepath.Join(repo, "docker-compose.yml"), "services:\n  web:\n    build:\n      context: ./ctx\n      dockerfile: ../Dockerfile\n")
	write(t, filepath.Join(base, "outside", ".dockerignore"), "node_modules\n")
	write(t, filepath.Join(base, "outside", "migrate.js"), "console.log('migrating');\n")
	write(t, filepath.Join(base, "outside", "server.js"), "require('node:http').createServer((q, r) => r.end('ok')).listen(8080);\n")
	write(t, filepath.Join(base, "outside", "codegenie-launch.cjs"), "// theirs, committed\n")
	if err := os.Symlink(link(base), filepath.Join(repo, "ctx")); err != nil {
		t.Fatal(err)
	}
	return base
}

var outsideLinks = []struct {
	name string
	link func(base string) string
}{
	{"relative", func(string) string { return filepath.Join("..", "outside") }},
	{"absolute", func(base string) string { return filepath.Join(base, "outside") }},
}

// wantEscape checks that err is an EscapeError that names the link ctx.
func wantEscape(t *testing.T, err error) {
	t.Helper()
	var ee *EscapeError
	if !errors.As(err, &ee) || ee.Link != "ctx" {
		t.Fatalf("err %v, want an EscapeError naming the link ctx", err)
	}
}

// TestRunRefusesPlacesOutsideTheCheckout: a generated file whose place
// resolves, through a symlinked build context, outside the checkout is
// refused before anything is made, and nothing there changes.
func TestRunRefusesPlacesOutsideTheCheckout(t *testing.T) {
	t.Parallel()
	for _, tc := range outsideLinks {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := linkedCheckout(t, tc.link)
			before := listing(t, base)
			o := Options{Gather: gather.Options{Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task}, NoGates: true}
			_, err := Run(t.Context(), filepath.Join(base, "repo"), o)
			if diff := cmp.Diff(before, listing(t, base)); diff != "" {
				t.Errorf("migrate changed files (-want +got):\n%s", diff)
			}
			wantEscape(t, err)
		})
	}
}

// escaping is a rewrite whose launcher goes into the build context ctx.
func escaping() *Migration {
	m := migration()
	m.Result.Files[1].Path = "ctx/codegenie-launch.cjs"
	return m
}

// TestWriteStaysInTheCheckout: Write refuses a file whose place resolves
// outside the checkout, and changes nothing, here or there.
func TestWriteStaysInTheCheckout(t *testing.T) {
	t.Parallel()
	for _, tc := range outsideLinks {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := linkedCheckout(t, tc.link)
			write(t, filepath.Join(base, "repo", "Dockerfile"), "FROM node:22\n")
			if err := os.Remove(filepath.Join(base, "outside", "codegenie-launch.cjs")); err != nil {
				t.Fatal(err)
			}
			before := listing(t, base)
			err := escaping().Write(filepath.Join(base, "repo"))
			if diff := cmp.Diff(before, listing(t, base)); diff != "" {
				t.Errorf("a refused write changed files (-want +got):\n%s", diff)
			}
			wantEscape(t, err)
		})
	}
}

// TestWorkspaceStaysInTheScratchCopy: the gates' workspace writes only
// into itself, never through a symlinked directory into its target: not
// outside the checkout, and not into the checkout.
func TestWorkspaceStaysInTheScratchCopy(t *testing.T) {
	t.Parallel()
	for _, tc := range outsideLinks {
		t.Run("out/"+tc.name, func(t *testing.T) {
			t.Parallel()
			base := linkedCheckout(t, tc.link)
			before := listing(t, base)
			// The scratch directory beside outside: a relative link
			// copied as it is leads there too.
			scratch := base
			_, _, err := workspace(filepath.Join(base, "repo"), scratch, escaping().Result)
			if diff := cmp.Diff(before, listing(t, base)); diff != "" {
				t.Errorf("making the workspace changed files (-want +got):\n%s", diff)
			}
			wantEscape(t, err)
		})
	}
	t.Run("in/absolute", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\n")
		write(t, filepath.Join(dir, "app", "server.js"), "x\n")
		if err := os.Symlink(filepath.Join(dir, "app"), filepath.Join(dir, "ctx")); err != nil {
			t.Fatal(err)
		}
		before := listing(t, dir)
		work, cleanup, err := workspace(dir, t.TempDir(), escaping().Result)
		if err != nil {
			t.Fatal(err)
		}
		defer cleanup()
		if diff := cmp.Diff(before, listing(t, dir)); diff != "" {
			t.Fatalf("making the workspace changed the checkout (-want +got):\n%s", diff)
		}
		if got := read(t, filepath.Join(work, "ctx", "codegenie-launch.cjs")); got != "// launcher\n" {
			t.Fatalf("the workspace's ctx/codegenie-launch.cjs is %q, want the launcher", got)
		}
	})
}

// TestWriteKeepsModeOwnerAndLinks: --write keeps a file's mode and owner,
// and writes a symlinked Dockerfile through its target in the checkout;
// the link stays a link.
func TestWriteKeepsModeOwnerAndLinks(t *testing.T) {
	t.Parallel()
	want := "FROM gcr.io/distroless/nodejs22-debian13\n"
	t.Run("mode", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\n")
		if err := os.Chmod(filepath.Join(dir, "Dockerfile"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := migration().Write(dir); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "Dockerfile")); err != nil || fi.Mode() != 0o600 {
			t.Fatalf("Dockerfile: %v, mode %v; want 0600 kept", err, fi.Mode())
		}
	})
	t.Run("owner", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("giving a file another owner needs root")
		}
		dir := t.TempDir()
		write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\n")
		if err := os.Chown(filepath.Join(dir, "Dockerfile"), 4321, 4322); err != nil {
			t.Fatal(err)
		}
		if err := migration().Write(dir); err != nil {
			t.Fatal(err)
		}
		got := listing(t, dir)["Dockerfile"]
		if got.UID != 4321 || got.GID != 4322 || got.Data != want {
			t.Fatalf("Dockerfile: owner %d:%d, %q; want 4321:4322 kept and the rewrite", got.UID, got.GID, got.Data)
		}
	})
	for _, tc := range []struct {
		name string
		link func(dir string) string
	}{
		{"link/relative", func(string) string { return filepath.Join("docker", "Dockerfile.prod") }},
		{"link/absolute", func(dir string) string { return filepath.Join(dir, "docker", "Dockerfile.prod") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, filepath.Join(dir, "docker", "Dockerfile.prod"), "FROM node:22\n")
			if err := os.Symlink(tc.link(dir), filepath.Join(dir, "Dockerfile")); err != nil {
				t.Fatal(err)
			}
			if err := migration().Write(dir); err != nil {
				t.Fatal(err)
			}
			got := listing(t, dir)
			if got["Dockerfile"].Mode&fs.ModeSymlink == 0 || got["Dockerfile"].Data != tc.link(dir) {
				t.Fatalf("Dockerfile is %v %q, want the link kept", got["Dockerfile"].Mode, got["Dockerfile"].Data)
			}
			if got["docker/Dockerfile.prod"].Data != want {
				t.Fatalf("the link's target is %q, want the rewrite", got["docker/Dockerfile.prod"].Data)
			}
		})
	}
}

// TestResolve: a checkout path resolves as the kernel would follow its
// links, and one that leads out names the link.
func TestResolve(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "repo")
	write(t, filepath.Join(dir, "app", "server.js"), "x\n")
	for link, target := range map[string]string{
		"rel":     "app",
		"abs":     filepath.Join(dir, "app"),
		"chain":   "rel",
		"out":     "../outside",
		"absout":  base,
		"back":    "../repo/app",
		"via":     "out",
		"loop":    "loop",
		"dangles": "app/new.js",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := openCheckout(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for _, tc := range []struct{ path, want, link string }{
		{path: "app/server.js", want: "app/server.js"},
		{path: "rel/server.js", want: "app/server.js"},
		{path: "abs/server.js", want: "app/server.js"},
		{path: "chain/codegenie-launch.cjs", want: "app/codegenie-launch.cjs"},
		{path: "dangles", want: "app/new.js"},
		{path: "out/codegenie-launch.cjs", link: "out"},
		{path: "absout/x", link: "absout"},
		// Out and back in: os.Root refuses it, and so does migrate.
		{path: "back/x", link: "back"},
		{path: "via/x", link: "out"},
		{path: "../x", link: ""},
	} {
		got, err := c.resolve(tc.path)
		var ee *EscapeError
		switch {
		case tc.want != "" && (err != nil || got != tc.want):
			t.Errorf("resolve(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		case tc.want == "" && (!errors.As(err, &ee) || ee.Link != tc.link):
			t.Errorf("resolve(%q) = %q, %v; want an EscapeError naming %q", tc.path, got, err, tc.link)
		}
	}
	if _, err := c.resolve("loop/x"); err == nil {
		t.Error("resolve(loop/x) follows a loop without end")
	}
}
