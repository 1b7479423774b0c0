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

// readNodeModules reads the dependency code of an image from its root
// filesystem, mounted host-side: the files of every nodeModulesRoots
// directory that the scans read (sandbox.FileSet), through an os.Root, so
// that no path leads out of the image. Symlinks are counted, not
// followed; FIFOs and devices are skipped; a file over
// sandbox.MaxFileSetFile is named, not read; the set stops at
// sandbox.MaxFileSetBytes and MaxFileSetFiles. ctx ends the walk.
func readNodeModules(ctx context.Context, rootfs, workdir string, env []string) (*sandbox.FileSet, error) {
	workdir = path.Clean("/" + workdir)
	set := &sandbox.FileSet{Workdir: workdir}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, fmt.Errorf("opening the image's root filesystem: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	var total int64
	for _, r := range nodeModulesRoots(workdir, env) {
		rel := strings.TrimPrefix(r, "/")
		fi, err := root.Lstat(rel)
		switch {
		case err != nil:
			continue // absent, or its path leaves the image
		case fi.Mode()&fs.ModeSymlink != 0:
			set.Symlinks++
			continue
		case !fi.IsDir():
			continue
		}
		set.Roots = append(set.Roots, r)
		err = fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // an unreadable folder: what it holds is not read
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			switch t := d.Type(); {
			case t&fs.ModeSymlink != 0:
				set.Symlinks++
				return nil
			case d.IsDir(), !t.IsRegular():
				return nil
			}
			if set.Truncated {
				return fs.SkipAll
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			f := sandbox.File{Path: "/" + p, Exec: fi.Mode()&0o111 != 0}
			limit := int64(sandbox.MaxFileSetFile)
			switch {
			case depSource(p):
				if fi.Size() > sandbox.MaxFileSetFile {
					set.TooLarge = append(set.TooLarge, f.Path)
					return nil
				}
			case f.Exec:
				limit = sandbox.ShebangHead
				f.Head = fi.Size() > sandbox.ShebangHead
			default:
				return nil
			}
			if len(set.Files) >= sandbox.MaxFileSetFiles || total+min(fi.Size(), limit) > sandbox.MaxFileSetBytes {
				set.Truncated = true
				return fs.SkipAll
			}
			data, err := readFileHead(root, p, limit)
			if err != nil {
				return nil
			}
			if !depSource(p) && !strings.HasPrefix(string(data), "#!") {
				return nil // a binary, or a script without #!
			}
			f.Data = data
			total += int64(len(data))
			set.Files = append(set.Files, f)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(set.Files, func(i, j int) bool { return set.Files[i].Path < set.Files[j].Path })
	sort.Strings(set.TooLarge)
	return set, nil
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
