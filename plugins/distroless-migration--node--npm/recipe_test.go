package nodenpm_test

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/udiff"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// writeResult writes a rewrite's files into dir.
func writeResult(t *testing.T, dir string, res *recipe.Result) {
	t.Helper()
	for _, f := range res.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.New, f.Mode); err != nil {
			t.Fatal(err)
		}
	}
}

// renderResult is a rewrite as its golden file holds it.
func renderResult(res *recipe.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target: %s\n", res.Target.Pinned())
	for _, c := range res.Changes {
		fmt.Fprintf(&b, "change %s", c.Rule)
		if c.Blocker != "" {
			fmt.Fprintf(&b, " (%s line %d)", c.Blocker, c.Line)
		}
		fmt.Fprintf(&b, ": %s\n", c.What)
	}
	for _, r := range res.Refusals {
		fmt.Fprintf(&b, "refuse %s (%s): %s: %s\n", r.Rule, r.Blocker, r.Title, r.Why)
		for _, e := range r.Evidence {
			fmt.Fprintf(&b, "  at %s:%d\n", e.File, e.Line)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	for _, f := range res.Files {
		b.WriteString(udiff.Diff(f.Path, f.Old, f.New))
	}
	return b.String()
}

// TestRecipeRemovesEveryBlocker is the contract between the verdict and
// the recipe, over every fixture: ready_after_rewrite means the recipe
// refuses nothing and its output is ready (no blocker left); blocked and
// unknown mean it refuses; ready means it changes nothing. The rewrite
// run on its own output changes nothing, and each fixture's rewrite
// matches its golden file.
func TestRecipeRemovesEveryBlocker(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*"))
	if err != nil || len(dirs) < 12 {
		t.Fatalf("found %d fixtures (%v)", len(dirs), err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := gatherStatic(t, dir)
			as := out.Assessments["distroless_readiness"]
			res, err := nodenpm.Rewrite(t.Context(), dir, out.Probes, nodenpm.RewriteOptions{})
			if err != nil {
				if as.Verdict == probe.ReadyAfterRewrite {
					t.Fatalf("verdict %s, but the recipe failed: %v", as.Verdict, err)
				}
				t.Logf("no rewrite (%s): %v", as.Verdict, err)
				return
			}
			if src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(res.Dockerfile))); err == nil {
				checkPatch(t, src, res)
			}
			golden := filepath.Join("testdata", "migrate", name+".golden")
			got := renderResult(res)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("rewrite (-want +got):\n%s", d)
			}
			switch as.Verdict {
			case probe.Ready:
				if len(res.Files) > 0 || res.Refused() {
					t.Fatalf("verdict ready, but the recipe changes %d file(s) and refuses %d", len(res.Files), len(res.Refusals))
				}
				return
			case probe.Blocked, probe.Unknown:
				if !res.Refused() {
					t.Fatalf("verdict %s, but the recipe refuses nothing", as.Verdict)
				}
				return
			case probe.ReadyAfterRewrite:
			}
			if res.Refused() {
				t.Fatalf("verdict ready_after_rewrite, but the recipe refuses: %+v", res.Refusals)
			}
			// The change list names every blocker the rewrite removes.
			for _, b := range as.Blockers {
				if !slices.ContainsFunc(res.Changes, func(c recipe.Change) bool { return c.Blocker == b.ID }) {
					t.Errorf("no change names the blocker %s (%s)", b.ID, b.Rule)
				}
			}
			if len(res.Files) == 0 {
				t.Fatal("verdict ready_after_rewrite, but the recipe changes nothing")
			}
			// Copying a files stage's root would bring its whole system,
			// its shell among it, into the distroless image.
			for _, l := range strings.Split(string(res.Files[0].New), "\n") {
				if f := strings.Fields(l); len(f) == 4 && strings.EqualFold(f[0], "COPY") && strings.HasPrefix(f[1], "--from=") && path.Clean(f[2]) == "/" {
					t.Fatalf("the rewrite copies a stage's whole root: %q", l)
				}
			}
			migrated := t.TempDir()
			copyTree(t, dir, migrated)
			writeResult(t, migrated, res)
			after := gatherStatic(t, migrated)
			aa := after.Assessments["distroless_readiness"]
			if aa.Verdict != probe.Ready || len(aa.Blockers) > 0 {
				var left []string
				for _, b := range aa.Blockers {
					left = append(left, fmt.Sprintf("%s (%s): %s", b.ID, b.Rule, b.Title))
				}
				t.Fatalf("after the rewrite the verdict is %s, with blockers:\n%s\nDockerfile:\n%s", aa.Verdict, strings.Join(left, "\n"), res.Files[0].New)
			}
			again, err := nodenpm.Rewrite(t.Context(), migrated, after.Probes, nodenpm.RewriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Files) > 0 {
				t.Fatalf("the recipe on its own output changes %s", again.Files[0].Path)
			}
		})
	}
}
