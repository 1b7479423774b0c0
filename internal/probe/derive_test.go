package probe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestAnalyzerRunsOncePerRepository(t *testing.T) {
	t.Parallel()
	repo, err := OpenRepo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	a := &Analyzer[int]{Name: "count", Run: func(context.Context, *Repo, *Context) (int, error) {
		return int(runs.Add(1)), nil
	}}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if v, err := a.Of(t.Context(), repo, nil); err != nil || v != 1 {
				t.Errorf("Of = %d, %v; want 1, nil", v, err)
			}
		})
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times, want once", n)
	}
	other, _ := OpenRepo(t.TempDir())
	if v, _ := a.Of(t.Context(), other, nil); v != 2 {
		t.Errorf("another repository shares the result: %d", v)
	}
}

func TestPerImageAnalyzerKeysOnTheImage(t *testing.T) {
	t.Parallel()
	repo, _ := OpenRepo(t.TempDir())
	var runs atomic.Int32
	a := &Analyzer[string]{Name: "img", PerImage: true, Run: func(_ context.Context, _ *Repo, pctx *Context) (string, error) {
		runs.Add(1)
		return pctx.Image.Key(), nil
	}}
	for _, ref := range []ImageRef{{Dockerfile: "Dockerfile", Target: "1"}, {Dockerfile: "a.Dockerfile", Target: "0"}, {Dockerfile: "Dockerfile", Target: "1", Why: "again"}} {
		if v, _ := a.Of(t.Context(), repo, &Context{Image: ref}); v != ref.Key() {
			t.Errorf("Of(%s) = %s", ref.Key(), v)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("ran %d times for 2 distinct images", n)
	}
}

func TestAnalyzerForgetsACancelledRun(t *testing.T) {
	t.Parallel()
	repo, _ := OpenRepo(t.TempDir())
	var runs atomic.Int32
	a := &Analyzer[int]{Name: "cancel", Run: func(ctx context.Context, _ *Repo, _ *Context) (int, error) {
		runs.Add(1)
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		return 7, nil
	}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.Of(ctx, repo, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if v, err := a.Of(t.Context(), repo, nil); err != nil || v != 7 {
		t.Errorf("after a cancelled first run: %d, %v; want 7", v, err)
	}
}

// TestAnalyzerOutlivesAnotherCallersCancel: a caller whose context ends
// does not hand its cancellation to a caller whose context is live.
func TestAnalyzerOutlivesAnotherCallersCancel(t *testing.T) {
	t.Parallel()
	repo, _ := OpenRepo(t.TempDir())
	started := make(chan struct{})
	gone := make(chan struct{}) // the cancelled caller has returned
	var once sync.Once
	// A run ends when its context does, or, unhurried by any clock, once
	// the cancelled caller has gone: the live caller must get 1.
	a := &Analyzer[int]{Name: "slow", Run: func(ctx context.Context, _ *Repo, _ *Context) (int, error) {
		once.Do(func() { close(started) })
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-gone:
			return 1, nil
		}
	}}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	done := make(chan error, 1)
	go func() {
		_, err := a.Of(ctx, repo, nil)
		done <- err
		close(gone)
	}()
	<-started
	if v, err := a.Of(t.Context(), repo, nil); err != nil || v != 1 {
		t.Errorf("live caller got %d, %v; want 1, nil", v, err)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller got %v", err)
	}
}

func TestAnalyzerPanicIsAnError(t *testing.T) {
	t.Parallel()
	repo, _ := OpenRepo(t.TempDir())
	a := &Analyzer[int]{Name: "boom", Run: func(context.Context, *Repo, *Context) (int, error) { panic("boom") }}
	for range 2 {
		if _, err := a.Of(t.Context(), repo, nil); err == nil {
			t.Error("a panicking analyzer returned no error")
		}
	}
}
