package gather

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
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
