package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree writes files (path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRepoRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		files     map[string]string
		want      []string
		wantNotes []string
	}{
		{"no configuration", nil, []string{"registry.npmjs.org:443"}, nil},
		// yarn.lock's resolved URLs name Yarn's registry; a yarn install
		// in a build fetched from it and was refused (excalidraw-room).
		{"yarn.lock", map[string]string{"yarn.lock": "a@^1:\n  version \"1.0.0\"\n  resolved \"https://registry.yarnpkg.com/a/-/a-1.0.0.tgz\"\n"},
			[]string{"registry.npmjs.org:443", "registry.yarnpkg.com:443"}, nil},
		{"npmrc", map[string]string{".npmrc": `
# company registry
registry=https://npm.corp.example/
@acme:registry = "https://acme.pkg.example:8443/npm/"
; a comment
//npm.corp.example/:_authToken=${NPM_TOKEN}
@legacy:registry=http://legacy.example
always-auth=true
`}, []string{"acme.pkg.example:8443", "legacy.example:80", "npm.corp.example:443", "registry.npmjs.org:443"}, nil},
		{"env placeholder", map[string]string{".npmrc": "registry=${NPM_REGISTRY}\n@s:registry=https://ok.example/\n"},
			[]string{"ok.example:443", "registry.npmjs.org:443"},
			[]string{`.npmrc: registry = "${NPM_REGISTRY}": names an environment variable`}},
		{"yarn berry", map[string]string{".yarnrc.yml": `
nodeLinker: node-modules
npmRegistryServer: "https://yarn.corp.example"
npmScopes:
  acme:
    npmRegistryServer: https://acme.example:4873
    npmAlwaysAuth: true
  other:
    npmAuthToken: x
`}, []string{"acme.example:4873", "registry.npmjs.org:443", "yarn.corp.example:443"}, nil},
		{"yarn classic", map[string]string{".yarnrc": `# yarn lockfile v1
registry "https://classic.example/"
"@acme:registry" "https://acme-classic.example/"
lastUpdateCheck 1700000000000
`}, []string{"acme-classic.example:443", "classic.example:443", "registry.npmjs.org:443"}, nil},
		{"pnpm workspace", map[string]string{"pnpm-workspace.yaml": `
packages:
  - "packages/*"
registry: https://pnpm.corp.example/
registries:
  "@acme": https://acme.example/
`}, []string{"acme.example:443", "pnpm.corp.example:443", "registry.npmjs.org:443"}, nil},
		{"pnpm workspace without a registry", map[string]string{"pnpm-workspace.yaml": "packages:\n  - apps/*\n"},
			[]string{"registry.npmjs.org:443"}, nil},
		{"bad urls are notes", map[string]string{".npmrc": "registry=file:///srv/npm\n@a:registry=https://bad host/\n"},
			[]string{"registry.npmjs.org:443"},
			[]string{`.npmrc: registry = "file:///srv/npm": not an http or https URL`, `.npmrc: @a:registry = "https://bad host/": not a URL`}},
		{"duplicates", map[string]string{".npmrc": "registry=https://registry.npmjs.org/\n", ".yarnrc.yml": "npmRegistryServer: https://REGISTRY.npmjs.org\n"},
			[]string{"registry.npmjs.org:443"}, nil},
		{"too large", map[string]string{".npmrc": "registry=https://x.example/\n" + strings.Repeat("#\n", maxConfigBytes)},
			[]string{"registry.npmjs.org:443"}, []string{".npmrc: larger than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			rules, notes, err := RepoRules(openRoot(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rules {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if len(notes) != len(tc.wantNotes) {
				t.Fatalf("notes %q, want %d", notes, len(tc.wantNotes))
			}
			for i := range notes {
				if !strings.HasPrefix(notes[i], tc.wantNotes[i]) {
					t.Errorf("note %q, want it to start with %q", notes[i], tc.wantNotes[i])
				}
			}
		})
	}
}

func TestRepoRulesRefusesEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"npmrc": "registry=https://stolen.example/\n"})
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "npmrc"), filepath.Join(dir, ".npmrc")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := RepoRules(openRoot(t, dir)); err == nil || !strings.Contains(err.Error(), ".npmrc") {
		t.Errorf("RepoRules through a symlink out of the repository = %v, want an error naming .npmrc", err)
	}

	// A symlink that stays inside is followed.
	dir2 := t.TempDir()
	writeTree(t, dir2, map[string]string{"config/npmrc": "registry=https://inside.example/\n"})
	if err := os.Symlink("config/npmrc", filepath.Join(dir2, ".npmrc")); err != nil {
		t.Fatal(err)
	}
	rules, _, err := RepoRules(openRoot(t, dir2))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Rule{{"inside.example", 443}, DefaultRegistry}, rules); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}

	// A directory where a file should be is a note.
	dir3 := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir3, ".npmrc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, notes, err := RepoRules(openRoot(t, dir3)); err != nil || len(notes) != 1 {
		t.Errorf("RepoRules with a directory .npmrc = %q, %v; want one note", notes, err)
	}

	dir4 := t.TempDir()
	writeTree(t, dir4, map[string]string{".yarnrc.yml": "npmScopes: [unclosed\n"})
	if _, _, err := RepoRules(openRoot(t, dir4)); err == nil || !strings.Contains(err.Error(), "parsing .yarnrc.yml") {
		t.Errorf("RepoRules with a broken .yarnrc.yml = %v, want a parse error", err)
	}
}

// bookwormSources is the deb822 file of a Debian bookworm image.
const bookwormSources = `Types: deb
# http://snapshot.debian.org/archive/debian/20240101T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20240101T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

func TestMirrorRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"empty image", nil, nil},
		{"debian bookworm", map[string]string{"etc/apt/sources.list.d/debian.sources": bookwormSources}, []string{"deb.debian.org:80"}},
		{"one-line and deb822", map[string]string{
			"etc/apt/sources.list": `# deb cdrom:[Debian]/ bookworm main
deb http://deb.debian.org/debian bookworm main
deb [arch=amd64 signed-by=/etc/apt/keyrings/x.gpg] https://apt.corp.example:8443/debian bookworm main # a comment
deb-src http://src.example/debian bookworm main
deb file:/srv/local ./
deb mirror+http://mirrors.example/mirrorlist.txt bookworm main
`,
			"etc/apt/sources.list.d/nodesource.list": "deb https://deb.nodesource.com/node_22.x nodistro main\n",
			"etc/apt/sources.list.d/ignored.txt":     "deb http://ignored.example/ x main\n",
			"etc/apt/sources.list.d/multi.sources": `Types: deb deb-src
URIs: https://one.example/debian
  https://two.example/debian
Suites: trixie
Components: main

Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: trixie
`,
		}, []string{"apt.corp.example:8443", "deb.debian.org:80", "deb.nodesource.com:443", "mirrors.example:80", "one.example:443", "src.example:80", "two.example:443"}},
		{"alpine", map[string]string{"etc/apk/repositories": `https://dl-cdn.alpinelinux.org/alpine/v3.20/main
# https://commented.example/
@edge https://edge.example/alpine/edge/testing
/media/cdrom/apks
`}, []string{"dl-cdn.alpinelinux.org:443", "edge.example:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeTree(t, dir, tc.files)
			rules, err := MirrorRules(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rules {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMirrorRulesRefusesEscapes(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"sources.list": "deb http://stolen.example/ x main\n"})
	for _, link := range []string{
		filepath.Join(outside, "sources.list"), // absolute: the host's file, not the image's
		"../../../../../../../../" + filepath.Join(outside, "sources.list")[1:],
	} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"etc/apt/sources.list.d/ok.list": "deb http://ok.example/ x main\n"})
		if err := os.Symlink(link, filepath.Join(dir, "etc/apt/sources.list")); err != nil {
			t.Fatal(err)
		}
		if rules, err := MirrorRules(dir); err == nil {
			t.Errorf("MirrorRules with sources.list -> %s = %v, want an error", link, rules)
		}
	}
	// A linked sources.list.d is refused too.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/apt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "etc/apt/sources.list.d")); err != nil {
		t.Fatal(err)
	}
	if rules, err := MirrorRules(dir); err == nil {
		t.Errorf("MirrorRules with a linked sources.list.d = %v, want an error", rules)
	}
	if _, err := MirrorRules(filepath.Join(dir, "missing")); err == nil {
		t.Error("MirrorRules of a missing directory: want an error")
	}
}
