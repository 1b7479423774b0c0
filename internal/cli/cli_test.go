package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
)

func example(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "hello-service")
}

type result struct {
	code           int
	stdout, stderr string
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

// waitFor waits until cond holds, and fails the test, naming what it
// waited for, if it does not within waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func execute(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Execute(ctx, args, Streams{Out: &out, Err: &errb})
	return result{code, out.String(), errb.String()}
}

func TestGatherExampleColdThenWarmIsIdentical(t *testing.T) {
	t.Parallel()
	cacheDir := t.TempDir()
	cold := execute(t, t.Context(), "--cache-dir", cacheDir, "gather", "--no-sandbox", example(t))
	// The example is not ready for distroless: exit 1, and silent in a pipe.
	if cold.code != ExitNotReady {
		t.Fatalf("cold gather exit %d, want %d: %s", cold.code, ExitNotReady, cold.stderr)
	}
	if cold.stderr != "" {
		t.Errorf("gather wrote to stderr in a pipe: %q", cold.stderr)
	}
	ctx, err := report.Decode(strings.NewReader(cold.stdout), builtin.NewRegistry())
	if err != nil {
		t.Fatalf("gather printed an invalid context: %v\n%s", err, cold.stdout)
	}
	if len(ctx.Probes) == 0 {
		t.Fatal("no probe results")
	}
	warm := execute(t, t.Context(), "--cache-dir", cacheDir, "gather", "--no-sandbox", example(t))
	if warm.code != ExitNotReady || warm.stdout != cold.stdout {
		t.Fatalf("warm gather (exit %d) differs from cold:\n%s\n---\n%s", warm.code, cold.stdout, warm.stdout)
	}
	// Every result is cached but the trace's, which without a sandbox says
	// nothing about the repository.
	cached := 0
	for _, p := range ctx.Probes {
		if p.Confidence != probe.Low {
			cached++
		}
	}
	st := execute(t, t.Context(), "--cache-dir", cacheDir, "cache", "stats", "--json")
	if st.code != 0 || !strings.Contains(st.stdout, fmt.Sprintf(`"entries": %d`, cached)) {
		t.Errorf("cache stats after gather: exit %d\n%s", st.code, st.stdout)
	}
	pr := execute(t, t.Context(), "--cache-dir", cacheDir, "cache", "prune", "--all")
	if pr.code != 0 || !strings.Contains(pr.stdout, fmt.Sprintf("removed %d entries", cached)) {
		t.Errorf("cache prune --all: exit %d\n%s%s", pr.code, pr.stdout, pr.stderr)
	}
}

func TestGatherOutFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "context.json")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execute(t, t.Context(), "--cache-dir", t.TempDir(), "gather", "--no-sandbox", "--out", out, example(t))
	if r.code != ExitNotReady || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(b, []byte(`"schema_version": 1`)) {
		t.Fatalf("--out file = %q, %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "context.json" {
		t.Errorf("temp files left beside --out: %v", entries)
	}
	bad := execute(t, t.Context(), "--cache-dir", t.TempDir(), "gather", "--no-sandbox", "--out", filepath.Join(dir, "missing-dir", "c.json"), example(t))
	if bad.code != ExitNotReady || !strings.Contains(bad.stderr, "missing-dir") {
		t.Errorf("--out into a missing directory: exit %d, stderr %q", bad.code, bad.stderr)
	}
}

func TestErrorsAreOneLineWithUsageExitCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing path", []string{"gather", filepath.Join(dir, "nope")}, "no such directory"},
		{"file not dir", []string{"gather", file}, "is a file, not a directory"},
		{"no args", []string{"gather"}, "wants exactly one PATH"},
		{"two args", []string{"gather", "a", "b"}, "wants exactly one PATH"},
		{"bad flag", []string{"gather", "--frobnicate", dir}, "unknown flag"},
		{"bad format", []string{"gather", "--format", "xml", dir}, "unknown --format"},
		{"bad mirror", []string{"gather", "--registry-mirror", "docker.io", dir}, "REGISTRY=MIRROR"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"prune needs a bound", []string{"cache", "prune", "--older-than", "0s"}, "--older-than must be positive"},
		{"unknown dockerfile", []string{"gather", "--no-sandbox", "--dockerfile", "nope.Dockerfile", fixture(t, "multi-image")}, "no such Dockerfile"},
		{"unknown target", []string{"gather", "--no-sandbox", "--target", "nope", fixture(t, "multi-image")}, "has no such stage"},
		{"worker needs a tier", []string{"worker", "--temporal", "127.0.0.1:1"}, "--tier is required"},
		{"worker bad tier", []string{"worker", "--tier", "gpu"}, "want static or sandbox"},
		{"worker needs a server", []string{"worker", "--tier", "static", "--temporal", ""}, "--temporal HOST:PORT is required"},
		{"detach needs a server", []string{"portfolio", "--detach", "--temporal", "", dir}, "--detach needs --temporal"},
		{"status needs an ID", []string{"portfolio", "status", "--temporal", "127.0.0.1:1"}, "the workflow ID"},
		{"report needs a server", []string{"portfolio", "report", "--temporal", "", "some-id"}, "--temporal HOST:PORT is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := execute(t, t.Context(), append([]string{"--cache-dir", t.TempDir()}, tt.args...)...)
			if r.code != ExitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, ExitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not say %q", r.stderr, tt.want)
			}
			if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "codegenie: ") {
				t.Errorf("stderr is not one 'codegenie: ' line: %q", r.stderr)
			}
		})
	}
}

func fixture(t *testing.T, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "plugins", "distroless-migration--node--npm", "testdata", "fixtures", name)
}

// TestGatherExitCodes: the exit code tells a confirmed from an unconfirmed
// answer, so CI can choose.
func TestGatherExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		args    []string
		code    int
		image   string
	}{
		{"already-distroless", nil, ExitUnconfirmed, "Dockerfile#1"},
		{"npm-start-plain", nil, ExitNotReady, "Dockerfile#1"},
		{"execsync-app", nil, ExitNotReady, "Dockerfile#1"},
		{"compose-target", nil, ExitNotReady, "Dockerfile#prod"},
		{"multi-image", []string{"--dockerfile", "docker/load.Dockerfile"}, ExitNotReady, "docker/load.Dockerfile#0"},
		{"multi-image", nil, ExitUnconfirmed, "Dockerfile#1"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture+strings.Join(tt.args, "_"), func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--cache-dir", t.TempDir(), "gather", "--no-sandbox", "--format", "json"}, tt.args...)
			r := execute(t, t.Context(), append(args, fixture(t, tt.fixture))...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			var c struct {
				Image probe.ImageRef `json:"image"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
				t.Fatal(err)
			}
			if c.Image.Key() != tt.image || c.Image.Why == "" {
				t.Errorf("judged %s (%q), want %s with a reason", c.Image.Key(), c.Image.Why, tt.image)
			}
		})
	}
}

// TestGatherAllImages: each Dockerfile is judged as its own image.
func TestGatherAllImages(t *testing.T) {
	t.Parallel()
	r := execute(t, t.Context(), "--cache-dir", t.TempDir(), "gather", "--no-sandbox", "--format", "json", "--all-images", fixture(t, "multi-image"))
	var c report.Context
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatal(err)
	}
	got := map[string]probe.Verdict{}
	for _, ia := range c.Images {
		got[ia.Image.Key()] = ia.Assessments["distroless_readiness"].Verdict
	}
	want := map[string]probe.Verdict{
		"Dockerfile#1":             probe.Ready,
		"Dockerfile.cypress#0":     probe.Blocked,
		"docker/load.Dockerfile#0": probe.Blocked,
		"genproto/Dockerfile#0":    probe.Blocked,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts per image (-want +got):\n%s", diff)
	}
	if c.Assessments["distroless_readiness"].Verdict != probe.Ready {
		t.Errorf("the judged image's verdict %s, want ready", c.Assessments["distroless_readiness"].Verdict)
	}
}

func TestCanceledGatherExits130(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := execute(t, ctx, "--cache-dir", t.TempDir(), "gather", "--no-sandbox", example(t))
	if r.code != ExitCanceled {
		t.Fatalf("exit %d, want %d (stderr %q)", r.code, ExitCanceled, r.stderr)
	}
}

func TestWarningsListsRegistry(t *testing.T) {
	t.Parallel()
	r := execute(t, t.Context(), "warnings")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	all := builtin.NewRegistry().Warnings().All()
	if len(all) == 0 {
		t.Fatal("no warnings registered")
	}
	for _, w := range all {
		if !strings.Contains(r.stdout, w.ID+"  ") || !strings.Contains(r.stdout, w.Summary) {
			t.Errorf("warnings output lacks %s", w.ID)
		}
	}
}

// TestEveryCommandHasAnExample walks the command tree: each command's
// --help carries an example.
func TestEveryCommandHasAnExample(t *testing.T) {
	t.Parallel()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Name() != "completion" && !c.Hidden {
			if strings.TrimSpace(c.Example) == "" {
				t.Errorf("%s has no example", c.CommandPath())
			}
			var out bytes.Buffer
			c.SetOut(&out)
			if err := c.Help(); err != nil || !strings.Contains(out.String(), "Examples:") {
				t.Errorf("%s --help shows no examples", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCmd(Streams{Out: new(bytes.Buffer), Err: new(bytes.Buffer)}))
}

func TestSummaryOnTerminal(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := Execute(t.Context(), []string{"--cache-dir", t.TempDir(), "gather", "--no-sandbox", example(t)}, Streams{Out: &out, Err: &errb, ErrTTY: true})
	if code != ExitNotReady {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "node_project") || !strings.Contains(errb.String(), "probes,") {
		t.Errorf("no summary on a terminal stderr: %q", errb.String())
	}
}

// TestWarningsDocIsCurrent keeps docs/warnings.md, the target of every
// SARIF rule's helpUri, in step with the registry.
func TestWarningsDocIsCurrent(t *testing.T) {
	t.Parallel()
	r := execute(t, t.Context(), "warnings", "--markdown")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	p := filepath.Join(filepath.Dir(example(t)), "..", "docs", "warnings.md")
	b, err := os.ReadFile(p)
	if err != nil || string(b) != r.stdout {
		t.Fatalf("docs/warnings.md is stale (%v): run 'go run ./cmd/codegenie warnings --markdown > docs/warnings.md'", err)
	}
	for _, w := range builtin.NewRegistry().Warnings().All() {
		if !strings.Contains(r.stdout, "### "+w.ID+"\n") {
			t.Errorf("no heading for %s", w.ID)
		}
	}
}
