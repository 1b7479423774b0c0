// Package probetest helps test probes: it writes a small repository from a
// map of files and runs a probe over it, checking the invariants every
// output must hold. It is for tests only.
package probetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/codegenie/codegenie/internal/probe"
)

// Repo writes files (slash-separated path → content) into a new temporary
// directory and opens it as a repository.
func Repo(t testing.TB, files map[string]string) *probe.Repo {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Run runs p over repo with an empty probe context and fails the test if
// Run errs or the output breaks the invariants of probe.Output.
func Run(t testing.TB, p probe.Probe, repo *probe.Repo) probe.Output {
	t.Helper()
	out, err := p.Run(t.Context(), repo, &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("invalid output: %v", err)
	}
	return out
}

// WarningIDs lists an output's warning IDs in order.
func WarningIDs(out probe.Output) []string {
	var ids []string
	for _, w := range out.Warnings {
		ids = append(ids, w.ID)
	}
	return ids
}

// RunImage runs p over repo judging the image ref, with the same checks as
// Run.
func RunImage(t testing.TB, p probe.Probe, repo *probe.Repo, ref probe.ImageRef) probe.Output {
	t.Helper()
	out, err := p.Run(t.Context(), repo, &probe.Context{Image: ref})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Validate(); err != nil {
		t.Fatalf("invalid output: %v", err)
	}
	return out
}
