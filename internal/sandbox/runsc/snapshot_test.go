package runsc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/trace"
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
	must(os.WriteFile(filepath.Join(dir, "src", "big.sh"), []byte("#!/bin/bash\n"+strings.Repeat("echo padding\n", 100)), 0o750))
	must(os.WriteFile(filepath.Join(dir, "src", "lib", "data"), []byte("x"), 0o600))
	must(os.Symlink("build.sh", filepath.Join(dir, "src", "run")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "src", "out")))
	must(os.Symlink("loop", filepath.Join(dir, "src", "loop")))
	must(os.Lchown(filepath.Join(dir, "src", "run"), 1000, 1000))
	// Modes the umask (022) would change if they were not set explicitly.
	must(syscall.Mkfifo(filepath.Join(dir, "src", "fifo"), 0o666))
	must(os.Chmod(filepath.Join(dir, "src", "fifo"), 0o666))
	must(os.Lchown(filepath.Join(dir, "src", "fifo"), 1000, 1000))
	must(os.Chmod(filepath.Join(dir, "src", "build.sh"), 0o777))
	must(os.Mkdir(filepath.Join(dir, "ro"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "ro", "f"), nil, 0o644))
	must(os.Chmod(filepath.Join(dir, "ro"), 0o555))
	must(os.Mkdir(filepath.Join(dir, "shared"), 0o755))
	must(os.Chmod(filepath.Join(dir, "shared"), 0o775|fs.ModeSetgid))
	must(os.Chown(filepath.Join(dir, "src", "lib"), 1000, 1000))
}

// treeOf describes every entry below dir: its type, permissions and
// owner, a symlink's target, and for a regular file whether it is the same
// inode as the one at the same place below same, and, when it is
// executable, its first trace.HeadBytes bytes.
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
		case fi.Mode().IsRegular():
			o, err := os.Lstat(filepath.Join(same, rel))
			desc += " linked=" + map[bool]string{true: "yes", false: "no"}[err == nil && os.SameFile(fi, o)]
			if fi.Mode()&0o111 != 0 {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				desc += fmt.Sprintf(" head=%q", b[:min(len(b), trace.HeadBytes)])
			}
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantSnapshot is treeOf a snapshot of src, compared with src: executables
// are copied (their heads), everything else is linked.
func wantSnapshot(t *testing.T, src string) map[string]string {
	t.Helper()
	want := treeOf(t, src, src)
	for rel, desc := range want {
		if strings.Contains(desc, " head=") {
			want[rel] = strings.Replace(desc, "linked=yes", "linked=no", 1)
		}
	}
	return want
}

func TestSnapshotTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("snapshots keep owners: needs root")
	}
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	makeTree(t, src)
	if err := snapshotTree(src, dst, maxSnapshotEntries); err != nil {
		t.Fatal(err)
	}
	want := wantSnapshot(t, src)
	got := treeOf(t, dst, src)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(filepath.Join(dst, "src", "big.sh")); err != nil || fi.Size() != trace.HeadBytes {
		t.Errorf("big.sh in the snapshot: %v, %v; want its first %d bytes only", fi, err, trace.HeadBytes)
	}
	// A later in-place rewrite of an executable does not reach the
	// snapshot's copy.
	if err := os.WriteFile(filepath.Join(src, "src", "big.sh"), []byte("#!/bin/zsh\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "src", "big.sh")); !strings.HasPrefix(string(b), "#!/bin/bash") {
		t.Errorf("snapshot's big.sh after the source's was rewritten: %.20q", b)
	}
	// A file that a later step deletes stays in the snapshot.
	if err := os.Remove(filepath.Join(src, "src", "build.sh")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "src", "build.sh")); err != nil || !strings.HasPrefix(string(b), "#!/bin/sh") {
		t.Errorf("snapshot's build.sh after the source's was deleted: %q, %v", b, err)
	}
	// A tree over the limit fails.
	if err := snapshotTree(src, filepath.Join(base, "small"), 5); !errors.Is(err, errSnapshotTooBig) {
		t.Errorf("snapshot of %d+ entries with a limit of 5: %v; want errSnapshotTooBig", len(want), err)
	}
}

func TestSnapshotMarker(t *testing.T) {
	t.Parallel()
	into := t.TempDir()
	m := snapshotMarker{into: into}
	marked := func() bool {
		_, err := os.Lstat(filepath.Join(into, stepSnapshotWanted))
		return err == nil
	}
	// Steps of a builder stage, then of the target's, then a builder's.
	for i, tc := range []struct{ other, want bool }{{true, true}, {true, true}, {false, false}, {false, false}, {true, true}} {
		m.step(tc.other)
		if got := marked(); got != tc.want {
			t.Errorf("after step %d (other stage %v): marker %v, want %v", i, tc.other, got, tc.want)
		}
	}
	(&snapshotMarker{}).step(true) // no snapshots: nothing to mark, no panic
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
	if diff := cmp.Diff(wantSnapshot(t, layer), treeOf(t, snap, layer)); diff != "" {
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
		want  error
	}{
		{"rootfs outside the store", args, hookState("c1", otherBundle), errNotLayer},
		{"container ID with a slash", args, hookState("../c2", bundle), errHookState},
		{"relative bundle", args, hookState("c3", "bundle"), errHookState},
		{"state not JSON", args, strings.NewReader("{"), errHookState},
		{"no bundle config", args, hookState("c4", t.TempDir()), fs.ErrNotExist},
		{"relative store", []string{"--store", "s", "--into", into}, hookState("c5", bundle), errHookUsage},
		{"unknown flag", append([]string{"--follow"}, args...), hookState("c6", bundle), errHookUsage},
		{"stray argument", append(slices.Clone(args), "x"), hookState("c7", bundle), errHookUsage},
		{"tree too big", append(slices.Clone(args), "--max-entries", "3"), hookState("c8", bundle), errSnapshotTooBig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := RunStepHook(tc.args, tc.state); !errors.Is(err, tc.want) {
				t.Fatalf("RunStepHook: %v; want %v", err, tc.want)
			}
		})
	}
	// Each refusal left no snapshot and no partial one; those with a
	// container ID left their error for the build.
	var names []string
	entries, _ := os.ReadDir(into)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	wantNames := []string{".wanted", "buildah-buildah42", "c1.err", "c4.err", "c8.err"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("snapshot directory after refusals (-want +got):\n%s", diff)
	}
	if note := missingSnapshot(into, "c8"); !strings.Contains(note, "too many entries") {
		t.Errorf("missingSnapshot of a tree too big: %q", note)
	}
	if note := missingSnapshot(into, "c9"); note != "the step hook left no snapshot of this step" {
		t.Errorf("missingSnapshot of a step no hook saw: %q", note)
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
