package runsc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// dpkgStatus has six paragraphs: four installed (one held), one removed
// with its config files left, and one half-installed; with continuation
// lines, a blank line of spaces, and a field name in another case.
const dpkgStatusFixture = `Package: base-files
Status: install ok installed
Priority: required
Version: 12.4
Description: Debian base system miscellaneous files
 This package contains the basic filesystem hierarchy.
 .
 Status: not a field, a continuation

Package: libc6
Status: install ok installed
Conffiles:
 /etc/ld.so.conf.d/x86_64-linux-gnu.conf d4e7a7b88a71b5ffd9e2644e71a0cfab

Package: dash
status: hold ok installed

Package: oldpkg
Status: deinstall ok config-files
   
Package: broken
Status: install reinstreq half-installed

Package: tzdata
Status: install ok installed
`

// apkInstalledFixture has three packages; "p:" (provides) is not "P:".
const apkInstalledFixture = `C:Q1abc=
P:musl
V:1.2.4-r2
p:so:libc.musl-x86_64.so.1=1

C:Q1def=
P:busybox
V:1.36.1-r5

C:Q1ghi=
P:alpine-baselayout
V:3.4.3-r1
`

// writeTree makes files under dir: a path ending in "/" is a directory;
// a value starting with "->" is a symlink to the rest.
func writeTree(t *testing.T, dir string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(name, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(body, "->"):
			if err := os.Symlink(strings.TrimPrefix(body, "->"), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, mode := range modes {
		// os.Chmod takes the Go mode bits: setuid and setgid included.
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRootfsFacts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		modes map[string]os.FileMode
		want  sandbox.ImageFacts
	}{
		{
			name:  "empty",
			files: map[string]string{"etc/": ""},
			want:  sandbox.ImageFacts{},
		},
		{
			// A Debian-like image with a busybox, a distroless-style
			// status.d beside the status file, and an apk database.
			name: "debian and busybox",
			files: map[string]string{
				"var/lib/dpkg/status":                    dpkgStatusFixture,
				"var/lib/dpkg/status.d/libssl3":          "Package: libssl3\nVersion: 3.0\nArchitecture: amd64\n",
				"var/lib/dpkg/status.d/libssl3.md5sums":  "0123 usr/lib/libssl.so.3\n",
				"var/lib/dpkg/status.d/tzdata":           "Package: tzdata\nVersion: 2024a\n",
				"var/lib/dpkg/status.d/notes/":           "",
				"lib/apk/db/installed":                   apkInstalledFixture,
				"bin/busybox":                            "\x7fELF",
				"bin/sh":                                 "->busybox",
				"bin/ash":                                "->/bin/busybox",
				"bin/bash":                               "->/usr/bin/bash-missing",
				"usr/bin/dash":                           "#!not executable",
				"usr/sbin/zsh":                           "\x7fELF",
				"bin/ksh":                                "->../../../../../../../../bin/true",
				"bin/tcsh":                               "->/../../../bin/true",
				"busybox/sh":                             "\x7fELF",
				"app/node_modules/x/sh":                  "\x7fELF",
				"bin/su":                                 "\x7fELF",
				"usr/bin/wall":                           "\x7fELF",
				"usr/bin/nolock":                         "\x7fELF",
				"usr/bin/inert":                          "\x7fELF",
				"usr/bin/plain":                          "\x7fELF",
				"var/local/":                             "",
				"usr/bin/evil\nname":                     "\x7fELF",
				"usr/lib/openssh/ssh-keysign":            "\x7fELF",
				"usr/share/doc/base-files/sh/README.txt": "not a shell",
			},
			modes: map[string]os.FileMode{
				"bin/busybox":                 0o755,
				"usr/sbin/zsh":                0o755,
				"busybox/sh":                  0o755,
				"app/node_modules/x/sh":       0o755,
				"bin/su":                      0o755 | os.ModeSetuid,
				"usr/bin/wall":                0o755 | os.ModeSetgid,
				"usr/bin/nolock":              0o644 | os.ModeSetgid, // mandatory locking, not a privilege
				"usr/bin/inert":               0o644 | os.ModeSetuid, // nothing executes it
				"usr/bin/plain":               0o755,
				"var/local":                   0o755 | os.ModeSetgid, // a directory
				"usr/bin/evil\nname":          0o755 | os.ModeSetuid,
				"usr/lib/openssh/ssh-keysign": 0o711 | os.ModeSetuid,
			},
			want: sandbox.ImageFacts{
				Packages:    4 + 2 + 3,
				PackageDBs:  []string{sandbox.PackageDBDpkg, sandbox.PackageDBApk},
				Setuid:      []string{"/bin/su", `"/usr/bin/evil\nname"`, "/usr/bin/wall", "/usr/lib/openssh/ssh-keysign"},
				SetuidCount: 4,
				Shells: []sandbox.Shell{
					{Path: "/bin/ash", Target: "/bin/busybox"},
					{Path: "/bin/busybox"},
					{Path: "/bin/sh", Target: "busybox"},
					{Path: "/busybox/sh"},
					{Path: "/usr/sbin/zsh"},
				},
				ShellCount: 5,
			},
		},
		{
			// distroless: status.d alone, no shell.
			name: "distroless",
			files: map[string]string{
				"var/lib/dpkg/status.d/base":           "Package: base-files\nVersion: 13\n",
				"var/lib/dpkg/status.d/libc6":          "Package: libc6\nVersion: 2.41\n",
				"var/lib/dpkg/status.d/libc6.md5sums":  "x\n",
				"var/lib/dpkg/status.d/netbase":        "Package: netbase\n",
				"nodejs/bin/node":                      "\x7fELF",
				"etc/passwd":                           "root:x:0:0:root:/root:/sbin/nologin\n",
				"usr/share/zoneinfo/Europe/":           "",
				"var/lib/dpkg/status.d/ignored-empty":  "",
				"var/lib/dpkg/status.d/not-a-package":  "Version: 1\n",
				"var/lib/dpkg/status.d/removed-status": "Package: gone\nStatus: purge ok not-installed\n",
			},
			modes: map[string]os.FileMode{"nodejs/bin/node": 0o755},
			want:  sandbox.ImageFacts{Packages: 3, PackageDBs: []string{sandbox.PackageDBDpkg}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, tc.files, tc.modes)
			got := rootfsFacts(t.Context(), dir)
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRootfsFactsBounds: the lists are cut, the counts are not.
func TestRootfsFactsBounds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, modes := map[string]string{}, map[string]os.FileMode{}
	for i := range sandbox.MaxFactSetuid + 5 {
		name := filepath.Join("usr/bin", "suid"+strings.Repeat("x", i))
		files[name], modes[name] = "\x7fELF", 0o755|os.ModeSetuid
	}
	for i := range sandbox.MaxFactShells + 3 {
		name := filepath.Join("opt", strings.Repeat("d", i+1), "bin", "sh")
		files[name], modes[name] = "\x7fELF", 0o755
	}
	writeTree(t, dir, files, modes)
	got := rootfsFacts(t.Context(), dir)
	if got.SetuidCount != sandbox.MaxFactSetuid+5 || len(got.Setuid) != sandbox.MaxFactSetuid {
		t.Errorf("setuid: %d listed, count %d; want %d and %d", len(got.Setuid), got.SetuidCount, sandbox.MaxFactSetuid, sandbox.MaxFactSetuid+5)
	}
	if got.ShellCount != sandbox.MaxFactShells+3 || len(got.Shells) != sandbox.MaxFactShells {
		t.Errorf("shells: %d listed, count %d; want %d and %d", len(got.Shells), got.ShellCount, sandbox.MaxFactShells, sandbox.MaxFactShells+3)
	}
	if got.Incomplete != "" {
		t.Errorf("incomplete %q; want whole", got.Incomplete)
	}
}

// TestRootfsFactsMissing: a root that is not there says so.
func TestRootfsFactsMissing(t *testing.T) {
	t.Parallel()
	got := rootfsFacts(t.Context(), filepath.Join(t.TempDir(), "gone"))
	if got.Incomplete == "" {
		t.Errorf("facts %+v; want Incomplete set", got)
	}
}

// TestReadLayers sums an image's layers across the build's store and the
// shared base store, as containers/storage records them (vfs).
func TestReadLayers(t *testing.T) {
	t.Parallel()
	private, base := t.TempDir(), t.TempDir()
	const (
		img  = "1111111111111111111111111111111111111111111111111111111111111111"
		bimg = "2222222222222222222222222222222222222222222222222222222222222222"
	)
	writeJSON := func(dir, file string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON(private, "vfs-images/images.json", []map[string]any{{"id": img, "layer": "l3", "names": []string{"localhost/x-0"}}})
	writeJSON(private, "vfs-layers/layers.json", []map[string]any{{"id": "l3", "parent": "l2", "diff-size": 300, "compression": 0}})
	writeJSON(base, "vfs-images/images.json", []map[string]any{{"id": bimg, "layer": "l2"}})
	writeJSON(base, "vfs-layers/layers.json", []map[string]any{
		{"id": "l1", "diff-size": 100, "compressed-size": 40},
		{"id": "l2", "parent": "l1", "diff-size": 200, "compressed-size": 80},
		{"id": "orphan", "diff-size": 7},
	})
	for _, tc := range []struct {
		name   string
		stores []string
		image  string
		want   layerSizes
		err    string
	}{
		{name: "built on a base", stores: []string{private, base}, image: img, want: layerSizes{count: 3, bytes: 600}},
		{name: "the base itself", stores: []string{private, base}, image: bimg, want: layerSizes{count: 2, bytes: 300}},
		{name: "a layer missing", stores: []string{private}, image: img, err: "layer l2 (of 1 read) is in none"},
		{name: "no such image", stores: []string{base}, image: img, err: "no image 111111111111"},
		{name: "no store files", stores: []string{t.TempDir()}, image: img, err: "no image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := readLayers(tc.stores, tc.image)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("layers %+v; want %+v", got, tc.want)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		t.Parallel()
		bad := t.TempDir()
		if err := os.MkdirAll(filepath.Join(bad, "vfs-images"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bad, "vfs-images", "images.json"), []byte("[{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readLayers([]string{bad}, img); err == nil || !strings.Contains(err.Error(), "vfs-images/images.json") {
			t.Errorf("err %v; want one naming vfs-images/images.json", err)
		}
	})
}
