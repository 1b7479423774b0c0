package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/probe"
)

func TestPortfolioRunsWritesAndExits(t *testing.T) {
	t.Setenv("CI", "1")
	src, out, cache := t.TempDir(), t.TempDir(), t.TempDir()
	portfoliotest.Generate(t, src, 5)
	args := []string{"portfolio", "--no-sandbox", "--cache-dir", cache, "--out", out, src}
	r := execute(t, t.Context(), args...)
	if r.code != ExitNotReady {
		t.Fatalf("exit %d, want 1 (some services are blocked); stderr:\n%s", r.code, r.stderr)
	}
	doc := readDocument(t, out)
	done := doc.Totals.ByState["done"]
	if done == 0 || doc.Totals.ByVerdict["ready"] == done {
		t.Fatalf("totals %+v: want done services, not all ready", doc.Totals)
	}
	if got := strings.Count(r.stderr, "\ndone ") + boolInt(strings.HasPrefix(r.stderr, "done ")); got != done {
		t.Errorf("CI progress: %d 'done' lines, want %d:\n%s", got, done, r.stderr)
	}
	sarifs, _ := filepath.Glob(filepath.Join(out, portfolio.SARIFDir, "*.sarif"))
	if len(sarifs) != done {
		t.Errorf("%d SARIF files, want one per done service (%d)", len(sarifs), done)
	}
	merged, err := os.ReadFile(filepath.Join(out, portfolio.MergedFile))
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string            `json:"version"`
		Runs    []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(merged, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != done {
		t.Errorf("merged SARIF: %v, version %q, %d runs; want 2.1.0 with one run per done service (%d)", err, log.Version, len(log.Runs), done)
	}
	// The rerun runs nothing: no progress lines.
	r = execute(t, t.Context(), args...)
	if r.code != ExitNotReady || strings.Contains(r.stderr, "done ") {
		t.Errorf("rerun: exit %d, stderr %q; want 1 and no service run", r.code, r.stderr)
	}
	// A damaged store is named, with the way out.
	if err := os.WriteFile(filepath.Join(out, portfolio.StoreFile), []byte(strings.Repeat("torn ", 2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := execute(t, t.Context(), args...); r.code != ExitNotReady || !strings.Contains(r.stderr, "rerun with --rebuild-state") {
		t.Errorf("corrupt store: exit %d, stderr %q; want 1 naming --rebuild-state", r.code, r.stderr)
	}
	r = execute(t, t.Context(), append(args, "--rebuild-state")...)
	if r.code != ExitNotReady || strings.Count(r.stderr, "done ") != done {
		t.Errorf("--rebuild-state: exit %d, %d services run, want 1 and %d", r.code, strings.Count(r.stderr, "done "), done)
	}
	// --fail-on unknown passes when no service is unknown or failed.
	if doc.Totals.ByVerdict["unknown"] == 0 && doc.Totals.ByState["failed"] == 0 {
		if r := execute(t, t.Context(), append(args, "--fail-on", "unknown")...); r.code != ExitOK {
			t.Errorf("--fail-on unknown: exit %d, want 0; stderr %s", r.code, r.stderr)
		}
	}
}

// TestPortfolioMigrate: --migrate keeps a patch per ready_after_rewrite
// service, unproven without the sandbox tier, and touches no checkout.
func TestPortfolioMigrate(t *testing.T) {
	t.Setenv("CI", "1")
	src, out := t.TempDir(), t.TempDir()
	for _, name := range []string{"var-prefix", "spawn-git", "already-distroless"} {
		dst := filepath.Join(src, name)
		if err := os.CopyFS(dst, os.DirFS(fixture(t, name))); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dst, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(filepath.Join(src, "var-prefix", "Dockerfile"))
	r := execute(t, t.Context(), "portfolio", "--no-sandbox", "--migrate", "--no-cache", "--out", out, src)
	if r.code != ExitNotReady {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	doc := readDocument(t, out)
	migrations := 0
	for _, e := range doc.Services {
		switch e.Verdict {
		case probe.ReadyAfterRewrite:
			migrations++
			if e.Migration == nil || e.Patch == "" || e.Migration.Proven || len(e.Migration.Gates) > 0 {
				t.Fatalf("%s: migration %+v, patch %q; want an unproven patch", e.ID, e.Migration, e.Patch)
			}
			patch, err := os.ReadFile(filepath.Join(out, e.Patch))
			if err != nil || !strings.Contains(string(patch), "+FROM gcr.io/distroless/nodejs22-debian13") || string(patch) != e.Migration.Patch {
				t.Fatalf("%s: patch file %v:\n%s", e.ID, err, patch)
			}
		case probe.Ready, probe.Blocked, probe.Unknown:
			if e.Migration != nil {
				t.Errorf("%s (%s) has a migration", e.ID, e.Verdict)
			}
		}
	}
	if migrations != 1 {
		t.Fatalf("%d migrations, want 1 (var-prefix)", migrations)
	}
	html, _ := os.ReadFile(filepath.Join(out, portfolio.HTMLFile))
	if !strings.Contains(string(html), "Migration: ") {
		t.Error("report.html has no migration drill-down")
	}
	after, _ := os.ReadFile(filepath.Join(src, "var-prefix", "Dockerfile"))
	if string(before) != string(after) {
		t.Error("--migrate changed a checkout")
	}
}

// readDocument decodes the portfolio.json in out.
func readDocument(t *testing.T, out string) *portfolio.Document {
	t.Helper()
	f, err := os.Open(filepath.Join(out, portfolio.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := portfolio.DecodeDocument(f)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestPortfolioBadInput(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "Dockerfile"), []byte("FROM node:22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, portfolio.ConfigFile), []byte("version: 1\nservices:\n  - dockerfile: Dockerfile\n    bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no sources":  {[]string{"portfolio"}, "no repositories: pass PATHs or --from FILE"},
		"missing":     {[]string{"portfolio", filepath.Join(repo, "nope")}, "no such directory"},
		"bad config":  {[]string{"portfolio", "--list", repo}, portfolio.ConfigFile + ":4: unknown key \"bogus\""},
		"bad fail-on": {[]string{"portfolio", "--fail-on", "green", repo}, `--fail-on "green"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := execute(t, t.Context(), tc.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestPortfolioProgress(t *testing.T) {
	t.Parallel()
	svc := func(id string, st portfolio.State) portfolio.Record {
		r := portfolio.Record{Service: portfolio.Service{ID: id}, State: st}
		if st == portfolio.StateDone {
			r.Result = &portfolio.Result{Verdict: "blocked", Blockers: make([]probe.Blocker, 2)}
			r.Timings.StaticMS = 12
		}
		if st == portfolio.StateFailed {
			r.Reason = "the pipeline panicked: boom"
		}
		return r
	}
	feed := func(p *portfolioProgress) {
		p.observe(svc("a", portfolio.StateQueued))
		p.observe(svc("b", portfolio.StateQueued))
		p.observe(svc("c", portfolio.StateSkipped))
		p.observe(svc("a", portfolio.StateRunning))
		p.observe(svc("b", portfolio.StateRunning))
		p.observe(svc("a", portfolio.StateDone))
		p.observe(svc("b", portfolio.StateFailed))
		p.finish()
	}
	var ci, bar, pipe strings.Builder
	feed(newPortfolioProgress(&ci, false, true, 3))
	feed(newPortfolioProgress(&bar, true, false, 3))
	feed(newPortfolioProgress(&pipe, false, false, 3))
	want := "done a: blocked (2 blockers) [12 ms]\nfailed b: the pipeline panicked: boom [0 ms]\n"
	if diff := cmp.Diff(want, ci.String()); diff != "" {
		t.Errorf("CI lines (-want +got):\n%s", diff)
	}
	last := bar.String()[strings.LastIndex(bar.String(), "\r"):]
	for _, w := range []string{"3/3", "done 1", "failed 1", "skipped 1", "queued 0", "eta"} {
		if !strings.Contains(last, w) {
			t.Errorf("bar %q lacks %q", last, w)
		}
	}
	if pipe.Len() != 0 {
		t.Errorf("a pipe outside CI got progress: %q", pipe.String())
	}
}
