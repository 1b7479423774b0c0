package gatecontrol

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Admission errors, mapped to HTTP statuses in errorResponse.
var (
	errQueueFull    = errors.New("too many spawns waiting")
	errQueueTimeout = errors.New("waited too long for a free spawn slot")
	errShuttingDown = errors.New("gate-control is shutting down")
)

// limiter admits at most cap(slots) spawns at once, and lets at most
// cap(waiting) more wait, in arrival order, for at most timeout.
type limiter struct {
	slots   chan struct{}
	waiting chan struct{}
	timeout time.Duration
	closed  <-chan struct{}
}

func newLimiter(running, queued int, timeout time.Duration, closed <-chan struct{}) *limiter {
	return &limiter{
		slots:   make(chan struct{}, running),
		waiting: make(chan struct{}, queued),
		timeout: timeout,
		closed:  closed,
	}
}

// acquire takes a slot, waiting in the queue if none is free. The caller
// must call release once after a nil error. Waiters take freed slots in
// arrival order: a receive from a full channel hands its buffer slot to the
// longest-blocked sender.
func (l *limiter) acquire(ctx context.Context) error {
	select {
	case <-l.closed:
		return errShuttingDown
	default:
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.waiting <- struct{}{}:
	default:
		return errQueueFull
	}
	defer func() { <-l.waiting }()
	t := time.NewTimer(l.timeout)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-l.closed:
		return errShuttingDown
	case <-t.C:
		return errQueueTimeout
	}
}

func (l *limiter) release() { <-l.slots }

// inflight tracks the running spawns so that Shutdown can wait for them
// and cancel them. It refuses new spawns once closed.
type inflight struct {
	mu     sync.Mutex
	closed bool
	spawns map[string]context.CancelCauseFunc
	idle   chan struct{} // closed when closed and no spawn runs
}

func newInflight() *inflight {
	return &inflight{spawns: map[string]context.CancelCauseFunc{}, idle: make(chan struct{})}
}

// add registers a spawn, or returns errShuttingDown.
func (f *inflight) add(id string, cancel context.CancelCauseFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errShuttingDown
	}
	f.spawns[id] = cancel
	return nil
}

func (f *inflight) done(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.spawns, id)
	if f.closed && len(f.spawns) == 0 {
		close(f.idle)
	}
}

// close refuses new spawns from now on and returns a channel closed when
// none runs any more.
func (f *inflight) close() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		if len(f.spawns) == 0 {
			close(f.idle)
		}
	}
	return f.idle
}

// cancelAll cancels every running spawn with cause and returns how many.
func (f *inflight) cancelAll(cause error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.spawns {
		cancel(cause)
	}
	return len(f.spawns)
}
