package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/probe"
)

type facts struct {
	N int `json:"n"`
}

// fake is a configurable probe.
type fake struct {
	desc probe.Desc
	run  func(ctx context.Context, repo *probe.Repo) (probe.Output, error)
	runs atomic.Int32
}

func (f *fake) Desc() probe.Desc { return f.desc }
func (f *fake) Run(ctx context.Context, repo *probe.Repo, _ *probe.Context) (probe.Output, error) {
	f.runs.Add(1)
	return f.run(ctx, repo)
}

func newFake(name string, heavy probe.Heaviness, run func(context.Context, *probe.Repo) (probe.Output, error)) *fake {
	return &fake{
		desc: probe.Desc{
			Name: name, Version: "1", Heaviness: heavy, CacheStrategy: probe.CacheContent,
			DeclaredInputs: []string{"package.json", "**/Dockerfile"},
			NewFacts:       func() any { return new(facts) },
		},
		run: run,
	}
}

func okRun(n int) func(context.Context, *probe.Repo) (probe.Output, error) {
	return func(context.Context, *probe.Repo) (probe.Output, error) {
		return probe.Output{Confidence: probe.High, Facts: &facts{N: n}}, nil
	}
}

func repoWith(t *testing.T, files map[string]string) *probe.Repo {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
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

func newPipeline(t *testing.T, withCache bool, probes ...probe.Probe) *Pipeline {
	t.Helper()
	reg := probe.NewRegistry()
	reg.Warnings().MustRegister(probe.WarningDesc{ID: "fake.registered", Summary: "a registered warning"})
	reg.MustRegister(probes...)
	p := &Pipeline{Registry: reg, Version: "test"}
	if withCache {
		c, err := cache.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		p.Cache = c
	}
	return p
}

func byName(recs []Record) map[string]Record {
	m := make(map[string]Record, len(recs))
	for _, r := range recs {
		m[r.Result.Probe] = r
	}
	return m
}

func TestHeavyAndRunsLastAfterAllLight(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	lightRun := func(name string, d time.Duration) func(context.Context, *probe.Repo) (probe.Output, error) {
		return func(context.Context, *probe.Repo) (probe.Output, error) {
			time.Sleep(d)
			note("end " + name)
			return probe.Output{Confidence: probe.High}, nil
		}
	}
	lastRun := func(name string) func(context.Context, *probe.Repo) (probe.Output, error) {
		return func(context.Context, *probe.Repo) (probe.Output, error) {
			note("start " + name)
			return probe.Output{Confidence: probe.High}, nil
		}
	}
	runsLast := newFake("light_but_last", probe.Light, lastRun("light_but_last"))
	runsLast.desc.RunsLast = true
	p := newPipeline(t, false,
		newFake("a_light", probe.Light, lightRun("a_light", 30*time.Millisecond)),
		newFake("b_light", probe.Light, lightRun("b_light", 10*time.Millisecond)),
		newFake("c_light", probe.Light, lightRun("c_light", 20*time.Millisecond)),
		newFake("aa_heavy", probe.Heavy, lastRun("aa_heavy")),
		runsLast,
	)
	recs, err := p.Run(t.Context(), repoWith(t, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 {
		t.Fatalf("got %d records, want 5", len(recs))
	}
	lastLight, firstLast := -1, len(log)
	for i, e := range log {
		switch e {
		case "end a_light", "end b_light", "end c_light":
			lastLight = max(lastLight, i)
		default:
			firstLast = min(firstLast, i)
		}
	}
	if lastLight > firstLast {
		t.Errorf("a heavy or RunsLast probe started before every light probe ended: %v", log)
	}
	for _, r := range recs {
		want := "light"
		if r.Result.Probe == "aa_heavy" || r.Result.Probe == "light_but_last" {
			want = "last"
		}
		if r.Phase != want {
			t.Errorf("%s ran in phase %q, want %q", r.Result.Probe, r.Phase, want)
		}
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Result.Probe)
	}
	if diff := cmp.Diff([]string{"a_light", "aa_heavy", "b_light", "c_light", "light_but_last"}, names); diff != "" {
		t.Errorf("records not sorted by name (-want +got):\n%s", diff)
	}
}

func TestConcurrencyLimits(t *testing.T) {
	t.Parallel()
	var cur, peakLight, peakHeavy atomic.Int32
	track := func(peak *atomic.Int32) func(context.Context, *probe.Repo) (probe.Output, error) {
		return func(context.Context, *probe.Repo) (probe.Output, error) {
			n := cur.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			cur.Add(-1)
			return probe.Output{Confidence: probe.High}, nil
		}
	}
	var ps []probe.Probe
	for i := range 6 {
		ps = append(ps, newFake(fmt.Sprintf("light%d", i), probe.Light, track(&peakLight)))
		ps = append(ps, newFake(fmt.Sprintf("heavy%d", i), probe.Heavy, track(&peakHeavy)))
	}
	p := newPipeline(t, false, ps...)
	p.LightLimit, p.HeavyLimit = 2, 1
	if _, err := p.Run(t.Context(), repoWith(t, nil), nil); err != nil {
		t.Fatal(err)
	}
	if got := peakLight.Load(); got > 2 {
		t.Errorf("peak light concurrency %d, limit 2", got)
	}
	if got := peakHeavy.Load(); got != 1 {
		t.Errorf("peak heavy concurrency %d, want 1", got)
	}
}

func TestFailuresAreIsolated(t *testing.T) {
	t.Parallel()
	ignoresCtx := make(chan struct{})
	t.Cleanup(func() { close(ignoresCtx) })
	slow := newFake("slow", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
		<-ignoresCtx // ignores its context: the pipeline must abandon it
		return probe.Output{Confidence: probe.High}, nil
	})
	slow.desc.Timeout = 50 * time.Millisecond
	p := newPipeline(t, true,
		newFake("ok", probe.Light, okRun(1)),
		newFake("panics", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) { panic("boom") }),
		newFake("errs", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
			return probe.Output{}, errors.New("disk on fire")
		}),
		newFake("unregistered", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
			return probe.Output{Confidence: probe.High, Warnings: []probe.Warning{{ID: "fake.not_registered"}}}, nil
		}),
		newFake("registered", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
			return probe.Output{Confidence: probe.High, Warnings: []probe.Warning{{ID: "fake.registered", Message: "m"}}}, nil
		}),
		newFake("wrong_facts", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
			return probe.Output{Confidence: probe.High, Facts: &struct{ X int }{}}, nil
		}),
		newFake("no_reason", probe.Light, func(context.Context, *probe.Repo) (probe.Output, error) {
			return probe.Output{Confidence: probe.Low}, nil
		}),
		newFake("heavy_panics", probe.Heavy, func(context.Context, *probe.Repo) (probe.Output, error) { panic(errors.New("heavy boom")) }),
		newFake("heavy_ok", probe.Heavy, okRun(2)),
		slow,
	)
	recs, err := p.Run(t.Context(), repoWith(t, map[string]string{"package.json": "{}"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, r := range byName(recs) {
		got[name] = string(r.Result.Confidence) + "/" + string(r.Result.Reason)
	}
	want := map[string]string{
		"ok":           "high/",
		"registered":   "high/",
		"heavy_ok":     "high/",
		"panics":       "low/probe_panic",
		"heavy_panics": "low/probe_panic",
		"errs":         "low/probe_error",
		"unregistered": "low/unregistered_warning",
		"wrong_facts":  "low/invalid_output",
		"no_reason":    "low/invalid_output",
		"slow":         "low/timeout",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for name, r := range byName(recs) {
		failedRun := r.Result.Confidence == probe.Low
		if failedRun && r.Cacheable {
			t.Errorf("%s: a failed run was cached", name)
		}
	}
	// The failed runs must not be answered from the cache next time.
	recs2, err := p.Run(t.Context(), repoWith(t, map[string]string{"package.json": "{}"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range byName(recs2) {
		if r.CacheHit && r.Result.Confidence == probe.Low {
			t.Errorf("%s: low-confidence failure served from cache", name)
		}
	}
}

func TestCacheHitIsByteIdenticalAndInvalidatedByInputs(t *testing.T) {
	t.Parallel()
	pr := newFake("counted", probe.Light, func(_ context.Context, repo *probe.Repo) (probe.Output, error) {
		b, err := repo.ReadFile("package.json")
		if err != nil {
			return probe.Output{}, err
		}
		return probe.Output{Confidence: probe.High, Facts: &facts{N: len(b)}, Evidence: []probe.Evidence{{File: "package.json", Line: 1}}}, nil
	})
	p := newPipeline(t, true, pr)
	repo := repoWith(t, map[string]string{"package.json": `{"name":"a"}`, "svc/Dockerfile": "FROM x"})
	run := func() Record {
		t.Helper()
		recs, err := p.Run(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		return recs[0]
	}
	cold := run()
	warm := run()
	if cold.CacheHit || !warm.CacheHit {
		t.Fatalf("cold hit %v, warm hit %v; want miss then hit", cold.CacheHit, warm.CacheHit)
	}
	if !bytes.Equal(cold.Raw, warm.Raw) {
		t.Fatalf("warm result differs from cold:\ncold %s\nwarm %s", cold.Raw, warm.Raw)
	}
	if diff := cmp.Diff(cold.Result, warm.Result); diff != "" {
		t.Fatalf("decoded results differ (-cold +warm):\n%s", diff)
	}
	if n := pr.runs.Load(); n != 1 {
		t.Fatalf("probe ran %d times, want 1", n)
	}
	for _, change := range []struct{ file, body string }{
		{"package.json", `{"name":"b"}`},
		{"svc/Dockerfile", "FROM y"},
		{"other/Dockerfile", "FROM z"}, // a new glob match
	} {
		if err := os.MkdirAll(filepath.Dir(repo.Abs(change.file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(repo.Abs(change.file), []byte(change.body), 0o644); err != nil {
			t.Fatal(err)
		}
		repo = mustReopen(t, repo) // a new run lists the files anew
		if r := run(); r.CacheHit {
			t.Errorf("changing %s still hit the cache", change.file)
		}
		if r := run(); !r.CacheHit {
			t.Errorf("second run after changing %s missed", change.file)
		}
	}
}

func mustReopen(t *testing.T, r *probe.Repo) *probe.Repo {
	t.Helper()
	n, err := probe.OpenRepo(r.Root)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type fakeImages struct {
	mu      sync.Mutex
	digests map[string]string
	err     error
}

func (f *fakeImages) Digest(_ context.Context, ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	return f.digests[ref], nil
}

type listing struct {
	*fake
	refs []string
}

func (l listing) ImageInputs(context.Context, *probe.Repo, *probe.Context) ([]string, error) {
	return l.refs, nil
}

func TestImageDigestInputs(t *testing.T) {
	t.Parallel()
	f := newFake("imaged", probe.Heavy, okRun(3))
	f.desc.DeclaredInputs = append(f.desc.DeclaredInputs, "image-digest:gcr.io/distroless/nodejs22-debian13")
	pr := listing{fake: f, refs: []string{"node:22"}}
	images := &fakeImages{digests: map[string]string{"node:22": "sha256:1", "gcr.io/distroless/nodejs22-debian13": "sha256:a"}}
	p := newPipeline(t, true, pr)
	p.Images = images
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	hit := func() bool {
		t.Helper()
		recs, err := p.Run(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		return recs[0].CacheHit
	}
	if hit() || !hit() {
		t.Fatal("want a miss, then a hit")
	}
	images.mu.Lock()
	images.digests["node:22"] = "sha256:2"
	images.mu.Unlock()
	if hit() {
		t.Error("a new digest of a listed base image still hit the cache")
	}
	images.mu.Lock()
	images.digests["gcr.io/distroless/nodejs22-debian13"] = "sha256:b"
	images.mu.Unlock()
	if hit() {
		t.Error("a new digest of a declared image still hit the cache")
	}
	images.mu.Lock()
	images.err = errors.New("registry down")
	images.mu.Unlock()
	recs, err := p.Run(t.Context(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].CacheHit || recs[0].Cacheable {
		t.Errorf("with the registry down the probe was cached: hit %v, cacheable %v", recs[0].CacheHit, recs[0].Cacheable)
	}
	if recs[0].Result.Confidence != probe.High {
		t.Errorf("with the registry down the probe did not run: %+v", recs[0].Result)
	}
}

// TestSymlinkInputsAreNotFollowed: a declared input that is a symlink is
// keyed by where it points, and never read: one that leads out of the
// repository, dangles or loops does not stop the run (the probes that read
// it say path_escapes_repository), and retargeting it changes the key.
func TestSymlinkInputsAreNotFollowed(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, true, newFake("reader", probe.Light, okRun(1)))
	repo := repoWith(t, nil)
	if err := os.Symlink("/nonexistent/target", repo.Abs("package.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(t.Context(), repo, nil); err != nil {
		t.Fatalf("Run error = %v, want none: the link is not followed", err)
	}
	d := newDigests(repo, nil)
	first, err := d.file("package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(repo.Abs("package.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("package.json", repo.Abs("package.json")); err != nil { // a loop
		t.Fatal(err)
	}
	second, err := newDigests(repo, nil).file("package.json")
	if err != nil || second == first {
		t.Errorf("retargeted link digests %q (%v), first %q; want a new key and no error", second, err, first)
	}
}

// TestFIFOInputIsNotRead: a declared input that is a FIFO is keyed by its
// type, never opened for a blocking read (which would wait for a writer for
// ever), and the probe that reads it through the repository answers low
// with not_a_regular_file, naming it.
func TestFIFOInputIsNotRead(t *testing.T) {
	t.Parallel()
	reader := newFake("reader", probe.Light, func(_ context.Context, repo *probe.Repo) (probe.Output, error) {
		if _, err := repo.ReadFile("package.json"); err != nil {
			return probe.Output{}, fmt.Errorf("reading package.json: %w", err)
		}
		return probe.Output{Confidence: probe.High, Facts: &facts{}}, nil
	})
	p := newPipeline(t, true, reader)
	repo := repoWith(t, nil)
	fifo := repo.Abs("package.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	type ran struct {
		recs []Record
		err  error
	}
	done := make(chan ran, 1)
	go func() {
		recs, err := p.Run(t.Context(), repo, nil)
		done <- ran{recs, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		// Release the blocked reader so that the test ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("Run blocked on the FIFO")
	}
	if r.err != nil {
		t.Fatalf("Run error = %v, want none: the FIFO is the probe's to report", r.err)
	}
	res := byName(r.recs)["reader"].Result
	if res.Confidence != probe.Low || res.Reason != probe.ReasonNotRegular || !strings.Contains(res.Detail, "package.json") {
		t.Errorf("reader: %s/%s (%s), want low/%s naming package.json", res.Confidence, res.Reason, res.Detail, probe.ReasonNotRegular)
	}
	dg, err := newDigests(repo, nil).file("package.json")
	if err != nil || !strings.HasPrefix(dg, notRegular) {
		t.Errorf("FIFO digest %q (%v), want %s...", dg, err, notRegular)
	}
}

func TestCancellationIsPromptAndLeavesCacheConsistent(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 2)
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	p := newPipeline(t, true,
		newFake("quick", probe.Light, okRun(1)),
		newFake("honours_ctx", probe.Heavy, func(ctx context.Context, _ *probe.Repo) (probe.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			return probe.Output{}, ctx.Err()
		}),
	)
	p.HeavyLimit = 2
	ignores := newFake("ignores_ctx", probe.Heavy, func(context.Context, *probe.Repo) (probe.Output, error) {
		started <- struct{}{}
		<-block
		return probe.Output{Confidence: probe.High, Facts: &facts{}}, nil
	})
	p.Registry.MustRegister(ignores)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		<-started
		cancel()
	}()
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, repoWith(t, map[string]string{"package.json": "{}"}), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error = %v, want context.Canceled", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("Run did not return after cancellation")
	}
	st, err := p.Cache.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Corrupt != 0 || st.Temp != 0 || st.Entries != 1 {
		t.Fatalf("cache after cancel = %+v; want exactly the finished light probe's entry", st)
	}
}

func TestNoCacheStrategyNeverCached(t *testing.T) {
	t.Parallel()
	f := newFake("uncached", probe.Light, okRun(1))
	f.desc.CacheStrategy = probe.CacheNone
	p := newPipeline(t, true, f)
	repo := repoWith(t, nil)
	for range 2 {
		recs, err := p.Run(t.Context(), repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if recs[0].CacheHit {
			t.Fatal("a CacheNone probe hit the cache")
		}
	}
	if n := f.runs.Load(); n != 2 {
		t.Fatalf("ran %d times, want 2", n)
	}
}

func TestAppliesToTasks(t *testing.T) {
	t.Parallel()
	f := newFake("only_other", probe.Light, okRun(1))
	f.desc.AppliesToTasks = []string{"other-task"}
	p := newPipeline(t, false, f, newFake("all_tasks", probe.Light, okRun(1)))
	recs, err := p.Run(t.Context(), repoWith(t, nil), &probe.Context{Task: "distroless-migration"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Result.Probe != "all_tasks" {
		t.Fatalf("records = %v, want only all_tasks", byName(recs))
	}
}

// TestInPlaceEditMissesTheCache: an edit that keeps the size and restores
// the modification time is still seen, because the key hashes content and
// the stat memo keys on the change time too.
func TestInPlaceEditMissesTheCache(t *testing.T) {
	t.Parallel()
	pr := newFake("reads", probe.Light, func(_ context.Context, repo *probe.Repo) (probe.Output, error) {
		b, err := repo.ReadFile("package.json")
		if err != nil {
			return probe.Output{}, err
		}
		return probe.Output{Confidence: probe.High, Facts: &facts{N: int(b[0])}}, nil
	})
	p := newPipeline(t, true, pr)
	repo := repoWith(t, map[string]string{"package.json": "1"})
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(repo.Abs("package.json"), past, past); err != nil {
		t.Fatal(err)
	}
	run := func() Record {
		t.Helper()
		recs, err := p.Run(t.Context(), mustReopen(t, repo), nil)
		if err != nil {
			t.Fatal(err)
		}
		return recs[0]
	}
	first := run()
	if r := run(); !r.CacheHit {
		t.Fatal("unchanged repository missed")
	}
	if err := os.WriteFile(repo.Abs("package.json"), []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(repo.Abs("package.json"), past, past); err != nil {
		t.Fatal(err)
	}
	got := run()
	if got.CacheHit || bytes.Equal(got.Raw, first.Raw) {
		t.Fatalf("an in-place edit was answered from the cache: %s", got.Raw)
	}
}

// TestNoSandboxSkipsInputs: a probe that needs a sandbox, run without one,
// resolves no inputs (no registry round trip) and is not cached.
func TestNoSandboxSkipsInputs(t *testing.T) {
	t.Parallel()
	f := newFake("traced", probe.Heavy, func(context.Context, *probe.Repo) (probe.Output, error) {
		return probe.Output{Confidence: probe.Low, Reason: probe.ReasonSandboxUnavailable, Uncacheable: true}, nil
	})
	f.desc.NeedsSandbox = true
	f.desc.DeclaredInputs = append(f.desc.DeclaredInputs, "image-digest:node:22")
	p := newPipeline(t, true, f)
	var calls atomic.Int32
	p.Images = countingImages{&calls}
	recs, err := p.Run(t.Context(), repoWith(t, map[string]string{"package.json": "{}"}), &probe.Context{})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Errorf("resolved %d image digests for a probe that cannot run", calls.Load())
	}
	if recs[0].Cacheable || recs[0].Result.Reason != probe.ReasonSandboxUnavailable {
		t.Errorf("record = %+v", recs[0])
	}
}

type countingImages struct{ n *atomic.Int32 }

func (c countingImages) Digest(context.Context, string) (string, error) {
	c.n.Add(1)
	return "sha256:1", nil
}

type keyed struct {
	*fake
}

func (keyed) KeySettings(pctx *probe.Context) []string { return []string{"task=" + pctx.Task} }

// TestKeySettings: a setting a probe puts in its key separates entries.
func TestKeySettings(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, true, keyed{newFake("settled", probe.Light, okRun(1))})
	repo := repoWith(t, map[string]string{"package.json": "{}"})
	hit := func(task string) bool {
		t.Helper()
		recs, err := p.Run(t.Context(), repo, &probe.Context{Task: task})
		if err != nil {
			t.Fatal(err)
		}
		return recs[0].CacheHit
	}
	if hit("a") || !hit("a") || hit("b") || !hit("b") {
		t.Fatal("want: miss, hit for setting a; miss, hit for setting b")
	}
}

// TestRunTimeoutBeatsDescriptor: gather --heavy-timeout reaches a heavy
// probe whose descriptor asks for longer (the trace probe's 20 minutes).
func TestRunTimeoutBeatsDescriptor(t *testing.T) {
	t.Parallel()
	var deadlineNS atomic.Int64 // the probe's goroutine may outlive Run
	heavy := newFake("heavy", probe.Heavy, func(ctx context.Context, _ *probe.Repo) (probe.Output, error) {
		if d, ok := ctx.Deadline(); ok {
			deadlineNS.Store(int64(time.Until(d)))
		}
		<-ctx.Done()
		return probe.Output{}, ctx.Err()
	})
	heavy.desc.Timeout = 20 * time.Minute
	p := newPipeline(t, false, heavy)
	p.HeavyTimeout = 100 * time.Millisecond
	start := time.Now()
	recs, err := p.Run(t.Context(), repoWith(t, map[string]string{"package.json": "{}"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := byName(recs)["heavy"].Result.Reason; got != probe.ReasonTimeout {
		t.Errorf("reason %q, want %q", got, probe.ReasonTimeout)
	}
	if deadline := time.Duration(deadlineNS.Load()); deadline <= 0 || deadline > time.Second {
		t.Errorf("probe saw a deadline %v away, want about 100ms", deadline)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("run took %v with a 100ms heavy timeout", el)
	}
}
