package nodenpm_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

func childProcessResult(t *testing.T, out *gather.Outcome) (probe.Result, *childprocess.Facts) {
	t.Helper()
	for _, r := range out.Context.Probes {
		if r.Probe == childprocess.Name {
			var f childprocess.Facts
			if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
				t.Fatal(err)
			}
			return r, &f
		}
	}
	t.Fatal("no child_process result")
	return probe.Result{}, nil
}

func noNotInstalled(t *testing.T, r probe.Result) {
	t.Helper()
	if r.Reason == childprocess.ReasonDependenciesNotInstalled {
		t.Errorf("child_process reason %s on a traced run: %s", r.Reason, r.Detail)
	}
	for _, w := range r.Warnings {
		if w.ID == childprocess.WarnDependencyNotInstalled {
			t.Errorf("warning %s on a traced run: %s", w.ID, w.Message)
		}
	}
}

// TestTracedImageDependencies: the dependency code a traced build
// installs, which the repository does not hold, is scanned from the built
// image. A dependency that runs a shell when required, directly or through
// another, is a blocker with its import chain, though the boot never
// required it; its test files,
// which nothing loads, are not; and a warm gather is byte-identical and
// never touches the sandbox.
func TestTracedImageDependencies(t *testing.T) {
	e := setupTrace(t)
	t.Run("shell-when-required", func(t *testing.T) {
		c, err := cache.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		before := e.sandbox.spawns.Load()
		out := gatherTraced(t, e, traceDir("image-dep-shell"), c)
		t.Logf("cold traced gather: %s", time.Since(start).Round(time.Millisecond))
		tr, tf := traceResult(t, out)
		if tr.Confidence == probe.Low {
			t.Fatalf("trace low: %s %s", tr.Reason, tr.Detail)
		}
		if tf.NodeModules == nil || tf.NodeModules.Files == 0 {
			t.Fatalf("the trace read no node_modules from the image: %+v", tf.NodeModules)
		}
		t.Logf("image node_modules read back: %d files, %d bytes, roots %q", tf.NodeModules.Files, tf.NodeModules.Bytes, tf.NodeModules.Roots)
		if b := bootShells(tf); len(b) != 0 {
			t.Fatalf("the boot ran a shell (%+v): the fixture must not reach shelly or deep", b)
		}
		r, f := childProcessResult(t, out)
		noNotInstalled(t, r)
		if f.ImageNodeModules == nil || f.ImageNodeModules.Digest != tf.NodeModules.Digest {
			t.Errorf("child_process scanned %+v, want the trace's %+v", f.ImageNodeModules, tf.NodeModules)
		}
		var got *childprocess.Finding
		for i, fd := range f.Findings {
			if fd.File == "node_modules/shelly/index.js" && fd.Kind == childprocess.KindShell {
				got = &f.Findings[i]
			}
		}
		if got == nil {
			t.Fatalf("no shell finding in node_modules/shelly/index.js; findings %+v (%s/%s %s)", f.Findings, r.Confidence, r.Reason, r.Detail)
		}
		if got.Origin != childprocess.OriginDependency || got.Package != "shelly" || got.Scope != childprocess.ScopeReachable {
			t.Errorf("finding %+v: want a reachable dependency finding of shelly", got)
		}
		want := []string{"app.js:2", "lib.js:2", "node_modules/shelly/index.js:1"}
		if !slices.Equal(got.Chain, want) {
			t.Errorf("chain %q, want %q", got.Chain, want)
		}
		// deep runs a shell too, reached only through wrapper.
		var deep *childprocess.Finding
		for i, fd := range f.Findings {
			if fd.File == "node_modules/deep/index.js" && fd.Kind == childprocess.KindShell {
				deep = &f.Findings[i]
			}
		}
		wantDeep := []string{"app.js:2", "lib.js:5", "node_modules/wrapper/index.js:1", "node_modules/deep/index.js:1"}
		if deep == nil || deep.Package != "deep" || deep.Scope != childprocess.ScopeReachable || !slices.Equal(deep.Chain, wantDeep) {
			t.Errorf("deep's finding %+v: want a reachable shell with chain %q", deep, wantDeep)
		}
		a := out.Context.Assessments["distroless_readiness"]
		blocked := false
		for _, bl := range a.Blockers {
			if bl.ID != childprocess.WarnShellInDependency {
				continue
			}
			for _, ev := range bl.Evidence {
				blocked = blocked || (ev.File == "node_modules/shelly/index.js" && strings.Contains(ev.Note, "app.js:2 → lib.js:2 → node_modules/shelly/index.js:1"))
			}
		}
		if !blocked || a.Verdict == probe.Ready {
			t.Errorf("verdict %s, blockers %+v: want shelly's shell as a blocker with its chain", a.Verdict, a.Blockers)
		}

		start = time.Now()
		warm := gatherTraced(t, e, traceDir("image-dep-shell"), c)
		t.Logf("warm gather: %s", time.Since(start).Round(time.Millisecond))
		if got := e.sandbox.spawns.Load() - before; got != 1 {
			t.Errorf("%d spawns over a cold and a warm gather, want 1", got)
		}
		for i := range out.Records {
			cold, hot := out.Records[i], warm.Records[i]
			if !hot.CacheHit || !bytes.Equal(cold.Raw, hot.Raw) {
				t.Errorf("%s: warm hit %t, byte-identical %t", cold.Result.Probe, hot.CacheHit, bytes.Equal(cold.Raw, hot.Raw))
			}
		}
	})
	t.Run("test-files-not-reached", func(t *testing.T) {
		c, err := cache.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		out := gatherTraced(t, e, traceDir("image-dep-tests"), c)
		tr, _ := traceResult(t, out)
		if tr.Confidence == probe.Low {
			t.Fatalf("trace low: %s %s", tr.Reason, tr.Detail)
		}
		r, f := childProcessResult(t, out)
		noNotInstalled(t, r)
		files := map[string]childprocess.Scope{}
		for _, fd := range f.Findings {
			files[fd.File] = fd.Scope
		}
		for _, p := range []string{"node_modules/quiet/test/run.js", "node_modules/quiet/lib/quiet.spec.js"} {
			if s, ok := files[p]; !ok || s != childprocess.ScopeNotReachable {
				t.Errorf("%s: scope %q (found %t), want not_reachable; findings %+v", p, s, ok, f.Findings)
			}
		}
		a := out.Context.Assessments["distroless_readiness"]
		for _, bl := range a.Blockers {
			if strings.HasPrefix(bl.ID, childprocess.Name+".") {
				t.Errorf("blocker %+v from a test file nothing loads", bl)
			}
		}
	})
}

func traceDir(name string) string { return "testdata/trace/" + name }

// TestUntracedDependenciesAsBefore: without a sandbox nothing is handed
// on, and child_process reads the checkout as it always has: the fixture's
// dependency, which only the built image holds, is not installed.
func TestUntracedDependenciesAsBefore(t *testing.T) {
	out, err := gather.Run(t.Context(), traceDir("image-dep-shell"), gather.Options{
		Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, f := childProcessResult(t, out)
	if f.ImageNodeModules != nil {
		t.Errorf("image node_modules %+v without a trace", f.ImageNodeModules)
	}
	if r.Reason != childprocess.ReasonDependenciesNotInstalled {
		t.Errorf("reason %q, want %s: the checkout has no node_modules", r.Reason, childprocess.ReasonDependenciesNotInstalled)
	}
	for _, rec := range out.Records {
		if rec.Result.Probe == childprocess.Name && rec.Phase != "light" {
			t.Errorf("child_process ran in phase %q without a sandbox, want light", rec.Phase)
		}
	}
}
