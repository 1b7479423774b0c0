package gather

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/probe"
)

// mountDependencies installs the repository's locked production
// dependencies with f (gather --deps lockfile) and mounts each at its
// node_modules path, as an install would have placed it, so the probes
// read them as installed. A repository that has its own node_modules, or
// no lockfile, is left as it is. Nothing from a package runs.
func mountDependencies(ctx context.Context, repo *probe.Repo, f *deps.Fetcher, pctx *probe.Context) error {
	if fi, err := os.Lstat(repo.Abs("node_modules")); err == nil && fi.IsDir() {
		if pctx.Logger != nil {
			pctx.Logger.Info("the repository has its own node_modules: --deps lockfile fetches nothing")
		}
		return nil
	}
	res, err := f.Install(ctx, repo.Root)
	if errors.Is(err, deps.ErrNoLockfile) {
		return nil // child_process says the dependencies are not installed
	}
	if _, ok := errors.AsType[*deps.LockfileError](err); ok {
		return &InputError{Err: err}
	}
	if err != nil {
		return fmt.Errorf("installing dependencies from the lockfile: %w", err)
	}
	mounts := make([]probe.Mount, len(res.Installed))
	for i, in := range res.Installed {
		files, err := f.List(in)
		if err != nil {
			return err
		}
		mounts[i] = probe.Mount{Path: in.Path, Dir: in.Dir, Key: in.Key, Files: files}
	}
	if err := repo.AddMounts(mounts...); err != nil {
		return err
	}
	d := &probe.Dependencies{Lockfile: res.Format, Installed: len(res.Installed), Memo: &f.Memo}
	for _, m := range res.Missing {
		d.Unavailable = append(d.Unavailable, probe.UnavailableDependency{Name: m.Name, Version: m.Version, Path: m.Path, Kind: string(m.Kind), Error: m.Error})
	}
	for _, in := range res.Installed {
		if in.IntegrityFromRegistry {
			d.RegistryVerified = append(d.RegistryVerified, in.Name+"@"+in.Version)
		}
	}
	pctx.Dependencies = d
	return nil
}
