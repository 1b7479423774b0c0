package client

import (
	"context"
	"sync"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// Lazy is a sandbox.Client that starts a private gate-control (see
// StartPrivate) on its first Spawn, not before: a command whose probes are
// all answered from the cache never starts one. Close stops it. Lazy is
// safe for concurrent use.
type Lazy struct {
	cfg     PrivateConfig
	once    sync.Once
	client  *Client
	stop    func() error
	err     error
	mu      sync.Mutex
	stopped bool
}

var _ sandbox.Client = (*Lazy)(nil)

// NewLazy returns a client that starts a private gate-control with cfg
// when first used.
func NewLazy(cfg PrivateConfig) *Lazy { return &Lazy{cfg: cfg} }

// Spawn starts the private gate-control if it is not running yet, then
// spawns through it. A failure to start is returned by every Spawn.
func (l *Lazy) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	l.once.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.stopped {
			l.err = ErrUnavailable
			return
		}
		// The child outlives this spawn's context: it serves the rest of
		// the command and stops on Close.
		l.client, l.stop, l.err = StartPrivate(context.WithoutCancel(ctx), l.cfg)
	})
	if l.err != nil {
		return sandbox.Result{}, l.err
	}
	return l.client.Spawn(ctx, req)
}

// Started reports whether the private gate-control was started.
func (l *Lazy) Started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stop != nil
}

// Close stops the private gate-control if it was started.
func (l *Lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.stop == nil {
		return nil
	}
	err := l.stop()
	l.stop = nil
	return err
}
