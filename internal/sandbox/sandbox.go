package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/trace"
)

// Client runs commands in an isolated sandbox. Implementations are safe for
// concurrent use. Cancelling ctx kills the sandbox and everything in it.
type Client interface {
	Spawn(ctx context.Context, req SpawnRequest) (Result, error)
}

// Errors that backends and clients return, matched with errors.Is.
var (
	// ErrInvalidRole: the request named no role or an unknown one.
	ErrInvalidRole = errors.New("sandbox: invalid role")
	// ErrInvalidRequest: the request is malformed (see the wrapped reason).
	ErrInvalidRequest = errors.New("sandbox: invalid request")
	// ErrNotSupported: the backend cannot run on this host.
	ErrNotSupported = errors.New("sandbox: backend not supported on this host")
	// ErrTimeout: the spawn ran past its timeout and was killed.
	ErrTimeout = errors.New("sandbox: timeout")
)

// Workspace is the host directory a spawn sees at Mount. It is read-only
// unless Writable is set, in which case the sandbox works on a private copy
// and the host directory is never changed.
type Workspace struct {
	Dir      string `json:"dir"`
	Mount    string `json:"mount,omitempty"` // path inside the sandbox; default /workspace
	Writable bool   `json:"writable,omitempty"`
}

// Limits bounds a spawn's resources. Zero fields take the backend defaults.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	PIDs        int64   `json:"pids,omitempty"`
	OutputBytes int64   `json:"output_bytes,omitempty"` // per stream; the rest is dropped
	// DiskBytes bounds what the spawn may write: build storage and the
	// writable workspace copy live on a filesystem of this size.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// SpawnRequest is one command to run in a fresh sandbox.
type SpawnRequest struct {
	Role         Role          `json:"role"`
	Workspace    Workspace     `json:"workspace"`
	Rootfs       string        `json:"rootfs,omitempty"` // host directory or image reference; backend default when empty
	Command      []string      `json:"command"`
	Env          []string      `json:"env,omitempty"`
	Cwd          string        `json:"cwd,omitempty"`
	CaptureTrace bool          `json:"capture_trace,omitempty"`
	KeepTraceEnv bool          `json:"keep_trace_env,omitempty"` // keep exec env in trace events (may hold secrets)
	AllowNetwork bool          `json:"allow_network,omitempty"`
	Timeout      time.Duration `json:"timeout,omitempty"`
	Limits       Limits        `json:"limits,omitzero"`
	// Build, when set, makes the spawn build the workspace's Dockerfile and
	// boot the image instead of running Command: every build step and the
	// boot run in the sandbox, traced, and Result.Phases says how each went.
	Build *BuildSpec `json:"build,omitempty"`
}

// BuildSpec is an image build and boot inside the sandbox.
type BuildSpec struct {
	// Dockerfile is the workspace-relative path of the Dockerfile.
	Dockerfile string `json:"dockerfile"`
	// Targets are built in order: stage names, or "" for the final stage.
	Targets []string `json:"targets"`
	// Boot runs the last target's image with its entrypoint, cmd, env,
	// workdir and user, network off, until it is ready and settled, until
	// it exits, or for at most BootFor (see BootReport).
	Boot    bool          `json:"boot,omitempty"`
	BootFor time.Duration `json:"boot_for,omitempty"`
	// Settle is how long a traced boot must go without an exec, once the
	// service has answered every request and its HEALTHCHECK, before it
	// ends; zero means DefaultSettle. A shell that starts later than that
	// is not seen.
	Settle time.Duration `json:"settle,omitempty"`
	// StepTimeout bounds one build step; zero means DefaultStepTimeout. A
	// step that runs past it is stopped, and the spawn reports TimedOut
	// with the phases and the trace gathered so far.
	StepTimeout time.Duration `json:"step_timeout,omitempty"`
	// RegistryMirrors maps a registry (docker.io, gcr.io) to the host of a
	// mirror to pull base images from instead.
	RegistryMirrors map[string]string `json:"registry_mirrors,omitempty"`
	// ProbePaths are more paths to GET from inside the sandbox during a
	// traced boot, after / and the HEALTHCHECK URL's (at most
	// MaxProbePaths, each an absolute URL path of at most 256 bytes).
	ProbePaths []string `json:"probe_paths,omitempty"`
	// ReadNodeModules, after a build that succeeded, reads the last
	// target's node_modules host-side from its image, bounded, into
	// Result.NodeModules (see FileSet).
	ReadNodeModules bool `json:"read_node_modules,omitempty"`
	// Egress is what the RUN steps may reach; the zero value is offline.
	// Boots stay offline.
	Egress Egress `json:"egress,omitzero"`
	// Secrets are build secrets (RUN --mount=type=secret).
	Secrets []Secret `json:"secrets,omitempty"`
	// BootEnv are NAME=value entries the boot's environment gets on top
	// of the image's, as `docker run -e` gives them (a database URL a
	// service needs to start). The trace drops exec environments.
	BootEnv []string `json:"boot_env,omitempty"`
}

// DefaultSettle is BuildSpec.Settle when it is zero.
const DefaultSettle = 3 * time.Second

// DefaultStepTimeout is BuildSpec.StepTimeout when it is zero.
const DefaultStepTimeout = 10 * time.Minute

// Why a boot ended (BootReport.Ended).
const (
	// BootAnsweredAndSettled: the service listened, answered every
	// planned request and its HEALTHCHECK ran, then no exec happened for
	// the settle period.
	BootAnsweredAndSettled = "answered_and_settled"
	// BootSettled: the image declares no port and listened on none (a
	// worker), and no exec happened for the settle period.
	BootSettled = "settled"
	// BootExited: the container exited.
	BootExited = "exited"
	// BootMaximum: BootFor passed first.
	BootMaximum = "maximum"
)

// BootReport is how a boot went, on the boot phase.
type BootReport struct {
	// Ended is why the boot ended: one of the Boot* constants.
	Ended string `json:"ended"`
	// Port is the port the service listened on; 0 when it listened on
	// none that was looked for.
	Port int `json:"port,omitempty"`
	// Awaited are the ports the image declares (EXPOSE, the HEALTHCHECK's
	// URL), which the boot waited for; empty when it waited for any.
	Awaited []int `json:"awaited,omitempty"`
	// ToListen and ToFirstAnswer are the times from the boot's start to
	// the service listening and to its first answer; zero when it never
	// did.
	ToListen      time.Duration `json:"to_listen,omitempty"`
	ToFirstAnswer time.Duration `json:"to_first_answer,omitempty"`
}

// NeverListened says that a service listened on none of ports within d.
func NeverListened(ports []int, d time.Duration) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("never listened on %s within %s", strings.Join(s, ", "), d)
}

// MaxProbePaths bounds BuildSpec.ProbePaths.
const MaxProbePaths = 16

// Phase names.
const (
	PhaseBoot = "boot"
	// PhaseHealthcheck is the image's HEALTHCHECK command, run once in
	// the booted sandbox during the boot window.
	PhaseHealthcheck = "healthcheck"
)

// BuildPhase is the phase name of step N of a build stage:
// "build:<stage>:step N". N is buildah's STEP number within the stage (its
// FROM is step 1); stage is the stage's name, or its 0-based index when it
// has none.
func BuildPhase(stage string, step int) string {
	return fmt.Sprintf("build:%s:step %d", stage, step)
}

// PhaseResult is how one phase of a build-and-boot spawn went.
type PhaseResult struct {
	// Name is "build:<stage>" for a whole target (the stage's name, else
	// its 0-based index, as in BuildPhase), a BuildPhase for one step,
	// "pull:<reference>" for a base image pulled before the build, or
	// PhaseBoot.
	Name     string        `json:"name"`
	ExitCode int           `json:"exit_code"`
	Failed   bool          `json:"failed,omitempty"`
	TimedOut bool          `json:"timed_out,omitempty"`
	Duration time.Duration `json:"duration"`
	// OutputTail is the end of the phase's combined output, bounded.
	OutputTail string `json:"output_tail,omitempty"`
	// Image is the built image's ID, for build targets.
	Image string `json:"image,omitempty"`
	// Response is what the service answered, for a request phase.
	Response *Response `json:"response,omitempty"`
	// Boot is why and when the boot ended, for PhaseBoot when the image
	// started.
	Boot *BootReport `json:"boot,omitempty"`
}

// Response is a service's answer to a request sent during a traced boot.
type Response struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type,omitempty"`
	// BodySHA256 is the hex SHA-256 of the body.
	BodySHA256 string `json:"body_sha256,omitempty"`
	// ShapeSHA256 is the hex SHA-256 of the body with each token that
	// looks generated (8 or more of A-Z, a-z, 0-9, _ and -, with both a
	// digit and a letter, or 16 or more with both cases: a build's ID, a
	// nonce), then each run of digits left, replaced by one NUL byte,
	// read as Latin-1; "" for a body over 4 MiB. Two builds of the same
	// sources that differ only in such tokens (Next.js writes a new build
	// ID each build) or in numbers (a health endpoint's timestamp and
	// uptime) have one shape.
	ShapeSHA256 string `json:"shape_sha256,omitempty"`
}

// Validate checks the request before anything runs.
func (r *SpawnRequest) Validate() error {
	if err := r.Role.Validate(); err != nil {
		return err
	}
	if r.Build == nil && (len(r.Command) == 0 || r.Command[0] == "") {
		return fmt.Errorf("%w: empty command", ErrInvalidRequest)
	}
	if b := r.Build; b != nil {
		if b.Dockerfile == "" || strings.HasPrefix(b.Dockerfile, "/") || strings.Contains(b.Dockerfile, "..") {
			return fmt.Errorf("%w: build Dockerfile %q must be a path inside the workspace", ErrInvalidRequest, b.Dockerfile)
		}
		if len(b.Targets) == 0 {
			return fmt.Errorf("%w: build names no target", ErrInvalidRequest)
		}
		if b.BootFor < 0 || b.Settle < 0 || b.StepTimeout < 0 {
			return fmt.Errorf("%w: negative boot, settle or step time", ErrInvalidRequest)
		}
		if len(b.ProbePaths) > MaxProbePaths {
			return fmt.Errorf("%w: more than %d probe paths", ErrInvalidRequest, MaxProbePaths)
		}
		if err := b.validateEgress(); err != nil {
			return err
		}
		for _, p := range b.ProbePaths {
			if !strings.HasPrefix(p, "/") || len(p) > 256 || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return fmt.Errorf("%w: probe path %q is not an absolute URL path", ErrInvalidRequest, p)
			}
		}
	}
	if r.Workspace.Dir == "" {
		return fmt.Errorf("%w: no workspace directory", ErrInvalidRequest)
	}
	if r.Timeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrInvalidRequest)
	}
	if r.Limits.MemoryBytes < 0 || r.Limits.CPUs < 0 || r.Limits.PIDs < 0 || r.Limits.OutputBytes < 0 || r.Limits.DiskBytes < 0 {
		return fmt.Errorf("%w: negative limit", ErrInvalidRequest)
	}
	return nil
}

// Result is what a finished spawn reports. A non-zero exit is a Result, not
// an error; errors mean the sandbox itself could not do its job.
type Result struct {
	ExitCode        int           `json:"exit_code"`
	Stdout          []byte        `json:"stdout,omitempty"`
	Stderr          []byte        `json:"stderr,omitempty"`
	StdoutTruncated bool          `json:"stdout_truncated,omitempty"`
	StderrTruncated bool          `json:"stderr_truncated,omitempty"`
	Trace           []trace.Event `json:"trace,omitempty"`
	// TraceComplete is true only when tracing was asked for and no event
	// was dropped and the stream ended cleanly.
	TraceComplete bool `json:"trace_complete"`
	// TraceGaps say, for people, why the trace is not complete: what the
	// event stream lost, or where it and the backend's independent exec
	// witness disagree. Empty when TraceComplete is set.
	TraceGaps []string `json:"trace_gaps,omitempty"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	// Phases report each phase of a Build spawn, in order.
	Phases []PhaseResult `json:"phases,omitempty"`
	// NodeModules is the built image's dependency code, when
	// BuildSpec.ReadNodeModules asked for it and the build succeeded.
	NodeModules *FileSet `json:"node_modules,omitempty"`

	Backend  string        `json:"backend"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	AuditID  string        `json:"audit_id,omitempty"`

	// ImageFacts describe the last target's image of a Build spawn that
	// booted it; nil when no image was built, or none was mounted.
	ImageFacts *ImageFacts `json:"image_facts,omitempty"`
	// Egress is what a build's egress proxy saw; nil when the build was
	// offline.
	Egress *EgressReport `json:"egress,omitempty"`
}

// UnsupportedError says why a backend cannot run on this host. It matches
// ErrNotSupported.
type UnsupportedError struct {
	Backend string
	Reason  string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("sandbox backend %s is not supported here: %s", e.Backend, e.Reason)
}

// Is makes errors.Is(err, ErrNotSupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrNotSupported }
