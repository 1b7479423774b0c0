package portfolio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// fakeGather answers every service ready (or as behave says) and counts
// the runs per directory, Dockerfile and tier.
type fakeGather struct {
	mu     sync.Mutex
	runs   map[string]int
	behave func(ctx context.Context, dir string, o gather.Options) error
}

func (f *fakeGather) run(ctx context.Context, dir string, o gather.Options) (*gather.Outcome, error) {
	tier := "static"
	if o.Sandbox != nil {
		tier = "sandbox"
	}
	f.mu.Lock()
	if f.runs == nil {
		f.runs = map[string]int{}
	}
	f.runs[filepath.Base(dir)+":"+o.Dockerfile+":"+tier]++
	f.mu.Unlock()
	if f.behave != nil {
		if err := f.behave(ctx, dir, o); err != nil {
			return nil, err
		}
	}
	c := &report.Context{SchemaVersion: report.SchemaVersion, Repo: dir, Probes: []probe.Result{},
		Image:       &probe.ImageRef{Dockerfile: o.Dockerfile, Target: o.Target},
		Assessments: map[string]probe.Assessment{Assessment: {Verdict: probe.Ready, Confirmed: o.Sandbox != nil}}}
	return &gather.Outcome{Context: c, Registry: o.Registry}, nil
}

func (f *fakeGather) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.runs {
		n += v
	}
	return n
}

func (f *fakeGather) reset() {
	f.mu.Lock()
	f.runs = nil
	f.mu.Unlock()
}

type nopSandbox struct{}

func (nopSandbox) Spawn(context.Context, sandbox.SpawnRequest) (sandbox.Result, error) {
	return sandbox.Result{}, errors.New("nop sandbox")
}

func newRunner(t *testing.T, dir string, fg *fakeGather) *Runner {
	t.Helper()
	st, err := OpenStore(filepath.Join(dir, StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &Runner{Store: st, Gather: fg.run, StaticWorkers: 4,
		Options: gather.Options{Registry: builtin.NewRegistry(), Version: "test", Task: "distroless-migration"}}
}

func services(t *testing.T, n int) (string, []Service) {
	t.Helper()
	root := t.TempDir()
	portfoliotest.Generate(t, root, n)
	ss, err := discovery(t).Discover(t.Context(), []Source{{Spec: root}})
	if err != nil {
		t.Fatal(err)
	}
	return root, ss
}

func states(recs []Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		out[r.State.String()]++
	}
	return out
}

func TestRunResumesAndRerunsChanged(t *testing.T) {
	t.Parallel()
	root, ss := services(t, 6)
	out := t.TempDir()
	fg := &fakeGather{}
	r := newRunner(t, out, fg)
	recs, plan, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	judged := plan.Run
	if fg.total() != judged || judged == 0 {
		t.Fatalf("first run: %d pipeline runs, want %d", fg.total(), judged)
	}
	for _, rec := range recs {
		if rec.State != StateSkipped && (rec.State != StateDone || rec.Runs != 1 || rec.Attempts != 1) {
			t.Errorf("%s: state %s, runs %d, attempts %d; want done, 1, 1", rec.Service.ID, rec.State, rec.Runs, rec.Attempts)
		}
	}
	fg.reset()
	_, plan, err = r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	if fg.total() != 0 || plan.Kept != judged {
		t.Errorf("rerun: %d pipeline runs and %d kept, want 0 and %d", fg.total(), plan.Kept, judged)
	}
	// Change one service's file: only it runs again.
	if err := os.WriteFile(filepath.Join(root, "repo-0000", "index.js"), []byte("// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fg.reset()
	if _, _, err := r.Run(t.Context(), ss); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"repo-0000:Dockerfile:static": 1}, fg.runs); diff != "" {
		t.Errorf("runs after a change (-want +got):\n%s", diff)
	}
}

func TestFailuresAreRecordedAndRetried(t *testing.T) {
	t.Parallel()
	_, ss := services(t, 4)
	out := t.TempDir()
	var broken sync.Map
	broken.Store("repo-0000", "panic")
	broken.Store("repo-0001", "error")
	broken.Store("repo-0002", "hang")
	fg := &fakeGather{behave: func(ctx context.Context, dir string, o gather.Options) error {
		v, ok := broken.Load(filepath.Base(dir))
		if !ok {
			return nil
		}
		switch v {
		case "panic":
			panic("probe exploded")
		case "error":
			return errors.New("sandbox: backend not supported on this host")
		case "hang":
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	r := newRunner(t, out, fg)
	// A short timeout is safe: only the hang service waits on its context,
	// and never ends by itself; the fake answers the others without
	// looking at theirs, so they are done whatever the machine's speed.
	r.ServiceTimeout = 50 * time.Millisecond
	recs, _, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, rec := range recs {
		if rec.State == StateFailed {
			reasons[filepath.Base(rec.Service.Dir)] = rec.Reason
		}
	}
	for repo, want := range map[string]string{
		"repo-0000": "the pipeline panicked: probe exploded",
		"repo-0001": "static tier: sandbox: backend not supported",
		"repo-0002": "timed out after 50ms in the static tier",
	} {
		if !strings.Contains(reasons[repo], want) {
			t.Errorf("%s: reason %q, want it to contain %q", repo, reasons[repo], want)
		}
	}
	if got := states(recs)["done"]; got == 0 {
		t.Errorf("no service done: a failure stopped the rest")
	}
	// Without --retry-failed, failures are kept; with it, only they rerun.
	fg.reset()
	if _, _, err := r.Run(t.Context(), ss); err != nil {
		t.Fatal(err)
	}
	if fg.total() != 0 {
		t.Errorf("rerun without --retry-failed ran %d services, want 0", fg.total())
	}
	broken.Clear()
	fg.reset()
	r.RetryFailed = true
	recs, _, err = r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	if fg.total() != 3 {
		t.Errorf("--retry-failed ran %d services, want the 3 failed: %v", fg.total(), fg.runs)
	}
	if n := states(recs)["failed"]; n != 0 {
		t.Errorf("%d still failed after the retry", n)
	}
}

func TestInterruptedRunResumes(t *testing.T) {
	t.Parallel()
	_, ss := services(t, 10)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	var n sync.Mutex
	count := 0
	fg := &fakeGather{behave: func(context.Context, string, gather.Options) error {
		n.Lock()
		count++
		if count == 4 {
			cancel()
		}
		n.Unlock()
		return nil
	}}
	r := newRunner(t, out, fg)
	r.StaticWorkers = 1
	if _, _, err := r.Run(ctx, ss); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	first := fg.total()
	fg.behave = nil
	fg.reset()
	recs, plan, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	if first+fg.total() != plan.Run+plan.Kept+1 {
		// The interrupted service ran once before (its result was lost
		// with the cancellation) and once after.
		t.Errorf("%d runs before and %d after, want %d in all", first, fg.total(), plan.Run+plan.Kept+1)
	}
	for _, rec := range recs {
		if rec.State != StateSkipped && (rec.State != StateDone || rec.Runs != 1) {
			t.Errorf("%s: %s with %d runs, want done with 1", rec.Service.ID, rec.State, rec.Runs)
		}
	}
}

func TestSandboxTierResumesAfterStatic(t *testing.T) {
	t.Parallel()
	_, ss := services(t, 3)
	out := t.TempDir()
	fg := &fakeGather{}
	r := newRunner(t, out, fg)
	r.Sandbox = nopSandbox{}
	r.SandboxWorkers = 1
	recs, plan, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	if fg.total() != 2*plan.Run {
		t.Errorf("%d runs, want a static and a sandbox run for each of %d services", fg.total(), plan.Run)
	}
	for _, rec := range recs {
		if rec.State == StateDone && (rec.Tier != TierSandbox || !rec.Result.Confirmed) {
			t.Errorf("%s: tier %s, confirmed %v; want the sandbox tier's answer", rec.Service.ID, rec.Tier, rec.Result.Confirmed)
		}
	}
	// A record left between the tiers runs the sandbox tier only.
	rec := recs[0]
	rec.State, rec.Tier = StateQueued, TierSandbox
	if err := r.Store.Put(rec); err != nil {
		t.Fatal(err)
	}
	fg.reset()
	if _, _, err := r.Run(t.Context(), ss); err != nil {
		t.Fatal(err)
	}
	if fg.total() != 1 {
		t.Errorf("resume between tiers: runs %v, want one sandbox run", fg.runs)
	}
}

func TestCorruptStore(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), StoreFile)
	if err := os.WriteFile(p, []byte(strings.Repeat("not a bbolt file ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenStore(p)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "--rebuild-state") {
		t.Fatalf("got %v, want ErrCorrupt that names --rebuild-state", err)
	}
	if err := RemoveStore(p); err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(p)
	if err != nil {
		t.Fatalf("after RemoveStore: %v", err)
	}
	st.Close()
}

func TestDocumentRoundTripsStrictly(t *testing.T) {
	t.Parallel()
	recs := []Record{
		{Service: Service{ID: "a:Dockerfile#1", Repo: "a", Dockerfile: "Dockerfile", Target: "1", Context: "."}, State: StateDone,
			Result: &Result{Verdict: probe.Blocked, Blockers: []probe.Blocker{
				{ID: "x", Kind: probe.ShellAtRuntime, Evidence: []probe.Evidence{{File: "Dockerfile", Line: 3}}},
			}}},
		{Service: Service{ID: "b:Dockerfile#0", Repo: "b", Dockerfile: "Dockerfile", Target: "0", Context: "."}, State: StateDone,
			Result: &Result{Verdict: probe.Blocked, Blockers: []probe.Blocker{
				{ID: "x", Kind: probe.ShellAtRuntime}, {ID: "y", Kind: probe.NativeABI},
			}}},
		{Service: Service{ID: "c:Dockerfile.test#0", Skip: "a test image"}, State: StateSkipped, Reason: "a test image"},
	}
	d := NewDocument("test", "static", time.Unix(0, 0), recs)
	want := []KindSummary{
		{Kind: probe.ShellAtRuntime, Services: 2, Unblocks: 1, Blockers: 2},
		{Kind: probe.NativeABI, Services: 1, Blockers: 1},
	}
	if diff := cmp.Diff(want, d.Blockers); diff != "" {
		t.Errorf("blockers by kind (-want +got):\n%s", diff)
	}
	var buf strings.Builder
	if err := d.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDocument(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	bad := strings.Replace(buf.String(), `"tiers"`, `"extra": 1, "tiers"`, 1)
	if _, err := DecodeDocument(strings.NewReader(bad)); err == nil {
		t.Error("an unknown field decoded without error")
	}
}
