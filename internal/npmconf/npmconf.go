// Package npmconf reads the package registries a Node repository's own
// configuration names, for the two places that need them: the build
// egress's allow-list (package egress) and the lockfile fetch of
// `--deps lockfile` (package deps). One reader, so that both see the same
// registries in the same files.
package npmconf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/codegenie/codegenie/internal/regfile"
)

// MaxFileBytes bounds each configuration file read.
const MaxFileBytes = 256 << 10

// Registry is one registry setting: where it was written, the scope it
// serves ("" for the default registry, else "@scope"), and its URL as
// written (placeholders such as ${NPM_REGISTRY} are not expanded).
type Registry struct {
	File  string
	Key   string
	Scope string
	URL   string
}

// Files are the files Registries reads, at the repository's root, in
// ascending precedence: where two set the same scope, the later wins, so
// .npmrc, which npm and pnpm read, wins over the others.
var Files = []string{".yarnrc", ".yarnrc.yml", "pnpm-workspace.yaml", ".npmrc"}

// Registries returns the registry settings of the repository at root, in
// the order of Files and, within a file, as written (YAML maps sorted by
// key). It reads .npmrc's `registry=` and `@scope:registry=`; Yarn 1's
// .yarnrc `registry` and `"@scope:registry"`; .yarnrc.yml's
// `npmRegistryServer` and `npmScopes.*.npmRegistryServer`; and
// pnpm-workspace.yaml's `registry` and `registries`. Credentials are not
// read.
//
// A file that is missing is skipped. One that is not a regular file or
// is larger than MaxFileBytes is not read, and a note says so. Err is for
// a file that exists and cannot be read or parsed, or a symlink out of
// root.
func Registries(root *os.Root) (regs []Registry, notes []string, err error) {
	for _, file := range Files {
		b, note, err := readBounded(root, file)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		if b == nil {
			continue
		}
		var got []Registry
		switch file {
		case ".npmrc", ".yarnrc":
			got = iniRegistries(file, b)
		case ".yarnrc.yml":
			got, err = yarnBerry(b)
		case "pnpm-workspace.yaml":
			got, err = pnpmWorkspace(b)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		regs = append(regs, got...)
	}
	return regs, notes, nil
}

func iniRegistries(file string, b []byte) []Registry {
	var out []Registry
	for _, kv := range iniLines(b, file == ".yarnrc") {
		k, v := kv[0], kv[1]
		switch {
		case k == "registry":
			out = append(out, Registry{File: file, Key: k, URL: v})
		case strings.HasPrefix(k, "@") && strings.HasSuffix(k, ":registry"):
			out = append(out, Registry{File: file, Key: k, Scope: strings.TrimSuffix(k, ":registry"), URL: v})
		}
	}
	return out
}

func yarnBerry(b []byte) ([]Registry, error) {
	var y struct {
		NpmRegistryServer string `yaml:"npmRegistryServer"`
		NpmScopes         map[string]struct {
			NpmRegistryServer string `yaml:"npmRegistryServer"`
		} `yaml:"npmScopes"`
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		return nil, err
	}
	var out []Registry
	if y.NpmRegistryServer != "" {
		out = append(out, Registry{File: ".yarnrc.yml", Key: "npmRegistryServer", URL: y.NpmRegistryServer})
	}
	for _, scope := range sortedKeys(y.NpmScopes) {
		if s := y.NpmScopes[scope].NpmRegistryServer; s != "" {
			out = append(out, Registry{File: ".yarnrc.yml", Key: "npmScopes." + scope + ".npmRegistryServer", Scope: "@" + strings.TrimPrefix(scope, "@"), URL: s})
		}
	}
	return out, nil
}

func pnpmWorkspace(b []byte) ([]Registry, error) {
	var p struct {
		Registry   string            `yaml:"registry"`
		Registries map[string]string `yaml:"registries"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	var out []Registry
	if p.Registry != "" {
		out = append(out, Registry{File: "pnpm-workspace.yaml", Key: "registry", URL: p.Registry})
	}
	for _, k := range sortedKeys(p.Registries) {
		scope := k
		if k == "default" {
			scope = ""
		}
		out = append(out, Registry{File: "pnpm-workspace.yaml", Key: "registries." + k, Scope: scope, URL: p.Registries[k]})
	}
	return out, nil
}

// readBounded reads a regular file of at most MaxFileBytes from root,
// without blocking on a FIFO. A missing file gives nothing; a file that is
// too large or not regular gives a note; a symlink out of root, or another
// failure, an error.
func readBounded(root *os.Root, name string) (b []byte, note string, err error) {
	b, err = regfile.ReadFileIn(root, name, MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", nil
	case errors.Is(err, regfile.ErrNotRegular):
		return nil, fmt.Sprintf("%s: not a regular file; not read", name), nil
	case errors.Is(err, regfile.ErrTooLarge):
		return nil, fmt.Sprintf("%s: larger than %d bytes; not read", name, MaxFileBytes), nil
	case err != nil:
		return nil, "", fmt.Errorf("reading %s: %w", name, err)
	}
	return b, "", nil
}

// ReadBounded is readBounded for other configuration a repository or an
// image holds (an image's apt and apk sources).
func ReadBounded(root *os.Root, name string) ([]byte, string, error) { return readBounded(root, name) }

// iniLines returns the key and value of each setting of an .npmrc (KEY=VALUE)
// or, with spaced, a Yarn 1 .yarnrc (KEY VALUE). Quotes around either are
// removed; comments (# and ;) and other lines are skipped.
func iniLines(b []byte, spaced bool) [][2]string {
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes+1)
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
