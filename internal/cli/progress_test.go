package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// fakeTerminal is a screen that understands what liveStatus writes:
// printable text, "\n" (to the next line's start, as a tty with onlcr),
// "\r", ESC [ n A (up), ESC [ 2K and ESC [ K (clear).
type fakeTerminal struct {
	rows     [][]rune
	row, col int
}

func (ft *fakeTerminal) Write(p []byte) (int, error) {
	s := []rune(string(p))
	for i := 0; i < len(s); i++ {
		for len(ft.rows) <= ft.row {
			ft.rows = append(ft.rows, nil)
		}
		switch r := s[i]; {
		case r == '\n':
			ft.row, ft.col = ft.row+1, 0
		case r == '\r':
			ft.col = 0
		case r == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			n := 0
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				n = n*10 + int(s[j]-'0')
				j++
			}
			switch s[j] {
			case 'A':
				ft.row = max(ft.row-max(n, 1), 0)
			case 'K':
				if n == 2 {
					ft.rows[ft.row] = nil
				} else if ft.col < len(ft.rows[ft.row]) {
					ft.rows[ft.row] = ft.rows[ft.row][:ft.col]
				}
			}
			i = j
		default:
			line := ft.rows[ft.row]
			for len(line) <= ft.col {
				line = append(line, ' ')
			}
			line[ft.col] = r
			ft.rows[ft.row], ft.col = line, ft.col+1
		}
	}
	return len(p), nil
}

// screen is what the terminal shows, without trailing empty lines.
func (ft *fakeTerminal) screen() []string {
	var out []string
	for _, r := range ft.rows {
		out = append(out, strings.TrimRight(string(r), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// TestLiveStatus drives the live status as a gather with two traced images
// would, and checks the screen after each step: one line per running
// spawn, updated in place, "running" lines above them, gone when done.
func TestLiveStatus(t *testing.T) {
	t.Parallel()
	ft := &fakeTerminal{}
	ctx, pipe, stop := startLiveStatus(context.Background(), ft)
	report := func(p sandbox.Progress) { sandbox.ReportProgress(ctx, p) }
	const a, b = "shell_invocation_trace Dockerfile", "shell_invocation_trace api/Dockerfile"

	pipe(pipeline.Progress{Probe: "shell_invocation_trace", State: pipeline.Started})
	report(sandbox.Progress{Kind: sandbox.ProgressPhase, Source: a, Phase: "pull:node:22"})
	report(sandbox.Progress{Kind: sandbox.ProgressStep, Source: a, Phase: "build:builder:step 4", Step: 4, Steps: 4, Instruction: "RUN npm ci\x1b[2J"})
	report(sandbox.Progress{Kind: sandbox.ProgressPhase, Source: b, Phase: "pull:node:22-slim"})
	want := []string{
		"running shell_invocation_trace...",
		a + ": build:builder:step 4 (4/4) RUN npm ci [2J · no shell yet",
		b + ": pull:node:22-slim · no shell yet",
	}
	if diff := cmp.Diff(want, ft.screen()); diff != "" {
		t.Fatalf("screen (-want +got):\n%s", diff)
	}
	report(sandbox.Progress{Kind: sandbox.ProgressBoot, Source: a, Phase: "boot", BootLeft: 7 * time.Second, Shells: 2})
	report(sandbox.Progress{Kind: sandbox.ProgressDone, Source: b})
	want = []string{"running shell_invocation_trace...", a + ": boot, 7s left · 2 shells"}
	if diff := cmp.Diff(want, ft.screen()); diff != "" {
		t.Fatalf("screen (-want +got):\n%s", diff)
	}
	report(sandbox.Progress{Kind: sandbox.ProgressStep, Source: a, Phase: "build:0:step 2", Step: 2, Steps: 3, Instruction: strings.Repeat("x", 200)})
	if s := ft.screen(); len(s) != 2 || len([]rune(s[1])) != statusWidth {
		t.Errorf("a long line is not cut to %d runes: %q", statusWidth, s)
	}
	stop()
	if diff := cmp.Diff([]string{"running shell_invocation_trace..."}, ft.screen()); diff != "" {
		t.Errorf("after stop (-want +got):\n%s", diff)
	}
}
