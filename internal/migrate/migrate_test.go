package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func migration() *Migration {
	return &Migration{Result: &recipe.Result{Dockerfile: "Dockerfile", Files: []recipe.File{
		{Path: "Dockerfile", Old: []byte("FROM node:22\n"), New: []byte("FROM gcr.io/distroless/nodejs22-debian13\n"), Mode: 0o644},
		{Path: "codegenie-launch.js", New: []byte("// launcher\n"), Mode: 0o644, Generated: true},
	}}}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\n")
	m := migration()
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "Dockerfile")) != "FROM gcr.io/distroless/nodejs22-debian13\n" || read(t, filepath.Join(dir, "codegenie-launch.js")) != "// launcher\n" || !m.Written {
		t.Fatal("the rewrite was not applied")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*codegenie-*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestWriteRefusesChangedFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\nRUN edited meanwhile\n")
	if err := migration().Write(dir); !errors.Is(err, ErrChanged) {
		t.Fatalf("err %v, want ErrChanged", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "codegenie-launch.js")); err == nil {
		t.Fatal("a generated file was written although the Dockerfile changed")
	}
	dir2 := t.TempDir()
	write(t, filepath.Join(dir2, "Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(dir2, "codegenie-launch.js"), "// mine\n")
	if err := migration().Write(dir2); !errors.Is(err, ErrChanged) {
		t.Fatalf("err %v, want ErrChanged for an existing file of the same name", err)
	}
	if read(t, filepath.Join(dir2, "Dockerfile")) != "FROM node:22\n" || read(t, filepath.Join(dir2, "codegenie-launch.js")) != "// mine\n" {
		t.Fatal("a refused write changed files")
	}
}

func TestWorkspaceLeavesTheRepositoryAlone(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(dir, "src", "server.js"), "x\n")
	if err := os.Symlink("src/server.js", filepath.Join(dir, "link.js")); err != nil {
		t.Fatal(err)
	}
	work, cleanup, err := workspace(dir, t.TempDir(), migration().Result)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if read(t, filepath.Join(work, "Dockerfile")) != "FROM gcr.io/distroless/nodejs22-debian13\n" || read(t, filepath.Join(work, "src", "server.js")) != "x\n" ||
		read(t, filepath.Join(work, "link.js")) != "x\n" || read(t, filepath.Join(work, "codegenie-launch.js")) != "// launcher\n" {
		t.Fatal("the workspace is not the rewritten repository")
	}
	if read(t, filepath.Join(dir, "Dockerfile")) != "FROM node:22\n" {
		t.Fatal("making the workspace changed the repository's Dockerfile")
	}
	if _, err := os.Stat(filepath.Join(dir, "codegenie-launch.js")); err == nil {
		t.Fatal("making the workspace wrote into the repository")
	}
}
