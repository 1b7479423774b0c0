package readiness

// The builder: it collects blockers (each decided by the rule table) and
// notes, and the small helpers every part of the assessment shares.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
)

// Builder collects blockers and notes.
type Builder = builder

type builder struct {
	blockers []probe.Blocker
	notes    []probe.Note
	seen     map[string]bool
	// reachableBinaries are the programs reachable code runs by a literal
	// name (from child_process findings in shipped, reachable code).
	reachableBinaries map[string]bool
	// unread is a call of code the image runs whose command codegenie
	// cannot read (unreadCommand), when there is one: no installed
	// program is then said to be unused.
	unread    probe.Evidence
	hasUnread bool
	// depsUnscanned is set when the dependencies were not installed, so
	// their code was not read: a program no other use names may still be
	// one a dependency runs.
	depsUnscanned bool
	// startBinaries are the programs the judged image's ENTRYPOINT, CMD and
	// HEALTHCHECK name.
	startBinaries map[string]string
	// jsEntries maps a shim or env-node command to the node argv that runs
	// its JS file.
	jsEntries map[string][]string
	// cmdArgv is the judged image's CMD, which an entrypoint's exec "$@"
	// runs.
	cmdArgv []string
	// startArgv is the judged image's start command (ENTRYPOINT then
	// CMD) without its init wrapper, and init the wrapper (tini --).
	startArgv, init []string
	// start is the chain of a container that starts node or another
	// program directly, with its evidence, checked once everything else
	// is known (startProgram).
	start *npmscripts.Chain
	// chain is the judged image's start chain, whatever its launcher.
	chain   *npmscripts.Chain
	startEv []probe.Evidence
	// keptRunBinaries are programs final-stage RUN steps that cannot move
	// run (so the image is set up for them), with the step's line.
	keptRunBinaries map[string]int
	// depBinaries are programs the production dependencies are known to
	// run (fluent-ffmpeg runs ffmpeg), with the dependency.
	depBinaries map[string]string
	// depLibraries are system libraries production dependencies load
	// (by libraryStem), and depBundled programs and libraries they ship
	// themselves, each with the dependency.
	depLibraries, depBundled map[string]string
	// scriptBinaries are programs the image's entrypoint scripts run, with
	// the script.
	scriptBinaries map[string]string
	// scriptShells are the shells the start command names to run a script
	// that was read ("entrypoint bash" for ENTRYPOINT ["bash", "x.sh"]):
	// the script's own blocker says what needs the shell.
	scriptShells map[string]bool
	// readScripts are the scripts the entrypoints probe read, by origin
	// and command ("healthcheck /healthcheck.sh").
	readScripts map[string]bool
	// healthPrograms are the programs other than node that rewritten
	// HEALTHCHECKs run.
	healthPrograms []healthProgramUse
	// startScripts are the shell scripts a package script runs (sh -e
	// bin/start.sh) that only set defaults and exec node, when the start
	// was rewritten to that command: the script goes with npm start, and
	// the start's blocker says so.
	startScripts map[string]bool
	// healthToNode is set when a health check becomes a generated Node
	// check, and healthKept when one stays as it is (a rewrite by hand):
	// the checks' curl or wget is no longer used only with the first and
	// not the second.
	healthToNode, healthKept bool
	// execHealth is the image's own exec-form HEALTHCHECK command, when it
	// has one: a #!/usr/bin/env node script it runs becomes node's
	// argument (executables).
	execHealth []string
	// envBinaries are programs the final stage's ENV names by path
	// (PUPPETEER_EXECUTABLE_PATH=/usr/bin/chromium), with the variable.
	envBinaries map[string]string
	// binCommands are node_modules/.bin commands whose JS file is not
	// known statically (the launcher resolves them at run time).
	binCommands map[string]bool
	// edits hold the rewrite data of removable blockers, by blockerKey;
	// rewriteStart is the start command the rewrite gives the service.
	edits map[string]Edit
	// judged is the judged image's Dockerfile as built for its target.
	judged       *dockerfile.File
	rewriteStart *Start
}

// Add records a blocker once per (ID, first evidence). Its rule decides
// whether it is removable; a blocker with no fix says why there is none.
func (b *builder) Add(bl probe.Blocker) {
	rule := RuleFor(bl.Rule)
	bl.Removable = rule.Removable
	if !rule.Removable && bl.Fix == "" && bl.WhyNot == "" {
		bl.WhyNot = rule.WhyNot
	}
	key := blockerKey(bl)
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if b.seen[key] {
		return
	}
	b.seen[key] = true
	b.blockers = append(b.blockers, bl)
}

// Note records a note.
func (b *builder) Note(n probe.Note) { b.notes = append(b.notes, n) }

func (b *builder) sorted() []probe.Blocker {
	out := append([]probe.Blocker(nil), b.blockers...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Removable != out[j].Removable {
			return !out[i].Removable
		}
		return false
	})
	return out
}

func ev(file string, line int) []probe.Evidence { return []probe.Evidence{{File: file, Line: line}} }

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string{}, s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func pick2(c bool, a, b probe.BlockerKind) probe.BlockerKind {
	if c {
		return a
	}
	return b
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// hasBlocker reports a blocker with the ID.
func (b *builder) hasBlocker(id string) bool {
	for _, bl := range b.blockers {
		if bl.ID == id {
			return true
		}
	}
	return false
}

// attach adds evidence to the first blocker with one of ids, and reports
// whether there was one.
func (b *builder) attach(ev probe.Evidence, ids ...string) bool {
	for _, id := range ids {
		for i := range b.blockers {
			if b.blockers[i].ID == id {
				b.blockers[i].Evidence = append(b.blockers[i].Evidence, ev)
				return true
			}
		}
	}
	return false
}

// attachAt adds ev to the blocker of id whose own (static) evidence is
// at ev's file and line, and reports whether there is one.
func (b *builder) attachAt(ev probe.Evidence, id string) bool {
	for i := range b.blockers {
		if b.blockers[i].ID != id {
			continue
		}
		for _, e := range b.blockers[i].Evidence {
			if e.Trace == nil && e.File == ev.File && e.Line == ev.Line {
				b.blockers[i].Evidence = append(b.blockers[i].Evidence, ev)
				return true
			}
		}
	}
	return false
}

func lastOr(s []string) string {
	if len(s) == 0 {
		return "the container"
	}
	return s[len(s)-1]
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
