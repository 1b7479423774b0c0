// Package portfoliotest generates synthetic portfolios for tests and
// benchmarks: folders of repository checkouts made from the Node plugin's
// fixture shapes, single-service repositories and monorepos among them.
//
// It writes files only; it runs nothing.
package portfoliotest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Shapes are the fixture shapes single-service repositories cycle through.
var Shapes = []string{
	"npm-start-plain", "already-distroless", "shell-form-cmd", "healthcheck-curl", "compose-target",
	"two-dockerfiles", "multi-image", "bash-entrypoint", "final-stage-run", "node-18",
	"reachability", "os-packages", "hooks-launcher", "broken-dockerfile",
}

// monoShapes are the shapes a monorepo holds, one per service folder.
var monoShapes = []string{"npm-start-plain", "already-distroless", "healthcheck-curl", "shell-form-cmd"}

// FixturesDir finds the plugin's fixture folder from the working directory
// of a test (any package of the module).
func FixturesDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "plugins", "distroless-migration--node--npm", "testdata", "fixtures")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("portfoliotest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Generate writes n repositories into root (a folder of checkouts, each
// with a .git directory) and returns their directories. Every fifth one is
// a monorepo of four services under services/, with a
// codegenie-portfolio.yaml naming each service's build context; the rest
// cycle through Shapes.
func Generate(tb testing.TB, root string, n int) []string {
	tb.Helper()
	fixtures := FixturesDir(tb)
	var dirs []string
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("repo-%04d", i))
		if i%5 == 4 {
			var cfg strings.Builder
			cfg.WriteString("version: 1\nservices:\n")
			for _, s := range monoShapes {
				copyTree(tb, filepath.Join(fixtures, s), filepath.Join(dir, "services", s))
				fmt.Fprintf(&cfg, "  - dockerfile: services/%s/Dockerfile\n    context: services/%s\n", s, s)
			}
			writeFile(tb, filepath.Join(dir, "codegenie-portfolio.yaml"), cfg.String())
		} else {
			copyTree(tb, filepath.Join(fixtures, Shapes[i%len(Shapes)]), dir)
		}
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			tb.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// GenerateFrom writes n single-service repositories into root, cycling
// through shapes (fixture names), and returns their directories.
func GenerateFrom(tb testing.TB, root string, n int, shapes []string) []string {
	tb.Helper()
	fixtures := FixturesDir(tb)
	var dirs []string
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("repo-%04d", i))
		copyTree(tb, filepath.Join(fixtures, shapes[i%len(shapes)]), dir)
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			tb.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func writeFile(tb testing.TB, p, data string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}

func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		tb.Fatalf("portfoliotest: copying %s: %v", src, err)
	}
}
