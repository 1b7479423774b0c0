package childprocess

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
)

// pkg is one installed production package.
type pkg struct {
	dir     string // repository-relative, symlinks resolved
	name    string
	version string
	// scan is false for a package whose directory lies outside
	// node_modules (a workspace link): its files are application code.
	scan bool
}

// invalidJSON is a package.json that could not be decoded.
type invalidJSON struct {
	file         string
	line, column int
	msg          string
}

// manifest is the part of package.json that dependency resolution reads.
type manifest struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
	DevDependencies      map[string]string `json:"devDependencies"`
}

// edge is a dependency to resolve: name, looked up from the package
// directory from, as Node would.
type edge struct {
	from, name, requiredBy string
	optional               bool
}

// search returns the index of the first listed file not less than p.
func (s *session) search(p string) int { return sort.SearchStrings(s.files, p) }

// listed reports whether p is a listed file or symlink.
func (s *session) listed(p string) bool {
	i := s.search(p)
	return i < len(s.files) && s.files[i] == p
}

// resolveDependencies walks the production dependency graph from the root
// package.json: dependencies and optionalDependencies, then, for each
// installed package, its own dependencies, optionalDependencies and
// peerDependencies, each resolved like Node's require from the package's
// real directory (nested node_modules first, then each ancestor's, up to the
// root). devDependencies are not production code, unless the image ships
// them (session.dev: then the root's are followed too, as optional ones).
// Each package directory is visited once, which also ends cycles.
func (s *session) resolveDependencies() error {
	i := s.search("node_modules/")
	s.nodeModules = s.listed("node_modules") || (i < len(s.files) && strings.HasPrefix(s.files[i], "node_modules/"))
	var queue []edge
	if s.listed("package.json") {
		root, ok, err := s.readManifest("package.json")
		if err != nil {
			return err
		}
		if ok {
			queue = appendEdges(queue, "", "package.json", root.Dependencies, false)
			queue = appendEdges(queue, "", "package.json", root.OptionalDependencies, true)
			s.declared = len(queue)
			if s.dev {
				queue = appendEdges(queue, "", "package.json", root.DevDependencies, true)
			}
		}
	}
	// Other packages of the repository whose dependencies are production
	// code too:
	//   - one below the root with node_modules of its own (a service in
	//     server/ with its own lockfile, installed there);
	//   - the root's workspace packages: npm, yarn and pnpm install their
	//     dependencies with the root's, hoisted to the root node_modules
	//     or in the member's own. A member the image leaves out has none
	//     installed, so its edges are optional: not installed is not
	//     missing.
	nested, members := s.nestedPackages(), s.workspaceMembers()
	for _, dir := range append(nested, members...) {
		m, ok, err := s.readManifest(dir + "/package.json")
		if err != nil || !ok {
			continue
		}
		member := !slices.Contains(nested, dir)
		queue = appendEdges(queue, dir, dir+"/package.json", m.Dependencies, member)
		queue = appendEdges(queue, dir, dir+"/package.json", m.OptionalDependencies, true)
		if !member {
			s.nodeModules = true
		}
	}
	if !s.nodeModules {
		return nil
	}
	seen := make(map[string]bool)
	missing := make(map[MissingDependency]bool)
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		dir, found, err := s.lookup(e.from, e.name)
		if err != nil {
			return err
		}
		if !found {
			m := MissingDependency{Name: e.name, RequiredBy: e.requiredBy}
			if !e.optional && !missing[m] {
				missing[m] = true
				s.missing = append(s.missing, m)
			}
			continue
		}
		if seen[dir] {
			continue
		}
		seen[dir] = true
		m, ok, err := s.readManifest(dir + "/package.json")
		if err != nil {
			return err
		}
		p := &pkg{dir: dir, name: e.name, scan: hasVendoredDir(dir + "/")}
		if ok {
			if m.Name != "" {
				p.name = m.Name
			}
			p.version = m.Version
		}
		s.packages = append(s.packages, p)
		by := p.name
		if p.version != "" {
			by += "@" + p.version
		}
		queue = appendEdges(queue, dir, by, m.Dependencies, false)
		queue = appendEdges(queue, dir, by, m.OptionalDependencies, true)
		queue = appendEdges(queue, dir, by, m.PeerDependencies, true)
	}
	sort.Slice(s.missing, func(i, j int) bool {
		a, b := s.missing[i], s.missing[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.RequiredBy < b.RequiredBy
	})
	return nil
}

// nestedPackages lists the repository's folders below its root, outside
// node_modules and at most three levels down, that hold a package.json and
// a node_modules beside it, in path order.
func (s *session) nestedPackages() []string {
	var out []string
	for _, f := range s.files {
		dir, ok := strings.CutSuffix(f, "/package.json")
		if !ok || dir == "" || strings.Contains(f, "node_modules/") || strings.Count(dir, "/") > 2 {
			continue
		}
		if i := s.search(dir + "/node_modules/"); i < len(s.files) && strings.HasPrefix(s.files[i], dir+"/node_modules/") {
			out = append(out, dir)
		}
	}
	return out
}

// workspaceMembers lists the folders of the root's workspace packages,
// which package.json "workspaces" (a list, or {"packages": [...]}) or
// pnpm-workspace.yaml names, outside node_modules, in path order. A
// pattern ending in /** matches every folder below its base.
func (s *session) workspaceMembers() []string {
	read := func(p string) ([]byte, error) {
		if !s.listed(p) {
			return nil, fs.ErrNotExist
		}
		return s.repo.ReadFile(p)
	}
	pats, _ := nodeproject.WorkspacePatterns(read, "")
	if len(pats) == 0 {
		return nil
	}
	match := func(p, dir string) bool {
		p = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
		if base, ok := strings.CutSuffix(p, "/**"); ok {
			return strings.HasPrefix(dir, base+"/")
		}
		ok, _ := path.Match(p, dir)
		return ok
	}
	var out []string
	for _, f := range s.files {
		dir, ok := strings.CutSuffix(f, "/package.json")
		if !ok || dir == "" || strings.Contains(f, "node_modules/") {
			continue
		}
		in := false
		for _, p := range pats {
			if neg, ok := strings.CutPrefix(p, "!"); ok {
				if match(neg, dir) {
					in = false
				}
			} else if match(p, dir) {
				in = true
			}
		}
		if in {
			out = append(out, dir)
		}
	}
	return out
}

// appendEdges adds deps in name order, so the walk is deterministic.
func appendEdges(q []edge, from, by string, deps map[string]string, optional bool) []edge {
	names := make([]string, 0, len(deps))
	for n := range deps {
		if validPackageName(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		q = append(q, edge{from: from, name: n, requiredBy: by, optional: optional})
	}
	return q
}

// validPackageName accepts name or @scope/name without path tricks, so a
// hostile package.json cannot make the walk leave node_modules.
func validPackageName(n string) bool {
	parts := strings.Split(n, "/")
	switch {
	case len(parts) == 1:
	case len(parts) == 2 && strings.HasPrefix(parts[0], "@") && len(parts[0]) > 1:
	default:
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "\\\x00") {
			return false
		}
	}
	return true
}

// lookup finds the directory of package name as require does from the
// directory from: from/node_modules/name, then each ancestor's node_modules
// (skipping directories that are themselves node_modules), up to the root.
// The result has its symlinks resolved.
func (s *session) lookup(from, name string) (string, bool, error) {
	for dir := from; ; dir = parent(dir) {
		if path.Base(dir) != "node_modules" {
			cand := path.Join(dir, "node_modules", name)
			if s.listed(cand + "/package.json") {
				return cand, true, nil
			}
			if s.throughSymlink(cand) {
				s.symlinks = true
				real, inside, err := s.realPath(cand)
				switch {
				case isNotExist(err):
				case err != nil:
					return "", false, fmt.Errorf("resolving %s: %w", cand, err)
				case !inside:
					s.outside = append(s.outside, cand)
				case s.repo.Exists(real + "/package.json"):
					return real, true, nil
				}
			}
		}
		if dir == "" {
			return "", false, nil
		}
	}
}

// parent returns the parent of a repository-relative directory; the root
// is "".
func parent(dir string) string {
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		return dir[:i]
	}
	return ""
}

// throughSymlink reports whether p or one of its ancestors is listed as a
// file, which for a directory path means a symlink: the listing does not
// descend into symlinked directories.
func (s *session) throughSymlink(p string) bool {
	for {
		if s.listed(p) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// readManifest decodes a package.json. A file that is not valid is
// recorded and reported as not ok, never as an error; an error is a file
// that exists but cannot be read.
func (s *session) readManifest(rel string) (manifest, bool, error) {
	var m manifest
	data, err := s.repo.ReadFile(rel)
	if isNotExist(err) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("reading %s: %w", rel, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		s.invalid = append(s.invalid, locateJSONError(rel, data, err))
		return manifest{}, false, nil
	}
	return m, true, nil
}

// locateJSONError places a decoding error at a 1-based line and column.
func locateJSONError(rel string, data []byte, err error) invalidJSON {
	off := int64(0)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1
	case errors.As(err, &te):
		off = te.Offset - 1
	}
	off = max(0, min(off, int64(len(data))))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return invalidJSON{file: rel, line: line, column: col, msg: fmt.Sprintf("%s:%d:%d: %v", rel, line, col, err)}
}
