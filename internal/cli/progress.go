package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// statusWidth bounds a status line, in runes, so that it never wraps on a
// usual terminal (a wrapped line would break the redraw).
const statusWidth = 100

// Terminal control sequences of the live status.
const (
	ansiUpClear = "\x1b[1A\r\x1b[2K" // up one line, clear it
)

// liveStatus draws, at the bottom of a terminal, one status line per
// running heavy probe: the phase of its spawn, build step N of M with its
// instruction, the boot's countdown, and the shells traced so far, from
// the spawn's progress reports (sandbox.WithProgress, streamed from
// gate-control). Lines printed meanwhile (through log) go above them. It
// is only for a terminal: the gather command does not start it in pipes
// or when $CI is set. It is safe for concurrent use.
type liveStatus struct {
	w io.Writer

	mu    sync.Mutex
	order []string          // sources, in the order they appeared
	lines map[string]string // source → its status text
	drawn int               // status lines on the screen now
}

// startLiveStatus returns ctx with progress reporting to a live status on
// w, the pipeline progress function that prints "running <probe>..."
// above it, and stop, which clears the status lines.
func startLiveStatus(ctx context.Context, w io.Writer) (context.Context, func(pipeline.Progress), func()) {
	ls := &liveStatus{w: w, lines: map[string]string{}}
	return sandbox.WithProgress(ctx, ls.update), progressPrinter(ls.log()), ls.stop
}

// update takes one progress report.
func (ls *liveStatus) update(p sandbox.Progress) {
	src := p.Source
	if src == "" {
		src = "sandbox"
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if p.Kind == sandbox.ProgressDone {
		if _, ok := ls.lines[src]; ok {
			delete(ls.lines, src)
			for i, s := range ls.order {
				if s == src {
					ls.order = append(ls.order[:i], ls.order[i+1:]...)
					break
				}
			}
			ls.redraw("")
		}
		return
	}
	if _, ok := ls.lines[src]; !ok {
		ls.order = append(ls.order, src)
	}
	ls.lines[src] = statusText(src, p)
	ls.redraw("")
}

// statusText is the line of one spawn.
func statusText(src string, p sandbox.Progress) string {
	var b strings.Builder
	b.WriteString(src)
	b.WriteString(": ")
	b.WriteString(p.Phase)
	switch {
	case p.Kind == sandbox.ProgressStep && p.Steps > 0:
		fmt.Fprintf(&b, " (%d/%d) %s", p.Step, p.Steps, printable(p.Instruction))
	case p.Phase == sandbox.PhaseBoot && p.BootLeft > 0:
		fmt.Fprintf(&b, ", %s left", p.BootLeft.Round(time.Second))
	}
	switch p.Shells {
	case 0:
		b.WriteString(" · no shell yet")
	case 1:
		b.WriteString(" · 1 shell")
	default:
		fmt.Fprintf(&b, " · %d shells", p.Shells)
	}
	return cut(b.String(), statusWidth)
}

// printable keeps a text from breaking the status line: control characters
// (an instruction comes from the build's output) become spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// cut bounds s to n runes.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// redraw erases the status lines, prints line (if any) where they were,
// and draws them again below it. ls.mu is held.
func (ls *liveStatus) redraw(line string) {
	var b strings.Builder
	for range ls.drawn {
		b.WriteString(ansiUpClear)
	}
	b.WriteString(line)
	for _, src := range ls.order {
		b.WriteString(ls.lines[src])
		b.WriteString("\n")
	}
	ls.drawn = len(ls.order)
	_, _ = io.WriteString(ls.w, b.String())
}

// log returns a writer whose lines are printed above the status lines.
func (ls *liveStatus) log() io.Writer { return logWriter{ls} }

type logWriter struct{ ls *liveStatus }

func (l logWriter) Write(p []byte) (int, error) {
	l.ls.mu.Lock()
	defer l.ls.mu.Unlock()
	s := string(p)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	l.ls.redraw(s)
	return len(p), nil
}

// stop clears the status lines.
func (ls *liveStatus) stop() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.order, ls.lines = nil, map[string]string{}
	ls.redraw("")
}
