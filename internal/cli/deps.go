package cli

import (
	"os"
	"path/filepath"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/deps"
)

// depsUsage is the --deps flag's help: what lockfile mode fetches, and
// from where.
const depsUsage = `dependencies to scan when the repository has no node_modules: "none", or "lockfile": download exactly the production tarballs that package-lock.json, npm-shrinkwrap.json, yarn.lock or pnpm-lock.yaml pins, from the registries the repository's .npmrc, .yarnrc, .yarnrc.yml or pnpm-workspace.yaml name (default ` + deps.DefaultRegistry + `), verify each integrity hash, unpack them read-only into the dependency cache (CACHE/deps) and scan them as installed. Nothing from them is run. Offline, cached packages are used and the missing ones are reported`

// depsFetcher returns the fetcher of a --deps mode (nil for none) and a
// function that releases it. Packages go under the cache's deps folder;
// without a cache, into a temporary folder removed on release.
func depsFetcher(mode string, c *cache.Cache) (*deps.Fetcher, func(), error) {
	switch mode {
	case "", "none":
		return nil, func() {}, nil
	case "lockfile":
	default:
		return nil, nil, usageErr("--deps %q: want none or lockfile", mode)
	}
	if c != nil {
		return &deps.Fetcher{Dir: filepath.Join(c.Dir(), "deps")}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "codegenie-deps-")
	if err != nil {
		return nil, nil, err
	}
	return &deps.Fetcher{Dir: dir}, func() { _ = deps.RemoveCache(dir) }, nil
}
