package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Analyzer derives one fact from a repository, such as its parsed
// Dockerfiles, the file set of the judged image or its module graph. It is
// the go/analysis shape: an analyzer's Run reads the facts it requires
// through their own Of methods, and each analyzer runs once per repository
// (once per repository and judged image when PerImage is set), whichever
// probe asks first; the others share its typed result. Dependency order
// follows from the calls.
//
// A derived fact is not a probe result: it is never cached or reported on
// its own. The probes that use it declare the inputs it reads.
type Analyzer[T any] struct {
	// Name identifies the analyzer in errors and docs.
	Name string
	// PerImage makes the fact depend on Context.Image.
	PerImage bool
	Run      func(ctx context.Context, repo *Repo, pctx *Context) (T, error)
}

type derivedKey struct {
	a     any
	image string
}

type derivedEntry struct {
	once sync.Once
	val  any
	err  error
}

// Of returns the analyzer's fact for repo, running it on first use. It is
// safe for concurrent use: concurrent callers wait for one run. A run that
// ended because its caller's context was cancelled is not kept: a caller
// whose own context is still live runs it again. A panic in Run is an
// error, for every caller.
func (a *Analyzer[T]) Of(ctx context.Context, repo *Repo, pctx *Context) (T, error) {
	k := derivedKey{a: a}
	if a.PerImage && pctx != nil {
		k.image = pctx.Image.Key()
	}
	for {
		v, _ := repo.derived.LoadOrStore(k, new(derivedEntry))
		e := v.(*derivedEntry)
		e.once.Do(func() {
			defer func() {
				if p := recover(); p != nil {
					e.err = fmt.Errorf("deriving %s: panic: %v", a.Name, p)
				}
			}()
			e.val, e.err = a.Run(ctx, repo, pctx)
		})
		if e.err == nil {
			return e.val.(T), nil
		}
		if errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded) {
			repo.derived.CompareAndDelete(k, e)
			if ctx.Err() == nil {
				continue // another caller's context ended; ours has not
			}
		}
		var zero T
		return zero, e.err
	}
}
