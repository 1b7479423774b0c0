package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/probe"
)

// TextOptions style the text report.
type TextOptions struct {
	// Color uses ANSI colours (for a terminal).
	Color bool
	// Width cuts long lines to this many columns (the terminal's width);
	// zero keeps them whole.
	Width int
	// Verbose lists every place a repeated finding occurs, instead of the
	// first and a count.
	Verbose bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
)

// EncodeText writes a report for a person. It is grouped by image (the
// judged one, or each one with gather --all-images), then by the Dockerfile
// stage a blocker is in, with code and scripts last. A finding repeated in
// several places shows once, at its first place, with a count of the rest.
// Every blocker row carries its fix, or says why no rewrite removes it.
func EncodeText(w io.Writer, c *Context, opt TextOptions) error {
	t := &textWriter{opt: opt, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	fmt.Fprintf(t.tw, "%s\n", t.paint(ansiBold, c.Repo))
	switch {
	case len(c.Images) > 0:
		for _, ia := range c.Images {
			ref := ia.Image
			t.image(&ref, ia.Assessments)
		}
	default:
		t.image(c.Image, c.Assessments)
	}
	fmt.Fprintf(t.tw, "\n  PROBE\tCONFIDENCE\tWARNINGS\tREASON\n")
	for _, r := range c.Probes {
		reason := string(r.Reason)
		if r.Detail != "" {
			reason += ": " + r.Detail
		}
		fmt.Fprintf(t.tw, "  %s\t%s\t%d\t%s\n", r.Probe, r.Confidence, len(r.Warnings), t.cut(reason, 40))
	}
	fmt.Fprintf(t.tw, "\n  %s ✗ blocker   ~ removed by a mechanical rewrite\n", t.paint(ansiDim, "legend:"))
	return t.tw.Flush()
}

type textWriter struct {
	opt TextOptions
	tw  *tabwriter.Writer
}

func (t *textWriter) paint(code, s string) string {
	if !t.opt.Color {
		return s
	}
	return code + s + ansiReset
}

// cut shortens s so that a line that starts indent columns in fits the
// width; the location column says where to read the rest.
func (t *textWriter) cut(s string, indent int) string {
	if t.opt.Width <= 0 {
		return s
	}
	room := t.opt.Width - indent
	if room < 20 {
		room = 20
	}
	if utf8.RuneCountInString(s) <= room {
		return s
	}
	r := []rune(s)
	return string(r[:room-1]) + "…"
}

func (t *textWriter) image(ref *probe.ImageRef, as map[string]probe.Assessment) {
	if ref != nil {
		fmt.Fprintf(t.tw, "\nimage %s, target %s\n", t.paint(ansiBold, ref.Dockerfile), t.paint(ansiBold, ref.Target))
		fmt.Fprintf(t.tw, "  %s\n", t.paint(ansiDim, "chosen: "+ref.Why))
	}
	names := make([]string, 0, len(as))
	for n := range as {
		names = append(names, n)
	}
	sort.Strings(names)
	target := ""
	if ref != nil {
		target = ref.Target
	}
	for _, n := range names {
		t.assessment(n, as[n], target)
	}
}

func (t *textWriter) assessment(name string, a probe.Assessment, target string) {
	colour := ansiRed
	switch a.Verdict {
	case probe.Ready:
		colour = ansiGreen
	case probe.ReadyAfterRewrite, probe.Unknown:
		colour = ansiYellow
	case probe.Blocked:
	}
	conf := "confirmed by the trace"
	if !a.Confirmed {
		conf = "unconfirmed: static evidence only"
	}
	fmt.Fprintf(t.tw, "\n%s: %s (%s)\n", name, t.paint(ansiBold+colour, strings.ToUpper(strings.ReplaceAll(string(a.Verdict), "_", " "))), conf)
	if a.Reason != "" {
		fmt.Fprintf(t.tw, "  %s\n", a.Reason)
	}
	for _, g := range groupBlockers(a.Blockers, target) {
		fmt.Fprintf(t.tw, "\n  %s\n", t.paint(ansiBold, g.title))
		fmt.Fprintf(t.tw, "  \tKIND\tWHERE\tWHAT\n")
		for _, f := range g.findings {
			t.finding(f)
		}
	}
	if len(a.Notes) > 0 {
		fmt.Fprintf(t.tw, "\n")
	}
	for _, nt := range a.Notes {
		fmt.Fprintf(t.tw, "  %s\t%s\n", t.paint(ansiDim, "note:"), t.cut(nt.Message, 8))
	}
}

// maxTraceLines is how many of a blocker's traced runs text output lists
// without --verbose.
const maxTraceLines = 3

func (t *textWriter) finding(f finding) {
	b := f.blockers[0]
	mark := t.paint(ansiRed, "✗")
	if b.Removable {
		mark = t.paint(ansiYellow, "~")
	}
	fmt.Fprintf(t.tw, "  %s\t%s\t%s\t%s\n", mark, b.Kind, where(b.Evidence), t.cut(oneLine(b.Title), 70))
	if len(b.Evidence) > 0 && b.Evidence[0].Note != "" {
		fmt.Fprintf(t.tw, "  \t\t\t%s\n", t.paint(ansiDim, t.cut(oneLine(b.Evidence[0].Note), 70)))
	}
	traced := 0
	for _, e := range b.Evidence[min(1, len(b.Evidence)):] {
		if e.Trace != nil {
			// A build step's apt-get install alone runs dozens of
			// maintainer scripts: a few say what ran.
			if traced++; traced > maxTraceLines && !t.opt.Verbose {
				continue
			}
		}
		fmt.Fprintf(t.tw, "  \t\t%s\t%s\n", where([]probe.Evidence{e}), t.paint(ansiDim, t.cut(e.Note, 70)))
	}
	if n := traced - maxTraceLines; n > 0 && !t.opt.Verbose {
		fmt.Fprintf(t.tw, "  \t\t\t%s\n", t.paint(ansiDim, fmt.Sprintf("and %d more traced run(s) (--verbose or the JSON lists them)", n)))
	}
	if n := len(f.blockers) - 1; n > 0 {
		if t.opt.Verbose {
			for _, o := range f.blockers[1:] {
				fmt.Fprintf(t.tw, "  \t\t%s\t%s\n", where(o.Evidence), t.paint(ansiDim, "the same finding"))
			}
		} else {
			fmt.Fprintf(t.tw, "  \t\t\t%s\n", t.paint(ansiDim, fmt.Sprintf("and %d more (--verbose lists them)", n)))
		}
	}
	switch {
	case b.Fix != "":
		fmt.Fprintf(t.tw, "  \t\t\t%s %s\n", t.paint(ansiDim, "fix:"), t.cut(b.Fix, 75))
	case b.WhyNot != "":
		fmt.Fprintf(t.tw, "  \t\t\t%s %s\n", t.paint(ansiDim, "no rewrite:"), t.cut(b.WhyNot, 83))
	}
}

// oneLine folds runs of white space (a Dockerfile's continued lines) into
// single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// finding is one distinct blocker and every place it occurs.
type finding struct {
	blockers []probe.Blocker
}

type group struct {
	title    string
	findings []finding
}

// groupBlockers groups blockers by stage (in the order stages first
// appear, code last) and folds repeats of one finding (same ID, title and
// fix) into one.
func groupBlockers(bs []probe.Blocker, target string) []group {
	var groups []group
	index := map[string]int{}
	seen := map[string]int{}
	for _, b := range bs {
		title := "code, scripts and package.json"
		switch {
		case b.Stage != "" && b.Stage == target:
			title = "stage " + b.Stage + " (the target that ships)"
		case b.Stage != "":
			title = "stage " + b.Stage
		}
		gi, ok := index[title]
		if !ok {
			gi = len(groups)
			index[title] = gi
			groups = append(groups, group{title: title})
		}
		key := title + "\x00" + b.ID + "\x00" + b.Title + "\x00" + b.Fix
		if fi, ok := seen[key]; ok {
			groups[gi].findings[fi].blockers = append(groups[gi].findings[fi].blockers, b)
			continue
		}
		seen[key] = len(groups[gi].findings)
		groups[gi].findings = append(groups[gi].findings, finding{blockers: []probe.Blocker{b}})
	}
	// Dockerfile stages first, code last.
	sort.SliceStable(groups, func(i, j int) bool {
		ci := strings.HasPrefix(groups[i].title, "code")
		cj := strings.HasPrefix(groups[j].title, "code")
		return !ci && cj
	})
	return groups
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
