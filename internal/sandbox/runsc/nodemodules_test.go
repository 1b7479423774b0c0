package runsc

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/codegenie/codegenie/internal/sandbox"
)

func TestNodeModulesRoots(t *testing.T) {
	got := nodeModulesRoots("/srv/app", []string{"PATH=/bin", "NODE_PATH=/opt/lib:relative:/srv/app/node_modules/x:/usr/lib/node_modules"})
	want := []string{"/srv/app/node_modules", "/srv/node_modules", "/node_modules", "/opt/lib", "/usr/lib/node_modules"}
	if !slices.Equal(got, want) {
		t.Fatalf("roots = %q, want %q", got, want)
	}
	if got := nodeModulesRoots("/app/node_modules", nil); !slices.Equal(got, []string{"/app/node_modules", "/node_modules"}) {
		t.Fatalf("roots from inside node_modules = %q", got)
	}
}

// TestReadNodeModules reads a planted image tree: what the scans need is
// read, binaries and other files are not, symlinks (in and out of the
// image) are counted and never followed, a FIFO does not block, and a
// file over the bound is named.
func TestReadNodeModules(t *testing.T) {
	rootfs := t.TempDir()
	outside := t.TempDir()
	write := func(p string, data string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(rootfs, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("app/node_modules/shelly/package.json", `{"name":"shelly","version":"1.0.0"}`, 0o644)
	write("app/node_modules/shelly/index.js", `require('child_process').execSync('ls')`, 0o644)
	write("app/node_modules/shelly/lib/a.mjs", `export {}`, 0o644)
	write("app/node_modules/shelly/README.md", `# not read`, 0o644)
	write("app/node_modules/shelly/addon.node", "\x7fELF\x02\x01", 0o755)
	write("app/node_modules/shelly/bin/cli", "#!/bin/sh\n"+strings.Repeat("x", 1000), 0o755)
	write("app/node_modules/shelly/bin/tool", "\x7fELF"+strings.Repeat("\x00", 1000), 0o755)
	write("app/node_modules/big/index.js", strings.Repeat("a", sandbox.MaxFileSetFile+1), 0o644)
	write("node_modules/up/index.js", `module.exports = 1`, 0o644)
	write("opt/lib/np/index.cjs", `module.exports = 2`, 0o644)
	write("etc/secret.js", `secret`, 0o644)
	if err := os.WriteFile(filepath.Join(outside, "host.js"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"app/node_modules/abs":         "/etc",
		"app/node_modules/rel":         "../../etc",
		"app/node_modules/host":        outside,
		"app/node_modules/shelly/x.js": "/etc/secret.js",
		"app/node_modules/.bin/shelly": "../shelly/bin/cli",
		"opt/lib/escape":               "../../../../../../" + outside,
	} {
		full := filepath.Join(rootfs, link)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(rootfs, "app/node_modules/shelly/fifo.js"), 0o644); err != nil {
		t.Fatal(err)
	}

	set, err := readNodeModules(t.Context(), rootfs, "app", []string{"NODE_PATH=/opt/lib"})
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Validate(); err != nil {
		t.Fatalf("the set does not validate: %v", err)
	}
	var paths []string
	for _, f := range set.Files {
		paths = append(paths, f.Path)
	}
	want := []string{
		"/app/node_modules/shelly/bin/cli",
		"/app/node_modules/shelly/index.js",
		"/app/node_modules/shelly/lib/a.mjs",
		"/app/node_modules/shelly/package.json",
		"/node_modules/up/index.js",
		"/opt/lib/np/index.cjs",
	}
	if !slices.Equal(paths, want) {
		t.Fatalf("files = %q, want %q", paths, want)
	}
	cli := set.Files[0]
	if !cli.Exec || !cli.Head || len(cli.Data) != sandbox.ShebangHead || !strings.HasPrefix(string(cli.Data), "#!/bin/sh") {
		t.Errorf("bin/cli = exec %t head %t %d bytes %.12q, want its first %d bytes", cli.Exec, cli.Head, len(cli.Data), cli.Data, sandbox.ShebangHead)
	}
	if set.Symlinks != 6 {
		t.Errorf("symlinks = %d, want 6", set.Symlinks)
	}
	if !slices.Equal(set.TooLarge, []string{"/app/node_modules/big/index.js"}) {
		t.Errorf("too large = %q", set.TooLarge)
	}
	if !slices.Equal(set.Roots, []string{"/app/node_modules", "/node_modules", "/opt/lib"}) || set.Workdir != "/app" || set.Truncated {
		t.Errorf("roots %q workdir %q truncated %t", set.Roots, set.Workdir, set.Truncated)
	}
	for _, f := range set.Files {
		if strings.Contains(string(f.Data), "secret") || strings.Contains(string(f.Data), "host") {
			t.Errorf("%s holds a file from outside node_modules", f.Path)
		}
	}

	// The digest is of the content: the same tree reads the same, and one
	// byte changed changes it.
	again, err := readNodeModules(t.Context(), rootfs, "/app/", []string{"NODE_PATH=/opt/lib"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest() != set.Digest() {
		t.Errorf("the same tree read twice gives two digests")
	}
	write("app/node_modules/shelly/index.js", `require('child_process').execSync('id')`, 0o644)
	changed, err := readNodeModules(t.Context(), rootfs, "/app", []string{"NODE_PATH=/opt/lib"})
	if err != nil {
		t.Fatal(err)
	}
	if changed.Digest() == set.Digest() {
		t.Errorf("a changed file keeps the digest")
	}
}

// TestReadNodeModulesRootSymlink: a node_modules that is itself a symlink
// (out of the image) is not read.
func TestReadNodeModulesRootSymlink(t *testing.T) {
	rootfs, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "index.js"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rootfs, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(rootfs, "app/node_modules")); err != nil {
		t.Fatal(err)
	}
	set, err := readNodeModules(t.Context(), rootfs, "/app", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 0 || len(set.Roots) != 0 || set.Symlinks != 1 {
		t.Fatalf("a symlinked node_modules read as %d files, roots %q, %d symlinks", len(set.Files), set.Roots, set.Symlinks)
	}
}

func TestFileSetValidate(t *testing.T) {
	ok := sandbox.FileSet{Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{{Path: "/app/node_modules/a.js"}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]sandbox.FileSet{
		"outside a root": {Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{{Path: "/etc/passwd"}}},
		"dot-dot":        {Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{{Path: "/app/node_modules/../../etc/passwd"}}},
		"unsorted":       {Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{{Path: "/app/node_modules/b.js"}, {Path: "/app/node_modules/a.js"}}},
		"root /":         {Workdir: "/app", Roots: []string{"/"}, Files: []sandbox.File{{Path: "/a.js"}}},
		"relative":       {Workdir: "app", Roots: []string{"/app/node_modules"}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s: validated", name)
		}
	}
}
