package fleet

import (
	"github.com/codegenie/codegenie/internal/sandbox"

	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
)

// The names Temporal knows this package's workflow, query and activities
// by, and the task queues of the two tiers.
const (
	WorkflowName    = "codegenie.portfolio"
	QueryProgress   = "progress"
	ActivityStatic  = "codegenie.static"
	ActivitySandbox = "codegenie.sandbox"
	ActivitySave    = "codegenie.save_batch"

	QueueStatic  = "codegenie-static"
	QueueSandbox = "codegenie-sandbox"
)

// Defaults of an Input's bounds, and the largest Batch: a batch's outcome
// list is one activity's input (at most about 1 KB per service, against
// Temporal's 2 MB payload limit).
const (
	DefaultConcurrency = 64
	DefaultBatch       = 500
	MaxBatch           = 2000
)

// Settings is a portfolio's pipeline configuration, which every worker
// applies: the local mode's flags that change an answer.
type Settings struct {
	// Version is the client's; a worker of another version warns.
	Version        string        `json:"version"`
	LightTimeout   time.Duration `json:"light_timeout"`
	HeavyTimeout   time.Duration `json:"heavy_timeout"`
	BootFor        time.Duration `json:"boot_for"`
	Settle         time.Duration `json:"settle,omitempty"`
	StepTimeout    time.Duration `json:"step_timeout,omitempty"`
	ServiceTimeout time.Duration `json:"service_timeout"`
	// Mirrors is --registry-mirror as given.
	Mirrors string `json:"mirrors,omitempty"`
	NoCache bool   `json:"no_cache,omitempty"`
	Migrate bool   `json:"migrate,omitempty"`
	// Deps is --deps: "lockfile" or "none".
	Deps string `json:"deps,omitempty"`
	// BuildEgress, BuildPrivate and BuildCA are --build-egress,
	// --build-egress-private and --build-ca's bundle.
	BuildEgress  []string `json:"build_egress,omitempty"`
	BuildPrivate bool     `json:"build_private,omitempty"`
	BuildCA      []byte   `json:"build_ca,omitempty"`
	// BootEgress is --boot-egress.
	BootEgress []string `json:"boot_egress,omitempty"`
	// BuildSecrets are --build-secret, for a local run only: they never
	// travel in a workflow's history.
	BuildSecrets []sandbox.Secret `json:"-"`
	// BootEnv is --boot-env, for a local run only, like BuildSecrets.
	BootEnv []string `json:"-"`
}

// Timeouts are an activity's timeouts and retry bound in one tier.
type Timeouts struct {
	// Heartbeat is how long a running activity may go without a heartbeat
	// before Temporal retries it elsewhere: a dead worker is found by it.
	Heartbeat time.Duration `json:"heartbeat"`
	// StartToClose bounds one attempt.
	StartToClose time.Duration `json:"start_to_close"`
	// Attempts bounds the attempts (the first included).
	Attempts int32 `json:"attempts"`
}

// DefaultStatic and DefaultSandbox are the tiers' timeouts: seconds for the
// static tier, minutes for the sandbox tier.
var (
	DefaultStatic  = Timeouts{Heartbeat: 10 * time.Second, StartToClose: 10 * time.Minute, Attempts: 5}
	DefaultSandbox = Timeouts{Heartbeat: time.Minute, StartToClose: 45 * time.Minute, Attempts: 3}
)

// Input is the workflow's input: the portfolio by reference, its settings,
// and, across continue-as-new, where it is.
type Input struct {
	// Manifest is the digest of the Manifest in the result store.
	Manifest string `json:"manifest"`
	// Count is the number of services; Skipped the indexes of those that
	// are not judged (their reason is in the manifest).
	Count   int   `json:"count"`
	Skipped []int `json:"skipped,omitempty"`
	// Sandbox runs the sandbox tier after the static one.
	Sandbox     bool     `json:"sandbox,omitempty"`
	RetryFailed bool     `json:"retry_failed,omitempty"`
	Settings    Settings `json:"settings"`
	// Concurrency bounds the services in flight; Batch the services one
	// workflow run handles before it continues as new.
	Concurrency int      `json:"concurrency"`
	Batch       int      `json:"batch"`
	Static      Timeouts `json:"static"`
	SandboxT    Timeouts `json:"sandbox_timeouts"`
	// Next is the first service this run handles; Batches the digests of
	// the outcome lists of the runs before it (Batch services each).
	Next    int      `json:"next,omitempty"`
	Batches []string `json:"batches,omitempty"`
}

// Result is the workflow's result: the digests of its outcome lists, in
// service order.
type Result struct {
	Manifest string   `json:"manifest"`
	Count    int      `json:"count"`
	Batches  []string `json:"batches"`
}

// Progress is what the progress query returns: the finished runs' outcome
// lists by digest, and the current run's outcomes so far.
type Progress struct {
	Manifest string    `json:"manifest"`
	Count    int       `json:"count"`
	Batches  []string  `json:"batches,omitempty"`
	Base     int       `json:"base"`
	Current  []Outcome `json:"current"`
}

// Ref is a value carried in a workflow: inline when small, else the digest
// of its bytes in the result store.
type Ref struct {
	Digest string `json:"digest,omitempty"`
	Inline []byte `json:"inline,omitempty"`
}

// InlineLimit is the largest value a Ref carries inline.
const InlineLimit = 512

// IsZero reports whether r holds nothing.
func (r Ref) IsZero() bool { return r.Digest == "" && r.Inline == nil }

// Outcome is one service's state in a workflow: small, with its record and
// SARIF log by reference.
type Outcome struct {
	State    portfolio.State `json:"state,omitzero"`
	Tier     portfolio.Tier  `json:"tier,omitempty"`
	Verdict  probe.Verdict   `json:"verdict,omitempty"`
	Blockers int             `json:"blockers,omitempty"`
	// Reason is the start of a failure's reason; the record has it whole.
	Reason string `json:"reason,omitempty"`
	Record Ref    `json:"record,omitzero"`
	SARIF  Ref    `json:"sarif,omitzero"`
	// Reused is true when the activity found its result already bound:
	// no work was done.
	Reused bool `json:"reused,omitempty"`
}

// TierInput is one activity's input: a service by its index in the
// manifest, and the tier to run it in.
type TierInput struct {
	Manifest string         `json:"manifest"`
	Index    int            `json:"index"`
	Tier     portfolio.Tier `json:"tier"`
	// Last says whether the tier is the service's last (then it is done,
	// and migrated with Settings.Migrate).
	Last bool `json:"last"`
	// Prev is the static tier's record, for the sandbox tier.
	Prev        Ref      `json:"prev,omitzero"`
	Settings    Settings `json:"settings"`
	RetryFailed bool     `json:"retry_failed,omitempty"`
}

func (in *Input) defaults() {
	if in.Concurrency <= 0 {
		in.Concurrency = DefaultConcurrency
	}
	if in.Batch <= 0 {
		in.Batch = DefaultBatch
	}
	if in.Static.Heartbeat <= 0 {
		in.Static = DefaultStatic
	}
	if in.SandboxT.Heartbeat <= 0 {
		in.SandboxT = DefaultSandbox
	}
}

func activityOptions(queue string, t Timeouts) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: t.StartToClose,
		HeartbeatTimeout:    t.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        t.Attempts,
			NonRetryableErrorTypes: []string{errBadInput},
		},
	}
}

// errBadInput is the error type of an activity input that no retry can
// fix (a manifest that does not decode, an index out of range).
const errBadInput = "codegenie.bad_input"

// Portfolio is the workflow: it runs every judged service through the
// static tier, then (with Sandbox) the sandbox tier, at most Concurrency
// services at a time, and continues as new every Batch services so that
// its history stays bounded. It is deterministic: its only inputs are
// Input and its activities' results.
func Portfolio(ctx workflow.Context, in Input) (Result, error) {
	in.defaults()
	if in.Next < 0 || in.Next > in.Count {
		return Result{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("next service %d is outside 0..%d", in.Next, in.Count), errBadInput, nil)
	}
	end := min(in.Next+in.Batch, in.Count)
	outs := make([]Outcome, end-in.Next)
	for i := range outs {
		outs[i].State = portfolio.StateQueued
	}
	for _, i := range in.Skipped {
		if i >= in.Next && i < end {
			outs[i-in.Next].State = portfolio.StateSkipped
		}
	}
	// The handler keeps this run's view: the last task appends this run's
	// batch to in.Batches and moves in.Next, and a query of the closed run
	// would otherwise list this run's outcomes twice, shifted onto the
	// next run's services.
	batches, base := in.Batches, in.Next
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (Progress, error) {
		return Progress{Manifest: in.Manifest, Count: in.Count, Batches: batches, Base: base, Current: outs}, nil
	}); err != nil {
		return Result{}, err
	}
	sel := workflow.NewSelector(ctx)
	inFlight := 0
	for i := in.Next; i < end; i++ {
		if outs[i-in.Next].State == portfolio.StateSkipped {
			continue
		}
		for inFlight >= in.Concurrency {
			sel.Select(ctx)
		}
		inFlight++
		slot := &outs[i-in.Next]
		f, set := workflow.NewFuture(ctx)
		workflow.Go(ctx, func(ctx workflow.Context) {
			runService(ctx, in, i, slot)
			set.Set(nil, nil)
		})
		sel.AddFuture(f, func(workflow.Future) { inFlight-- })
	}
	for inFlight > 0 {
		sel.Select(ctx)
	}

	var digest string
	// Saving is retried until the store answers: giving up would lose the
	// batch's finished work.
	save := activityOptions(QueueStatic, Timeouts{StartToClose: time.Minute})
	save.HeartbeatTimeout = 0
	saveCtx := workflow.WithActivityOptions(ctx, save)
	if err := workflow.ExecuteActivity(saveCtx, ActivitySave, outs).Get(ctx, &digest); err != nil {
		return Result{}, fmt.Errorf("saving the outcomes of services %d..%d: %w", in.Next, end-1, err)
	}
	in.Batches = append(in.Batches, digest)
	if end < in.Count {
		in.Next = end
		return Result{}, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
	}
	return Result{Manifest: in.Manifest, Count: in.Count, Batches: in.Batches}, nil
}

// runService runs service i through its tiers, keeping its outcome in
// slot as it goes. An activity that fails after its retries leaves the
// service failed with the error as its reason.
func runService(ctx workflow.Context, in Input, i int, slot *Outcome) {
	staticCtx := workflow.WithActivityOptions(ctx, activityOptions(QueueStatic, in.Static))
	sandboxCtx := workflow.WithActivityOptions(ctx, activityOptions(QueueSandbox, in.SandboxT))
	ti := TierInput{Manifest: in.Manifest, Index: i, Tier: portfolio.TierStatic, Last: !in.Sandbox, Settings: in.Settings, RetryFailed: in.RetryFailed}
	slot.State, slot.Tier = portfolio.StateRunning, portfolio.TierStatic
	var o Outcome
	if err := workflow.ExecuteActivity(staticCtx, ActivityStatic, ti).Get(staticCtx, &o); err != nil {
		*slot = failedOutcome(portfolio.TierStatic, err)
		return
	}
	*slot = o
	if !in.Sandbox || o.State != portfolio.StateQueued {
		return
	}
	ti.Tier, ti.Last, ti.Prev = portfolio.TierSandbox, true, o.Record
	slot.State, slot.Tier = portfolio.StateRunning, portfolio.TierSandbox
	var so Outcome
	if err := workflow.ExecuteActivity(sandboxCtx, ActivitySandbox, ti).Get(sandboxCtx, &so); err != nil {
		f := failedOutcome(portfolio.TierSandbox, err)
		f.Record = o.Record
		*slot = f
		return
	}
	*slot = so
}

// failedOutcome is a service whose activity failed for good. The reason
// leads with the error's type (codegenie.git_unreachable), which shorten
// would otherwise cut off behind a long message.
func failedOutcome(tier portfolio.Tier, err error) Outcome {
	var ae *temporal.ApplicationError
	msg := err.Error()
	if errors.As(err, &ae) {
		msg = ae.Message()
		if ae.Type() != "" {
			msg = ae.Type() + ": " + msg
		}
		if c := errors.Unwrap(ae); c != nil {
			msg += ": " + c.Error()
		}
	}
	return Outcome{State: portfolio.StateFailed, Tier: tier, Reason: shorten(fmt.Sprintf("the %s activity failed after its retries: %s", tier, msg))}
}

// shorten keeps the start of a reason for the workflow's history.
func shorten(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
