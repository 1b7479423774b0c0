package probe

import (
	"github.com/codegenie/codegenie/internal/buildnet"

	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// Probe is one source of evidence. Run must honour ctx and must not panic;
// the pipeline recovers panics anyway and reports them as low confidence.
// Implementations are safe for concurrent use on different repositories.
type Probe interface {
	Desc() Desc
	Run(ctx context.Context, repo *Repo, pctx *Context) (Output, error)
}

// Desc describes a probe to the pipeline and the cache.
type Desc struct {
	// Name is unique in a Registry and matches ^[a-z][a-z0-9_]*$.
	Name string
	// Version changes whenever the probe's output for the same inputs may
	// change; it is part of the cache key.
	Version   string
	Heaviness Heaviness
	// RunsLast puts the probe in the last phase, after every light probe,
	// whatever its heaviness.
	RunsLast bool
	// After names probes whose results this probe reads through
	// Context.Handoff. When one of them runs in a later phase than this
	// probe would, this probe runs in a phase after theirs; when none
	// runs (it does not apply, or needs an absent sandbox), nothing
	// changes.
	After []string

	CacheStrategy CacheStrategy
	// DeclaredInputs are the repository paths the output depends on: exact
	// paths ("package.json"), globs ("**/Dockerfile", "*.Dockerfile") and
	// image digests ("image-digest:node:22"). Globs do not descend into
	// node_modules or .git unless the pattern starts with that directory.
	// A probe whose image inputs depend on the repository implements
	// ImageLister as well.
	DeclaredInputs []string
	// AppliesToTasks names the tasks the probe serves; empty means all.
	AppliesToTasks []string
	// Timeout overrides the pipeline's per-probe timeout when non-zero.
	Timeout time.Duration
	// NeedsSandbox marks a probe that can only answer through
	// Context.Sandbox. Without one the pipeline neither resolves its inputs
	// (no registry round trips) nor caches it; the probe reports
	// sandbox_unavailable itself.
	NeedsSandbox bool
	// PerImage marks a probe whose output depends on which image the run
	// judges (Context.Image); the image joins its cache key.
	PerImage bool
	// NewFacts returns a pointer to a zero value of the probe's facts type.
	// Decoding a stored context uses it to reject unknown fields.
	NewFacts func() any
}

// ImageInputPrefix marks a declared input that is a container image whose
// resolved manifest digest is part of the cache key.
const ImageInputPrefix = "image-digest:"

// ImageLister is implemented by probes whose image inputs come from the
// repository (for example the base images a Dockerfile names). The pipeline
// resolves each returned reference to a digest for the cache key.
type ImageLister interface {
	ImageInputs(ctx context.Context, repo *Repo, pctx *Context) ([]string, error)
}

// Keyed is implemented by probes whose output depends on settings of the
// run (such as how long an image boots) as well as on their inputs. Each
// returned "name=value" joins the cache key.
type Keyed interface {
	KeySettings(pctx *Context) []string
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Validate checks a descriptor when it is registered.
func (d *Desc) Validate() error {
	if !nameRE.MatchString(d.Name) {
		return fmt.Errorf("probe name %q does not match %s", d.Name, nameRE)
	}
	if d.Version == "" {
		return fmt.Errorf("probe %s: empty version", d.Name)
	}
	if err := d.Heaviness.validate(); err != nil {
		return fmt.Errorf("probe %s: %w", d.Name, err)
	}
	if err := d.CacheStrategy.validate(); err != nil {
		return fmt.Errorf("probe %s: %w", d.Name, err)
	}
	if d.CacheStrategy == CacheContent && len(d.DeclaredInputs) == 0 {
		return fmt.Errorf("probe %s: content caching needs declared inputs", d.Name)
	}
	for _, in := range d.DeclaredInputs {
		if in == "" || strings.HasPrefix(in, "/") || strings.Contains(in, "..") {
			return fmt.Errorf("probe %s: declared input %q must be a relative path or glob inside the repository", d.Name, in)
		}
	}
	if d.NewFacts == nil {
		return fmt.Errorf("probe %s: no NewFacts: every probe result is typed", d.Name)
	}
	return nil
}

// AppliesTo reports whether the probe serves task; an empty task or an
// empty AppliesToTasks matches everything.
func (d *Desc) AppliesTo(task string) bool {
	if task == "" || len(d.AppliesToTasks) == 0 {
		return true
	}
	for _, t := range d.AppliesToTasks {
		if t == task {
			return true
		}
	}
	return false
}

// Context carries the capabilities a probe may use (the ADRs' ProbeContext).
// A nil field means the capability is absent on this run: a probe that needs
// it returns low confidence with ReasonSandboxUnavailable or similar, and
// never dereferences it blindly.
type Context struct {
	// Sandbox is the only way to run anything from the repository.
	Sandbox sandbox.Client
	// Logger is never nil when the pipeline calls Run.
	Logger *slog.Logger
	// Task is the task the gather serves (for example "distroless-migration").
	Task string
	// RegistryMirrors maps a registry (docker.io, gcr.io) to the mirror
	// host base images are pulled from, for probes that build images.
	RegistryMirrors map[string]string
	// BootFor is how long probes that boot an image let it run; zero means
	// each probe's default.
	BootFor time.Duration
	// Settle is how long a booted image must go without an exec, once it
	// has answered, before its boot ends; zero means the sandbox's
	// default (sandbox.DefaultSettle).
	Settle time.Duration
	// StepTimeout bounds one build step of probes that build an image;
	// zero means the sandbox's default (sandbox.DefaultStepTimeout).
	StepTimeout time.Duration
	// Image is the image the run judges; zero when the repository has no
	// Dockerfile. Probes with Desc.PerImage describe this image only.
	Image ImageRef
	// ProbePaths are URL paths that probes booting the image request
	// during the boot, beyond the ones they find themselves.
	ProbePaths []string
	// Handoff reads what probes of earlier phases handed on; nil outside
	// a pipeline run.
	Handoff Handoff
	// Dependencies is set when node_modules is mounted from a lockfile
	// install rather than the repository's own.
	Dependencies *Dependencies
	// BuildNet is what the builds of probes that build an image may reach
	// over the network (and their CA bundle and secrets); nil is offline.
	BuildNet *buildnet.Settings
}
