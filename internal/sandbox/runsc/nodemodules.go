package runsc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/regfile"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// nodeModulesRoots are the image directories node resolves a bare require
// through from the image's working directory: <workdir>/node_modules and
// the node_modules of each parent (a directory named node_modules gets
// none), then each absolute entry of NODE_PATH. A root inside one listed
// before it is left out: its files are read already.
func nodeModulesRoots(workdir string, env []string) []string {
	var roots []string
	add := func(r string) {
		r = path.Clean(r)
		if r == "/" || !path.IsAbs(r) {
			return
		}
		for _, o := range roots {
			if r == o || strings.HasPrefix(r, o+"/") {
				return
			}
		}
		roots = append(roots, r)
	}
	for d := workdir; ; d = path.Dir(d) {
		if path.Base(d) != "node_modules" {
			add(path.Join(d, "node_modules"))
		}
		if d == "/" {
			break
		}
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NODE_PATH="); ok {
			for _, p := range strings.Split(v, ":") {
				add(p)
			}
		}
	}
	return roots
}

// depSource reports a file the dependency scans read whole.
func depSource(name string) bool {
	switch path.Ext(name) {
	case ".js", ".cjs", ".mjs", ".json":
		return true
	}
	return false
}

// maxWalkDepth bounds how deep readNodeModules descends below a root.
const maxWalkDepth = 128

// readNodeModules reads the dependency code of an image from its root
// filesystem, mounted host-side: the files of every nodeModulesRoots
// directory that the scans read (sandbox.FileSet), through an os.Root, so
// that no path leads out of the image. Each folder is opened as a root of
// its own from its parent's, so that every lookup is one name. Symlinks
// are counted, not followed; FIFOs and devices are skipped; a file over
// sandbox.MaxFileSetFile is named, not read; the set stops at
// sandbox.MaxFileSetBytes and MaxFileSetFiles. ctx ends the walk.
func readNodeModules(ctx context.Context, rootfs, workdir string, env []string) (*sandbox.FileSet, error) {
	workdir = path.Clean("/" + workdir)
	w := &modulesWalk{ctx: ctx, set: &sandbox.FileSet{Workdir: workdir}}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, fmt.Errorf("opening the image's root filesystem: %w", err)
	}
	defer root.Close()
	for _, r := range nodeModulesRoots(workdir, env) {
		rel := strings.TrimPrefix(r, "/")
		fi, err := root.Lstat(rel)
		switch {
		case err != nil:
			continue // absent, or its path leaves the image
		case fi.Mode()&fs.ModeSymlink != 0:
			w.set.Symlinks++
			continue
		case !fi.IsDir():
			continue
		}
		dir, err := root.OpenRoot(rel)
		if err != nil {
			continue
		}
		w.set.Roots = append(w.set.Roots, r)
		err = w.dir(dir, r, 0)
		dir.Close()
		if err != nil {
			return nil, err
		}
	}
	set := w.set
	sort.Slice(set.Files, func(i, j int) bool { return set.Files[i].Path < set.Files[j].Path })
	sort.Strings(set.TooLarge)
	return set, nil
}

// modulesWalk is one readNodeModules.
type modulesWalk struct {
	ctx   context.Context
	set   *sandbox.FileSet
	total int64
}

// dir reads the folder dir, at image path at, and those below it.
func (w *modulesWalk) dir(dir *os.Root, at string, depth int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if depth > maxWalkDepth || w.set.Truncated {
		return nil
	}
	f, err := dir.Open(".")
	if err != nil {
		return nil // an unreadable folder: what it holds is not read
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil
	}
	sort.Strings(names)
	for _, name := range names {
		if w.set.Truncated {
			return nil
		}
		fi, err := dir.Lstat(name)
		if err != nil {
			continue
		}
		p := at + "/" + name
		switch t := fi.Mode().Type(); {
		case t&fs.ModeSymlink != 0:
			w.set.Symlinks++
		case fi.IsDir():
			sub, err := dir.OpenRoot(name)
			if err != nil {
				continue
			}
			err = w.dir(sub, p, depth+1)
			sub.Close()
			if err != nil {
				return err
			}
		case t.IsRegular():
			w.file(dir, name, p, fi)
		}
	}
	return nil
}

// file reads one regular file when the scans need it.
func (w *modulesWalk) file(dir *os.Root, name, p string, fi fs.FileInfo) {
	f := sandbox.File{Path: p, Exec: fi.Mode()&0o111 != 0}
	limit := int64(sandbox.MaxFileSetFile)
	switch {
	case depSource(name):
		if fi.Size() > sandbox.MaxFileSetFile {
			w.set.TooLarge = append(w.set.TooLarge, p)
			return
		}
	case f.Exec:
		limit = sandbox.ShebangHead
		f.Head = fi.Size() > sandbox.ShebangHead
	default:
		return
	}
	if len(w.set.Files) >= sandbox.MaxFileSetFiles || w.total+min(fi.Size(), limit) > sandbox.MaxFileSetBytes {
		w.set.Truncated = true
		return
	}
	data, err := readFileHead(dir, name, limit)
	if err != nil {
		return
	}
	if !depSource(name) && !strings.HasPrefix(string(data), "#!") {
		return // a binary, or a script without #!
	}
	f.Data = data
	w.total += int64(len(data))
	w.set.Files = append(w.set.Files, f)
}

// readFileHead reads at most limit bytes of the regular file name in root,
// without blocking on anything else.
func readFileHead(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := regfile.OpenIn(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// imageNodeModules is Result.NodeModules for image (mounted at rootfs; ""
// mounts it now): readNodeModules with the working directory and NODE_PATH
// of its config. A set that could not be read says why in Unread: the
// build and the trace stand without it.
func (br *buildRun) imageNodeModules(ctx context.Context, image, rootfs string) *sandbox.FileSet {
	set, err := br.readImageNodeModules(ctx, image, rootfs)
	if err != nil {
		return &sandbox.FileSet{Workdir: "/", Unread: br.scrub(err.Error())}
	}
	return set
}

func (br *buildRun) readImageNodeModules(ctx context.Context, image, rootfs string) (*sandbox.FileSet, error) {
	cfg, err := br.bh.config(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("reading the image config: %w", err)
	}
	if rootfs == "" {
		m, err := br.bh.mount(ctx, image, "node-modules")
		if err != nil {
			return nil, fmt.Errorf("mounting the image: %w", err)
		}
		rootfs = m.rootfs
	}
	return readNodeModules(ctx, rootfs, cfg.WorkingDir, cfg.Env)
}
