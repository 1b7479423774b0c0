package runsc

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// bootTick is how often a boot reports its countdown.
const bootTick = time.Second

// reporter sends a spawn's progress to the ProgressFunc of its context
// (sandbox.WithProgress): each phase as it begins, each build step buildah
// announces, the boot's countdown, and the count of shells the live trace
// has shown. A nil reporter, or one without a function, reports nothing.
// It is safe for concurrent use (the trace's readers observe through it).
type reporter struct {
	fn sandbox.ProgressFunc

	mu    sync.Mutex
	phase string
	seen  map[string]bool // container/pid of each shell
}

func newReporter(ctx context.Context) *reporter {
	return &reporter{fn: sandbox.ProgressFrom(ctx), seen: map[string]bool{}}
}

// report sends p with the current phase (or makes p's the current one)
// and the shell count.
func (r *reporter) report(p sandbox.Progress) {
	if r == nil || r.fn == nil {
		return
	}
	r.mu.Lock()
	if p.Phase != "" {
		r.phase = p.Phase
	} else {
		p.Phase = r.phase
	}
	p.Shells = len(r.seen)
	r.mu.Unlock()
	r.fn(p)
}

// observe counts the shells of a live trace: an exec or exec attempt that
// trace.ClassifyShell calls one, once per process.
func (r *reporter) observe(e trace.Event) {
	if r == nil || r.fn == nil || (e.Kind != trace.KindExec && e.Kind != trace.KindExecAttempt) {
		return
	}
	if _, shell, _ := trace.ClassifyShell(&e, nil); !shell {
		return
	}
	key := e.Container + "/" + strconv.Itoa(int(e.PID))
	r.mu.Lock()
	if r.seen[key] {
		r.mu.Unlock()
		return
	}
	r.seen[key] = true
	r.mu.Unlock()
	r.report(sandbox.Progress{Kind: sandbox.ProgressShells})
}

// countdown reports the boot's time left every bootTick until stop is
// closed.
func (r *reporter) countdown(window time.Duration, stop <-chan struct{}) {
	if r == nil || r.fn == nil {
		return
	}
	start := time.Now()
	t := time.NewTicker(bootTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			left := max(window-now.Sub(start), 0).Round(time.Second)
			r.report(sandbox.Progress{Kind: sandbox.ProgressBoot, Phase: sandbox.PhaseBoot, BootLeft: left})
		}
	}
}

// stepInstruction is the instruction of an accepted buildah header line:
// what follows "STEP k/m: ".
func stepInstruction(line string) string {
	_, rest, ok := strings.Cut(line, ": ")
	if !ok {
		return ""
	}
	return sandbox.CutInstruction(strings.TrimSpace(rest))
}
