// Package pipeline schedules probes over one repository. It resolves each
// probe's declared inputs to digests, looks the result up in the content
// cache, and runs what is missing: light probes in parallel first, then
// heavy and RunsLast probes with their own concurrency limit, then the
// probes that read what those handed on (probe.Desc.After, probe.Handoff;
// docs/adr/0013). Every probe
// gets a timeout; a probe that errors, panics or times out yields a typed
// low-confidence result and never stops the others.
//
// It does not decide what the results mean (package report does) and runs
// nothing outside the process itself.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// Defaults for the zero values of Pipeline's fields.
const (
	DefaultLightTimeout = 30 * time.Second
	DefaultHeavyTimeout = 15 * time.Minute
	DefaultHeavyLimit   = 1
)

// Pipeline runs the probes of a Registry. Set the fields, then call Run; a
// Pipeline may run many repositories concurrently.
type Pipeline struct {
	Registry *probe.Registry
	// Cache stores content-cached results; nil disables caching.
	Cache *cache.Cache
	// Images resolves image-digest inputs; nil makes every probe with
	// image inputs run uncached.
	Images image.Resolver
	// Version is codegenie's version, part of every cache key.
	Version string
	// LightTimeout and HeavyTimeout bound each probe's Run; when zero, the
	// descriptor's Timeout applies, else the defaults.
	LightTimeout, HeavyTimeout time.Duration
	// LightLimit bounds concurrent light probes (default GOMAXPROCS);
	// HeavyLimit bounds heavy and RunsLast probes (default 1).
	LightLimit, HeavyLimit int
	// Logger receives debug records; nil discards them.
	Logger *slog.Logger
	// Progress, when set, is called as probes start and finish. It is
	// called from many goroutines and must be safe for that.
	Progress func(Progress)
}

// Progress is one step of a run, for a progress display.
type Progress struct {
	Probe    string
	State    State
	Duration time.Duration
}

// State is where a probe is in a run.
type State string

// The states a probe goes through.
const (
	Started  State = "started"
	Finished State = "finished"
	Cached   State = "cached"
)

// Record is one probe's result in a run.
type Record struct {
	Result *probe.Result
	// Raw is the canonical JSON of Result: exactly what the cache holds.
	Raw      []byte
	CacheHit bool
	// Cacheable says whether the result was (or would be) stored.
	Cacheable bool
	Key       cache.Key
	Duration  time.Duration
	// Phase is "light", "last", or "after" (Desc.After).
	Phase string
}

// InputError reports a declared input that exists but cannot be read. It
// is the user's to fix, so it stops the run.
type InputError struct {
	Probe string
	Path  string
	Err   error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("reading %s (an input of probe %s): %v", e.Path, e.Probe, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// Run runs every probe that applies to pctx.Task over repo and returns the
// records sorted by probe name. It returns an error only for an unreadable
// input or a cancelled ctx; probe failures are records.
func (p *Pipeline) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) ([]Record, error) {
	if pctx == nil {
		pctx = &probe.Context{}
	}
	if pctx.Logger == nil {
		pctx.Logger = p.logger()
	}
	var light, last []probe.Probe
	for _, pr := range p.Registry.All() {
		d := pr.Desc()
		if !d.AppliesTo(pctx.Task) {
			continue
		}
		if d.RunsLast || d.Heaviness == probe.Heavy {
			last = append(last, pr)
		} else {
			light = append(light, pr)
		}
	}
	// A probe that reads a handoff runs after the probes it reads.
	light, last, after := splitAfter(light, last, pctx)
	h := newHandoff(p.Cache)
	pc := *pctx
	pc.Handoff = h
	pctx = &pc
	run := &run{p: p, repo: repo, pctx: pctx, digests: newDigests(repo, p.Cache), handoff: h, after: map[string]bool{}}
	for _, pr := range after {
		run.after[pr.Desc().Name] = true
	}
	records := make([]Record, 0, len(light)+len(last)+len(after))
	lightLimit := p.LightLimit
	if lightLimit <= 0 {
		lightLimit = runtime.GOMAXPROCS(0)
	}
	heavyLimit := p.HeavyLimit
	if heavyLimit <= 0 {
		heavyLimit = DefaultHeavyLimit
	}
	for _, phase := range []struct {
		name   string
		probes []probe.Probe
		limit  int
	}{{"light", light, lightLimit}, {"last", last, heavyLimit}, {"after", after, lightLimit}} {
		recs, err := run.phase(ctx, phase.name, phase.probes, phase.limit)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			h.record(rec.Result)
		}
		records = append(records, recs...)
	}
	sort.Slice(records, func(i, j int) bool { return records[i].Result.Probe < records[j].Result.Probe })
	if err := run.digests.save(); err != nil {
		pctx.Logger.Warn("saving the stat memo", "err", err)
	}
	return records, nil
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p *Pipeline) progress(name string, s State, d time.Duration) {
	if p.Progress != nil {
		p.Progress(Progress{Probe: name, State: s, Duration: d})
	}
}

type run struct {
	p       *Pipeline
	repo    *probe.Repo
	pctx    *probe.Context
	digests *digests
	handoff *handoff
	// after names the probes of the after phase: they read what a heavy
	// probe handed on (a traced image's node_modules), so they get the
	// heavy timeout.
	after map[string]bool
}

// phase runs probes with at most limit at once. It returns when all have
// finished, or as soon as ctx is cancelled.
func (r *run) phase(ctx context.Context, name string, probes []probe.Probe, limit int) ([]Record, error) {
	if len(probes) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	recs := make([]Record, len(probes))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, pr := range probes {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, context.Cause(ctx)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec, err := r.one(ctx, pr)
			if err != nil {
				cancel(err)
				return
			}
			rec.Phase = name
			recs[i] = rec
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return recs, nil
}

// one produces the record of one probe: from the cache, or by running it.
func (r *run) one(ctx context.Context, pr probe.Probe) (Record, error) {
	d := pr.Desc()
	start := time.Now()
	log := r.pctx.Logger.With("probe", d.Name)

	cannotRun := d.NeedsSandbox && r.pctx.Sandbox == nil
	useCache := r.p.Cache != nil && d.CacheStrategy == probe.CacheContent && !cannotRun
	var key cache.Key
	if useCache {
		inputs, complete, err := r.inputs(ctx, pr, &d)
		if err != nil {
			return Record{}, err
		}
		if !complete {
			useCache = false
		} else {
			key = cache.NewKey(d.Name, d.Version, r.p.Version, inputs)
			if rec, ok := r.cached(key, &d, log); ok && r.blobsKept(pr, rec.Result) {
				rec.Duration = time.Since(start)
				r.p.progress(d.Name, Cached, rec.Duration)
				return rec, nil
			}
		}
	}

	r.p.progress(d.Name, Started, 0)
	out := r.invoke(ctx, pr, &d)
	if err := ctx.Err(); err != nil {
		return Record{}, context.Cause(ctx)
	}
	res, raw := r.finish(&d, &out)
	rec := Record{Result: res, Raw: raw, Key: key, Cacheable: useCache && !out.Uncacheable}
	if err := r.handoff.put(out.Blobs, rec.Cacheable); err != nil {
		log.Warn("caching probe blobs", "err", err)
		rec.Cacheable = false
	}
	if rec.Cacheable {
		if err := r.p.Cache.Put(key, raw); err != nil {
			log.Warn("caching probe result", "err", err)
		}
	}
	rec.Duration = time.Since(start)
	r.p.progress(d.Name, Finished, rec.Duration)
	return rec, nil
}

// cached returns the stored record for key, if a valid one exists.
func (r *run) cached(key cache.Key, d *probe.Desc, log *slog.Logger) (Record, bool) {
	raw, ok, err := r.p.Cache.Get(key)
	if err != nil {
		log.Warn("reading cache", "err", err)
		return Record{}, false
	}
	if !ok {
		return Record{}, false
	}
	var res probe.Result
	if err := strictjson.Unmarshal(raw, &res); err != nil || res.Probe != d.Name || res.Version != d.Version {
		log.Warn("ignoring unusable cache entry", "key", key.String(), "err", err)
		return Record{}, false
	}
	return Record{Result: &res, Raw: raw, CacheHit: true, Cacheable: true, Key: key}, true
}

// blobsKept reports whether the blobs a cached result names are still
// stored (probe.BlobUser).
func (r *run) blobsKept(pr probe.Probe, res *probe.Result) bool {
	u, ok := pr.(probe.BlobUser)
	return !ok || r.handoff.has(u.Blobs(res.Facts))
}

// invoke runs the probe with its timeout, turning errors, panics and
// timeouts into low-confidence outputs. A probe that ignores its context
// is abandoned when the timeout fires; its goroutine ends when it returns.
func (r *run) invoke(ctx context.Context, pr probe.Probe, d *probe.Desc) probe.Output {
	// The run's setting (gather --light-timeout, --heavy-timeout) wins; a
	// descriptor's Timeout is the probe's default when the run sets none.
	heavy := d.Heaviness == probe.Heavy || r.after[d.Name]
	timeout := r.p.LightTimeout
	if heavy {
		timeout = r.p.HeavyTimeout
	}
	if timeout <= 0 {
		timeout = d.Timeout
	}
	if timeout <= 0 {
		timeout = DefaultLightTimeout
		if heavy {
			timeout = DefaultHeavyTimeout
		}
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	done := make(chan probe.Output, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				r.pctx.Logger.Error("probe panicked", "probe", d.Name, "panic", v, "stack", string(debug.Stack()))
				done <- failed(probe.ReasonProbePanic, fmt.Sprintf("probe panicked: %v", v))
			}
		}()
		out, err := pr.Run(pctx, r.repo, r.pctx)
		switch {
		case err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded):
			done <- failed(probe.ReasonTimeout, fmt.Sprintf("probe ran past its %s timeout", timeout))
		case err != nil:
			if errors.Is(err, probe.ErrPathEscapes) {
				// A symlink out of the repository is the repository's
				// doing, not the probe's: say so, and quote nothing.
				done <- failed(probe.ReasonPathEscapes, err.Error())
				return
			}
			if errors.Is(err, probe.ErrNotRegular) {
				// So is a FIFO or a device where a file should be.
				done <- failed(probe.ReasonNotRegular, err.Error())
				return
			}
			done <- failed(probe.ReasonProbeError, err.Error())
		default:
			done <- out
		}
	}()
	select {
	case out := <-done:
		return out
	case <-pctx.Done():
		if ctx.Err() != nil {
			return failed(probe.ReasonCanceled, "run cancelled")
		}
		return failed(probe.ReasonTimeout, fmt.Sprintf("probe ran past its %s timeout", timeout))
	}
}

func failed(reason probe.Reason, detail string) probe.Output {
	return probe.Output{Confidence: probe.Low, Reason: reason, Detail: detail, Uncacheable: true}
}

// finish validates out and serialises it. An invalid output becomes a
// low-confidence invalid_output result, so one broken probe cannot put
// unregistered warnings or untyped facts into a context.
func (r *run) finish(d *probe.Desc, out *probe.Output) (*probe.Result, []byte) {
	if err := r.check(d, out); err != nil {
		r.pctx.Logger.Error("probe returned an invalid output", "probe", d.Name, "err", err)
		*out = failed(probe.ReasonInvalidOutput, err.Error())
		if errors.Is(err, errUnregistered) {
			out.Reason = probe.ReasonUnregisteredWarning
		}
	}
	res, err := probe.NewResult(d, out)
	if err != nil {
		*out = failed(probe.ReasonInvalidOutput, err.Error())
		res, _ = probe.NewResult(d, out)
	}
	raw, err := probe.Marshal(res)
	if err != nil { // unreachable: every field of Result encodes
		panic(fmt.Sprintf("encoding result of %s: %v", d.Name, err))
	}
	return res, raw
}

var errUnregistered = errors.New("unregistered warning")

func (r *run) check(d *probe.Desc, out *probe.Output) error {
	if err := out.Validate(); err != nil {
		return err
	}
	for _, w := range out.Warnings {
		if _, ok := r.p.Registry.Warnings().Lookup(w.ID); !ok {
			return fmt.Errorf("%w %q", errUnregistered, w.ID)
		}
	}
	if out.Facts != nil {
		want := reflect.TypeOf(d.NewFacts())
		if got := reflect.TypeOf(out.Facts); got != want {
			return fmt.Errorf("facts of type %v, descriptor declares %v", got, want)
		}
	}
	return nil
}
