package probe

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeTree(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRepoGlob(t *testing.T) {
	t.Parallel()
	dir := writeTree(t,
		"Dockerfile", "api.Dockerfile", "docker/Dockerfile", "docker/Dockerfile.prod",
		"a/b/c/Dockerfile", "node_modules/x/Dockerfile", ".git/Dockerfile", "package.json",
	)
	repo, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"Dockerfile", []string{"Dockerfile"}},
		{"package.json", []string{"package.json"}},
		{"missing.json", nil},
		{"**/Dockerfile", []string{"Dockerfile", "a/b/c/Dockerfile", "docker/Dockerfile"}},
		{"*.Dockerfile", []string{"api.Dockerfile"}},
		{"docker/Dockerfile.*", []string{"docker/Dockerfile.prod"}},
		{"**/Dockerfile*", []string{"Dockerfile", "a/b/c/Dockerfile", "docker/Dockerfile", "docker/Dockerfile.prod"}},
		{"node_modules/**/Dockerfile", []string{"node_modules/x/Dockerfile"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			t.Parallel()
			got, err := repo.Glob(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Glob(%q) (-want +got):\n%s", tt.pattern, diff)
			}
		})
	}
	if _, err := repo.Glob("[bad"); err == nil {
		t.Error("Glob of a malformed pattern succeeded")
	}
}

func TestOpenRepoErrors(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, "file")
	if _, err := OpenRepo(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenRepo(missing) error = %v, want not exist", err)
	}
	if _, err := OpenRepo(filepath.Join(dir, "file")); !errors.Is(err, ErrNotDirectory) {
		t.Errorf("OpenRepo(file) error = %v, want ErrNotDirectory", err)
	}
}
