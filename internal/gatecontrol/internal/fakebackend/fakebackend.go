// Package fakebackend provides an in-memory sandbox.Client for the tests of
// gate-control and its client. It runs nothing: the command's argv[0]
// chooses what the fake does. It is not a sandbox and must never back a
// real gate-control.
package fakebackend

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// Name is the backend name the fake's Results carry.
const Name = "fake"

// ImageFacts are the facts the "facts" command reports, every field set.
func ImageFacts() *sandbox.ImageFacts {
	return &sandbox.ImageFacts{Bytes: 146_103_296, Layers: 3, Packages: 65, PackageDBs: []string{sandbox.PackageDBDpkg},
		Setuid: []string{"/bin/su"}, SetuidCount: 1, Shells: []sandbox.Shell{{Path: "/bin/sh", Target: "dash"}, {Path: "/usr/bin/dash"}},
		ShellCount: 2, Incomplete: "a note"}
}

// Backend is a fake sandbox.Client and gatecontrol SpawnReaper. Commands:
//
//	true, false, exit N   exit 0, 1 or N
//	echo ARGS...          exit 0, ARGS on stdout
//	sleep DURATION        wait (a Go duration), honouring the timeout and ctx
//	block                 wait until Release, the timeout, or ctx
//	shell                 exit 0 with a trace of one sh exec (when traced)
//	facts                 exit 0 with ImageFacts, as a build spawn reports them
//	progress N            report a phase, build steps 1..N of N and a
//	                      boot countdown (sandbox.ReportProgress), exit 0
//	unsupported           fail with a *sandbox.UnsupportedError
//	fail                  fail with a plain error
//
// It is safe for concurrent use.
type Backend struct {
	// ReapItems and ReapErr are what Reap returns. ReapSpawns returns
	// ReapSpawned, or ReapItems with no audit IDs when it is nil, and
	// ReapErr.
	ReapItems   []string
	ReapSpawned []sandbox.Reaped
	ReapErr     error

	mu        sync.Mutex
	spawns    []sandbox.SpawnRequest
	auditIDs  []string
	active    int
	maxActive int
	cancelled int
	started   chan string
	release   chan struct{}
	released  bool
}

var _ sandbox.Client = (*Backend)(nil)

// New returns a fake backend.
func New() *Backend {
	return &Backend{started: make(chan string, 64), release: make(chan struct{})}
}

// Started receives the argv[0] of each spawn as it starts.
func (b *Backend) Started() <-chan string { return b.started }

// Release lets every block spawn, running or future, return exit 0.
func (b *Backend) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.released {
		b.released = true
		close(b.release)
	}
}

// Spawns returns the requests the fake received, in order.
func (b *Backend) Spawns() []sandbox.SpawnRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]sandbox.SpawnRequest(nil), b.spawns...)
}

// MaxActive returns the most spawns that ran at once.
func (b *Backend) MaxActive() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.maxActive
}

// Cancelled returns how many spawns ended because their ctx was done.
func (b *Backend) Cancelled() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cancelled
}

// AuditIDs returns the audit ID of each spawn's context
// (sandbox.AuditIDFrom), in the order of Spawns.
func (b *Backend) AuditIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.auditIDs...)
}

// Reap returns ReapItems and ReapErr.
func (b *Backend) Reap(context.Context) ([]string, error) { return b.ReapItems, b.ReapErr }

// ReapSpawns returns ReapSpawned (or ReapItems, without audit IDs) and
// ReapErr.
func (b *Backend) ReapSpawns(context.Context) ([]sandbox.Reaped, error) {
	if b.ReapSpawned != nil {
		return b.ReapSpawned, b.ReapErr
	}
	var out []sandbox.Reaped
	for _, id := range b.ReapItems {
		out = append(out, sandbox.Reaped{ID: id})
	}
	return out, b.ReapErr
}

// Spawn does what req.Command[0] says.
func (b *Backend) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	b.mu.Lock()
	b.spawns = append(b.spawns, req)
	b.auditIDs = append(b.auditIDs, sandbox.AuditIDFrom(ctx))
	b.active++
	b.maxActive = max(b.maxActive, b.active)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.active--
		b.mu.Unlock()
	}()
	select {
	case b.started <- req.Command[0]:
	default:
	}
	res := sandbox.Result{Backend: Name, Started: time.Now()}
	args := req.Command[1:]
	switch req.Command[0] {
	case "true":
	case "false":
		res.ExitCode = 1
	case "exit":
		if len(args) > 0 {
			res.ExitCode, _ = strconv.Atoi(args[0])
		}
	case "echo":
		res.Stdout = []byte(strings.Join(args, " ") + "\n")
	case "sleep", "block":
		var d time.Duration
		wait := b.release
		if req.Command[0] == "sleep" && len(args) > 0 {
			var err error
			if d, err = time.ParseDuration(args[0]); err != nil {
				return res, fmt.Errorf("%w: sleep %q", sandbox.ErrInvalidRequest, args[0])
			}
			wait = nil
		}
		return b.wait(ctx, req, res, d, wait)
	case "shell":
		if req.CaptureTrace {
			res.Trace = []trace.Event{
				{Kind: trace.KindExec, Time: time.Now(), PID: 2, PPID: 1, Binary: "/usr/bin/dash", Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "true"}},
				{Kind: trace.KindExec, Time: time.Now(), PID: 3, PPID: 2, Binary: "/bin/true", Argv: []string{"true"}},
			}
			res.TraceComplete = true
		}
	case "progress":
		n := 1
		if len(args) > 0 {
			n, _ = strconv.Atoi(args[0])
		}
		sandbox.ReportProgress(ctx, sandbox.Progress{Kind: sandbox.ProgressPhase, Phase: "build:0"})
		for i := 1; i <= n; i++ {
			sandbox.ReportProgress(ctx, sandbox.Progress{Kind: sandbox.ProgressStep, Phase: sandbox.BuildPhase("0", i), Step: i, Steps: n, Instruction: fmt.Sprintf("RUN step %d", i)})
		}
		sandbox.ReportProgress(ctx, sandbox.Progress{Kind: sandbox.ProgressShells, Phase: sandbox.PhaseBoot, Shells: 1})
		sandbox.ReportProgress(ctx, sandbox.Progress{Kind: sandbox.ProgressBoot, Phase: sandbox.PhaseBoot, BootLeft: time.Second, Shells: 1})
	case "facts":
		res.ImageFacts = ImageFacts()
	case "unsupported":
		return sandbox.Result{}, &sandbox.UnsupportedError{Backend: Name, Reason: "the fake was told so"}
	case "fail":
		return sandbox.Result{}, fmt.Errorf("fake backend failure")
	default:
		res.ExitCode = 127
		res.Stderr = []byte(req.Command[0] + ": not found\n")
	}
	return res, nil
}

// wait ends after d (when release is nil) or at release, unless the
// timeout or ctx ends it first, as a real backend would: a partial result
// with exit -1 and an error.
func (b *Backend) wait(ctx context.Context, req sandbox.SpawnRequest, res sandbox.Result, d time.Duration, release <-chan struct{}) (sandbox.Result, error) {
	var done <-chan time.Time
	if release == nil {
		t := time.NewTimer(d)
		defer t.Stop()
		done = t.C
	}
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-done:
		return res, nil
	case <-release:
		return res, nil
	case <-timeout:
		res.ExitCode, res.TimedOut = -1, true
		res.Stdout = []byte("partial\n")
		return res, fmt.Errorf("fake spawn: %w after %v", sandbox.ErrTimeout, req.Timeout)
	case <-ctx.Done():
		b.mu.Lock()
		b.cancelled++
		b.mu.Unlock()
		res.ExitCode = -1
		return res, fmt.Errorf("fake spawn: %w", context.Cause(ctx))
	}
}
