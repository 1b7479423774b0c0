package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/codegenie/codegenie/internal/portfolio"
)

// Manifest is a portfolio's services as the client discovered them, with
// each one's inputs digest under the portfolio's settings. It lives in the
// result store; the workflow carries its digest.
type Manifest struct {
	Services []portfolio.Service `json:"services"`
	Digests  []string            `json:"digests"`
	// Sources, when set, name each service's code as workers fetch it (a
	// zero Source is read at its Dir); Dir is then the client's path, and
	// a worker reads its own checkout of the source instead.
	Sources []Source `json:"sources,omitempty"`
}

// RunnerFunc returns the runner that judges services under a portfolio's
// settings on this worker: its pipeline configuration, its cache and, on a
// sandbox worker, its gate-control client.
type RunnerFunc func(Settings) (*portfolio.Runner, error)

// Activities are the activities of one worker. Register the static ones on
// a static worker and the sandbox one on a sandbox worker (see Register).
type Activities struct {
	Store  ResultStore
	Runner RunnerFunc
	// Logger gets one line per activity; nil is quiet.
	Logger *slog.Logger
	// Checkouts is this worker's checkout cache, for portfolios whose
	// services name a git URL and a commit; nil refuses them.
	Checkouts *Checkouts

	mu        sync.Mutex
	manifests map[string]*Manifest
	runners   map[string]*portfolio.Runner

	// ran and reused count the activities that ran the pipeline and those
	// answered by a bound result.
	ran, reused atomic.Int64
}

// Counts returns how many activities ran the pipeline, and how many were
// answered by a result already bound.
func (a *Activities) Counts() (ran, reused int64) { return a.ran.Load(), a.reused.Load() }

// Key is the idempotency key of a service's run in a tier: its inputs
// digest (which covers the portfolio's settings) and the tier.
func Key(inputsDigest string, tier portfolio.Tier, last bool) string {
	return fmt.Sprintf("judge/%s/%s/last=%v", inputsDigest, tier, last)
}

// Static runs a service's static tier.
func (a *Activities) Static(ctx context.Context, in TierInput) (Outcome, error) {
	return a.judge(ctx, in, portfolio.TierStatic)
}

// Sandbox runs a service's sandbox tier.
func (a *Activities) Sandbox(ctx context.Context, in TierInput) (Outcome, error) {
	return a.judge(ctx, in, portfolio.TierSandbox)
}

// SaveBatch stores a run's outcome list and returns its digest.
func (a *Activities) SaveBatch(ctx context.Context, outs []Outcome) (string, error) {
	data, err := json.Marshal(outs)
	if err != nil {
		return "", err
	}
	return a.Store.Put(ctx, data)
}

func badInput(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), errBadInput, nil)
}

func (a *Activities) judge(ctx context.Context, in TierInput, tier portfolio.Tier) (Outcome, error) {
	// From the start: reading the manifest and the store, and opening a
	// runner, can take a while on a cold worker or a slow shared store.
	stop := heartbeat(ctx)
	defer stop()
	if in.Tier != tier {
		return Outcome{}, badInput("a %s activity was asked to run the %s tier", tier, in.Tier)
	}
	m, err := a.manifest(ctx, in.Manifest)
	if err != nil {
		return Outcome{}, err
	}
	if in.Index < 0 || in.Index >= len(m.Services) {
		return Outcome{}, badInput("service %d is outside the manifest's %d", in.Index, len(m.Services))
	}
	svc, digest := m.Services[in.Index], m.Digests[in.Index]
	o, ok, key, err := a.bound(ctx, Key(digest, tier, in.Last), in.RetryFailed)
	if err != nil || ok {
		if ok {
			a.reused.Add(1)
			a.log("reused", tier, svc.ID, o)
		}
		return o, err
	}

	rec := portfolio.Record{Service: svc, Digest: digest}
	if tier == portfolio.TierSandbox && !in.Prev.IsZero() {
		data, err := a.get(ctx, in.Prev)
		if err != nil {
			return Outcome{}, err
		}
		if err := json.Unmarshal(data, &rec); err != nil {
			return Outcome{}, badInput("the static tier's record of %s does not decode: %v", svc.ID, err)
		}
	}
	r, err := a.runner(in.Settings)
	if err != nil {
		return Outcome{}, err
	}
	if tier == portfolio.TierSandbox && r.Sandbox == nil {
		return Outcome{}, temporal.NewApplicationError("this worker has no sandbox: run sandbox workers beside a gate-control", "codegenie.no_sandbox")
	}
	a.log("start", tier, svc.ID, Outcome{})
	rec = r.Start(rec, tier)
	if activity.IsActivity(ctx) {
		// Temporal's retries of this activity are attempts too.
		rec.Attempts += int(activity.GetInfo(ctx).Attempt) - 1
	}
	if len(m.Sources) > 0 && !m.Sources[in.Index].IsZero() && svc.Fail == "" && svc.Skip == "" {
		dir, release, err := a.Checkouts.Acquire(ctx, m.Sources[in.Index])
		if err != nil {
			return Outcome{}, err
		}
		defer release()
		// Judged in this worker's checkout, recorded as the client named it.
		rec.Service.Dir = dir
	}
	rec, sarif, err := r.Judge(ctx, rec, tier, in.Last)
	if err != nil {
		return Outcome{}, err
	}
	rec.Service.Dir = svc.Dir
	o, err = a.finish(ctx, key, rec, sarif)
	if err != nil {
		return Outcome{}, err
	}
	a.ran.Add(1)
	a.log("done", tier, svc.ID, o)
	return o, nil
}

// bound follows key's bindings to its latest result: a failure rerun with
// retryFailed binds its new result to a key derived from the failure, so
// each failure is retried once per --retry-failed run, and later runs see
// the retry's result. It returns that result when there is one to reuse,
// and the key a new result is to be bound to.
func (a *Activities) bound(ctx context.Context, key string, retryFailed bool) (Outcome, bool, string, error) {
	for {
		d, ok, err := a.Store.Lookup(ctx, key)
		if err != nil || !ok {
			return Outcome{}, false, key, err
		}
		o, err := a.outcome(ctx, key, d)
		if err != nil {
			return Outcome{}, false, key, err
		}
		next := key + "/after=" + d
		switch lost, err := a.lost(ctx, o); {
		case err != nil:
			return Outcome{}, false, key, err
		case lost:
			// Its record or SARIF log was pruned: judged again, bound
			// after it.
			key = next
			continue
		}
		if o.State != portfolio.StateFailed {
			return o, true, key, nil
		}
		if _, ok, err := a.Store.Lookup(ctx, next); err != nil {
			return Outcome{}, false, key, err
		} else if !ok && !retryFailed {
			return o, true, key, nil
		}
		key = next
	}
}

// lost reports whether an outcome's record or SARIF log is gone from the
// store (pruned); reading them marks them used.
func (a *Activities) lost(ctx context.Context, o Outcome) (bool, error) {
	for _, r := range []Ref{o.Record, o.SARIF} {
		if r.Digest == "" {
			continue
		}
		if _, err := a.Store.Get(ctx, r.Digest); errors.Is(err, ErrNotFound) {
			return true, nil
		} else if err != nil {
			return false, err
		}
	}
	return false, nil
}

func (a *Activities) outcome(ctx context.Context, key, digest string) (Outcome, error) {
	data, err := a.Store.Get(ctx, digest)
	if err != nil {
		return Outcome{}, err
	}
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return Outcome{}, fmt.Errorf("the result bound to %s does not decode: %w", key, err)
	}
	o.Reused = true
	return o, nil
}

// finish stores a judged record and its SARIF log, and binds the outcome
// to key. When another attempt bound it first (a worker presumed dead that
// finished after all), that outcome wins: a service has one result.
func (a *Activities) finish(ctx context.Context, key string, rec portfolio.Record, sarif []byte) (Outcome, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return Outcome{}, err
	}
	o := Outcome{State: rec.State, Tier: rec.Tier, Reason: shorten(rec.Reason)}
	if rec.Result != nil {
		o.Verdict, o.Blockers = rec.Result.Verdict, len(rec.Result.Blockers)
	}
	if o.Record, err = a.put(ctx, data); err != nil {
		return Outcome{}, err
	}
	if sarif != nil {
		if o.SARIF, err = a.put(ctx, sarif); err != nil {
			return Outcome{}, err
		}
	}
	od, err := json.Marshal(o)
	if err != nil {
		return Outcome{}, err
	}
	d, err := a.Store.Put(ctx, od)
	if err != nil {
		return Outcome{}, err
	}
	got, err := a.Store.Bind(ctx, key, d)
	if err != nil {
		return Outcome{}, err
	}
	if got != d {
		return a.outcome(ctx, key, got)
	}
	return o, nil
}

func (a *Activities) put(ctx context.Context, data []byte) (Ref, error) {
	if len(data) <= InlineLimit {
		return Ref{Inline: data}, nil
	}
	d, err := a.Store.Put(ctx, data)
	return Ref{Digest: d}, err
}

func (a *Activities) get(ctx context.Context, r Ref) ([]byte, error) { return Get(ctx, a.Store, r) }

// Get returns a Ref's bytes.
func Get(ctx context.Context, st ResultStore, r Ref) ([]byte, error) {
	if r.Digest == "" {
		return r.Inline, nil
	}
	return st.Get(ctx, r.Digest)
}

// manifest reads a manifest once per worker.
func (a *Activities) manifest(ctx context.Context, digest string) (*Manifest, error) {
	a.mu.Lock()
	m, ok := a.manifests[digest]
	a.mu.Unlock()
	if ok {
		return m, nil
	}
	data, err := a.Store.Get(ctx, digest)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			// Retried: a shared filesystem may show it late.
			return nil, temporal.NewApplicationError(fmt.Sprintf("the manifest %v: does this worker's --store point at the client's?", err), "codegenie.manifest_missing")
		}
		return nil, err
	}
	m = &Manifest{}
	if err := json.Unmarshal(data, m); err != nil || len(m.Digests) != len(m.Services) || len(m.Sources) != 0 && len(m.Sources) != len(m.Services) {
		return nil, badInput("the manifest %s does not decode (%v)", digest, err)
	}
	a.mu.Lock()
	if a.manifests == nil {
		a.manifests = map[string]*Manifest{}
	}
	if len(a.manifests) > 8 {
		clear(a.manifests)
	}
	a.manifests[digest] = m
	a.mu.Unlock()
	return m, nil
}

// runner builds the runner of a portfolio's settings once per worker.
func (a *Activities) runner(s Settings) (*portfolio.Runner, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	k := hex.EncodeToString(sum[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	if r, ok := a.runners[k]; ok {
		return r, nil
	}
	r, err := a.Runner(s)
	if err != nil {
		return nil, fmt.Errorf("setting up the pipeline for the portfolio's settings: %w", err)
	}
	if a.runners == nil {
		a.runners = map[string]*portfolio.Runner{}
	}
	a.runners[k] = r
	return r, nil
}

func (a *Activities) log(what string, tier portfolio.Tier, id string, o Outcome) {
	if a.Logger == nil {
		return
	}
	args := []any{"tier", tier, "service", id}
	if o.State != portfolio.StateInvalid {
		args = append(args, "state", o.State.String())
	}
	if o.Verdict != "" {
		args = append(args, "verdict", o.Verdict)
	}
	a.Logger.Info(what, args...)
}

// heartbeat records a heartbeat at a third of the activity's heartbeat
// timeout until stop is called, so that a live worker is never presumed
// dead and a dead one is found within the timeout.
func heartbeat(ctx context.Context) (stop func()) {
	every := time.Second
	if activity.IsActivity(ctx) {
		if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
			every = max(hb/3, 100*time.Millisecond)
		}
	} else {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
