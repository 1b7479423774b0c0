package runsc

import (
	"context"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// A traced boot ends when the service is ready and has settled, not after
// a fixed window: a fast service waits for nothing, and a slow one (npm
// start under gVisor on a busy machine) is waited for up to BootFor.
//
// Ready means: the request client found the service listening and every
// planned request has its answer (or gave up), and the HEALTHCHECK, when
// the image has one, has exited. Settled means: then no exec, successful
// or attempted, was seen for the settle period. The settle clock restarts
// at every exec the live trace shows, so a shell that a request or a
// timer starts within the period is traced, and so are its children.
//
// An image that declares no port (no EXPOSE, no HEALTHCHECK URL), or has
// no node for the request client, may be a worker: it is settled once no
// exec was seen for the settle period and it listens on no port; when it
// does listen, its requests are awaited as for any service.
//
// The healthcheck runs once the requests are done, or, for an image with
// no declared port, once the boot has gone a settle period without an
// exec, and at the latest half-way to BootFor, so that a service that
// never listens still has its HEALTHCHECK traced.

// pollReady is how often the boot checks whether it has settled: the
// granularity of the settle clock, not a deadline.
const pollReady = 50 * time.Millisecond

// activity is when the boot container last execed, as the live trace
// shows it. It is safe for concurrent use: the trace's reader calls
// observe.
type activity struct {
	mu   sync.Mutex
	on   bool
	last time.Time
}

// observe notes an exec or exec attempt once the boot has started; the
// build's steps before it do not count.
func (a *activity) observe(e trace.Event) {
	if a == nil || (e.Kind != trace.KindExec && e.Kind != trace.KindExecAttempt) {
		return
	}
	a.mu.Lock()
	if a.on {
		a.last = time.Now()
	}
	a.mu.Unlock()
}

// start begins counting at t.
func (a *activity) start(t time.Time) {
	a.mu.Lock()
	a.on, a.last = true, t
	a.mu.Unlock()
}

// lastExec is when the boot last execed, or its start.
func (a *activity) lastExec() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// readiness drives one traced boot: it runs the requests and the
// healthcheck and closes ready, with why set, when the boot has settled.
type readiness struct {
	// requests runs rr's requests, and health hc's command, until
	// deadline at the latest (Backend.exercise, Backend.runHealthcheck).
	requests func(ctx context.Context, deadline time.Time)
	health   func(ctx context.Context, deadline time.Time)
	rr       *requestRun
	hc       *healthRun
	act      *activity
	settle   time.Duration
	max      time.Duration
	since    time.Time

	ready chan struct{}
	why   string // set before ready closes
}

// declaresPort reports whether the boot waits for a port: the image has
// node for the request client and declares one (EXPOSE or the
// HEALTHCHECK's URL).
func (r *readiness) declaresPort() bool { return r.rr != nil && len(r.rr.plan.Ports) > 0 }

// run drives the boot until it settles or done closes (the container
// exited, or was stopped). It returns once the requests and the
// healthcheck it started have returned.
func (r *readiness) run(ctx context.Context, done <-chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	reqDone := make(chan struct{})
	var answeredAt time.Time
	if r.rr != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(reqDone)
			r.requests(ctx, r.since.Add(r.max))
		}()
	} else {
		close(reqDone)
	}
	var hcDone chan struct{}
	var hcAt time.Time
	startHealth := func() {
		hcDone = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(hcDone)
			r.health(ctx, r.since.Add(r.max))
		}()
	}
	tick := time.NewTicker(pollReady)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case now := <-tick.C:
			answered := closed(reqDone)
			if answered && answeredAt.IsZero() {
				answeredAt = now
			}
			quiet := now.Sub(r.act.lastExec())
			if r.hc != nil && hcDone == nil {
				worker := !r.declaresPort() && !r.rr.listened() && quiet >= r.settle
				if answered || worker || now.Sub(r.since) >= r.max/2 {
					startHealth()
				}
			}
			health := r.hc == nil || (hcDone != nil && closed(hcDone))
			if health && hcDone != nil && hcAt.IsZero() {
				hcAt = now
			}
			if !health {
				continue
			}
			// An image that declares no port and has listened on none may
			// still be loading its code, which runs no exec: the request
			// client has nothing to wait for and returns at once, so
			// "answered" says nothing about it.
			unproven := !r.declaresPort() && !r.rr.listened() && now.Sub(r.since) < r.noPortMin()
			switch {
			case answered && now.Sub(latest(answeredAt, hcAt, r.act.lastExec())) >= r.settle && !unproven:
				r.why = sandbox.BootAnsweredAndSettled
				if !r.rr.listened() {
					r.why = sandbox.BootSettled
				}
			case !r.declaresPort() && !r.rr.listened() && now.Sub(latest(hcAt, r.act.lastExec())) >= r.settle &&
				now.Sub(r.since) >= r.noPortMin():
				r.why = sandbox.BootSettled
			default:
				continue
			}
			close(r.ready)
			return
		}
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// latest is the latest of ts.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// report is the boot's BootReport, once it has ended: exited is whether
// the container exited by itself, timedOut whether BootFor passed.
func (r *readiness) report(exited, timedOut bool) *sandbox.BootReport {
	br := &sandbox.BootReport{Ended: sandbox.BootExited}
	switch {
	case closed(r.ready):
		br.Ended = r.why
	case timedOut:
		br.Ended = sandbox.BootMaximum
	case !exited:
		br.Ended = sandbox.BootMaximum
	}
	if r.rr == nil {
		return br
	}
	br.Awaited = r.rr.plan.Ports
	if port, at := r.rr.listenedAt(); port != 0 {
		br.Port = port
		br.ToListen = max(time.UnixMilli(at).Sub(r.since), 0)
	}
	for _, d := range r.rr.done {
		if d.Status != 0 {
			br.ToFirstAnswer = max(time.UnixMilli(d.End).Sub(r.since), 0)
			break
		}
	}
	return br
}

// neverListened is the note for a boot that waited in vain for its
// declared port, or "" when it did not.
func (r *readiness) neverListened(br *sandbox.BootReport) string {
	if br.Ended != sandbox.BootMaximum || !r.declaresPort() || br.Port != 0 {
		return ""
	}
	return "codegenie: " + sandbox.NeverListened(r.rr.plan.Ports, r.max) + "\n"
}

// noPortFactor times the settle period is the least a boot of an image
// that declares no port runs before it may end as settled: such an image
// may be a worker, or a service still loading its code (node runs no exec
// while it requires modules) that will listen, or crash, a few seconds
// later. Ended at the first quiet settle period, two real services of the
// issue 20 scorecard were proven though both crash soon after.
const noPortFactor = 4

// noPortMin is that least run, at most half the boot's maximum.
func (r *readiness) noPortMin() time.Duration {
	return min(noPortFactor*r.settle, r.max/2)
}
