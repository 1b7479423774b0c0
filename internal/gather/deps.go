package gather

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/probe"
)

// maxLockfileDirs bounds the folders whose lockfiles one gather installs.
const maxLockfileDirs = 16

// mountDependencies installs the repository's locked production
// dependencies with f (gather --deps lockfile) and mounts each at its
// node_modules path, as an install would have placed it, so the probes
// read them as installed: the root's lockfile, and those of folders that
// hold their own (a service in server/ with server/package-lock.json). A
// folder that has its own node_modules, or no lockfile, is left as it is.
// Nothing from a package runs.
//
// With dev, the development packages are mounted too: the judged image's
// install omits nothing (keepsDevDependencies).
func mountDependencies(ctx context.Context, repo *probe.Repo, f *deps.Fetcher, pctx *probe.Context, dev bool) error {
	dirs, err := lockfileDirs(repo.Root)
	if err != nil {
		return err
	}
	d := &probe.Dependencies{Memo: &f.Memo, Dev: dev}
	var mounts []probe.Mount
	var locks []*deps.Lock
	skipped := false // a folder whose packages no lockfile here names
	var formats []string
	for _, dir := range dirs {
		if fi, err := os.Lstat(filepath.Join(repo.Root, dir, "node_modules")); err == nil && fi.IsDir() {
			if pctx.Logger != nil {
				pctx.Logger.Info("a folder has its own node_modules: --deps lockfile fetches nothing for it", "folder", dir)
			}
			skipped = true
			continue
		}
		res, err := f.InstallDev(ctx, filepath.Join(repo.Root, dir), dev)
		if errors.Is(err, deps.ErrNoLockfile) {
			skipped = true
			continue // child_process says the dependencies are not installed
		}
		if le, ok := errors.AsType[*deps.LockfileError](err); ok {
			if dir != "." {
				le.File = path.Join(dir, le.File)
			}
			return &InputError{Err: err}
		}
		if err != nil {
			return fmt.Errorf("installing dependencies from the lockfile in %s: %w", dir, err)
		}
		at := func(p string) string { return path.Join(dir, p) }
		for _, in := range res.Installed {
			files, err := f.List(in)
			if err != nil {
				return err
			}
			mounts = append(mounts, probe.Mount{Path: at(in.Path), Dir: in.Dir, Key: in.Key, Files: files})
			if in.IntegrityFromRegistry {
				d.RegistryVerified = append(d.RegistryVerified, in.Name+"@"+in.Version)
			}
		}
		for _, m := range res.Missing {
			d.Unavailable = append(d.Unavailable, probe.UnavailableDependency{Name: m.Name, Version: m.Version, Path: at(m.Path), Kind: string(m.Kind), Error: m.Error})
		}
		if res.Lock != nil {
			locks = append(locks, res.Lock)
		}
		d.Installed += len(res.Installed)
		formats = append(formats, at(res.Format))
	}
	if len(formats) == 0 {
		return nil
	}
	if err := repo.AddMounts(mounts...); err != nil {
		return err
	}
	d.Lockfile = strings.Join(formats, ", ")
	if !skipped {
		d.Mentions = func(name string) bool {
			return slices.ContainsFunc(locks, func(l *deps.Lock) bool { return l.Mentions(name) })
		}
	}
	pctx.Dependencies = d
	return nil
}

// lockfileDirs lists the repository's folders that hold a lockfile beside
// a package.json: the root first (whether or not it has one), then the
// others at most three levels down, in path order, at most
// maxLockfileDirs in all. node_modules, .git and hidden folders are not
// entered, nor are symlinks followed.
func lockfileDirs(root string) ([]string, error) {
	dirs := []string{"."}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if e.Name() == "node_modules" || strings.HasPrefix(e.Name(), ".") || strings.Count(rel, "/") >= 3 {
			return filepath.SkipDir
		}
		if len(dirs) >= maxLockfileDirs {
			return filepath.SkipAll
		}
		if _, err := os.Lstat(filepath.Join(p, "package.json")); err != nil {
			return nil
		}
		for _, lf := range []string{deps.FormatShrinkwrap, deps.FormatNPM, deps.FormatYarn, deps.FormatPNPM} {
			if fi, err := os.Lstat(filepath.Join(p, lf)); err == nil && fi.Mode().IsRegular() {
				dirs = append(dirs, rel)
				break
			}
		}
		return nil
	})
	return dirs, err
}

// keepsDevDependencies asks the task's image selector, when it can tell,
// whether the image the run judges ships the development packages its
// install installs. It reads a Repo of its own: the run's Repo must list
// its files only once the dependencies are mounted. A selection that
// fails here is left to the run, which reports it; the answer is then no.
func keepsDevDependencies(ctx context.Context, dir string, o Options) (bool, error) {
	sel, ok := o.Registry.ImageSelector(o.Task)
	if !ok {
		return false, nil
	}
	judge, ok := sel.(probe.DevDependencyJudge)
	if !ok {
		return false, nil
	}
	pre, err := probe.OpenRepo(dir)
	if err != nil {
		return false, &InputError{Err: describeOpen(dir, err)}
	}
	ref, err := sel.Select(ctx, pre, o.Dockerfile, o.Target)
	if err != nil || ref.IsZero() {
		return false, nil
	}
	return judge.KeepsDevDependencies(ctx, pre, ref)
}
