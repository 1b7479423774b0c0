package npmconf

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func root(t *testing.T, files map[string]string) *os.Root {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRegistries: every file's default and scoped registries, with their
// scope normalised to "@scope", in ascending precedence (.npmrc last).
func TestRegistries(t *testing.T) {
	r := root(t, map[string]string{
		".npmrc":              "registry=https://npm.example/\n@acme:registry = \"https://acme.example/\"\n//npm.example/:_authToken=${TOKEN}\n",
		".yarnrc":             "registry \"https://classic.example/\"\n\"@old:registry\" \"https://old.example/\"\n",
		".yarnrc.yml":         "npmRegistryServer: https://berry.example\nnpmScopes:\n  acme:\n    npmRegistryServer: https://acme-berry.example\n",
		"pnpm-workspace.yaml": "registries:\n  default: https://pnpm.example/\n  \"@p\": https://p.example/\n",
	})
	got, notes, err := Registries(r)
	if err != nil || len(notes) != 0 {
		t.Fatalf("%v %q", err, notes)
	}
	want := []Registry{
		{File: ".yarnrc", Key: "registry", URL: "https://classic.example/"},
		{File: ".yarnrc", Key: "@old:registry", Scope: "@old", URL: "https://old.example/"},
		{File: ".yarnrc.yml", Key: "npmRegistryServer", URL: "https://berry.example"},
		{File: ".yarnrc.yml", Key: "npmScopes.acme.npmRegistryServer", Scope: "@acme", URL: "https://acme-berry.example"},
		{File: "pnpm-workspace.yaml", Key: "registries.@p", Scope: "@p", URL: "https://p.example/"},
		{File: "pnpm-workspace.yaml", Key: "registries.default", URL: "https://pnpm.example/"},
		{File: ".npmrc", Key: "registry", URL: "https://npm.example/"},
		{File: ".npmrc", Key: "@acme:registry", Scope: "@acme", URL: "https://acme.example/"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestRegistriesUnreadable: a FIFO is a note at once (the read does not
// wait for a writer), a broken YAML file an error naming it.
func TestRegistriesUnreadable(t *testing.T) {
	r := root(t, nil)
	if err := syscall.Mkfifo(filepath.Join(r.Name(), ".npmrc"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, notes, err := Registries(r)
	if err != nil || len(got) != 0 || len(notes) != 1 || notes[0] != ".npmrc: not a regular file; not read" {
		t.Fatalf("a FIFO .npmrc: %v %q %v", got, notes, err)
	}
	r = root(t, map[string]string{".yarnrc.yml": "npmScopes: [\n"})
	if _, _, err := Registries(r); err == nil || err.Error()[:len("parsing .yarnrc.yml")] != "parsing .yarnrc.yml" {
		t.Fatalf("a broken .yarnrc.yml: %v", err)
	}
}
