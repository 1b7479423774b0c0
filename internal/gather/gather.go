// Package gather is the library behind `codegenie gather`: it opens a
// repository, runs the registered probes through the pipeline with the
// content cache, and assembles the repository context. The CLI is a thin
// layer over Run; benchmarks and other front ends call Run directly.
package gather

import (
	"github.com/codegenie/codegenie/internal/buildnet"

	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Options configure one gather. Registry and Version are required.
type Options struct {
	Registry *probe.Registry
	Version  string
	// Cache is nil to run without caching.
	Cache   *cache.Cache
	Images  image.Resolver
	Sandbox sandbox.Client
	Task    string
	// RegistryMirrors maps a registry (docker.io, gcr.io) to a mirror host,
	// for probes that build images.
	RegistryMirrors map[string]string
	// BootFor bounds image boots; zero means the probes' default.
	BootFor time.Duration
	// Settle is the boots' settle period; zero means the default.
	Settle time.Duration
	// StepTimeout bounds one build step; zero means the default.
	StepTimeout time.Duration
	// LightTimeout and HeavyTimeout override the pipeline defaults.
	LightTimeout, HeavyTimeout time.Duration
	// Dockerfile and Target pick the image to judge; empty means the
	// task's default (see probe.ImageSelector).
	Dockerfile, Target string
	// AllImages judges every image of the repository as well, into
	// Context.Images.
	AllImages bool
	// ProbePaths are URL paths the traced boot requests (gather
	// --probe-path).
	ProbePaths []string
	// RequireImage makes a repository with no Dockerfile bad input
	// (ErrNoDockerfile, in an *InputError) for a task that judges images:
	// with no image there is no verdict to give.
	RequireImage bool
	// BuildNet is the builds' network (gather --build-egress); nil is
	// offline.
	BuildNet *buildnet.Settings
	Logger   *slog.Logger
	Progress func(pipeline.Progress)
	// Deps, when set, provides node_modules from the lockfile (gather
	// --deps lockfile): the pinned tarballs, fetched and verified into its
	// cache, are mounted where an install puts them.
	Deps *deps.Fetcher
}

// ErrNoDockerfile is the input error of a repository with no Dockerfile,
// when Options.RequireImage is set.
var ErrNoDockerfile = errors.New("no Dockerfile in the repository, so there is no image to judge: give --dockerfile PATH for one under another name, or gather the service's own folder")

// Outcome is a finished gather.
type Outcome struct {
	Context  *report.Context
	Records  []pipeline.Record
	Registry *probe.Registry
}

// InputError is bad input from the user: a missing or unreadable path. The
// CLI maps it to exit code 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Run gathers the context of the repository at dir.
func Run(ctx context.Context, dir string, o Options) (*Outcome, error) {
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		return nil, &InputError{Err: describeOpen(dir, err)}
	}
	p := &pipeline.Pipeline{
		Registry:     o.Registry,
		Cache:        o.Cache,
		Images:       o.Images,
		Version:      o.Version,
		LightTimeout: o.LightTimeout,
		HeavyTimeout: o.HeavyTimeout,
		Logger:       o.Logger,
		Progress:     o.Progress,
	}
	pctx := &probe.Context{Sandbox: o.Sandbox, Logger: o.Logger, Task: o.Task, RegistryMirrors: o.RegistryMirrors, BootFor: o.BootFor, Settle: o.Settle, StepTimeout: o.StepTimeout, ProbePaths: o.ProbePaths, BuildNet: o.BuildNet}
	if o.Deps != nil {
		dev, err := keepsDevDependencies(ctx, dir, o)
		if err != nil {
			return nil, err
		}
		if err := mountDependencies(ctx, repo, o.Deps, pctx, dev); err != nil {
			return nil, err
		}
	}
	sel, hasSel := o.Registry.ImageSelector(o.Task)
	switch {
	case hasSel:
		ref, err := sel.Select(ctx, repo, o.Dockerfile, o.Target)
		var se *probe.SelectionError
		if errors.As(err, &se) && o.AllImages && o.Dockerfile == "" && o.Target == "" {
			// No default image, but every image is to be judged: the first
			// one stands for the run, and images[] holds them all.
			refs, lerr := sel.Images(ctx, repo)
			if lerr != nil {
				return nil, fmt.Errorf("listing images: %w", lerr)
			}
			if len(refs) > 0 {
				ref, err = refs[0], nil
				ref.Why = "the first of several Dockerfiles (--all-images judges each): " + ref.Why
			}
		}
		if errors.As(err, &se) {
			return nil, &InputError{Err: err}
		}
		if err != nil {
			return nil, fmt.Errorf("choosing the image to judge: %w", err)
		}
		if ref.IsZero() && o.RequireImage {
			return nil, &InputError{Err: fmt.Errorf("%s: %w", dir, ErrNoDockerfile)}
		}
		pctx.Image = ref
	case o.Dockerfile != "" || o.Target != "" || o.AllImages:
		return nil, &InputError{Err: fmt.Errorf("task %q does not judge images: --dockerfile, --target and --all-images do not apply", o.Task)}
	}
	recs, err := p.Run(ctx, repo, pctx)
	if err != nil {
		return nil, inputErr(err)
	}
	c := &report.Context{
		SchemaVersion: report.SchemaVersion,
		Codegenie:     o.Version,
		Repo:          repo.Root,
		Task:          o.Task,
		Probes:        make([]probe.Result, len(recs)),
	}
	if !pctx.Image.IsZero() {
		ref := pctx.Image
		c.Image = &ref
	}
	for i, r := range recs {
		c.Probes[i] = *r.Result
	}
	if c.Assessments, err = assess(ctx, o, c.Probes); err != nil {
		return nil, err
	}
	if o.AllImages && hasSel {
		refs, err := sel.Images(ctx, repo)
		if err != nil {
			return nil, fmt.Errorf("listing images: %w", err)
		}
		for _, ref := range refs {
			ia := report.ImageAssessments{Image: ref, Assessments: c.Assessments}
			if ref.Key() != pctx.Image.Key() {
				ictx := *pctx
				ictx.Image = ref
				irecs, err := p.Run(ctx, repo, &ictx)
				if err != nil {
					return nil, inputErr(err)
				}
				results := make([]probe.Result, len(irecs))
				for i, r := range irecs {
					results[i] = *r.Result
				}
				if ia.Assessments, err = assess(ctx, o, results); err != nil {
					return nil, err
				}
			} else {
				ia.Image = pctx.Image
			}
			c.Images = append(c.Images, ia)
		}
	}
	return &Outcome{Context: c, Records: recs, Registry: o.Registry}, nil
}

func inputErr(err error) error {
	var ie *pipeline.InputError
	if errors.As(err, &ie) {
		return &InputError{Err: err}
	}
	return err
}

// assess runs the task's assessors over one image's results. Each is
// light work and gets the light timeout (gather --light-timeout): one that
// runs past it answers Unknown, saying so, and a cancelled ctx ends the
// wait at once.
func assess(ctx context.Context, o Options, results []probe.Result) (map[string]probe.Assessment, error) {
	timeout := o.LightTimeout
	if timeout <= 0 {
		timeout = pipeline.DefaultLightTimeout
	}
	var out map[string]probe.Assessment
	for _, a := range o.Registry.Assessors(o.Task) {
		as, err := assessOne(ctx, a, results, timeout)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string]probe.Assessment{}
		}
		out[a.Name()] = as
	}
	return out, nil
}

// assessOne runs one assessor within timeout. An Assessor is a pure
// function with no context, so one that overruns is abandoned, as the
// pipeline abandons a probe that ignores its context: its goroutine ends
// when Assess returns, and its answer is dropped.
func assessOne(ctx context.Context, a probe.Assessor, results []probe.Result, timeout time.Duration) (probe.Assessment, error) {
	type answer struct {
		as  probe.Assessment
		err error
	}
	done := make(chan answer, 1)
	go func() {
		as, err := a.Assess(results)
		done <- answer{as, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			return probe.Assessment{}, fmt.Errorf("assessing %s: %w", a.Name(), r.err)
		}
		return r.as, nil
	case <-ctx.Done():
		return probe.Assessment{}, context.Cause(ctx)
	case <-t.C:
		return probe.Assessment{Verdict: probe.Unknown, Reason: fmt.Sprintf("the assessment ran past its %s timeout (--light-timeout)", timeout)}, nil
	}
}

// Encode writes the outcome's context as JSON.
func (o *Outcome) Encode(w io.Writer) error {
	raws := make([][]byte, len(o.Records))
	for i, r := range o.Records {
		raws[i] = r.Raw
	}
	return report.Encode(w, o.Context, raws)
}

func describeOpen(dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such directory; pass the path of a repository checkout", dir)
	case errors.Is(err, probe.ErrNotDirectory):
		return fmt.Errorf("%s: is a file, not a directory; pass the repository's root directory", dir)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied; check that you can read the directory", dir)
	}
	return fmt.Errorf("opening repository %s: %w", dir, err)
}
