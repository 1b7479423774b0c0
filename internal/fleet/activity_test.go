package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
)

func TestFSStore(t *testing.T) {
	ctx := t.Context()
	st, err := OpenFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, err := st.Put(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if d2, _ := st.Put(ctx, []byte("hello")); d2 != d || !strings.HasPrefix(d, "sha256:") {
		t.Fatalf("digests %s and %s", d, d2)
	}
	if got, err := st.Get(ctx, d); err != nil || string(got) != "hello" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	other, _ := st.Put(ctx, []byte("world"))
	if _, err := st.Get(ctx, "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing digest: %v, want ErrNotFound", err)
	}
	if _, err := st.Get(ctx, "md5:abc"); err == nil {
		t.Error("a malformed digest was accepted")
	}
	// The first binding wins.
	if got, err := st.Bind(ctx, "k", d); err != nil || got != d {
		t.Fatalf("Bind = %s, %v", got, err)
	}
	if got, err := st.Bind(ctx, "k", other); err != nil || got != d {
		t.Fatalf("second Bind = %s, %v; want the first digest", got, err)
	}
	if got, ok, err := st.Lookup(ctx, "k"); err != nil || !ok || got != d {
		t.Fatalf("Lookup = %s %v %v", got, ok, err)
	}
	if _, ok, _ := st.Lookup(ctx, "absent"); ok {
		t.Error("an unbound key was found")
	}
	// A binding to an object that is gone is no binding, and is replaced.
	lost, _ := st.Put(ctx, []byte("lost"))
	if _, err := st.Bind(ctx, "lost-key", lost); err != nil {
		t.Fatal(err)
	}
	lh, _ := hexOf(lost)
	if err := os.Remove(st.objectPath(lh)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.Lookup(ctx, "lost-key"); ok || err != nil {
		t.Errorf("a binding to a lost object was found (%v)", err)
	}
	if got, err := st.Bind(ctx, "lost-key", other); err != nil || got != other {
		t.Errorf("rebinding over a lost object = %s, %v; want %s", got, err, other)
	}
	// A damaged object is reported, not returned.
	h, _ := hexOf(d)
	if err := os.WriteFile(st.objectPath(h), []byte("HELLO"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, d); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged object: %v", err)
	}
}

func TestFSStoreConcurrentBindHasOneWinner(t *testing.T) {
	ctx := t.Context()
	st, _ := OpenFSStore(t.TempDir())
	var wg sync.WaitGroup
	got := make([]string, 16)
	for i := range got {
		wg.Go(func() {
			d, err := st.Put(ctx, []byte{byte(i)})
			if err != nil {
				t.Error(err)
				return
			}
			got[i], err = st.Bind(ctx, "race", d)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatalf("binders saw different winners: %v", got)
		}
	}
	if n, _ := st.Keys(); n != 1 {
		t.Errorf("%d keys, want 1", n)
	}
}

// countingGather answers every service with a verdict and counts its runs.
type countingGather struct {
	runs    atomic.Int32
	verdict probe.Verdict
	err     error
}

func (g *countingGather) run(_ context.Context, dir string, o gather.Options) (*gather.Outcome, error) {
	g.runs.Add(1)
	if g.err != nil {
		return nil, g.err
	}
	c := &report.Context{SchemaVersion: report.SchemaVersion, Repo: dir, Probes: []probe.Result{},
		Image:       &probe.ImageRef{Dockerfile: o.Dockerfile, Target: o.Target},
		Assessments: map[string]probe.Assessment{portfolio.Assessment: {Verdict: g.verdict}}}
	return &gather.Outcome{Context: c, Registry: o.Registry}, nil
}

func testActivities(t *testing.T, g *countingGather) (*Activities, string) {
	t.Helper()
	st, err := OpenFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := Manifest{
		Services: []portfolio.Service{{ID: "a:Dockerfile#0", Dir: dir, Context: ".", Dockerfile: "Dockerfile"}},
		Digests:  []string{"d1"},
	}
	data, _ := json.Marshal(m)
	md, err := st.Put(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Store: st, Runner: func(Settings) (*portfolio.Runner, error) {
		return &portfolio.Runner{Options: gather.Options{Registry: builtin.NewRegistry(), Task: "distroless-migration"}, Gather: g.run}, nil
	}}
	return a, md
}

func TestActivityReusesItsBoundResult(t *testing.T) {
	g := &countingGather{verdict: probe.ReadyAfterRewrite}
	a, md := testActivities(t, g)
	in := TierInput{Manifest: md, Index: 0, Tier: portfolio.TierStatic, Last: true}
	first, err := a.Static(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if first.State != portfolio.StateDone || first.Verdict != probe.ReadyAfterRewrite || first.Reused || first.SARIF.IsZero() {
		t.Fatalf("first run: %+v", first)
	}
	second, err := a.Static(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Reused || second.Record.Digest != first.Record.Digest || g.runs.Load() != 1 {
		t.Fatalf("second run %+v after %d pipeline runs, want the first's record reused", second, g.runs.Load())
	}
	if ran, reused := a.Counts(); ran != 1 || reused != 1 {
		t.Errorf("counts ran=%d reused=%d", ran, reused)
	}
	data, err := Get(t.Context(), a.Store, first.Record)
	if err != nil {
		t.Fatal(err)
	}
	var rec portfolio.Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Runs != 1 || rec.Service.ID != "a:Dockerfile#0" {
		t.Fatalf("stored record %+v, %v", rec, err)
	}
	// Not the last tier: another key, queued for the sandbox.
	in.Last = false
	q, err := a.Static(t.Context(), in)
	if err != nil || q.State != portfolio.StateQueued || q.Tier != portfolio.TierSandbox || q.Reused {
		t.Fatalf("static tier before a sandbox tier: %+v, %v", q, err)
	}
}

func TestActivityKeepsAFailureUnlessRetried(t *testing.T) {
	g := &countingGather{err: errors.New("the pipeline broke")}
	a, md := testActivities(t, g)
	in := TierInput{Manifest: md, Index: 0, Tier: portfolio.TierStatic, Last: true}
	o, err := a.Static(t.Context(), in)
	if err != nil || o.State != portfolio.StateFailed || !strings.Contains(o.Reason, "the pipeline broke") {
		t.Fatalf("%+v, %v", o, err)
	}
	if o, _ := a.Static(t.Context(), in); !o.Reused || g.runs.Load() != 1 {
		t.Fatalf("a kept failure ran again: %+v", o)
	}
	g.err = nil
	in.RetryFailed = true
	if o, _ := a.Static(t.Context(), in); o.Reused || o.State != portfolio.StateDone || g.runs.Load() != 2 {
		t.Fatalf("--retry-failed: %+v after %d runs", o, g.runs.Load())
	}
}

func TestActivityRefusesBadInput(t *testing.T) {
	a, md := testActivities(t, &countingGather{verdict: probe.Ready})
	for name, in := range map[string]TierInput{
		"index":    {Manifest: md, Index: 3, Tier: portfolio.TierStatic},
		"manifest": {Manifest: "sha256:" + strings.Repeat("1", 64), Tier: portfolio.TierStatic},
		"tier":     {Manifest: md, Tier: portfolio.TierSandbox},
	} {
		if _, err := a.Static(t.Context(), in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A sandbox activity on a worker without a sandbox is an error.
	if _, err := a.Sandbox(t.Context(), TierInput{Manifest: md, Tier: portfolio.TierSandbox, Last: true}); err == nil || !strings.Contains(err.Error(), "gate-control") {
		t.Errorf("sandbox tier without a sandbox: %v", err)
	}
}

func TestFSStorePrune(t *testing.T) {
	ctx := t.Context()
	st, _ := OpenFSStore(t.TempDir())
	oldD, _ := st.Put(ctx, []byte("old"))
	newD, _ := st.Put(ctx, []byte("new"))
	if _, err := st.Bind(ctx, "old", oldD); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Bind(ctx, "new", newD); err != nil {
		t.Fatal(err)
	}
	h, _ := hexOf(oldD)
	long := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{st.objectPath(h), st.keyPath("old")} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := st.Prune(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Removed != 2 || ps.Kept != 2 {
		t.Errorf("pruned %+v, want the old object and binding removed, the new ones kept", ps)
	}
	if _, ok, _ := st.Lookup(ctx, "old"); ok {
		t.Error("a pruned binding was found")
	}
	if d, ok, _ := st.Lookup(ctx, "new"); !ok || d != newD {
		t.Error("a fresh binding was pruned")
	}
	if ps, _ := st.Prune(0); ps.Removed != 2 || ps.Kept != 0 {
		t.Errorf("prune everything: %+v", ps)
	}
}

// TestActivityRejudgesAPrunedResult removes a bound result's SARIF log (as
// Prune does to one unused for long): the next run judges the service
// again and binds the new result, which the run after reuses.
func TestActivityRejudgesAPrunedResult(t *testing.T) {
	g := &countingGather{verdict: probe.Ready}
	a, md := testActivities(t, g)
	in := TierInput{Manifest: md, Index: 0, Tier: portfolio.TierStatic, Last: true}
	first, err := a.Static(t.Context(), in)
	if err != nil || first.SARIF.Digest == "" {
		t.Fatalf("%+v, %v (want a SARIF log stored by digest)", first, err)
	}
	fs := a.Store.(*FSStore)
	h, _ := hexOf(first.SARIF.Digest)
	if err := os.Remove(fs.objectPath(h)); err != nil {
		t.Fatal(err)
	}
	again, err := a.Static(t.Context(), in)
	if err != nil || again.Reused || g.runs.Load() != 2 {
		t.Fatalf("after its SARIF log was pruned: %+v after %d runs, %v; want judged again", again, g.runs.Load(), err)
	}
	third, err := a.Static(t.Context(), in)
	if err != nil || !third.Reused || g.runs.Load() != 2 {
		t.Fatalf("the run after: %+v after %d runs, %v; want the new result reused", third, g.runs.Load(), err)
	}
	if _, err := Get(t.Context(), a.Store, third.SARIF); err != nil {
		t.Errorf("the reused result's SARIF log: %v", err)
	}
}
