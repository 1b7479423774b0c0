package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultRegistry is the npm registry every build may reach.
var DefaultRegistry = Rule{Host: "registry.npmjs.org", Port: 443}

// Bounds on what RepoRules and MirrorRules read.
const (
	maxConfigBytes = 256 << 10
	maxSourceFiles = 256
)

// RepoRules returns the package registries a repository's own configuration
// names, always with DefaultRegistry, sorted and without duplicates. It
// reads, at the repository's root: .npmrc (npm's and pnpm's `registry=` and
// `@scope:registry=`), .yarnrc (Yarn 1's `registry` and `"@scope:registry"`),
// .yarnrc.yml (`npmRegistryServer`, and `npmScopes.*.npmRegistryServer`) and
// pnpm-workspace.yaml (`registry`, and `registries`). A URL's port is its
// own, or that of its scheme (443 for https, 80 for http).
//
// Values it cannot use are left out and explained in notes: a URL with an
// ${ENV} placeholder (the build's environment is not known here; allow the
// host with a flag), a URL that is not http or https, a file too large or
// not a regular file. A missing file is not a note. Err is for a file that
// exists and cannot be read or parsed.
func RepoRules(root *os.Root) (rules []Rule, notes []string, err error) {
	rules = []Rule{DefaultRegistry}
	add := func(file, key, raw string) {
		r, note := ruleFromURL(raw)
		if note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s = %q: %s", file, key, raw, note))
			return
		}
		rules = append(rules, r)
	}

	for _, file := range []string{".npmrc", ".yarnrc"} {
		b, note, err := readBounded(root, file)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		for _, kv := range iniLines(b, file == ".yarnrc") {
			if kv[0] == "registry" || strings.HasPrefix(kv[0], "@") && strings.HasSuffix(kv[0], ":registry") {
				add(file, kv[0], kv[1])
			}
		}
	}

	var yarn struct {
		NpmRegistryServer string `yaml:"npmRegistryServer"`
		NpmScopes         map[string]struct {
			NpmRegistryServer string `yaml:"npmRegistryServer"`
		} `yaml:"npmScopes"`
	}
	if ok, note, err := readYAML(root, ".yarnrc.yml", &yarn); err != nil {
		return nil, nil, err
	} else if note != "" {
		notes = append(notes, note)
	} else if ok {
		if yarn.NpmRegistryServer != "" {
			add(".yarnrc.yml", "npmRegistryServer", yarn.NpmRegistryServer)
		}
		for _, scope := range sortedKeys(yarn.NpmScopes) {
			if s := yarn.NpmScopes[scope].NpmRegistryServer; s != "" {
				add(".yarnrc.yml", "npmScopes."+scope+".npmRegistryServer", s)
			}
		}
	}

	var pnpm struct {
		Registry   string            `yaml:"registry"`
		Registries map[string]string `yaml:"registries"`
	}
	if ok, note, err := readYAML(root, "pnpm-workspace.yaml", &pnpm); err != nil {
		return nil, nil, err
	} else if note != "" {
		notes = append(notes, note)
	} else if ok {
		if pnpm.Registry != "" {
			add("pnpm-workspace.yaml", "registry", pnpm.Registry)
		}
		for _, k := range sortedKeys(pnpm.Registries) {
			add("pnpm-workspace.yaml", "registries."+k, pnpm.Registries[k])
		}
	}
	return sortRules(rules), notes, nil
}

// ruleFromURL makes a rule of a registry or mirror URL, or says why not.
func ruleFromURL(raw string) (Rule, string) {
	raw = strings.TrimSpace(raw)
	if strings.Contains(raw, "${") || strings.Contains(raw, "$(") {
		return Rule{}, "names an environment variable, which is not resolved here; allow its host with --build-egress HOST"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Rule{}, "not a URL: " + err.Error()
	}
	port := 0
	switch u.Scheme {
	case "https":
		port = 443
	case "http":
		port = 80
	default:
		return Rule{}, "not an http or https URL"
	}
	if ps := u.Port(); ps != "" {
		n, err := parsePort(ps)
		if err != nil {
			return Rule{}, err.Error()
		}
		port = n
	}
	h, err := normalizeHost(u.Hostname(), false)
	if err != nil {
		return Rule{}, err.Error()
	}
	return Rule{Host: h, Port: port}, ""
}

// readBounded reads a regular file of at most maxConfigBytes from root. A
// missing file gives nothing; a file that is too large or not regular gives
// a note; a symlink out of root, or another failure, an error.
func readBounded(root *os.Root, name string) (b []byte, note string, err error) {
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("opening %s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Sprintf("%s: not a regular file; not read", name), nil
	}
	b, err = io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Sprintf("%s: larger than %d bytes; not read", name, maxConfigBytes), nil
	}
	return b, "", nil
}

// readYAML decodes a YAML file of root into v, reporting whether it exists.
func readYAML(root *os.Root, name string, v any) (bool, string, error) {
	b, note, err := readBounded(root, name)
	if err != nil || note != "" || b == nil {
		return false, note, err
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		return false, "", fmt.Errorf("parsing %s: %w", name, err)
	}
	return true, "", nil
}

// iniLines returns the key and value of each setting of an .npmrc (KEY=VALUE)
// or, with spaced, a Yarn 1 .yarnrc (KEY VALUE). Quotes around either are
// removed; comments (# and ;) and other lines are skipped.
func iniLines(b []byte, spaced bool) [][2]string {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		var k, v string
		var ok bool
		if spaced {
			k, v, ok = cutQuotedKey(line)
		} else {
			k, v, ok = strings.Cut(line, "=")
		}
		if !ok {
			continue
		}
		out = append(out, [2]string{unquote(strings.TrimSpace(k)), unquote(strings.TrimSpace(v))})
	}
	return out
}

// cutQuotedKey splits a .yarnrc line, whose key may be quoted, at the space
// after the key.
func cutQuotedKey(line string) (string, string, bool) {
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", false
		}
		return line[:end+2], line[end+2:], true
	}
	return strings.Cut(line, " ")
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		if u, err := strconv.Unquote(`"` + s[1:len(s)-1] + `"`); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sortRules sorts rules by host and port and removes duplicates.
func sortRules(rules []Rule) []Rule {
	slices.SortFunc(rules, func(a, b Rule) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return slices.Compact(rules)
}

// MirrorRules returns the package mirrors a base image's own package
// sources name, sorted and without duplicates, from the image's root file
// system at rootfs: apt's /etc/apt/sources.list, /etc/apt/sources.list.d/
// *.list (one-line format) and *.sources (deb822, its URIs: field, skipping
// stanzas with Enabled: no), and apk's /etc/apk/repositories. Only http and
// https URLs count (apt's mirror+http too); file:, cdrom: and the like are
// skipped. Files are read through os.Root, so a symlink out of rootfs is an
// error; files over 256 KiB are an error too.
func MirrorRules(rootfs string) ([]Rule, error) {
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, fmt.Errorf("opening the image's root file system: %w", err)
	}
	defer root.Close()

	var rules []Rule
	addURL := func(raw string) {
		raw = strings.TrimPrefix(raw, "mirror+")
		raw = strings.TrimPrefix(raw, "tor+")
		if r, note := ruleFromURL(raw); note == "" {
			rules = append(rules, r)
		}
	}
	read := func(name string) ([]byte, error) {
		b, note, err := readBounded(root, name)
		if err != nil {
			return nil, err
		}
		if note != "" {
			return nil, errors.New(note)
		}
		return b, nil
	}

	files := []string{"etc/apt/sources.list"}
	d, err := root.Open("etc/apt/sources.list.d")
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("opening etc/apt/sources.list.d: %w", err)
	default:
		ents, err := d.ReadDir(maxSourceFiles + 1)
		d.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("listing etc/apt/sources.list.d: %w", err)
		}
		if len(ents) > maxSourceFiles {
			return nil, fmt.Errorf("etc/apt/sources.list.d holds more than %d entries", maxSourceFiles)
		}
		var names []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".list") || strings.HasSuffix(e.Name(), ".sources") {
				names = append(names, path.Join("etc/apt/sources.list.d", e.Name()))
			}
		}
		slices.Sort(names)
		files = append(files, names...)
	}
	for _, name := range files {
		b, err := read(name)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(name, ".sources") {
			for _, u := range deb822URIs(b) {
				addURL(u)
			}
			continue
		}
		for _, u := range oneLineURIs(b) {
			addURL(u)
		}
	}

	b, err := read("etc/apk/repositories")
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if strings.HasPrefix(fields[0], "@") && len(fields) > 1 {
			fields = fields[1:] // a tagged repository: @edge URL
		}
		addURL(fields[0])
	}
	return sortRules(rules), nil
}

// oneLineURIs returns the URI of each `deb` and `deb-src` line of a
// one-line apt sources file, past any [options].
func oneLineURIs(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes+1)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		kind, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || kind != "deb" && kind != "deb-src" {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				continue
			}
			rest = strings.TrimSpace(rest[end+1:])
		}
		if f := strings.Fields(rest); len(f) > 0 {
			out = append(out, f[0])
		}
	}
	return out
}

// deb822URIs returns the URIs of the enabled stanzas of a deb822 apt
// sources file.
func deb822URIs(b []byte) []string {
	var out, uris []string
	enabled, field := true, ""
	flush := func() {
		if enabled {
			out = append(out, uris...)
		}
		uris, enabled, field = nil, true, ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if field == "uris" {
				uris = append(uris, strings.Fields(line)...)
			}
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			field = ""
			continue
		}
		field = strings.ToLower(strings.TrimSpace(k))
		switch field {
		case "uris":
			uris = append(uris, strings.Fields(v)...)
		case "enabled":
			enabled = !strings.EqualFold(strings.TrimSpace(v), "no")
		}
	}
	flush()
	return out
}
