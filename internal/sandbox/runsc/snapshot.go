package runsc

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/trace"
)

// Step snapshots.
//
// The trace reads a build step's files host-side: the shebangs of the
// scripts it ran, and the files its failed execs tried. buildah builds a
// stage in one working container and, without --layers, keeps none of it:
// it removes every stage's container at the end of the build (and on
// failure), and commits only the target. Committing every step instead
// (--layers) costs a copy of the whole tree per step with the vfs driver.
//
// So each RUN step's sandbox gets an OCI poststop hook. runsc runs it
// during `runsc delete`, which buildah waits for before it goes on: the
// step has exited, its sandbox is gone, and nothing has changed its rootfs
// yet. The hook (RunStepHook, in a program that Config.StepHook names)
// finds the working container's layer directory in the private store and
// copies what the trace reads of the tree into <into>/<container ID>: every
// directory, symlink and special file, with its mode and owner; of every
// executable regular file a new file with its first trace.HeadBytes bytes
// (its ELF magic or shebang); and every other regular file as a hard link,
// which costs no inode and no data. The trace then reads each step's files
// from its own snapshot, as they were right after that step.
//
// A hard link shares its inode: a later step's chmod or chown of a file
// that was not executable shows in the snapshot too (its content is never
// read), and its data stays on the spawn's disk until the build ends even
// when a later step deletes it (with --layers, every step kept a copy of
// the whole tree).
//
// Only the steps of stages other than the target's are snapshotted: the
// target's steps are read from the target's image, which the build commits
// anyway (as before snapshots existed), and a snapshot costs a few
// microseconds per file of the tree. The build tells the hook through a
// marker file in the snapshot directory, which it creates when buildah's
// output starts a step of another stage and removes when it starts one of
// the target's. buildah prints a step's header before it starts the step's
// sandbox, and the hook runs after that sandbox exits; were the marker ever
// late, a step would only be read from its stage's image instead, or
// snapshotted needlessly.

// stepHookDir is the hooks directory (buildah --hooks-dir) of a traced
// build, in its private buildah directory; stepSnapshotDir holds the
// snapshots.
const (
	stepHookDir     = "hooks"
	stepSnapshotDir = "snap"
	// stepSnapshotWanted is the marker file that asks the hook for a
	// snapshot. It cannot name a snapshot (see reSnapshotName).
	stepSnapshotWanted = ".wanted"
	// stepHookTimeout bounds one hook run, in seconds: runsc kills it
	// after that, and the step keeps no snapshot.
	stepHookTimeout = 120
	// maxSnapshotEntries bounds the tree a hook copies, by default.
	maxSnapshotEntries = 4 << 20
	// maxHookError bounds the error a failed hook leaves for the build.
	maxHookError = 1 << 10
	// maxHookState and maxBundleConfig bound what the hook reads.
	maxHookState    = 64 << 10
	maxBundleConfig = 16 << 20
)

// reSnapshotName is a container ID that names a snapshot: runsc's IDs, as
// buildah makes them ("buildah-buildah123").
var reSnapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// The step hook's refusals.
var (
	errHookUsage      = errors.New("want --store DIR --into DIR [--max-entries N], both directories absolute, and nothing else")
	errHookState      = errors.New("not a container state from runsc")
	errNotLayer       = errors.New("the step's rootfs is no layer of the store")
	errSnapshotTooBig = errors.New("too many entries")
)

// writeStepHook writes the hooks directory of a traced build: one poststop
// hook that runs hook (the program and its leading arguments) to snapshot
// each step into into, reading layers from the private store at store.
func writeStepHook(dir string, hook []string, store, into string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("creating the step hook directory: %w", err)
	}
	if err := os.Mkdir(into, 0o700); err != nil {
		return fmt.Errorf("creating the step snapshot directory: %w", err)
	}
	timeout := stepHookTimeout
	type ociHook struct {
		Path    string   `json:"path"`
		Args    []string `json:"args"`
		Timeout *int     `json:"timeout,omitempty"`
	}
	conf := struct {
		Version string         `json:"version"`
		Hook    ociHook        `json:"hook"`
		When    map[string]any `json:"when"`
		Stages  []string       `json:"stages"`
	}{
		Version: "1.0.0",
		Hook:    ociHook{Path: hook[0], Args: append(slices.Clone(hook), "--store", store, "--into", into), Timeout: &timeout},
		When:    map[string]any{"always": true},
		Stages:  []string{"poststop"},
	}
	data, err := json.Marshal(conf)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "codegenie-step.json"), data, 0o600); err != nil {
		return fmt.Errorf("writing the step hook: %w", err)
	}
	return nil
}

// snapshotMarker keeps the marker in into (none when "") in step with the
// build's steps, from buildah's step headers. One goroutine uses it.
type snapshotMarker struct {
	into   string
	wanted bool
}

// step is called at each step's header: other is whether the step is of a
// stage other than the target's. A marker that cannot be set leaves those
// steps without snapshots: the trace then cannot read their files, and
// says so.
func (m *snapshotMarker) step(other bool) {
	if m.into == "" || other == m.wanted {
		return
	}
	if err := wantSnapshots(m.into, other); err == nil {
		m.wanted = other
	}
}

// wantSnapshots creates the marker that asks the hook to snapshot the steps
// that follow in into, or removes it.
func wantSnapshots(into string, want bool) error {
	marker := filepath.Join(into, stepSnapshotWanted)
	if !want {
		if err := os.Remove(marker); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("clearing the step snapshot marker: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return fmt.Errorf("setting the step snapshot marker: %w", err)
	}
	return nil
}

// stepSnapshot returns the root of container's snapshot in into, or ""
// when it has none (the hook did not run, or failed).
func stepSnapshot(into, container string) string {
	if into == "" || !reSnapshotName.MatchString(container) {
		return ""
	}
	dir := filepath.Join(into, container)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// missingSnapshot says why container has no snapshot in into: the error
// its hook left, else that none ran.
func missingSnapshot(into, container string) string {
	const none = "the step hook left no snapshot of this step"
	if !reSnapshotName.MatchString(container) {
		return none
	}
	f, err := os.Open(filepath.Join(into, container+".err"))
	if err != nil {
		return none
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxHookError))
	if len(b) == 0 {
		return none
	}
	return "the step hook failed: " + strings.ToValidUTF8(strings.TrimSpace(string(b)), "?")
}

// RunStepHook is the poststop hook of a traced build step (see Step
// snapshots above): args are its flags (--store, the private store's
// graphroot; --into, the snapshot directory) and stdin is the container
// state that runsc passes to hooks. It snapshots the step's rootfs into
// <into>/<container ID>, complete or not at all, when the build asked for
// it (the marker file in into), and does nothing otherwise. A program that
// Config.StepHook names calls it with the arguments that follow the
// configured ones, and exits non-zero when it returns an error.
func RunStepHook(args []string, stdin io.Reader) error {
	fl := flag.NewFlagSet("step-hook", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	store := fl.String("store", "", "the private store's graphroot")
	into := fl.String("into", "", "the snapshot directory")
	limit := fl.Int("max-entries", maxSnapshotEntries, "the largest tree to copy")
	if err := fl.Parse(args); err != nil {
		return fmt.Errorf("step hook: %w: %w", errHookUsage, err)
	}
	if !filepath.IsAbs(*store) || !filepath.IsAbs(*into) || fl.NArg() != 0 || *limit < 1 {
		return fmt.Errorf("step hook: %w", errHookUsage)
	}
	if _, err := os.Lstat(filepath.Join(*into, stepSnapshotWanted)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var state struct {
		ID     string `json:"id"`
		Bundle string `json:"bundle"`
	}
	if err := json.NewDecoder(io.LimitReader(stdin, maxHookState)).Decode(&state); err != nil {
		return fmt.Errorf("step hook: reading the container state: %w: %w", errHookState, err)
	}
	if !reSnapshotName.MatchString(state.ID) || !filepath.IsAbs(state.Bundle) {
		return fmt.Errorf("step hook: %w: it names container %q in bundle %q", errHookState, state.ID, state.Bundle)
	}
	err := snapshotStep(*store, *into, state.ID, state.Bundle, *limit)
	if err != nil {
		// For the build to tell (missingSnapshot); the hook's own error
		// goes only to runsc's log.
		msg := err.Error()
		if len(msg) > maxHookError {
			msg = msg[:maxHookError]
		}
		_ = os.WriteFile(filepath.Join(*into, state.ID+".err"), []byte(msg), 0o600)
		return fmt.Errorf("step hook: %w", err)
	}
	return nil
}

// snapshotStep snapshots the rootfs of container id, whose bundle is
// bundle, into into/<id>: complete, or not at all.
func snapshotStep(store, into, id, bundle string, limit int) error {
	rootfs, err := bundleRootfs(bundle)
	if err != nil {
		return err
	}
	src, err := findLayer(filepath.Join(store, "vfs", "dir"), rootfs)
	if err != nil {
		return err
	}
	dst := filepath.Join(into, id)
	tmp := dst + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := snapshotTree(src, tmp, limit); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("snapshotting %s: %w", id, err)
	}
	return os.Rename(tmp, dst)
}

// bundleRootfs is the root filesystem that an OCI bundle's config.json
// names, absolute.
func bundleRootfs(bundle string) (string, error) {
	f, err := os.Open(filepath.Join(bundle, "config.json"))
	if err != nil {
		return "", fmt.Errorf("reading the bundle: %w", err)
	}
	defer f.Close()
	var spec struct {
		Root *struct {
			Path string `json:"path"`
		} `json:"root"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxBundleConfig)).Decode(&spec); err != nil {
		return "", fmt.Errorf("reading the bundle's config.json: %w", err)
	}
	if spec.Root == nil || spec.Root.Path == "" {
		return "", fmt.Errorf("%w: the bundle's config.json names no root", errHookState)
	}
	p := spec.Root.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(bundle, p)
	}
	return p, nil
}

// findLayer returns the layer directory in dir (the vfs driver's layers)
// that rootfs is: buildah bind-mounts the working container's layer there,
// so the two are the same directory.
func findLayer(dir, rootfs string) (string, error) {
	want, err := os.Stat(rootfs)
	if err != nil {
		return "", fmt.Errorf("reading the step's rootfs: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading the store's layers: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && os.SameFile(fi, want) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s", errNotLayer, rootfs)
}

// snapshotTree makes dst a copy of what the trace reads of the tree at
// src (see Step snapshots above; src and dst must be on one filesystem
// mount): directories, symlinks and special files recreated with src's
// modes and owners, an executable regular file's first trace.HeadBytes
// bytes in a new file, and any other regular file hard-linked. It follows
// no symlink, stays on src's filesystem, and copies at most limit entries.
// Directories get their modes once they are filled. Modes are set
// explicitly, whatever the umask.
func snapshotTree(src, dst string, limit int) error {
	type dir struct {
		path string
		mode fs.FileMode
		st   *syscall.Stat_t
	}
	var dirs []dir
	root, err := os.Lstat(src)
	if err != nil {
		return err
	}
	rootSt, ok := root.Sys().(*syscall.Stat_t)
	if !ok || !root.IsDir() {
		return fmt.Errorf("%s is not a directory", src)
	}
	n := 0
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > limit {
			return fmt.Errorf("%w: more than %d", errSnapshotTooBig, limit)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no stat", p)
		}
		if st.Dev != rootSt.Dev {
			// Another filesystem mounted inside the tree: not the step's.
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		mode := fi.Mode()
		switch {
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dir{target, mode, st})
			return nil
		case mode.IsRegular() && mode&0o111 == 0:
			return os.Link(p, target)
		case mode.IsRegular():
			if err := copyHead(p, target, st); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
			return os.Lchown(target, int(st.Uid), int(st.Gid))
		default:
			// Devices, FIFOs and sockets: the same node, which the spawn's
			// disk (nodev) never lets anyone open as a device.
			if err := unix.Mknod(target, st.Mode, int(st.Rdev)); err != nil {
				return err
			}
		}
		return chownChmod(target, mode, st)
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := chownChmod(d.path, d.mode, d.st); err != nil {
			return err
		}
	}
	return nil
}

// chownChmod gives target (no symlink) the owner and mode of st and mode,
// chmod after chown, which clears setuid and setgid bits.
func chownChmod(target string, mode fs.FileMode, st *syscall.Stat_t) error {
	if err := os.Lchown(target, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	return os.Chmod(target, mode.Perm()|mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky))
}

// copyHead writes the first trace.HeadBytes bytes of the regular file p,
// which st describes, to a new file target. p is opened without following
// a symlink or blocking, and must still be the file that st describes.
func copyHead(p, target string, st *syscall.Stat_t) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if now, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.Mode().IsRegular() || now.Dev != st.Dev || now.Ino != st.Ino {
		return fmt.Errorf("%s changed while it was copied", p)
	}
	head := make([]byte, trace.HeadBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return err
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := out.Write(head[:n]); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
