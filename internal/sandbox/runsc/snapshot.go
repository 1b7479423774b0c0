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
	"syscall"

	"golang.org/x/sys/unix"
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
// step has exited, and nothing has changed its rootfs yet. The hook
// (RunStepHook, in a program that Config.StepHook names) finds the working
// container's layer directory in the private store and copies the tree
// into <into>/<container ID> as hard links, which costs a directory entry
// per file and no data. The trace then reads each step's files from its
// own snapshot, as they were right after that step.
//
// A hard link shares the inode: a later step that rewrites a file in place
// (rather than replacing it) changes the snapshot's copy too. Files that a
// later step deletes or replaces keep their state after the step.
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
	// maxSnapshotEntries bounds the tree a hook copies.
	maxSnapshotEntries = 4 << 20
	// maxHookState and maxBundleConfig bound what the hook reads.
	maxHookState    = 64 << 10
	maxBundleConfig = 16 << 20
)

// reSnapshotName is a container ID that names a snapshot: runsc's IDs, as
// buildah makes them ("buildah-buildah123").
var reSnapshotName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

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
		Hook:    ociHook{Path: hook[0], Args: append(append([]string{}, hook...), "--store", store, "--into", into), Timeout: &timeout},
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
	if err := fl.Parse(args); err != nil {
		return fmt.Errorf("step hook: %w", err)
	}
	if !filepath.IsAbs(*store) || !filepath.IsAbs(*into) || fl.NArg() != 0 {
		return errors.New("step hook: want --store DIR --into DIR, both absolute, and nothing else")
	}
	if _, err := os.Lstat(filepath.Join(*into, stepSnapshotWanted)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var state struct {
		ID     string `json:"id"`
		Bundle string `json:"bundle"`
	}
	if err := json.NewDecoder(io.LimitReader(stdin, maxHookState)).Decode(&state); err != nil {
		return fmt.Errorf("step hook: reading the container state: %w", err)
	}
	if !reSnapshotName.MatchString(state.ID) || !filepath.IsAbs(state.Bundle) {
		return fmt.Errorf("step hook: container state names %q in %q: want a container ID and an absolute bundle", state.ID, state.Bundle)
	}
	rootfs, err := bundleRootfs(state.Bundle)
	if err != nil {
		return fmt.Errorf("step hook: %w", err)
	}
	src, err := findLayer(filepath.Join(*store, "vfs", "dir"), rootfs)
	if err != nil {
		return fmt.Errorf("step hook: %w", err)
	}
	dst := filepath.Join(*into, state.ID)
	tmp := dst + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("step hook: %w", err)
	}
	if err := snapshotTree(src, tmp); err != nil {
		return fmt.Errorf("step hook: snapshotting %s: %w", state.ID, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("step hook: %w", err)
	}
	return nil
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
		return "", errors.New("the bundle's config.json names no root")
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
	return "", fmt.Errorf("the step's rootfs %s is no layer of the store", rootfs)
}

var errSnapshotTooBig = fmt.Errorf("more than %d entries", maxSnapshotEntries)

// snapshotTree makes dst a copy of the tree at src: the same directories,
// symlinks and special files, and every regular file a hard link to the
// original (so src and dst must be on one filesystem mount). It follows no
// symlink. Directories get src's permissions and owners once they are
// filled.
func snapshotTree(src, dst string) error {
	type dir struct {
		path string
		mode fs.FileMode
		st   *syscall.Stat_t
	}
	var dirs []dir
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > maxSnapshotEntries {
			return errSnapshotTooBig
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
		switch mode := fi.Mode(); {
		case mode.IsDir():
			if err := os.Mkdir(target, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dir{target, mode, st})
		case mode.IsRegular():
			return os.Link(p, target)
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
			return os.Lchown(target, int(st.Uid), int(st.Gid))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := os.Lchown(d.path, int(d.st.Uid), int(d.st.Gid)); err != nil {
			return err
		}
		// Chmod after chown: chown clears setuid and setgid bits.
		if err := os.Chmod(d.path, d.mode.Perm()|d.mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
			return err
		}
	}
	return nil
}
