package deps

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/codegenie/codegenie/internal/regfile"
)

// MaxLockfileBytes bounds a lockfile or package.json read.
const MaxLockfileBytes = 64 << 20

// Lockfile formats.
const (
	FormatNPM        = "package-lock.json"
	FormatShrinkwrap = "npm-shrinkwrap.json"
	FormatYarn       = "yarn.lock"
	FormatPNPM       = "pnpm-lock.yaml"
)

// ErrNoLockfile reports a repository with none of the lockfiles Read knows.
var ErrNoLockfile = errors.New("no package-lock.json, npm-shrinkwrap.json, yarn.lock or pnpm-lock.yaml at the repository root: commit the lockfile, or gather without --deps lockfile")

// Package is one pinned production package and where an install puts it.
type Package struct {
	// Name is the package's registry name (name or @scope/name).
	Name string `json:"name"`
	// Version is the exact version pinned.
	Version string `json:"version"`
	// Resolved is the tarball URL the lockfile records, or "".
	Resolved string `json:"resolved,omitempty"`
	// Integrity is the SRI hash the lockfile records (sha512-... or
	// sha1-...), or "" when it records none.
	Integrity string `json:"integrity,omitempty"`
	// Path is where an install places it, relative to the repository
	// root: node_modules/a or node_modules/a/node_modules/b.
	Path string `json:"path"`
}

// Lock is a parsed lockfile: its production packages, sorted by Path.
type Lock struct {
	Format   string
	Packages []Package
	// names are the names the lockfile installs packages under (every
	// entry and every dependency that names one, development ones too;
	// not the peers a package merely accepts), for Mentions.
	names map[string]bool
	// links are the names a package depends on as a link to a folder
	// (pnpm's link:PATH, relative to the lockfile's folder), with the
	// folders: ReadLock mentions those whose folder exists.
	links map[string][]string
}

// Mentions reports whether the lockfile installs a package under name, in
// any dependency type (development ones too). No means an install from
// this lockfile cannot place it at all: npm ci, yarn --frozen-lockfile and
// pnpm install --frozen-lockfile place what the lockfile pins, nothing
// else. A Lock a parser did not make mentions every name.
func (l *Lock) Mentions(name string) bool {
	if l == nil || l.names == nil {
		return true
	}
	return l.names[name]
}

// mention records names a lockfile installs packages under.
func (l *Lock) mention(names ...string) {
	if l.names == nil {
		l.names = map[string]bool{}
	}
	for _, n := range names {
		l.names[n] = true
	}
}

// LockfileError is a lockfile that cannot be read as its format.
type LockfileError struct {
	File string
	Err  error
}

func (e *LockfileError) Error() string {
	return fmt.Sprintf("reading %s: %v (regenerate it with the package manager, or gather without --deps lockfile)", e.File, e.Err)
}

func (e *LockfileError) Unwrap() error { return e.Err }

// ReadLock reads the lockfile at the root of dir, in the order npm, yarn
// and pnpm would trust them (npm-shrinkwrap.json before package-lock.json).
// Its packages are the production ones.
func ReadLock(dir string) (*Lock, error) { return ReadLockDev(dir, false) }

// ReadLockDev is ReadLock that, with dev, keeps the development packages
// too: what an install that omits nothing (npm ci, yarn install, pnpm
// install without --prod) places.
func ReadLockDev(dir string, dev bool) (*Lock, error) {
	for _, f := range []string{FormatShrinkwrap, FormatNPM, FormatYarn, FormatPNPM} {
		data, err := regfile.ReadFile(filepath.Join(dir, f), MaxLockfileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, &LockfileError{File: f, Err: err}
		}
		var l *Lock
		switch f {
		case FormatShrinkwrap, FormatNPM:
			l, err = parseNPM(data, dev)
		case FormatYarn:
			var root manifest
			if root, err = readManifest(dir); err == nil {
				roots := root.prodDeps()
				if dev {
					for n, r := range root.DevDependencies {
						if _, ok := roots[n]; !ok {
							roots[n] = r
						}
					}
				}
				l, err = ParseYarn(data, roots)
			}
		case FormatPNPM:
			l, err = parsePNPM(data, dev)
		}
		if err != nil {
			return nil, &LockfileError{File: f, Err: err}
		}
		for n, targets := range l.links {
			for _, t := range targets {
				// A folder out of the repository is not looked at: it
				// may hold the package.
				t = filepath.FromSlash(t)
				if _, err := os.Stat(filepath.Join(dir, t)); err == nil || !filepath.IsLocal(t) {
					l.mention(n)
				}
			}
		}
		return l, nil
	}
	return nil, ErrNoLockfile
}

type manifest struct {
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	DevDependencies      map[string]string `json:"devDependencies"`
}

// prodDeps maps each production dependency to its range.
func (m manifest) prodDeps() map[string]string {
	out := map[string]string{}
	for n, r := range m.OptionalDependencies {
		out[n] = r
	}
	for n, r := range m.Dependencies {
		out[n] = r
	}
	return out
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	data, err := regfile.ReadFile(filepath.Join(dir, "package.json"), MaxLockfileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("package.json: %w", err)
	}
	return m, nil
}

// npmLock is package-lock.json: v1 has dependencies, v2 both, v3 packages.
type npmLock struct {
	LockfileVersion int                   `json:"lockfileVersion"`
	Packages        map[string]npmPackage `json:"packages"`
	Dependencies    map[string]npmDep     `json:"dependencies"`
}

type npmPackage struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Resolved    string `json:"resolved"`
	Integrity   string `json:"integrity"`
	Link        bool   `json:"link"`
	Dev         bool   `json:"dev"`
	InBundle    bool   `json:"inBundle"`
	DevOptional bool   `json:"devOptional"`
}

type npmDep struct {
	Version      string            `json:"version"`
	Resolved     string            `json:"resolved"`
	Integrity    string            `json:"integrity"`
	Dev          bool              `json:"dev"`
	Bundled      bool              `json:"bundled"`
	Dependencies map[string]npmDep `json:"dependencies"`
}

// ParseNPM parses package-lock.json or npm-shrinkwrap.json. Version 2 and
// 3 give every install path in "packages"; version 1 nests "dependencies".
// Links (workspaces), bundled packages (they come inside their parent's
// tarball) and development-only packages are left out; a package that is
// both a devDependency and an optional one of a production package
// (devOptional) is kept, as npm ci --omit=dev keeps it.
func ParseNPM(data []byte) (*Lock, error) { return parseNPM(data, false) }

// parseNPM is ParseNPM that, with dev, keeps the development packages.
func parseNPM(data []byte, dev bool) (*Lock, error) {
	var raw npmLock
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	l := &Lock{Format: FormatNPM}
	switch {
	case raw.LockfileVersion >= 2 && raw.Packages != nil:
		for key, p := range raw.Packages {
			i := strings.LastIndex(key, "node_modules/")
			if i >= 0 {
				l.mention(key[i+len("node_modules/"):])
			}
			// devOptional: a devDependency that is also an optional
			// dependency (or optional peer) of a production package, as
			// prisma is of @prisma/client. npm omits it only when both
			// dev and optional are omitted (arborist's shouldOmit), so
			// npm ci --omit=dev installs it.
			if key == "" || i < 0 || p.Link || p.Dev && !dev || p.InBundle {
				continue
			}
			name := key[i+len("node_modules/"):]
			if p.Name != "" {
				name = p.Name
			}
			if err := addPinned(l, name, p.Version, p.Resolved, p.Integrity, key); err != nil {
				return nil, err
			}
		}
	case raw.LockfileVersion == 1 || raw.Dependencies != nil:
		mentionNPMv1(l, raw.Dependencies)
		if err := walkNPMv1(l, "", raw.Dependencies, dev); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("lockfileVersion %d with no packages", raw.LockfileVersion)
	}
	sortLock(l)
	return l, nil
}

// mentionNPMv1 records every name a version 1 lockfile installs under,
// development ones too.
func mentionNPMv1(l *Lock, deps map[string]npmDep) {
	for name, d := range deps {
		l.mention(name)
		mentionNPMv1(l, d.Dependencies)
	}
}

func walkNPMv1(l *Lock, parent string, deps map[string]npmDep, dev bool) error {
	for name, d := range deps {
		if d.Dev && !dev || d.Bundled {
			continue
		}
		p := "node_modules/" + name
		if parent != "" {
			p = parent + "/node_modules/" + name
		}
		pkgName, version := name, d.Version
		if alias, ok := strings.CutPrefix(version, "npm:"); ok { // "npm:real@1.2.3"
			if at := strings.LastIndexByte(alias, '@'); at > 0 {
				pkgName, version = alias[:at], alias[at+1:]
			}
		}
		if err := addPinned(l, pkgName, version, d.Resolved, d.Integrity, p); err != nil {
			return err
		}
		if err := walkNPMv1(l, p, d.Dependencies, dev); err != nil {
			return err
		}
	}
	return nil
}

// addPinned adds a registry package, checking what the lockfile says
// before any of it reaches a URL or a path. A version that is not a plain
// version (a git or file dependency) is not from the registry: skipped.
func addPinned(l *Lock, name, version, resolved, integrity, installPath string) error {
	if !validName(name) {
		return fmt.Errorf("%s: %q is not a package name", installPath, name)
	}
	if !validInstallPath(installPath) {
		return fmt.Errorf("%q is not a node_modules path", installPath)
	}
	if !plainVersion(version) {
		return nil
	}
	l.Packages = append(l.Packages, Package{Name: name, Version: version, Resolved: resolved, Integrity: integrity, Path: installPath})
	return nil
}

func sortLock(l *Lock) {
	sort.Slice(l.Packages, func(i, j int) bool { return l.Packages[i].Path < l.Packages[j].Path })
}

// validName accepts name or @scope/name: no path tricks, nothing a URL or
// a path would read differently.
func validName(n string) bool {
	parts := strings.Split(n, "/")
	switch {
	case len(parts) == 1 && !strings.HasPrefix(n, "@"):
	case len(parts) == 2 && strings.HasPrefix(parts[0], "@") && len(parts[0]) > 1:
	default:
		return false
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || len(p) > 214 {
			return false
		}
		for _, c := range p {
			if !alnum(c) && !strings.ContainsRune("-._~@!*'()", c) {
				return false
			}
		}
	}
	return true
}

// plainVersion accepts a semver version: digits, letters, dots, dashes and
// plus signs, starting with a digit.
func plainVersion(v string) bool {
	if v == "" || len(v) > 256 || v[0] < '0' || v[0] > '9' {
		return false
	}
	for _, c := range v {
		if !alnum(c) && !strings.ContainsRune(".-+", c) {
			return false
		}
	}
	return true
}

func alnum(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// validInstallPath accepts node_modules/NAME(/node_modules/NAME)*.
func validInstallPath(p string) bool {
	rest, ok := strings.CutPrefix(p, "node_modules/")
	if !ok || path.Clean(p) != p {
		return false
	}
	for {
		name, more, found := strings.Cut(rest, "/node_modules/")
		if !validName(name) {
			return false
		}
		if !found {
			return true
		}
		rest = more
	}
}

// node is a package in a dependency graph read from yarn or pnpm, whose
// lockfiles record the graph but not where an install puts each package.
type node struct {
	name, version, resolved, integrity string
	deps                               []ref
}

// ref names a dependency of a node: name and the node key it resolves to.
type ref struct{ name, key string }

// graph is a lockfile's dependency graph from the root's production
// dependencies.
type graph struct {
	roots []ref
	nodes map[string]*node
}

// layout places every node reachable from the roots as npm's hoisting
// does: at the top level unless a different version already holds that
// name where Node's lookup from the dependent would find it, then nested
// under the dependent. Each (path) is placed once; the walk is breadth
// first in name order, so the layout is deterministic.
func (g *graph) layout(format string) (*Lock, error) {
	l := &Lock{Format: format}
	placed := map[string]string{} // install path → node key
	type item struct {
		parent string // install path of the dependent, "" for the root
		r      ref
	}
	var queue []item
	for _, r := range g.roots {
		queue = append(queue, item{"", r})
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		n, ok := g.nodes[it.r.key]
		if !ok {
			continue // not pinned (or not from the registry): missing
		}
		// Where Node finds it from the dependent: nearest ancestor slot.
		target := ""
		for dir := it.parent; ; {
			cand := joinNM(dir, it.r.name)
			if k, ok := placed[cand]; ok {
				if k == it.r.key {
					target = "=" // already satisfied
				} else {
					target = joinNM(it.parent, it.r.name)
				}
				break
			}
			if dir == "" {
				target = joinNM("", it.r.name)
				break
			}
			dir = parentInstall(dir)
		}
		if target == "=" {
			continue
		}
		if k, ok := placed[target]; ok && k != it.r.key {
			return nil, fmt.Errorf("two versions of %s both need %s", it.r.name, target)
		}
		placed[target] = it.r.key
		if err := addPinned(l, n.name, n.version, n.resolved, n.integrity, target); err != nil {
			return nil, err
		}
		for _, d := range n.deps {
			queue = append(queue, item{target, d})
		}
	}
	sortLock(l)
	return l, nil
}

// layoutNaming lays the graph out and records the names it installs
// packages under: every entry's (byName's keys) and every dependency's.
func (g *graph) layoutNaming(format string, byName ...map[string][]string) (*Lock, error) {
	l, err := g.layout(format)
	if err != nil {
		return nil, err
	}
	l.mention()
	for _, m := range byName {
		for n := range m {
			l.mention(n)
		}
	}
	for _, n := range g.nodes {
		for _, d := range n.deps {
			l.mention(d.name)
		}
	}
	return l, nil
}

func joinNM(dir, name string) string {
	if dir == "" {
		return "node_modules/" + name
	}
	return dir + "/node_modules/" + name
}

// parentInstall is the install path whose node_modules holds p, or "".
func parentInstall(p string) string {
	i := strings.LastIndex(p, "/node_modules/")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// ParseYarn parses yarn.lock, classic (v1) or berry (YAML with
// __metadata), from the root package.json's production dependencies (name
// to range), which yarn.lock does not record.
func ParseYarn(data []byte, roots map[string]string) (*Lock, error) {
	if bytes.Contains(data, []byte("__metadata:")) {
		return parseBerry(data, roots)
	}
	return parseYarnClassic(data, roots)
}

// parseYarnClassic reads yarn's v1 format: unindented entries whose key
// lists the descriptors (name@range) they satisfy, with indented fields
// version, resolved, integrity and a dependencies block.
func parseYarnClassic(data []byte, roots map[string]string) (*Lock, error) {
	g := &graph{nodes: map[string]*node{}}
	byName := map[string][]string{} // name → descriptor keys, for roots
	var cur *node
	inDeps := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), " \r")
		if text == "" || strings.HasPrefix(strings.TrimSpace(text), "#") {
			continue
		}
		indent := len(text) - len(strings.TrimLeft(text, " "))
		body := strings.TrimSpace(text)
		switch {
		case indent == 0:
			if !strings.HasSuffix(body, ":") {
				return nil, fmt.Errorf("line %d: expected an entry ending in ':'", line)
			}
			cur = &node{}
			inDeps = false
			for _, d := range strings.Split(strings.TrimSuffix(body, ":"), ",") {
				d = unquote(strings.TrimSpace(d))
				name := descriptorName(d)
				if name == "" {
					return nil, fmt.Errorf("line %d: %q is not name@range", line, d)
				}
				// An alias (es6@npm:@elastic/elasticsearch@6) installs
				// under its own name, which the dependents' refs carry,
				// and is fetched by the name it has on the registry.
				cur.name = name
				if real, ok := strings.CutPrefix(d[len(name)+1:], "npm:"); ok {
					if cur.name = descriptorName(real); cur.name == "" {
						cur.name = real
					}
				}
				g.nodes[d] = cur
				byName[name] = append(byName[name], d)
			}
		case cur == nil:
			return nil, fmt.Errorf("line %d: a field outside an entry", line)
		case indent == 2:
			key, val, _ := strings.Cut(body, " ")
			key = unquote(strings.TrimSuffix(key, ":"))
			val = unquote(strings.TrimSpace(val))
			inDeps = false
			switch key {
			case "version":
				cur.version = val
			case "resolved":
				cur.resolved = val
			case "integrity":
				cur.integrity = val
			case "dependencies", "optionalDependencies":
				inDeps = true
			}
		case indent >= 4 && inDeps:
			name, rng, ok := splitField(body)
			if !ok {
				return nil, fmt.Errorf("line %d: expected a dependency NAME RANGE", line)
			}
			cur.deps = append(cur.deps, ref{name: name, key: name + "@" + rng})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range g.nodes {
		if n.integrity == "" {
			// Older yarn keeps a sha1 hex digest after # in resolved.
			if _, frag, ok := strings.Cut(n.resolved, "#"); ok && len(frag) == 40 {
				if sri, err := hexToSRI("sha1", frag); err == nil {
					n.integrity = sri
				}
			}
		}
		if i := strings.IndexByte(n.resolved, '#'); i >= 0 {
			n.resolved = n.resolved[:i]
		}
	}
	g.roots = rootDescriptors(roots, g.nodes, byName, func(name, rng string) string { return name + "@" + rng })
	return g.layoutNaming(FormatYarn, byName)
}

// rootDescriptors resolves each root dependency to a lockfile entry: the
// descriptor its package.json range makes, else the only entry for the
// name. A name with neither stays unpinned, and is missing.
func rootDescriptors(roots map[string]string, nodes map[string]*node, byName map[string][]string, descriptor func(name, rng string) string) []ref {
	names := make([]string, 0, len(roots))
	for n := range roots {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []ref
	for _, name := range names {
		key := descriptor(name, roots[name])
		if _, ok := nodes[key]; !ok && len(byName[name]) > 0 {
			only := true
			for _, k := range byName[name] {
				only = only && nodes[k] == nodes[byName[name][0]]
			}
			if only {
				key = byName[name][0]
			}
		}
		out = append(out, ref{name: name, key: key})
	}
	return out
}

// descriptorName returns the name of a name@range descriptor.
func descriptorName(d string) string {
	at := strings.IndexByte(d[min(1, len(d)):], '@')
	if at < 0 {
		return ""
	}
	return d[:at+1]
}

// splitField splits `name "range"` or `"@s/n" "range"`.
func splitField(body string) (string, string, bool) {
	var name string
	if strings.HasPrefix(body, `"`) {
		end := strings.Index(body[1:], `"`)
		if end < 0 {
			return "", "", false
		}
		name, body = body[1:1+end], body[2+end:]
	} else {
		var ok bool
		name, body, ok = strings.Cut(body, " ")
		if !ok {
			return "", "", false
		}
	}
	name = strings.TrimSuffix(name, ":")
	return name, unquote(strings.TrimSpace(body)), name != ""
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// berryEntry is one yarn berry lockfile entry.
type berryEntry struct {
	Version              string            `yaml:"version"`
	Resolution           string            `yaml:"resolution"`
	Checksum             string            `yaml:"checksum"`
	Dependencies         map[string]string `yaml:"dependencies"`
	OptionalDependencies map[string]string `yaml:"optionalDependencies"`
}

// parseBerry reads yarn 2+'s YAML lockfile. Its checksum hashes yarn's own
// zip archive, not the registry tarball, so its packages carry no
// integrity here: Install asks the registry for it.
func parseBerry(data []byte, roots map[string]string) (*Lock, error) {
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	g := &graph{nodes: map[string]*node{}}
	byName := map[string][]string{}
	local := map[string][]string{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "__metadata" {
			continue
		}
		v := raw[k]
		var e berryEntry
		if err := v.Decode(&e); err != nil {
			return nil, fmt.Errorf("entry %q: %w", k, err)
		}
		name, ver, ok := strings.Cut(e.Resolution, "@npm:")
		if i := strings.Index(e.Resolution[min(1, len(e.Resolution)):], "@npm:"); i >= 0 {
			name, ver, ok = e.Resolution[:i+1], e.Resolution[i+1+len("@npm:"):], true
		}
		if !ok { // workspace:, patch:, git, file: not from the registry
			for _, d := range strings.Split(k, ",") {
				if dname := descriptorName(strings.TrimSpace(d)); dname != "" {
					local[dname] = nil // installed (linked), not fetched
				}
			}
			continue
		}
		n := &node{name: name, version: ver}
		for _, dm := range []map[string]string{e.Dependencies, e.OptionalDependencies} {
			dn := make([]string, 0, len(dm))
			for d := range dm {
				dn = append(dn, d)
			}
			sort.Strings(dn)
			for _, d := range dn {
				rng := dm[d]
				if !strings.Contains(rng, ":") {
					rng = "npm:" + rng
				}
				n.deps = append(n.deps, ref{name: d, key: d + "@" + rng})
			}
		}
		for _, d := range strings.Split(k, ",") {
			d = strings.TrimSpace(d)
			dname := descriptorName(d)
			if dname == "" {
				return nil, fmt.Errorf("entry %q: %q is not name@range", k, d)
			}
			g.nodes[d] = n
			byName[dname] = append(byName[dname], d)
		}
	}
	g.roots = rootDescriptors(roots, g.nodes, byName, func(name, rng string) string {
		if !strings.Contains(rng, ":") {
			rng = "npm:" + rng
		}
		return name + "@" + rng
	})
	return g.layoutNaming(FormatYarn, byName, local)
}

// pnpmLock is pnpm-lock.yaml, versions 5 to 9.
type pnpmLock struct {
	LockfileVersion      any                      `yaml:"lockfileVersion"`
	Importers            map[string]pnpmImporter  `yaml:"importers"`
	Dependencies         map[string]any           `yaml:"dependencies"`
	OptionalDependencies map[string]any           `yaml:"optionalDependencies"`
	DevDependencies      map[string]any           `yaml:"devDependencies"`
	Packages             map[string]pnpmPackage   `yaml:"packages"`
	Snapshots            map[string]pnpmSnapshots `yaml:"snapshots"`
}

type pnpmImporter struct {
	Dependencies         map[string]any `yaml:"dependencies"`
	OptionalDependencies map[string]any `yaml:"optionalDependencies"`
	DevDependencies      map[string]any `yaml:"devDependencies"`
}

type pnpmPackage struct {
	Resolution struct {
		Integrity string `yaml:"integrity"`
		Tarball   string `yaml:"tarball"`
	} `yaml:"resolution"`
	Name                 string            `yaml:"name"`
	Version              string            `yaml:"version"`
	Dev                  bool              `yaml:"dev"`
	Dependencies         map[string]string `yaml:"dependencies"`
	OptionalDependencies map[string]string `yaml:"optionalDependencies"`
}

type pnpmSnapshots struct {
	Dependencies         map[string]string `yaml:"dependencies"`
	OptionalDependencies map[string]string `yaml:"optionalDependencies"`
}

// ParsePNPM parses pnpm-lock.yaml. pnpm installs into its own store with
// symlinks; the layout here is the hoisted one (node-linker=hoisted), which
// Node resolves the same way for production code.
func ParsePNPM(data []byte) (*Lock, error) { return parsePNPM(data, false) }

// parsePNPM is ParsePNPM that, with dev, keeps the development packages
// and places the importers' devDependencies too.
func parsePNPM(data []byte, dev bool) (*Lock, error) {
	var raw pnpmLock
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	g := &graph{nodes: map[string]*node{}}
	// Keys: "/name/1.0.0" (v5), "/name@1.0.0" (v6), "name@1.0.0" (v9),
	// each maybe with a peer suffix "(peer@x)" or "_peer@x".
	key := func(name, ver string) string { return name + "@" + ver }
	for k, p := range raw.Packages {
		name, ver := pnpmKey(k)
		if p.Name != "" {
			name = p.Name
		}
		if p.Version != "" {
			ver = p.Version
		}
		if name == "" || p.Dev && !dev {
			continue
		}
		n := &node{name: name, version: stripPeers(ver), integrity: p.Resolution.Integrity, resolved: p.Resolution.Tarball}
		deps := [2]map[string]string{p.Dependencies, p.OptionalDependencies}
		if s, ok := raw.Snapshots[strings.TrimPrefix(k, "/")]; ok {
			deps = [2]map[string]string{s.Dependencies, s.OptionalDependencies}
		}
		n.deps = pnpmRefs(deps, key)
		g.nodes[key(name, ver)] = n
	}
	// v9 keys snapshots with peer suffixes that packages lack.
	for k, s := range raw.Snapshots {
		name, ver := pnpmKey(k)
		if _, ok := g.nodes[key(name, ver)]; ok {
			continue
		}
		base, ok := g.nodes[key(name, stripPeers(ver))]
		if !ok {
			continue
		}
		n := *base
		n.deps = pnpmRefs([2]map[string]string{s.Dependencies, s.OptionalDependencies}, key)
		g.nodes[key(name, ver)] = &n
	}
	// The production dependencies of every importer: in a workspace the
	// service is often one of them (apps/server, src), not the root, and
	// Node finds a package under the repository's node_modules from any
	// folder below it. The root importer's come first, then the others
	// in path order; a name another importer already placed keeps that
	// version (the hoisted layout has one slot per name).
	imps := []pnpmImporter{{Dependencies: raw.Dependencies, OptionalDependencies: raw.OptionalDependencies, DevDependencies: raw.DevDependencies}}
	if len(raw.Importers) > 0 {
		imps = imps[:0]
		paths := make([]string, 0, len(raw.Importers))
		for p := range raw.Importers {
			paths = append(paths, p)
		}
		sort.Slice(paths, func(i, j int) bool { return paths[i] == "." || paths[j] != "." && paths[i] < paths[j] })
		for _, p := range paths {
			imps = append(imps, raw.Importers[p])
		}
	}
	placed := map[string]bool{}
	for _, imp := range imps {
		var names []string
		versions := map[string]string{}
		kinds := []map[string]any{imp.Dependencies, imp.OptionalDependencies}
		if dev {
			kinds = append(kinds, imp.DevDependencies)
		}
		for _, m := range kinds {
			for n, v := range m {
				switch v := v.(type) {
				case string:
					versions[n] = v
				case map[string]any:
					s, _ := v["version"].(string)
					versions[n] = s
				}
				if strings.HasPrefix(versions[n], "link:") || placed[n] {
					continue // a workspace package, or a name placed already
				}
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			placed[n] = true
			g.roots = append(g.roots, ref{name: n, key: pnpmDepKey(n, versions[n], key)})
		}
	}
	names := map[string][]string{}
	for k := range raw.Packages {
		if name, _ := pnpmKey(k); name != "" {
			names[name] = nil
		}
	}
	for _, p := range raw.Packages {
		if p.Name != "" {
			names[p.Name] = nil
		}
	}
	for _, imp := range imps {
		for _, m := range []map[string]any{imp.Dependencies, imp.OptionalDependencies, imp.DevDependencies} {
			for n := range m {
				names[n] = nil
			}
		}
	}
	links := map[string][]string{}
	for _, sn := range raw.Snapshots {
		for _, m := range []map[string]string{sn.Dependencies, sn.OptionalDependencies} {
			for n, v := range m {
				if t, ok := strings.CutPrefix(v, "link:"); ok {
					// An override to a folder (prompt: link:node_modules/.cache/null
					// drops a package): installed only if the folder is.
					links[n] = append(links[n], t)
					continue
				}
				names[n] = nil
			}
		}
	}
	l, err := g.layoutNaming(FormatPNPM, names)
	if err != nil {
		return nil, err
	}
	l.links = links
	return l, nil
}

func pnpmRefs(deps [2]map[string]string, key func(string, string) string) []ref {
	var out []ref
	for _, m := range deps {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if strings.HasPrefix(m[n], "link:") {
				continue // a folder, not a registry package (Lock.links)
			}
			out = append(out, ref{name: n, key: pnpmDepKey(n, m[n], key)})
		}
	}
	return out
}

// pnpmDepKey turns a dependency's locked version into a node key. The
// version may be a plain version, or a path (/other/1.0.0 or other@1.0.0)
// for an alias.
func pnpmDepKey(name, v string, key func(string, string) string) string {
	base, _, _ := strings.Cut(v, "(")
	if base != "" && (base[0] == '/' || strings.Contains(base[1:], "@")) {
		n, ver := pnpmKey(v)
		return key(n, ver)
	}
	return key(name, v)
}

// pnpmKey splits a packages key into name and version (with its peer
// suffix, which stripPeers removes).
func pnpmKey(k string) (string, string) {
	k = strings.TrimPrefix(k, "/")
	if i := strings.Index(k[min(1, len(k)):], "@"); i >= 0 && !strings.Contains(k[:i+1], "(") {
		return k[:i+1], k[i+2:]
	}
	// v5: name/version, scoped @s/n/version.
	i := strings.LastIndexByte(k, '/')
	if i <= 0 {
		return "", ""
	}
	return k[:i], k[i+1:]
}

// stripPeers removes pnpm's peer-dependency suffix from a version.
func stripPeers(v string) string {
	if i := strings.IndexAny(v, "(_"); i >= 0 {
		return v[:i]
	}
	return v
}
