package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/codegenie/codegenie/internal/probe"
)

// TextOptions style the text report.
type TextOptions struct {
	// Color uses ANSI colours (for a terminal).
	Color bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
)

// EncodeText writes a report for a person: each assessment's verdict and
// its blockers with evidence and fixes, then one line per probe.
func EncodeText(w io.Writer, c *Context, opt TextOptions) error {
	paint := func(code, s string) string {
		if !opt.Color {
			return s
		}
		return code + s + ansiReset
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", paint(ansiBold, c.Repo))
	names := make([]string, 0, len(c.Assessments))
	for n := range c.Assessments {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := c.Assessments[n]
		colour := ansiRed
		switch a.Verdict {
		case probe.Ready:
			colour = ansiGreen
		case probe.ReadyAfterRewrite, probe.Unknown:
			colour = ansiYellow
		case probe.Blocked:
		}
		fmt.Fprintf(tw, "\n%s: %s\n", n, paint(ansiBold+colour, strings.ToUpper(string(a.Verdict))))
		if a.Reason != "" {
			fmt.Fprintf(tw, "  %s\n", a.Reason)
		}
		if len(a.Blockers) > 0 {
			fmt.Fprintf(tw, "\n  \tKIND\tWHERE\tWHAT\n")
		}
		for _, b := range a.Blockers {
			mark := paint(ansiRed, "✗")
			if b.Removable {
				mark = paint(ansiYellow, "~")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", mark, b.Kind, where(b.Evidence), b.Title)
			for _, e := range b.Evidence[min(1, len(b.Evidence)):] {
				fmt.Fprintf(tw, "  \t\t%s\t%s\n", where([]probe.Evidence{e}), paint(ansiDim, e.Note))
			}
			if b.Fix != "" {
				fmt.Fprintf(tw, "  \t\t\t%s %s\n", paint(ansiDim, "fix:"), b.Fix)
			}
		}
		for _, nt := range a.Notes {
			fmt.Fprintf(tw, "  %s\t%s\n", paint(ansiDim, "note:"), nt.Message)
		}
	}
	fmt.Fprintf(tw, "\n  PROBE\tCONFIDENCE\tWARNINGS\tREASON\n")
	for _, r := range c.Probes {
		reason := string(r.Reason)
		if r.Detail != "" {
			reason += ": " + r.Detail
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", r.Probe, r.Confidence, len(r.Warnings), reason)
	}
	fmt.Fprintf(tw, "\n  %s ✗ blocker   ~ removed by a mechanical rewrite\n", paint(ansiDim, "legend:"))
	return tw.Flush()
}

func where(evs []probe.Evidence) string {
	if len(evs) == 0 {
		return "-"
	}
	e := evs[0]
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	case e.File != "":
		return e.File
	case e.Trace != nil:
		return fmt.Sprintf("trace %s pid %d", e.Trace.Phase, e.Trace.PID)
	}
	return "-"
}
