package portfolio

import (
	"fmt"
	"slices"
	"time"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
)

// Service is one unit of work: one Dockerfile of one repository, built for
// one target. It is serialisable; Dir is where this machine holds the
// checkout.
type Service struct {
	// ID is stable across runs: the repository's label, the Dockerfile and
	// the target ("shop:services/api/Dockerfile#runtime").
	ID string `json:"id"`
	// Repo is the repository as given: a path or a git URL.
	Repo string `json:"repo"`
	// Dir is the checkout on this machine (absolute).
	Dir string `json:"dir"`
	// Context is the build context, relative to Dir ("." for the root); the
	// pipeline treats it as the repository root.
	Context string `json:"context"`
	// Dockerfile is relative to Dir, slash-separated.
	Dockerfile string `json:"dockerfile"`
	// Target is the stage that ships.
	Target string `json:"target"`
	// Why says how the Dockerfile, target and context were chosen.
	Why string `json:"why,omitempty"`
	// Skip says why the service is not judged; empty when it is.
	Skip string `json:"skip,omitempty"`
	// Fail says why the service could not be found (its repository could
	// not be cloned): it is recorded failed with this reason, and not run.
	Fail string `json:"fail,omitempty"`
	// ProbePaths are URL paths the traced boot requests, from the
	// repository's codegenie-portfolio.yaml.
	ProbePaths []string `json:"probe_paths,omitempty"`
}

// equal reports whether two services are the same unit of work.
func (s Service) equal(o Service) bool {
	return s.ID == o.ID && s.Repo == o.Repo && s.Dir == o.Dir && s.Context == o.Context && s.Dockerfile == o.Dockerfile &&
		s.Target == o.Target && s.Why == o.Why && s.Skip == o.Skip && s.Fail == o.Fail && slices.Equal(s.ProbePaths, o.ProbePaths)
}

// State is where a service is in a run.
type State uint8

// The states. The zero value is invalid.
const (
	StateInvalid State = iota
	StateQueued
	StateRunning
	StateDone
	StateFailed
	StateSkipped
)

var stateNames = [...]string{"invalid", "queued", "running", "done", "failed", "skipped"}

// States lists the valid states in display order.
var States = []State{StateQueued, StateRunning, StateDone, StateFailed, StateSkipped}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) {
	if s == StateInvalid || int(s) >= len(stateNames) {
		return nil, fmt.Errorf("encoding state: invalid state %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a state's name and rejects any other.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if i > 0 && n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("unknown state %q", b)
}

// Tier is the stage of the pipeline a service is in.
type Tier string

// The tiers: static probes only, then the sandboxed build and boot.
const (
	TierStatic  Tier = "static"
	TierSandbox Tier = "sandbox"
)

// Record is a service's durable state: what the store holds per service.
type Record struct {
	Service Service `json:"service"`
	// Digest is the service's inputs digest when it was last queued; a
	// service whose digest changes runs again.
	Digest string `json:"digest"`
	State  State  `json:"state"`
	// Tier is the tier the service is in (queued or running) or that
	// gave its result (done).
	Tier Tier `json:"tier,omitempty"`
	// Attempts counts the runs started for this digest; Runs counts the
	// pipeline runs that finished (static and sandbox tiers each count).
	Attempts int `json:"attempts"`
	Runs     int `json:"runs"`
	// Reason says why a service failed or was skipped.
	Reason string  `json:"reason,omitempty"`
	Result *Result `json:"result,omitempty"`
	// Migration is the dry-run migration (--migrate) of a service whose
	// verdict is ready_after_rewrite.
	Migration *Migration `json:"migration,omitempty"`
	Timings   Timings    `json:"timings"`
}

// Migration is a service's dry-run migration: the rewrite as a patch, and
// the gates that prove it (none when they did not run).
type Migration struct {
	// Patch is the unified diff of the rewrite and its generated files.
	Patch string `json:"patch,omitempty"`
	// Migrated is true when the rewrite changes something and every gate
	// passed; Proven when the gates ran and passed.
	Migrated bool `json:"migrated"`
	Proven   bool `json:"proven"`
	// Refused are the blockers the recipe could not remove.
	Refused []string      `json:"refused,omitempty"`
	Gates   []GateOutcome `json:"gates,omitempty"`
	// Images are the original and the rewritten image's facts, from the
	// gates' builds; nil when the gates did not run.
	Images *report.ImageChange `json:"images,omitempty"`
	// Error says why the migration could not run.
	Error string `json:"error,omitempty"`
	// MS is its wall time in milliseconds.
	MS float64 `json:"ms"`
}

// GateOutcome is one gate's result.
type GateOutcome struct {
	Gate   string `json:"gate"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// Timings are a service's wall-clock times.
type Timings struct {
	Queued   time.Time `json:"queued,omitzero"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// StaticMS and SandboxMS are each tier's last run, in milliseconds.
	StaticMS  float64 `json:"static_ms,omitempty"`
	SandboxMS float64 `json:"sandbox_ms,omitempty"`
}

// Result is a judged service's answer.
type Result struct {
	Verdict   probe.Verdict   `json:"verdict"`
	Confirmed bool            `json:"confirmed"`
	Reason    string          `json:"reason,omitempty"`
	Image     probe.ImageRef  `json:"image"`
	Blockers  []probe.Blocker `json:"blockers,omitempty"`
	Notes     []probe.Note    `json:"notes,omitempty"`
	// Probes and CacheHits count the pipeline's probes and those answered
	// from the cache.
	Probes    int `json:"probes"`
	CacheHits int `json:"cache_hits"`
}
