package deps

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/codegenie/codegenie/internal/npmconf"
)

// DefaultRegistry is npm's public registry.
const DefaultRegistry = "https://registry.npmjs.org"

// Registries says which registry serves which package: a default and
// per-scope overrides, from the repository's own configuration.
type Registries struct {
	Default string
	// Scopes maps "@scope" to its registry.
	Scopes map[string]string
}

// For returns the registry of package name, without a trailing slash.
func (r Registries) For(name string) string {
	if scope, _, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(scope, "@") {
		if u, ok := r.Scopes[scope]; ok {
			return strings.TrimRight(u, "/")
		}
	}
	if r.Default == "" {
		return DefaultRegistry
	}
	return strings.TrimRight(r.Default, "/")
}

// TarballURL is where name@version's tarball is on the registry:
// REGISTRY/NAME/-/BASENAME-VERSION.tgz, where BASENAME drops the scope.
func (r Registries) TarballURL(name, version string) string {
	base := name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		base = name[i+1:]
	}
	return r.For(name) + "/" + name + "/-/" + base + "-" + version + ".tgz"
}

// URLFor is the URL to fetch p from: the lockfile's resolved URL when it
// is on the registry configured for p, else the conventional tarball URL
// on that registry, so that nothing is fetched from a host the
// repository's configuration does not name.
func (r Registries) URLFor(p Package) string {
	reg := r.For(p.Name)
	if p.Resolved != "" {
		ru, err1 := url.Parse(p.Resolved)
		gu, err2 := url.Parse(reg)
		if err1 == nil && err2 == nil && ru.Scheme == gu.Scheme && ru.Host == gu.Host &&
			strings.HasPrefix(ru.Path, strings.TrimRight(gu.Path, "/")+"/") && !strings.Contains(ru.Path, "/../") {
			ru.Fragment = ""
			return ru.String()
		}
	}
	return r.TarballURL(p.Name, p.Version)
}

// ReadRegistries reads the registry settings of the repository at dir
// (npmconf.Registries: .npmrc, .yarnrc, .yarnrc.yml and
// pnpm-workspace.yaml); .npmrc wins where two set the same scope.
// Credentials in those files are not read. A value that is not an http or
// https URL (an unexpanded ${VAR}), or a file that could not be read, is an
// error that says which: fetching from a registry other than the one the
// repository names would fetch other bytes, or leak its package names.
func ReadRegistries(dir string) (Registries, error) {
	r := Registries{Scopes: map[string]string{}}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return r, err
	}
	defer root.Close()
	regs, notes, err := npmconf.Registries(root)
	if err != nil {
		return r, err
	}
	if len(notes) > 0 {
		return r, fmt.Errorf("the repository's registry settings were not read: %s", strings.Join(notes, "; "))
	}
	for _, reg := range regs {
		u, err := url.Parse(reg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return r, fmt.Errorf("%s: %s names registry %q, which is not an http(s) URL: set it to one, or gather without --deps lockfile", reg.File, reg.Key, reg.URL)
		}
		if reg.Scope == "" {
			r.Default = reg.URL
		} else {
			r.Scopes[reg.Scope] = reg.URL
		}
	}
	return r, nil
}
