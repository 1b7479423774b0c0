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
	"strings"

	"github.com/codegenie/codegenie/internal/npmconf"
)

// DefaultRegistry is the npm registry every build may reach.
var DefaultRegistry = Rule{Host: "registry.npmjs.org", Port: 443}

// YarnRegistry is Yarn's default registry (classic and berry), which
// serves npm's packages and which a yarn.lock's resolved URLs name; a
// yarn project's build may reach it.
var YarnRegistry = Rule{Host: "registry.yarnpkg.com", Port: 443}

// Bounds on what RepoRules and MirrorRules read.
const (
	maxConfigBytes = npmconf.MaxFileBytes
	maxSourceFiles = 256
)

// RepoRules returns the package registries a repository's own configuration
// names (npmconf.Registries: .npmrc, .yarnrc, .yarnrc.yml and
// pnpm-workspace.yaml at its root), always with DefaultRegistry, and with
// YarnRegistry when a yarn.lock is at its root, sorted and
// without duplicates. A URL's port is its own, or that of its scheme (443
// for https, 80 for http).
//
// Values it cannot use are left out and explained in notes: a URL with an
// ${ENV} placeholder (the build's environment is not known here; allow the
// host with a flag), a URL that is not http or https, a file too large or
// not a regular file. A missing file is not a note. Err is for a file that
// exists and cannot be read or parsed.
func RepoRules(root *os.Root) (rules []Rule, notes []string, err error) {
	regs, notes, err := npmconf.Registries(root)
	if err != nil {
		return nil, nil, err
	}
	rules = []Rule{DefaultRegistry}
	if fi, err := root.Stat("yarn.lock"); err == nil && fi.Mode().IsRegular() {
		rules = append(rules, YarnRegistry)
	}
	for _, r := range regs {
		rule, note := ruleFromURL(r.URL)
		if note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s = %q: %s", r.File, r.Key, r.URL, note))
			continue
		}
		rules = append(rules, rule)
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
		b, note, err := npmconf.ReadBounded(root, name)
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
