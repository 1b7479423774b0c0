package fleet

import (
	"context"
	"errors"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/worker"

	"github.com/codegenie/codegenie/internal/portfolio"
)

// NoticeKind says what a Notice is about.
type NoticeKind uint8

// The kinds of Notice.
const (
	NoticeInvalid NoticeKind = iota
	// NoticeNotAnswering: the workflow cannot be read now (Err says why);
	// Follow keeps trying.
	NoticeNotAnswering
	// NoticeAnswersAgain: the workflow answers again after Down.
	NoticeAnswersAgain
	// NoticeNoPoller: Tier has work waiting and no worker polls its task
	// Queue, so its services wait.
	NoticeNoPoller
)

// Notice is something a person following a run should know that is not a
// service's state: the server is down, or no worker polls a queue.
type Notice struct {
	Kind  NoticeKind
	Err   error
	Down  time.Duration
	Queue string
	Tier  portfolio.Tier
}

// FollowOptions are Follow's callbacks and intervals. Every field is
// optional.
type FollowOptions struct {
	// Observe gets each service's record each time its state changes: the
	// stored record once it is done or failed.
	Observe func(portfolio.Record)
	// Notify gets each Notice.
	Notify func(Notice)
	// Poll is how often the workflow is read (default 300 ms); IdleCheck
	// how often the task queues are checked for pollers (default 5 s).
	Poll, IdleCheck time.Duration
}

// Follow reads a workflow until it closes, reporting each service's state
// changes to o.Observe, and returns its last snapshot. A server that does
// not answer (a restart) is waited for, and said so once to o.Notify; so
// is a tier whose queue no worker polls. It returns ctx's error when ctx
// ends first, and leaves the workflow running.
func (c *Client) Follow(ctx context.Context, id string, o FollowOptions) (*Snapshot, error) {
	if o.Poll <= 0 {
		o.Poll = 300 * time.Millisecond
	}
	if o.IdleCheck <= 0 {
		o.IdleCheck = 5 * time.Second
	}
	notify := func(n Notice) {
		if o.Notify != nil {
			o.Notify(n)
		}
	}
	var seen []portfolio.State
	var m *Manifest
	down := time.Time{}
	idle := &idleQueues{every: o.IdleCheck, warned: map[string]bool{}}
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		snap, err := c.Read(ctx, id)
		switch {
		case err == nil:
			if !down.IsZero() {
				notify(Notice{Kind: NoticeAnswersAgain, Down: time.Since(down)})
				down = time.Time{}
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, ErrNotAnswering):
			return nil, err
		default:
			if down.IsZero() {
				down = time.Now()
				notify(Notice{Kind: NoticeNotAnswering, Err: err})
			}
			idle.check(ctx, c, nil, notify)
		}
		if err == nil {
			if m == nil {
				if m, err = loadManifest(ctx, c.Store, snap.Manifest); err != nil {
					return nil, err
				}
				seen = make([]portfolio.State, len(m.Services))
			}
			if err := c.observe(ctx, m, snap, seen, o.Observe); err != nil {
				return nil, err
			}
			idle.check(ctx, c, snap, notify)
			if snap.Closed {
				return snap, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// observe reports the services whose state changed since seen.
func (c *Client) observe(ctx context.Context, m *Manifest, snap *Snapshot, seen []portfolio.State, fn func(portfolio.Record)) error {
	if fn == nil {
		fn = func(portfolio.Record) {}
	}
	for i, o := range snap.Outcomes {
		if i >= len(seen) || o.State == seen[i] {
			continue
		}
		final := o.State == portfolio.StateDone || o.State == portfolio.StateFailed
		rec := portfolio.Record{Service: m.Services[i], State: o.State, Tier: o.Tier}
		if final {
			var err error
			if rec, err = record(ctx, c.Store, m, i, o); err != nil {
				return err
			}
			if seen[i] != portfolio.StateRunning {
				// Polling missed its running state.
				fn(portfolio.Record{Service: m.Services[i], State: portfolio.StateRunning, Tier: o.Tier})
			}
		}
		fn(rec)
		seen[i] = o.State
	}
	return nil
}

// idleQueues notices, once per queue, when a tier has work waiting and no
// worker polls its task queue: a portfolio would otherwise wait silently.
type idleQueues struct {
	every  time.Duration
	last   time.Time
	warned map[string]bool
}

func (q *idleQueues) check(ctx context.Context, c *Client, snap *Snapshot, notify func(Notice)) {
	if time.Since(q.last) < q.every {
		return
	}
	q.last = time.Now()
	waiting := map[portfolio.Tier]bool{portfolio.TierStatic: true} // the workflow's own tasks
	if snap != nil {
		for _, o := range snap.Outcomes {
			if o.State == portfolio.StateRunning {
				waiting[o.Tier] = true
			}
		}
	}
	for tier := range waiting {
		queue := Queue(tier)
		if q.warned[queue] {
			continue
		}
		kind := enumspb.TASK_QUEUE_TYPE_ACTIVITY
		if tier == portfolio.TierStatic {
			kind = enumspb.TASK_QUEUE_TYPE_WORKFLOW
		}
		resp, err := c.Temporal.DescribeTaskQueue(ctx, queue, kind)
		if err != nil {
			continue
		}
		// The server lists pollers seen in the last minutes; a live one
		// polls at least once a long poll (about a minute).
		live := slices.ContainsFunc(resp.GetPollers(), func(p *taskqueuepb.PollerInfo) bool {
			return time.Since(p.GetLastAccessTime().AsTime()) < 2*time.Minute
		})
		if live {
			continue
		}
		q.warned[queue] = true
		notify(Notice{Kind: NoticeNoPoller, Queue: queue, Tier: tier})
	}
}

// WorkerOptions bound a worker's activities.
type WorkerOptions struct {
	// Parallel is the most activities at a time (at least 1).
	Parallel int
	// Drain is how long running activities may finish once Stop is
	// called; then they are canceled and Temporal retries them elsewhere.
	Drain time.Duration
}

// NewWorker returns a worker of tier's task queue with a's activities (and,
// for the static tier, the workflow) registered. Start it, and Stop it to
// drain.
func (c *Client) NewWorker(tier portfolio.Tier, a *Activities, o WorkerOptions) worker.Worker {
	w := worker.New(c.Temporal, Queue(tier), worker.Options{MaxConcurrentActivityExecutionSize: max(1, o.Parallel), WorkerStopTimeout: o.Drain})
	Register(w, tier, a)
	return w
}
