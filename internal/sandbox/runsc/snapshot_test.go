package runsc

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// makeTree writes a small rootfs at dir: nested directories (one read-only,
// one setgid), files, symlinks that point inside, outside and at
// themselves, and a FIFO.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "src", "lib"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "src", "build.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "src", "lib", "data"), []byte("x"), 0o600))
	must(os.Symlink("build.sh", filepath.Join(dir, "src", "run")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "src", "out")))
	must(os.Symlink("loop", filepath.Join(dir, "src", "loop")))
	must(syscall.Mkfifo(filepath.Join(dir, "src", "fifo"), 0o640))
	must(os.Mkdir(filepath.Join(dir, "ro"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "ro", "f"), nil, 0o644))
	must(os.Chmod(filepath.Join(dir, "ro"), 0o555))
	must(os.Mkdir(filepath.Join(dir, "shared"), 0o755))
	must(os.Chmod(filepath.Join(dir, "shared"), 0o775|fs.ModeSetgid))
	must(os.Chown(filepath.Join(dir, "src", "lib"), 1000, 1000))
}

// treeOf describes every entry below dir: its type and permissions, a
// symlink's target, and whether a regular file is the same inode as the one
// at the same place below same.
func treeOf(t *testing.T, dir, same string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v %d:%d", fi.Mode(), st.Uid, st.Gid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular() && same != "":
			o, err := os.Lstat(filepath.Join(same, rel))
			desc += " linked=" + map[bool]string{true: "yes", false: "no"}[err == nil && os.SameFile(fi, o)]
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSnapshotTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("snapshots keep owners: needs root")
	}
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	makeTree(t, src)
	if err := snapshotTree(src, dst); err != nil {
		t.Fatal(err)
	}
	want := treeOf(t, src, src)
	if diff := cmp.Diff(want, treeOf(t, dst, src)); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	for rel, desc := range want {
		if strings.Contains(desc, "linked=no") {
			t.Errorf("%s: %s; the source itself should compare as linked", rel, desc)
		}
	}
	// A file that a later step deletes stays in the snapshot.
	if err := os.Remove(filepath.Join(src, "src", "build.sh")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "src", "build.sh")); err != nil || !strings.HasPrefix(string(b), "#!/bin/sh") {
		t.Errorf("snapshot's build.sh after the source's was deleted: %q, %v", b, err)
	}
}

// hookFixture is a private store with one layer holding a tree, and an OCI
// bundle whose root is that layer.
func hookFixture(t *testing.T) (store, into, bundle string) {
	t.Helper()
	base := t.TempDir()
	store, into, bundle = filepath.Join(base, "s"), filepath.Join(base, "snap"), filepath.Join(base, "bundle")
	layer := filepath.Join(store, "vfs", "dir", "0123abcd")
	for _, d := range []string{filepath.Join(store, "vfs", "dir", "other"), layer, into, bundle} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	makeTree(t, layer)
	writeBundle(t, bundle, layer)
	return store, into, bundle
}

func writeBundle(t *testing.T, bundle, root string) {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"ociVersion": "1.0.2", "root": map[string]string{"path": root}})
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
}

func hookState(id, bundle string) *strings.Reader {
	b, _ := json.Marshal(map[string]any{"ociVersion": "1.2.1", "id": id, "status": "stopped", "pid": -1, "bundle": bundle})
	return strings.NewReader(string(b))
}

func TestRunStepHook(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("snapshots keep owners: needs root")
	}
	store, into, bundle := hookFixture(t)
	args := []string{"--store", store, "--into", into}
	// Not asked for (a step of the target's stage): nothing.
	if err := RunStepHook(args, hookState("buildah-buildah41", bundle)); err != nil {
		t.Fatal(err)
	}
	if got := stepSnapshot(into, "buildah-buildah41"); got != "" {
		t.Errorf("snapshot %s taken without the marker", got)
	}
	if err := wantSnapshots(into, true); err != nil {
		t.Fatal(err)
	}
	if err := RunStepHook(args, hookState("buildah-buildah42", bundle)); err != nil {
		t.Fatal(err)
	}
	snap := stepSnapshot(into, "buildah-buildah42")
	if snap == "" {
		t.Fatal("no snapshot after the hook ran")
	}
	layer := filepath.Join(store, "vfs", "dir", "0123abcd")
	if diff := cmp.Diff(treeOf(t, layer, layer), treeOf(t, snap, layer)); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(into); len(entries) != 2 {
		t.Errorf("snapshot directory holds %d entries, want only the marker and the snapshot", len(entries))
	}
	if got := stepSnapshot(into, "buildah-buildah43"); got != "" {
		t.Errorf("snapshot of a container the hook never saw: %q", got)
	}
	if got := stepSnapshot(into, "../snap/buildah-buildah42"); got != "" {
		t.Errorf("snapshot named by a path: %q", got)
	}

	// Refusals: each leaves no snapshot.
	outside := t.TempDir()
	otherBundle := filepath.Join(t.TempDir(), "b")
	if err := os.Mkdir(otherBundle, 0o700); err != nil {
		t.Fatal(err)
	}
	writeBundle(t, otherBundle, outside)
	cases := []struct {
		name  string
		args  []string
		state *strings.Reader
		want  string
	}{
		{"rootfs outside the store", args, hookState("c1", otherBundle), "no layer of the store"},
		{"container ID with a slash", args, hookState("../c2", bundle), "want a container ID"},
		{"relative bundle", args, hookState("c3", "bundle"), "absolute bundle"},
		{"state not JSON", args, strings.NewReader("{"), "reading the container state"},
		{"no bundle config", args, hookState("c4", t.TempDir()), "reading the bundle"},
		{"relative store", []string{"--store", "s", "--into", into}, hookState("c5", bundle), "both absolute"},
		{"unknown flag", append([]string{"--follow"}, args...), hookState("c6", bundle), "step hook"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := RunStepHook(tc.args, tc.state)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunStepHook: %v; want an error saying %q", err, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(into); len(entries) != 2 {
		t.Errorf("snapshot directory holds %d entries after refusals, want 2", len(entries))
	}
	if err := wantSnapshots(into, false); err != nil {
		t.Fatal(err)
	}
	if err := wantSnapshots(into, false); err != nil {
		t.Errorf("clearing the marker twice: %v", err)
	}
	if err := RunStepHook(args, hookState("buildah-buildah44", bundle)); err != nil || stepSnapshot(into, "buildah-buildah44") != "" {
		t.Errorf("after the marker was cleared: %v, snapshot %q; want none", err, stepSnapshot(into, "buildah-buildah44"))
	}
}
