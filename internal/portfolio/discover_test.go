package portfolio

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
)

func discovery(t *testing.T) *Discovery {
	t.Helper()
	sel, ok := builtin.NewRegistry().ImageSelector(nodenpm.Task)
	if !ok {
		t.Fatal("no image selector")
	}
	return &Discovery{Selector: sel, Workspace: filepath.Join(t.TempDir(), "workspace")}
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

type listed struct{ ID, Context, Skip string }

func summarise(ss []Service) []listed {
	var out []listed
	for _, s := range ss {
		skip := s.Skip
		if i := strings.Index(skip, ":"); i >= 0 {
			skip = skip[:i]
		}
		out = append(out, listed{s.ID, s.Context, skip})
	}
	return out
}

func TestDiscoverMonorepoAndSkips(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := filepath.Join(root, "shop")
	write(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(repo, "package.json"), `{"name":"shop"}`)
	write(t, filepath.Join(repo, "services/api/Dockerfile"), "FROM node:22 AS build\nFROM gcr.io/distroless/nodejs22-debian12 AS runtime\nCOPY --from=build /app /app\n")
	write(t, filepath.Join(repo, "services/web/Dockerfile"), "FROM node:22\nCMD [\"node\",\"x.js\"]\n")
	write(t, filepath.Join(repo, "services/web/Dockerfile.test"), "FROM node:22\n")
	write(t, filepath.Join(repo, "services/web/Dockerfile.cypress"), "FROM cypress/included\n")
	write(t, filepath.Join(repo, "e2e/Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(repo, "services/web/Dockerfile.dev"), "FROM node:22\n")
	write(t, filepath.Join(repo, "tools/Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(repo, "services/web/tests/Dockerfile"), "FROM node:22\nCMD [\"/app/tests.sh\"]\n")
	write(t, filepath.Join(repo, ".devcontainer/Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(repo, "services/contest/Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(repo, "proxy/Dockerfile"), "FROM nginx:1.27\n")
	write(t, filepath.Join(repo, ConfigFile), `version: 1
services:
  - dockerfile: services/web/Dockerfile
    context: services/web
  - dockerfile: tools/Dockerfile
    exclude: true
    reason: build tooling
`)
	// proxy/ has no package.json of its own, but the repository root has
	// one above it: a Node build context, so it counts. A folder of its own
	// with no package.json anywhere does not.
	other := filepath.Join(root, "gateway")
	write(t, filepath.Join(other, ".git", "HEAD"), "x\n")
	write(t, filepath.Join(other, "Dockerfile"), "FROM envoyproxy/envoy:v1.31\n")

	got, err := discovery(t).Discover(t.Context(), []Source{{Spec: root}})
	if err != nil {
		t.Fatal(err)
	}
	want := []listed{
		{"gateway:Dockerfile#0", ".", "not a Node image"},
		{"shop:.devcontainer/Dockerfile#0", ".", "a development image"},
		{"shop:e2e/Dockerfile#0", ".", "a test image"},
		{"shop:proxy/Dockerfile#0", ".", ""},
		{"shop:services/api/Dockerfile#runtime", ".", ""},
		{"shop:services/contest/Dockerfile#0", ".", ""},
		{"shop:services/web/Dockerfile#0", "services/web", ""},
		{"shop:services/web/Dockerfile.cypress#0", ".", "a test image"},
		{"shop:services/web/Dockerfile.dev#0", ".", "a development image"},
		{"shop:services/web/Dockerfile.test#0", ".", "a test image"},
		{"shop:services/web/tests/Dockerfile#0", ".", "a test image"},
		{"shop:tools/Dockerfile#0", ".", "excluded by codegenie-portfolio.yaml"},
	}
	if diff := cmp.Diff(want, summarise(got)); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
}

func TestConfigErrorsHaveLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "version: 1\nservice: []\n", `x.yaml:2: unknown key "service"; want one of: version, services`},
		{"unknown entry key", "version: 1\nservices:\n  - dockerfile: Dockerfile\n    tagret: x\n", `x.yaml:4: unknown key "tagret"; want one of: dockerfile, target, context, exclude, reason, probe_paths`},
		{"probe path not a path", "version: 1\nservices:\n  - dockerfile: Dockerfile\n    probe_paths: [healthz]\n", `x.yaml:4: probe_paths: "healthz" is not an absolute URL path (such as /healthz)`},
		{"missing version", "services: []\n", "x.yaml:1: missing version: add 'version: 1'"},
		{"wrong version", "version: 2\n", `x.yaml:1: version: want 1, got "2"`},
		{"no dockerfile", "version: 1\nservices:\n  - target: x\n", "x.yaml:3: service entry without dockerfile: name the Dockerfile it configures"},
		{"exclude not bool", "version: 1\nservices:\n  - dockerfile: D\n    exclude: yes please\n", "x.yaml:4: exclude: want true or false"},
		{"escaping path", "version: 1\nservices:\n  - dockerfile: ../D\n", "x.yaml:3: dockerfile ../D: want a path inside the repository"},
		{"twice", "version: 1\nservices:\n  - dockerfile: D\n  - dockerfile: ./D\n", "x.yaml:4: dockerfile D is already configured at line 3; merge the two entries"},
		{"duplicate key", "version: 1\nservices:\n  - dockerfile: D\n    target: a\n    target: b\n", `x.yaml:5: key "target" given twice`},
		{"outside context", "version: 1\nservices:\n  - dockerfile: a/D\n    context: b\n", "x.yaml:3: dockerfile a/D is outside its context b: the pipeline judges the context as the repository"},
		{"number target", "version: 1\nservices:\n  - dockerfile: D\n    target: 3\n", "x.yaml:4: target: want a non-empty string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig("x.yaml", []byte(tc.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigNamesMissingDockerfile(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	write(t, filepath.Join(repo, "Dockerfile"), "FROM node:22\n")
	write(t, filepath.Join(repo, ConfigFile), "version: 1\nservices:\n  - dockerfile: api/Dockerfile\n")
	_, err := discovery(t).Discover(t.Context(), []Source{{Spec: repo}})
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), ConfigFile+":3: dockerfile api/Dockerfile: no such Dockerfile") {
		t.Fatalf("got %v, want an input error naming line 3", err)
	}
}

// TestConfigFIFOIsAnInputError: a FIFO named like the repository's config
// file is not read (reading it would wait for a writer for ever): it is
// bad input, named.
func TestConfigFIFOIsAnInputError(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	write(t, filepath.Join(repo, "Dockerfile"), "FROM node:22\n")
	fifo := filepath.Join(repo, ConfigFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := discovery(t).Discover(t.Context(), []Source{{Spec: repo}})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		// Release the blocked reader so that the test ends.
		if w, oerr := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); oerr == nil {
			w.Close()
		}
		t.Fatalf("Discover blocked on the FIFO %s", ConfigFile)
	}
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, probe.ErrNotRegular) || !strings.Contains(err.Error(), ConfigFile) {
		t.Fatalf("got %v, want an input error saying %s is not a regular file", err, ConfigFile)
	}
}

func TestReadSourcesAndCloneFileURL(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	src := filepath.Join(root, "upstream")
	portfoliotest.Generate(t, filepath.Join(root, "gen"), 1)
	if err := os.Rename(filepath.Join(root, "gen", "repo-0000"), src); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(src, ".git")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	local := filepath.Join(root, "local")
	write(t, filepath.Join(local, "Dockerfile"), "FROM node:22\n")
	list := filepath.Join(root, "repos.txt")
	write(t, list, "# the portfolio\nfile://"+src+"\n\nlocal   # beside this file\n")
	sources, err := ReadSources(list)
	if err != nil {
		t.Fatal(err)
	}
	d := discovery(t)
	got, err := d.Discover(t.Context(), sources)
	if err != nil {
		t.Fatal(err)
	}
	want := []listed{{"upstream:Dockerfile#1", ".", ""}, {"local:Dockerfile#0", ".", ""}}
	if diff := cmp.Diff(want, summarise(got)); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got[0].Dir, d.Workspace) {
		t.Errorf("clone at %s, want it under the workspace %s", got[0].Dir, d.Workspace)
	}
	// A second discovery reuses the clone.
	again, err := d.Discover(t.Context(), sources)
	if err != nil {
		t.Fatal(err)
	}
	if again[0].Dir != got[0].Dir {
		t.Errorf("second clone at %s, want %s reused", again[0].Dir, got[0].Dir)
	}
	// A missing repository is a failed service (TestUnreachableURLIsAFailedService).
	nope, err := d.Discover(t.Context(), []Source{{Spec: "file://" + filepath.Join(root, "nope")}})
	if err != nil || len(nope) != 1 || !strings.Contains(nope[0].Fail, "cloning file://") {
		t.Errorf("cloning a missing repository: got %+v, %v; want one failed service", nope, err)
	}
}

func TestReadSourcesRejectsTwoOnALine(t *testing.T) {
	t.Parallel()
	list := filepath.Join(t.TempDir(), "repos.txt")
	write(t, list, "a\nb c\n")
	_, err := ReadSources(list)
	if err == nil || !strings.Contains(err.Error(), "repos.txt:2:") {
		t.Fatalf("got %v, want an error at line 2", err)
	}
}

func TestGeneratedPortfolio(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	portfoliotest.Generate(t, root, 10)
	got, err := discovery(t).Discover(t.Context(), []Source{{Spec: root}})
	if err != nil {
		t.Fatal(err)
	}
	judged, mono := 0, 0
	for _, s := range got {
		if s.Skip == "" {
			judged++
		}
		if s.Context != "." {
			mono++
		}
	}
	if mono != 8 || judged < 12 {
		t.Errorf("got %d services, %d judged, %d in monorepo contexts; want 8 in contexts and at least 12 judged:\n%v", len(got), judged, mono, summarise(got))
	}
}

func TestConfigProbePaths(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig("x.yaml", []byte("version: 1\nservices:\n  - dockerfile: api/Dockerfile\n    probe_paths: [/healthz, /api/status]\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, ok := cfg.lookup("api/Dockerfile")
	if !ok || len(o.ProbePaths) != 2 || o.ProbePaths[0] != "/healthz" || o.ProbePaths[1] != "/api/status" {
		t.Errorf("override %+v, want the two probe paths", o)
	}
}
