package runsc

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// These tests drive readiness with fake requests and healthchecks. They
// assert on what happened in which order, never on how long it took: the
// settle periods are short only so that the tests end soon.

// listenAndAnswer is a request client that finds the service on port and
// gets an answer to each planned path.
func listenAndAnswer(rr *requestRun, port int) func(context.Context, time.Time) {
	return func(context.Context, time.Time) {
		now := time.Now().UnixMilli()
		rr.line([]byte(`{"listen":` + itoa(port) + `,"at":` + itoa64(now) + `}`))
		for _, p := range rr.plan.Paths {
			rr.line([]byte(`{"path":"` + p + `","port":` + itoa(port) + `,"start":` + itoa64(now) + `,"end":` + itoa64(now+1) + `,"status":200}`))
		}
	}
}

// silent is a request client that never finds the service listening.
func silent(ctx context.Context, deadline time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(deadline)):
	}
}

func itoa(v int) string     { return strconv.Itoa(v) }
func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

func newReadiness(rr *requestRun, hc *healthRun, settle, max time.Duration) *readiness {
	r := &readiness{rr: rr, hc: hc, act: &activity{}, settle: settle, max: max, ready: make(chan struct{}), since: time.Now()}
	r.act.start(r.since)
	r.health = func(context.Context, time.Time) { hc.phase = sandbox.PhaseResult{Name: sandbox.PhaseHealthcheck} }
	return r
}

// drive runs r until it settles or, failing that, until its maximum.
func drive(t *testing.T, r *readiness) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		select {
		case <-r.ready:
		case <-time.After(r.max):
			close(done)
		}
	}()
	r.run(t.Context(), done)
}

func TestReadinessAnsweredAndSettled(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Ports: []int{8080}, Paths: []string{"/", "/healthz"}}}
	hc := &healthRun{}
	r := newReadiness(rr, hc, 20*time.Millisecond, 10*time.Minute)
	var answered atomic.Bool
	base := listenAndAnswer(rr, 8080)
	r.requests = func(ctx context.Context, d time.Time) { base(ctx, d); answered.Store(true) }
	r.health = func(context.Context, time.Time) {
		if !answered.Load() {
			t.Error("the healthcheck ran before the requests were answered")
		}
		hc.phase = sandbox.PhaseResult{Name: sandbox.PhaseHealthcheck}
	}
	drive(t, r)
	if !closed(r.ready) || r.why != sandbox.BootAnsweredAndSettled {
		t.Fatalf("ready %v why %q, want answered_and_settled", closed(r.ready), r.why)
	}
	br := r.report(false, false)
	if br.Ended != sandbox.BootAnsweredAndSettled || br.Port != 8080 || len(rr.done) != 2 || hc.phase.Name == "" {
		t.Errorf("report %+v, %d answers, healthcheck %q", br, len(rr.done), hc.phase.Name)
	}
}

// TestReadinessExecRestartsSettle: every exec after the answers restarts
// the settle period, so the boot ends no sooner than a settle period after
// the last exec the trace showed.
func TestReadinessExecRestartsSettle(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Ports: []int{8080}, Paths: []string{"/"}}}
	const settle = 100 * time.Millisecond
	r := newReadiness(rr, nil, settle, 10*time.Minute)
	r.requests = listenAndAnswer(rr, 8080)
	// lastExec is the last exec that came before the boot settled, timed
	// just before readiness saw it, so never later than readiness's own
	// note. An exec that a slow machine delays past the settling does not
	// count: the boot rightly settled without it.
	var lastExec atomic.Int64
	exec := func() bool {
		at := time.Now()
		r.act.observe(trace.Event{Kind: trace.KindExecAttempt})
		if closed(r.ready) {
			return false
		}
		lastExec.Store(at.UnixNano())
		return true
	}
	exec() // one before the boot starts, so that one always counts
	go func() {
		for range 4 {
			select {
			case <-r.ready:
				return
			case <-time.After(settle / 2):
			}
			if !exec() {
				return
			}
		}
	}()
	drive(t, r)
	end := time.Now()
	if r.why != sandbox.BootAnsweredAndSettled {
		t.Fatalf("why %q", r.why)
	}
	if last := time.Unix(0, lastExec.Load()); lastExec.Load() == 0 || end.Sub(last) < settle {
		t.Errorf("the boot ended %s after the last exec (%d seen), want at least the settle period %s", end.Sub(last), lastExec.Load(), settle)
	}
	// A clone or an exit is not an exec: it does not hold the boot.
	before := r.act.lastExec()
	r.act.observe(trace.Event{Kind: trace.KindClone})
	if got := r.act.lastExec(); !got.Equal(before) {
		t.Error("a clone counted as an exec")
	}
}

// TestReadinessWorker: an image that declares no port and listens on none
// is settled once it goes a settle period without an exec; its
// healthcheck runs first.
func TestReadinessWorker(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Paths: []string{"/"}}}
	hc := &healthRun{}
	r := newReadiness(rr, hc, 20*time.Millisecond, 10*time.Minute)
	r.requests = silent
	drive(t, r)
	if r.why != sandbox.BootSettled || hc.phase.Name == "" {
		t.Fatalf("why %q, healthcheck %q; want settled after the healthcheck", r.why, hc.phase.Name)
	}
	// Not before it ran noPortFactor settle periods: a service still
	// loading its code runs no exec either.
	if ran := time.Since(r.since); ran < noPortFactor*r.settle {
		t.Errorf("settled after %v; want at least %v", ran, noPortFactor*r.settle)
	}
	if br := r.report(false, false); br.Ended != sandbox.BootSettled || br.Port != 0 || r.neverListened(br) != "" {
		t.Errorf("report %+v", br)
	}
	// No node for the request client: the same.
	r = newReadiness(nil, nil, 20*time.Millisecond, 10*time.Minute)
	drive(t, r)
	if r.why != sandbox.BootSettled {
		t.Errorf("without a request client: why %q, want settled", r.why)
	}
	if ran := time.Since(r.since); ran < noPortFactor*r.settle {
		t.Errorf("without a request client: settled after %v; want at least %v", ran, noPortFactor*r.settle)
	}
	// A request client that returns at once, having no port to wait
	// for (a real service with no EXPOSE that listens on 8080 about 4 s
	// into its boot was cut off at 3.9 s): the same.
	rr = &requestRun{plan: requestPlan{Paths: []string{"/"}}}
	r = newReadiness(rr, nil, 100*time.Millisecond, 10*time.Minute)
	r.requests = func(context.Context, time.Time) {}
	drive(t, r)
	if ran := time.Since(r.since); r.why != sandbox.BootSettled || ran < noPortFactor*r.settle {
		t.Errorf("a request client with nothing to wait for: why %q after %v; want settled after at least %v", r.why, ran, noPortFactor*r.settle)
	}
}

// TestReadinessNeverListens: a service that declares a port and never
// listens runs to the maximum, says so, and has its healthcheck run
// half-way. The boot's end waits for the healthcheck as well as the
// maximum: a slow machine may start it later than half-way.
func TestReadinessNeverListens(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Ports: []int{8080}, Paths: []string{"/"}}}
	hc := &healthRun{}
	r := newReadiness(rr, hc, 10*time.Millisecond, 300*time.Millisecond)
	r.requests = silent
	ran := make(chan time.Time, 1)
	r.health = func(context.Context, time.Time) {
		hc.phase = sandbox.PhaseResult{Name: sandbox.PhaseHealthcheck}
		ran <- time.Now()
	}
	done := make(chan struct{})
	var hcAt time.Time
	go func() {
		defer close(done)
		<-time.After(r.max)
		select {
		case hcAt = <-ran:
		case <-time.After(waitLimit):
		}
	}()
	r.run(t.Context(), done)
	if closed(r.ready) {
		t.Fatalf("settled (%q) though it never listened on its declared port", r.why)
	}
	if hc.phase.Name == "" {
		t.Errorf("the healthcheck had not run %v after the maximum", waitLimit)
	} else if d := hcAt.Sub(r.since); d < r.max/2 {
		t.Errorf("the healthcheck ran %v into the boot, before half-way to the %v maximum", d, r.max)
	}
	br := r.report(false, true)
	if br.Ended != sandbox.BootMaximum || br.Port != 0 || len(br.Awaited) != 1 {
		t.Errorf("report %+v", br)
	}
	if got := r.neverListened(br); !strings.Contains(got, "never listened on 8080 within 300ms") {
		t.Errorf("note %q", got)
	}
}

// TestReadinessExited: a container that exits ends the boot, whatever is
// pending.
func TestReadinessExited(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Ports: []int{8080}, Paths: []string{"/"}}}
	r := newReadiness(rr, nil, time.Minute, 10*time.Minute)
	r.requests = silent
	done := make(chan struct{})
	close(done)
	r.run(t.Context(), done)
	if closed(r.ready) {
		t.Fatal("settled")
	}
	if br := r.report(true, false); br.Ended != sandbox.BootExited {
		t.Errorf("report %+v, want exited", br)
	}
}

func TestRequestLines(t *testing.T) {
	rr := &requestRun{plan: requestPlan{Paths: []string{"/"}}}
	for _, l := range []string{`{"noport":true}`, `not json`, `{"listen":70000,"at":5}`, `{"listen":3000,"at":7}`, `{"listen":4000,"at":9}`,
		`{"path":"/","port":3000,"start":7,"end":8,"status":204}`, `{"path":"/x","port":3000,"start":8,"end":9,"status":200}`} {
		rr.line([]byte(l))
	}
	if port, at := rr.listenedAt(); port != 3000 || at != 7 {
		t.Errorf("listened %d at %d, want the first valid line's 3000 at 7", port, at)
	}
	if len(rr.done) != 1 || rr.done[0].Status != 204 {
		t.Errorf("done %+v, want one answer: no more than the plan's paths", rr.done)
	}
}
