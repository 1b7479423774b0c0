package gather

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

func example(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "hello-service")
}

func options(tb testing.TB) Options {
	tb.Helper()
	c, err := cache.Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return Options{Registry: builtin.NewRegistry(), Version: "test", Cache: c}
}

func TestRunWarmEqualsCold(t *testing.T) {
	t.Parallel()
	o := options(t)
	var cold, warm bytes.Buffer
	for _, buf := range []*bytes.Buffer{&cold, &warm} {
		out, err := Run(t.Context(), example(t), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Encode(buf); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(cold.Bytes(), warm.Bytes()) {
		t.Fatalf("warm context differs from cold:\n%s\n---\n%s", cold.Bytes(), warm.Bytes())
	}
}

func TestRunInputErrors(t *testing.T) {
	t.Parallel()
	_, err := Run(t.Context(), filepath.Join(t.TempDir(), "missing"), options(t))
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("Run(missing) error = %v, want *InputError", err)
	}
}

// BenchmarkGatherWarm measures the in-process warm path: every probe's
// result comes from the cache, and the context is encoded.
func BenchmarkGatherWarm(b *testing.B) {
	o := options(b)
	dir := example(b)
	if _, err := Run(b.Context(), dir, o); err != nil { // warm the cache
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := Run(b.Context(), dir, o)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range out.Records {
			// Without a sandbox the trace probe answers sandbox_unavailable,
			// which is never cached (it says nothing about the repository).
			if !r.CacheHit && r.Cacheable {
				b.Fatalf("%s missed the cache", r.Result.Probe)
			}
		}
		if err := out.Encode(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// recordingSandbox answers every spawn with an error after noting the
// request, so a test sees what the probes asked for.
type recordingSandbox struct {
	mu   sync.Mutex
	reqs []sandbox.SpawnRequest
}

func (s *recordingSandbox) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return sandbox.Result{}, errors.New("recording sandbox: no backend")
}

// TestHeavyTimeoutReachesTheSpawn: --heavy-timeout goes from the pipeline
// through the trace probe into the spawn request gate-control enforces,
// whatever the probe's own default.
func TestHeavyTimeoutReachesTheSpawn(t *testing.T) {
	t.Parallel()
	sb := &recordingSandbox{}
	o := Options{Registry: builtin.NewRegistry(), Version: "test", Sandbox: sb, HeavyTimeout: 25 * time.Second, Task: "distroless-migration"}
	if _, err := Run(t.Context(), example(t), o); err != nil {
		t.Fatal(err)
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.reqs) == 0 {
		t.Fatal("the trace probe did not spawn")
	}
	for _, r := range sb.reqs {
		if r.Timeout <= 0 || r.Timeout > 25*time.Second || r.Timeout < 20*time.Second {
			t.Errorf("spawn timeout %v, want just under the 25s --heavy-timeout", r.Timeout)
		}
	}
}

// TestProbePathsReachTheSpawn: gather --probe-path goes to the traced
// boot's requests.
func TestProbePathsReachTheSpawn(t *testing.T) {
	t.Parallel()
	sb := &recordingSandbox{}
	o := Options{Registry: builtin.NewRegistry(), Version: "test", Sandbox: sb, Task: "distroless-migration", ProbePaths: []string{"/healthz", "/api/status"}}
	if _, err := Run(t.Context(), example(t), o); err != nil {
		t.Fatal(err)
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.reqs) == 0 || sb.reqs[0].Build == nil {
		t.Fatal("the trace probe did not spawn a build")
	}
	if got := sb.reqs[0].Build.ProbePaths; len(got) != 2 || got[0] != "/healthz" || got[1] != "/api/status" {
		t.Errorf("probe paths %q, want /healthz and /api/status", got)
	}
}

// stuckAssessor is an assessor that does not return until released, as a
// quadratic assessment of a long Dockerfile once did not.
type stuckAssessor struct {
	started chan struct{}
	release chan struct{}
}

func (*stuckAssessor) Name() string { return "stuck" }
func (*stuckAssessor) Task() string { return "stuck-task" }
func (a *stuckAssessor) Assess([]probe.Result) (probe.Assessment, error) {
	close(a.started)
	<-a.release
	return probe.Assessment{Verdict: probe.Ready}, nil
}

func stuckRegistry(t *testing.T) (*probe.Registry, *stuckAssessor) {
	t.Helper()
	a := &stuckAssessor{started: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(a.release) })
	reg := probe.NewRegistry()
	if err := reg.RegisterAssessor(a); err != nil {
		t.Fatal(err)
	}
	return reg, a
}

// runBounded runs gather in the background and fails the test if it has
// not returned after a generous while.
func runBounded(t *testing.T, ctx context.Context, o Options) (*Outcome, error) {
	t.Helper()
	type ran struct {
		out *Outcome
		err error
	}
	done := make(chan ran, 1)
	go func() {
		out, err := Run(ctx, example(t), o)
		done <- ran{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(3 * time.Minute):
		t.Fatal("gather did not return while the assessment was stuck")
		return nil, nil
	}
}

// TestLightTimeoutCoversTheAssessment: an assessment that runs past the
// light timeout (gather --light-timeout) ends the wait, with an unknown
// verdict that says so.
func TestLightTimeoutCoversTheAssessment(t *testing.T) {
	t.Parallel()
	reg, _ := stuckRegistry(t)
	out, err := runBounded(t, t.Context(), Options{Registry: reg, Version: "test", Task: "stuck-task", LightTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Context.Assessments["stuck"]
	if a.Verdict != probe.Unknown || !strings.Contains(a.Reason, "timeout") {
		t.Errorf("assessment %s (%s), want unknown saying it ran past its timeout", a.Verdict, a.Reason)
	}
}

// TestCancelEndsTheAssessment: cancelling gather (SIGTERM, ^C) while it
// assesses ends it at once, with the cancellation.
func TestCancelEndsTheAssessment(t *testing.T) {
	t.Parallel()
	reg, a := stuckRegistry(t)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-a.started
		cancel()
	}()
	_, err := runBounded(t, ctx, Options{Registry: reg, Version: "test", Task: "stuck-task", LightTimeout: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("gather error %v, want context.Canceled", err)
	}
}
