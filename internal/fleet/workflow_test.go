package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
)

// fakeTiers are activities for the workflow tests: each records its calls
// and the most services in flight at once.
type fakeTiers struct {
	mu       sync.Mutex
	calls    map[string]int // "tier/index" → calls
	inFlight atomic.Int32
	maxSeen  atomic.Int32
	batches  [][]Outcome
	// fail, when set, makes an attempt fail.
	fail func(in TierInput, attempt int32) error
	// meet, when set, holds each of the first meet activities until meet
	// of them run at once, so that the fan-out shows whatever the speed
	// of the machine. arrived counts them, and met closes when they have.
	meet    int
	arrived int
	met     chan struct{}
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

func (f *fakeTiers) run(ctx context.Context, in TierInput) (Outcome, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxSeen.Load()
		if n <= m || f.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[fmt.Sprintf("%s/%d", in.Tier, in.Index)]++
	hold := f.arrived < f.meet
	if hold {
		if f.met == nil {
			f.met = make(chan struct{})
		}
		if f.arrived++; f.arrived == f.meet {
			close(f.met)
		}
	}
	met := f.met
	f.mu.Unlock()
	if hold {
		select {
		case <-met:
		case <-time.After(waitLimit):
			return Outcome{}, fmt.Errorf("waited %v for %d activities to run at once", waitLimit, f.meet)
		case <-ctx.Done():
			return Outcome{}, ctx.Err()
		}
	}
	if f.fail != nil {
		if err := f.fail(in, activity.GetInfo(ctx).Attempt); err != nil {
			return Outcome{}, err
		}
	}
	if !in.Last {
		return Outcome{State: portfolio.StateQueued, Tier: portfolio.TierSandbox, Record: Ref{Inline: []byte(`{}`)}}, nil
	}
	return Outcome{State: portfolio.StateDone, Tier: in.Tier, Verdict: probe.Ready}, nil
}

func (f *fakeTiers) save(_ context.Context, outs []Outcome) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, outs)
	return fmt.Sprintf("sha256:%064x", len(f.batches)), nil
}

func (f *fakeTiers) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Portfolio, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: ActivityStatic})
	env.RegisterActivityWithOptions(f.run, activity.RegisterOptions{Name: ActivitySandbox})
	env.RegisterActivityWithOptions(f.save, activity.RegisterOptions{Name: ActivitySave})
	return env
}

func (f *fakeTiers) count(tier portfolio.Tier) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := range 1000 {
		n += f.calls[fmt.Sprintf("%s/%d", tier, i)]
	}
	return n
}

func TestWorkflowBoundsTheFanOut(t *testing.T) {
	f := &fakeTiers{meet: 4} // the bound: the first four meet, and no fifth may start meanwhile
	env := f.env(t)
	in := Input{Manifest: "m", Count: 40, Skipped: []int{5, 17}, Sandbox: true, Concurrency: 4}
	env.ExecuteWorkflow(WorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if got := f.maxSeen.Load(); got != 4 {
		t.Errorf("at most %d services ran at once, want the bound 4", got)
	}
	if f.count(portfolio.TierStatic) != 38 || f.count(portfolio.TierSandbox) != 38 {
		t.Errorf("static ran %d times and sandbox %d, want 38 each (40 services, 2 skipped)", f.count(portfolio.TierStatic), f.count(portfolio.TierSandbox))
	}
	if len(res.Batches) != 1 || len(f.batches) != 1 || len(f.batches[0]) != 40 {
		t.Fatalf("result %+v with %d saved batches, want one batch of 40", res, len(f.batches))
	}
	for i, o := range f.batches[0] {
		want := portfolio.StateDone
		if i == 5 || i == 17 {
			want = portfolio.StateSkipped
		}
		if o.State != want {
			t.Errorf("service %d: %s, want %s", i, o.State, want)
		}
	}
}

func TestWorkflowRetriesThenFails(t *testing.T) {
	f := &fakeTiers{fail: func(in TierInput, attempt int32) error {
		switch {
		case in.Index == 2 && attempt == 1:
			return errors.New("worker lost its disk")
		case in.Index == 3:
			return errors.New("always broken")
		case in.Index == 4:
			return badInput("no retry fixes this")
		}
		return nil
	}}
	env := f.env(t)
	in := Input{Manifest: "m", Count: 6, Static: Timeouts{Heartbeat: time.Second, StartToClose: time.Minute, Attempts: 3}}
	env.ExecuteWorkflow(WorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	outs := f.batches[0]
	if outs[2].State != portfolio.StateDone || f.calls["static/2"] != 2 {
		t.Errorf("service 2 failed once: %+v after %d calls, want done after 2", outs[2], f.calls["static/2"])
	}
	if outs[3].State != portfolio.StateFailed || f.calls["static/3"] != 3 {
		t.Errorf("service 3 always fails: %+v after %d calls, want failed after the 3 attempts", outs[3], f.calls["static/3"])
	}
	if outs[4].State != portfolio.StateFailed || f.calls["static/4"] != 1 {
		t.Errorf("service 4's error is not retryable: %+v after %d calls, want failed after 1", outs[4], f.calls["static/4"])
	}
	for _, i := range []int{3, 4} {
		if outs[i].Reason == "" {
			t.Errorf("service %d failed with no reason", i)
		}
	}
}

// TestWorkflowContinuesAsNew runs a portfolio larger than a batch: each run
// hands the next its position and the digests of the outcome lists so far,
// and the last returns them all.
func TestWorkflowContinuesAsNew(t *testing.T) {
	f := &fakeTiers{}
	in := Input{Manifest: "m", Count: 10, Batch: 4, Skipped: []int{9}}
	runs := 0
	var res Result
	for {
		runs++
		env := f.env(t)
		env.ExecuteWorkflow(WorkflowName, in)
		err := env.GetWorkflowError()
		var cont *workflow.ContinueAsNewError
		if errors.As(err, &cont) {
			if cont.WorkflowType.Name != WorkflowName {
				t.Fatalf("continued as %q", cont.WorkflowType.Name)
			}
			var next Input
			if err := converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next); err != nil {
				t.Fatal(err)
			}
			if next.Next != min(4*runs, 10) || len(next.Batches) != runs {
				t.Fatalf("run %d continued at %d with %d batches, want %d and %d", runs, next.Next, len(next.Batches), 4*runs, runs)
			}
			in = next
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		break
	}
	if runs != 3 || len(res.Batches) != 3 || res.Count != 10 {
		t.Fatalf("%d runs, result %+v; want 3 runs and 3 batches", runs, res)
	}
	sizes := []int{len(f.batches[0]), len(f.batches[1]), len(f.batches[2])}
	if sizes[0] != 4 || sizes[1] != 4 || sizes[2] != 2 || f.batches[2][1].State != portfolio.StateSkipped {
		t.Errorf("batch sizes %v (last %+v), want 4, 4, 2 with the last service skipped", sizes, f.batches[2])
	}
	if f.count(portfolio.TierStatic) != 9 {
		t.Errorf("static ran %d times, want 9: each judged service once across the runs", f.count(portfolio.TierStatic))
	}
}

// TestWorkflowAnswersProgress queries a run midway: the outcomes so far,
// with the running services marked.
func TestWorkflowAnswersProgress(t *testing.T) {
	f := &fakeTiers{}
	env := f.env(t)
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryProgress)
		if err != nil {
			t.Error(err)
			return
		}
		var p Progress
		if err := v.Get(&p); err != nil {
			t.Error(err)
			return
		}
		if p.Manifest != "m" || p.Count != 3 || len(p.Current) != 3 {
			t.Errorf("progress %+v", p)
		}
	}, time.Millisecond)
	env.ExecuteWorkflow(WorkflowName, Input{Manifest: "m", Count: 3})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
}
