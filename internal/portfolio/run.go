package portfolio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Assessment is the assessment a portfolio reports per service.
const Assessment = "distroless_readiness"

// GatherFunc runs the pipeline over one repository: gather.Run, or a fake
// in tests.
type GatherFunc func(ctx context.Context, dir string, o gather.Options) (*gather.Outcome, error)

// MigrateFunc runs a dry-run migration of one service (the repository at
// dir, with the service's Dockerfile and target in o), proving it with the
// gates through sb when sb is not nil.
type MigrateFunc func(ctx context.Context, dir string, o gather.Options, sb sandbox.Client) (*Migration, error)

// Runner runs services through the two tiers and keeps their state in a
// Store. Its fields are read-only once Run starts.
type Runner struct {
	Store *Store
	// Options is the gather configuration every service shares (Registry,
	// Version, Cache, Images, Task, timeouts, Logger); Dockerfile, Target
	// and Sandbox are set per service and tier.
	Options gather.Options
	// Gather defaults to gather.Run.
	Gather GatherFunc
	// Sandbox is the sandbox tier's client; nil runs the static tier only.
	Sandbox sandbox.Client
	// StaticWorkers defaults to GOMAXPROCS; SandboxWorkers to one per two
	// cores (at least one).
	StaticWorkers, SandboxWorkers int
	// ServiceTimeout bounds one service's run in one tier; zero is none.
	ServiceTimeout time.Duration
	// RetryFailed reruns services whose last run failed; otherwise they
	// keep their failure until their inputs change.
	RetryFailed bool
	// Observe, when set, is called after each state change, from the
	// goroutine that made it; it must be safe for concurrent use.
	Observe func(Record)
	// Now defaults to time.Now.
	Now func() time.Time
	// Migrate, when set, migrates each service whose verdict is
	// ready_after_rewrite, in dry-run, once its last tier is done (the
	// sandbox tier when there is one, so that the gates run there).
	Migrate MigrateFunc
}

// Plan is what Run decided for each service before running any.
type Plan struct {
	// Run lists the services queued to run; Kept those answered by their
	// record (done, or failed without --retry-failed); Skipped the rest.
	Run, Kept, Skipped int
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Settings is what, beside a service's files, changes its answer: the
// pipeline's configuration, the tiers it runs in and whether it migrates.
// It is part of every inputs digest.
func Settings(o gather.Options, sandbox, migrate bool) string {
	tiers := "static"
	if sandbox {
		tiers = "static+sandbox"
	}
	return fmt.Sprintf("v=%s task=%s tiers=%s light=%s heavy=%s boot=%s settle=%s step=%s mirrors=%v migrate=%v deps=%v net=%s", o.Version, o.Task, tiers, o.LightTimeout, o.HeavyTimeout, o.BootFor, o.Settle, o.StepTimeout, o.RegistryMirrors, migrate, o.Deps != nil, o.BuildNet.Key())
}

// Digester computes services' inputs digests under one Settings, reading
// each build context once. Safe for concurrent use.
type Digester struct {
	settings string
	trees    treeDigests
}

// NewDigester returns a Digester for settings (see Settings).
func NewDigester(settings string) *Digester { return &Digester{settings: settings} }

// Digest is s's inputs digest; a skipped service has none. A service
// that could not be found (Fail) has the digest of its failure, so that
// schedulers that bind results to digests keep each failure apart.
func (d *Digester) Digest(s Service) (string, error) {
	if s.Skip != "" {
		return "", nil
	}
	if s.Fail != "" {
		sum := sha256.Sum256(fmt.Appendf(nil, "failed\x00%s\x00%s\x00%s\x00%s", s.ID, s.Repo, s.Fail, d.settings))
		return hex.EncodeToString(sum[:]), nil
	}
	tree, err := d.trees.of(filepath.Join(s.Dir, filepath.FromSlash(s.Context)))
	if err != nil {
		return "", err
	}
	return inputsDigest(s, d.settings, tree), nil
}

// Run brings every service to a final state (done, failed or skipped) and
// returns their records in the order given. A service already done for
// the same inputs digest is not run again; one left queued or running by an
// interrupted run resumes from the tier it was in. It returns early with
// ctx's error when ctx is done; what finished is in the store.
func (r *Runner) Run(ctx context.Context, services []Service) ([]Record, Plan, error) {
	var plan Plan
	old, err := r.Store.All()
	if err != nil {
		return nil, plan, err
	}
	dg := NewDigester(Settings(r.Options, r.Sandbox != nil, r.Migrate != nil))
	recs := make([]Record, len(services))
	var dirty []Record
	var static, sandboxed []int
	for i, s := range services {
		rec := Record{Service: s}
		if rec.Digest, err = dg.Digest(s); err != nil {
			return nil, plan, err
		}
		prev, had := old[s.ID]
		same := had && prev.Digest == rec.Digest && prev.Service.equal(s)
		switch {
		case s.Skip != "":
			rec.State, rec.Reason = StateSkipped, s.Skip
			plan.Skipped++
		case s.Fail != "":
			// Found failed: recorded, never run; the next run's discovery
			// tries again.
			rec.State, rec.Reason = StateFailed, s.Fail
			rec.Timings.Finished = r.now()
		case same && prev.State == StateDone,
			same && prev.State == StateFailed && !r.RetryFailed:
			recs[i] = prev
			plan.Kept++
			continue
		case same && prev.Tier == TierSandbox && r.Sandbox != nil && prev.Result != nil:
			// The static tier finished before the interruption.
			rec = prev
			rec.State = StateQueued
			sandboxed = append(sandboxed, i)
			plan.Run++
		default:
			if same {
				rec.Attempts = prev.Attempts
				rec.Runs = prev.Runs
			}
			rec.State, rec.Tier = StateQueued, TierStatic
			rec.Timings.Queued = r.now()
			static = append(static, i)
			plan.Run++
		}
		recs[i] = rec
		if !had || !recordsEqual(prev, rec) {
			dirty = append(dirty, rec)
		}
	}
	if len(dirty) > 0 {
		if err := r.Store.Put(dirty...); err != nil {
			return nil, plan, err
		}
	}
	// Every service's starting state, kept ones included, so that progress
	// counts the whole portfolio.
	for _, rec := range recs {
		r.observe(rec)
	}
	w := r.Store.NewWriter()
	err = r.runTiers(ctx, w, recs, static, sandboxed)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return recs, plan, err
}

func recordsEqual(a, b Record) bool {
	return a.Service.equal(b.Service) && a.Digest == b.Digest && a.State == b.State && a.Reason == b.Reason && a.Tier == b.Tier
}

func (r *Runner) observe(rec Record) {
	if r.Observe != nil {
		r.Observe(rec)
	}
}

// runTiers runs the static tier over static, feeding each finished service
// to the bounded sandbox tier (when there is one), which also takes the
// services in sandboxed.
func (r *Runner) runTiers(ctx context.Context, w *Writer, recs []Record, static, sandboxed []int) error {
	nStatic := r.StaticWorkers
	if nStatic <= 0 {
		nStatic = runtime.GOMAXPROCS(0)
	}
	nSandbox := r.SandboxWorkers
	if nSandbox <= 0 {
		nSandbox = max(1, runtime.NumCPU()/2)
	}
	staticQ := make(chan int)
	sandboxQ := make(chan int, len(recs))
	for _, i := range sandboxed {
		sandboxQ <- i
	}
	var errMu sync.Mutex
	var firstErr error
	setErr := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
	}
	var sw, bw sync.WaitGroup
	for range nStatic {
		sw.Go(func() {
			for i := range staticQ {
				rec, err := r.runOne(ctx, w, recs[i], TierStatic)
				recs[i] = rec
				if err != nil {
					setErr(err)
					continue
				}
				if rec.State == StateQueued && rec.Tier == TierSandbox {
					sandboxQ <- i
				}
			}
		})
	}
	if r.Sandbox != nil {
		for range nSandbox {
			bw.Go(func() {
				for i := range sandboxQ {
					rec, err := r.runOne(ctx, w, recs[i], TierSandbox)
					recs[i] = rec
					if err != nil {
						setErr(err)
					}
				}
			})
		}
	}
feed:
	for _, i := range static {
		select {
		case staticQ <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(staticQ)
	sw.Wait()
	close(sandboxQ)
	bw.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return firstErr
}

// runOne runs one service in one tier and records the outcome. Its error
// is the store's or ctx's: a failing service is a failed record, not an
// error.
func (r *Runner) runOne(ctx context.Context, w *Writer, rec Record, tier Tier) (Record, error) {
	if err := ctx.Err(); err != nil {
		return rec, err
	}
	rec = r.Start(rec, tier)
	if err := w.Put(rec, nil); err != nil {
		return rec, err
	}
	r.observe(rec)
	rec, sarif, err := r.Judge(ctx, rec, tier, tier == TierSandbox || r.Sandbox == nil)
	if err != nil {
		// Interrupted: the record stays running and the next run resumes it.
		return rec, err
	}
	if err := w.Put(rec, sarif); err != nil {
		return rec, err
	}
	r.observe(rec)
	return rec, nil
}

// Start marks rec running in tier: the state a scheduler records before
// it calls Judge.
func (r *Runner) Start(rec Record, tier Tier) Record {
	rec.State, rec.Tier = StateRunning, tier
	rec.Attempts++
	if tier == TierStatic || rec.Timings.Started.IsZero() {
		rec.Timings.Started = r.now()
	}
	return rec
}

// Judge runs a started record's service through one tier with r's
// configuration (the Store is not used) and returns the new record and,
// when the pipeline ran, its SARIF log. last says whether tier is the
// service's last: then a judged service is done (and migrated, with
// Migrate), else it is queued for the sandbox tier. The error is ctx's
// alone: a failing service is a failed record. Another scheduler (the
// Temporal activities) runs the same unit through it.
func (r *Runner) Judge(ctx context.Context, rec Record, tier Tier, last bool) (Record, []byte, error) {
	if rec.Service.Fail != "" {
		rec.State, rec.Reason, rec.Timings.Finished = StateFailed, rec.Service.Fail, r.now()
		return rec, nil, nil
	}
	start := r.now()
	out, err := r.gather(ctx, rec.Service, tier)
	if ctx.Err() != nil {
		return rec, nil, ctx.Err()
	}
	rec.Runs++
	elapsed := float64(r.now().Sub(start).Microseconds()) / 1000
	if tier == TierStatic {
		rec.Timings.StaticMS = elapsed
	} else {
		rec.Timings.SandboxMS = elapsed
	}
	var sarif []byte
	if err == nil {
		rec.Result, sarif, err = resultOf(out)
	}
	switch {
	case err != nil:
		rec.State, rec.Reason = StateFailed, err.Error()
		rec.Timings.Finished = r.now()
	case runsNoNode(rec.Result):
		// Not a Node service: nothing for the sandbox tier to prove.
		rec.State, rec.Reason = StateSkipped, rec.Result.Reason
		rec.Timings.Finished = r.now()
	case !last:
		rec.State, rec.Tier, rec.Reason = StateQueued, TierSandbox, ""
	default:
		rec.State, rec.Reason = StateDone, ""
		rec.Migration = nil
		if r.Migrate != nil && rec.Result.Verdict == probe.ReadyAfterRewrite {
			rec.Migration = r.migrate(ctx, rec.Service, tier)
			if ctx.Err() != nil {
				return rec, nil, ctx.Err()
			}
		}
		rec.Timings.Finished = r.now()
	}
	return rec, sarif, nil
}

// SkipNotNode begins the reason of a service skipped because its image
// runs no Node (the verdict's reason says so).
const SkipNotNode = "not_node"

// runsNoNode reports whether a result is of an image that runs no Node.
func runsNoNode(res *Result) bool {
	return res != nil && res.Verdict == probe.Unknown && strings.HasPrefix(res.Reason, SkipNotNode+":")
}

// PanicError is a service whose run panicked.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("the pipeline panicked: %v", e.Value) }

// serviceOptions are the gather directory and options of one service,
// without a sandbox.
func (r *Runner) serviceOptions(s Service) (string, gather.Options) {
	o := r.Options
	o.Dockerfile, o.Target, o.AllImages, o.Progress = s.Dockerfile, s.Target, false, nil
	o.ProbePaths = append(append([]string{}, r.Options.ProbePaths...), s.ProbePaths...)
	if s.Context != "." && s.Context != "" {
		o.Dockerfile = strings.TrimPrefix(s.Dockerfile, s.Context+"/")
	}
	o.Sandbox = nil
	return filepath.Join(s.Dir, filepath.FromSlash(s.Context)), o
}

// gather runs the pipeline for one service in one tier, turning a panic
// into a *PanicError and a timeout into an error that says so.
func (r *Runner) gather(ctx context.Context, s Service, tier Tier) (out *gather.Outcome, err error) {
	if r.ServiceTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.ServiceTimeout)
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			out, err = nil, &PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	dir, o := r.serviceOptions(s)
	if tier == TierSandbox {
		o.Sandbox = r.Sandbox
	}
	run := r.Gather
	if run == nil {
		run = gather.Run
	}
	out, err = run(ctx, dir, o)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("timed out after %s in the %s tier: %w", r.ServiceTimeout, tier, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s tier: %w", tier, err)
	}
	return out, nil
}

// migrate runs the dry-run migration of a service, its panics and errors
// kept in the Migration: a migration that cannot run does not fail the
// service's verdict.
func (r *Runner) migrate(ctx context.Context, s Service, tier Tier) (m *Migration) {
	start := r.now()
	defer func() {
		if v := recover(); v != nil {
			m = &Migration{Error: fmt.Sprintf("the migration panicked: %v", v)}
		}
		m.MS = float64(r.now().Sub(start).Microseconds()) / 1000
	}()
	if r.ServiceTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.ServiceTimeout)
		defer cancel()
	}
	dir, o := r.serviceOptions(s)
	var sb sandbox.Client
	if tier == TierSandbox {
		sb = r.Sandbox
	}
	m, err := r.Migrate(ctx, dir, o, sb)
	if err != nil {
		return &Migration{Error: err.Error()}
	}
	return m
}

// resultOf summarises an outcome and encodes its SARIF log.
func resultOf(out *gather.Outcome) (*Result, []byte, error) {
	c := out.Context
	a, ok := c.Assessments[Assessment]
	if !ok {
		return nil, nil, fmt.Errorf("the pipeline gave no %s assessment", Assessment)
	}
	res := &Result{Verdict: a.Verdict, Confirmed: a.Confirmed, Reason: a.Reason, Blockers: a.Blockers, Notes: a.Notes, Probes: len(out.Records)}
	if c.Image != nil {
		res.Image = *c.Image
	}
	for _, rec := range out.Records {
		if rec.CacheHit {
			res.CacheHits++
		}
	}
	var buf bytes.Buffer
	if err := report.EncodeSARIF(&buf, c, out.Registry); err != nil {
		return nil, nil, err
	}
	return res, buf.Bytes(), nil
}
