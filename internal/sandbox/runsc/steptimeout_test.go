package runsc

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// TestBuildStepTimeout: a RUN step that never ends is stopped at the step
// timeout; the spawn is no error but TimedOut, with the step's phase
// TimedOut and saying why, and the trace up to then, which holds the
// step's shell. Whether the timeout comes before the step's shell ran is
// the machine's speed: one that came first is tried again twice as long,
// up to minutes.
func TestBuildStepTimeout(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	const step = "echo started; sleep 3600" // outlasts the longest step timeout tried
	ws := workspace(t, map[string]string{"Dockerfile": "FROM node:22-slim\nRUN " + step + "\n"})
	req := buildRequest(ws, m, "")
	req.Timeout = 30 * time.Minute
	for req.Build.StepTimeout = 5 * time.Second; ; req.Build.StepTimeout *= 2 {
		res, err := b.Spawn(t.Context(), req)
		logResult(t, res)
		if err != nil {
			t.Fatalf("Spawn: %v; want a result that says the step timed out", err)
		}
		// The step the timeout stopped: on a slow machine, the FROM step
		// before the RUN can outlast a short one.
		i := slices.IndexFunc(res.Phases, func(p sandbox.PhaseResult) bool { return p.TimedOut && strings.Contains(p.Name, ":step ") })
		if i < 0 || !res.TimedOut || res.ExitCode != -1 || !res.Phases[i].Failed || !strings.Contains(res.Phases[i].OutputTail, "ran past the step timeout") {
			t.Fatalf("timed out %v, exit %d, phases %+v; want a step stopped at the step timeout, saying so", res.TimedOut, res.ExitCode, res.Phases)
		}
		ran := slices.ContainsFunc(res.Trace, func(e trace.Event) bool {
			return e.Phase == "build:0:step 2" && (e.Kind == trace.KindExec || e.Kind == trace.KindStart) && slices.Contains(e.Argv, step)
		})
		if res.Phases[i].Name == "build:0:step 2" && ran {
			return
		}
		if req.Build.StepTimeout > 4*time.Minute {
			dumpTrace(t, res.Trace)
			t.Fatalf("the step's shell never showed in the trace before the step timeout %v", req.Build.StepTimeout)
		}
		t.Logf("the step timeout %v stopped %s before the RUN step's shell ran; trying again with twice as long", req.Build.StepTimeout, res.Phases[i].Name)
	}
}

func TestWatchStep(t *testing.T) {
	var start atomic.Int64
	start.Store(time.Now().Add(-time.Hour).UnixNano())
	stopped := make(chan struct{})
	watchStep(t.Context(), &start, time.Minute, func() { close(stopped) })
	select {
	case <-stopped:
	default:
		t.Fatal("a step an hour old was not stopped at a one-minute step timeout")
	}
}
