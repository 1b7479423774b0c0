package deps

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/codegenie/codegenie/internal/regfile"
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

// ReadRegistries reads the registry settings of the repository at dir:
// .npmrc's registry= and @scope:registry=, and .yarnrc.yml's
// npmRegistryServer and npmScopes. .npmrc wins where both set one.
// Credentials in those files are not read. A value that is not an http or
// https URL (an unexpanded ${VAR}) is an error that says which.
func ReadRegistries(dir string) (Registries, error) {
	r := Registries{Scopes: map[string]string{}}
	if data, err := regfile.ReadFile(filepath.Join(dir, ".yarnrc.yml"), 1<<20); err == nil {
		var y struct {
			NPMRegistryServer string `yaml:"npmRegistryServer"`
			NPMScopes         map[string]struct {
				NPMRegistryServer string `yaml:"npmRegistryServer"`
			} `yaml:"npmScopes"`
		}
		if err := yaml.Unmarshal(data, &y); err != nil {
			return r, fmt.Errorf("reading .yarnrc.yml: %w", err)
		}
		if y.NPMRegistryServer != "" {
			r.Default = y.NPMRegistryServer
		}
		for s, v := range y.NPMScopes {
			if v.NPMRegistryServer != "" {
				r.Scopes["@"+strings.TrimPrefix(s, "@")] = v.NPMRegistryServer
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("reading .yarnrc.yml: %w", err)
	}
	if data, err := regfile.ReadFile(filepath.Join(dir, ".npmrc"), 1<<20); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
			switch {
			case k == "registry":
				r.Default = v
			case strings.HasPrefix(k, "@") && strings.HasSuffix(k, ":registry"):
				r.Scopes[strings.TrimSuffix(k, ":registry")] = v
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("reading .npmrc: %w", err)
	}
	check := func(where, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s names registry %q, which is not an http(s) URL: set it to one, or gather without --deps lockfile", where, v)
		}
		return nil
	}
	if r.Default != "" {
		if err := check("the repository's configuration", r.Default); err != nil {
			return r, err
		}
	}
	for s, v := range r.Scopes {
		if err := check("scope "+s, v); err != nil {
			return r, err
		}
	}
	return r, nil
}
