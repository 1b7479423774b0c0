package readiness

// child_process calls in the shipped code: which block, and which are
// notes because the image lacks them or the entrypoint does not reach
// them.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// reachableBinaries lists the programs that shipped, reachable (or
// unresolved) code runs by a literal name.
func reachableBinaries(f *childprocess.Facts) map[string]bool {
	out := map[string]bool{}
	for _, fd := range f.Findings {
		if fd.Kind != childprocess.KindBinary && fd.Kind != childprocess.KindShell {
			continue
		}
		if fd.Scope != childprocess.ScopeReachable && fd.Scope != childprocess.ScopeUnresolved {
			continue
		}
		if fd.Binary != "" {
			out[baseName(fd.Binary)] = true
		}
	}
	return out
}

// foreignPrograms are programs of macOS and Windows that a dependency may
// run on those systems by a literal name; none is on a Linux image:
// Debian trixie's Contents-amd64 and Contents-all (read 2026-12-03) list
// no package that installs one in /bin, /sbin, /usr/bin or /usr/sbin.
// Names that Debian ships (defaults, plutil, mdfind, from GNUstep) or may
// make an alternative of (open), and names a Linux image could hold as a
// script of its own (reg, security, cmd), are not here.
var foreignPrograms = map[string]string{
	"sw_vers": "macOS", "osascript": "macOS", "xcrun": "macOS", "xcode-select": "macOS", "launchctl": "macOS",
	"pbcopy": "macOS", "pbpaste": "macOS", "ioreg": "macOS", "system_profiler": "macOS", "scutil": "macOS",
	"networksetup": "macOS", "diskutil": "macOS",
	"cmd.exe": "Windows", "powershell.exe": "Windows", "wmic": "Windows", "wmic.exe": "Windows", "reg.exe": "Windows",
	"tasklist": "Windows", "tasklist.exe": "Windows", "taskkill": "Windows", "taskkill.exe": "Windows", "netsh": "Windows",
	"netsh.exe": "Windows", "where.exe": "Windows", "explorer.exe": "Windows", "cscript": "Windows", "cscript.exe": "Windows",
	"wscript": "Windows", "wscript.exe": "Windows", "rundll32": "Windows", "rundll32.exe": "Windows",
}

// unreadCommand returns the first call in code the image holds and the
// entrypoint reaches (or may reach) that runs a command codegenie cannot
// read: a computed program, or a shell line built at run time (wg-easy's
// exec(cmd, { shell: 'bash' }) helper). Any program the image installs
// may be the one it runs. Known fallbacks and opt-ins do not count.
func unreadCommand(f *childprocess.Facts) (probe.Evidence, bool) {
	for _, fd := range f.Findings {
		if fd.Scope != childprocess.ScopeReachable && fd.Scope != childprocess.ScopeUnresolved {
			continue
		}
		unread := fd.Kind == childprocess.KindDynamic || fd.Kind == childprocess.KindShell && fd.Command == ""
		if !unread {
			continue
		}
		if _, known := knownFallback(fd); known {
			continue
		}
		return probe.Evidence{File: fd.File, Line: fd.Line, Column: fd.Column, Note: fd.Function}, true
	}
	return probe.Evidence{}, false
}

// programPath is the PATH of the distroless node images (and of the
// official ones), when the image's ENV does not set one.
const programPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// copiedProgramBlocker says that what runs bin (the app, a dependency, the
// HEALTHCHECK) runs a program the Dockerfile copies in at line: it is
// there, but whether it runs depends on the libraries it links.
func copiedProgramBlocker(id, where, bin string, line int, evs []probe.Evidence) probe.Blocker {
	return probe.Blocker{ID: id, Kind: probe.UnknownKind, Rule: RuleUnclassified,
		Title: fmt.Sprintf("%s runs %s, which the Dockerfile copies into the image (line %d); on distroless it runs only if it is static or the libraries it links are there, which codegenie does not read", where, bin, line),
		Fix:   "copy a statically linked build, or show with the trace and the gates that the call works on the distroless image", Evidence: evs}
}

// copiedProgram returns the line of the judged image's COPY that puts the
// program bin where a call finds it: its own path when absolute, else a
// folder of the image's PATH.
func (b *builder) copiedProgram(bin string, env map[string]string) (int, bool) {
	if b.judged == nil {
		return 0, false
	}
	if strings.HasPrefix(bin, "/") {
		return b.judged.CopiedTo(b.judged.Final, bin)
	}
	if strings.Contains(bin, "/") {
		return 0, false // relative to a working directory codegenie does not know
	}
	dirs := programPath
	if p, ok := env["PATH"]; ok {
		// ENV PATH=/app/node_modules/.bin:$PATH adds to the base's.
		if p = strings.NewReplacer("${PATH}", programPath, "$PATH", programPath).Replace(p); !strings.Contains(p, "$") {
			dirs = p
		}
	}
	for _, dir := range strings.Split(dirs, ":") {
		if line, ok := b.judged.CopiedTo(b.judged.Final, dir+"/"+bin); ok && strings.HasPrefix(dir, "/") {
			return line, true
		}
	}
	return 0, false
}

// Why a child_process call in code the image ships blocks nothing.
const (
	excusedNot      = iota
	excusedOptIn    // an opt-in (fallbacks.json runs_when) the image's ENV does not turn on
	excusedFallback // a known fallback: it does not run, or does not fail, on distroless
	excusedForeign  // a program of another system, which the original image lacks too
)

// excused says whether, and why, the reachable call fd blocks nothing on
// an image whose ENV is env.
func excused(fd childprocess.Finding, env map[string]string) (string, int) {
	fb, known := knownFallback(fd)
	return excusedBy(fd, fb, known, env)
}

// excusedBy is excused for fd's fallback entry fb, already looked up.
func excusedBy(fd childprocess.Finding, fb Fallback, known bool, env map[string]string) (string, int) {
	if known {
		_, on := fb.enabledIn(env)
		switch {
		case fb.RunsWhen != "" && !on:
			// It runs only when the app or its deployment turns it on,
			// and the image does not: seen, noted with its condition.
			return fmt.Sprintf("%s runs it only when %s (%s)", fb.label(), fb.RunsWhen, fb.Source), excusedOptIn
		case fb.RunsWhen == "":
			return fmt.Sprintf("%s: %s (%s)", fb.label(), fb.Why, fb.Source), excusedFallback
		}
		// The image turns it on: judged like any call.
	}
	if fd.Kind == childprocess.KindBinary {
		bin := fd.Binary
		if bin == "" {
			bin = fd.Command
		}
		if sys, ok := foreignPrograms[baseName(bin)]; ok {
			// It fails on the original image just as on distroless.
			return fmt.Sprintf("%s (%s)", baseName(bin), sys), excusedForeign
		}
	}
	return "", excusedNot
}

// Excused says why a call that the code an image ships reaches blocks
// nothing, as the verdict reads it, and "" when it blocks: a known
// fallback, an opt-in that the image's ENV (of the Dockerfile d) does not
// turn on, or a program of another system. migrate's shipped_code gate
// reads the rewritten image with it, so that gather and migrate agree.
func Excused(fd childprocess.Finding, d *dockerfile.File) string {
	var env map[string]string
	if d != nil {
		env = imageEnv(d)
	}
	why, _ := excused(fd, env)
	return why
}

// childProcess: calls that run a shell or a binary distroless lacks. Only
// code the image holds and the entrypoint reaches (or may reach) blocks;
// the rest is a note that says why it does not.
func (b *builder) childProcess(f *childprocess.Facts) {
	notIn, notReached := map[string][]probe.Evidence{}, map[string][]probe.Evidence{}
	var fallbacks, optIns, foreign tableNotes
	var env map[string]string
	if b.judged != nil {
		env = imageEnv(b.judged)
	}
	for _, fd := range f.Findings {
		if fd.Kind == childprocess.KindNode {
			continue
		}
		e := probe.Evidence{File: fd.File, Line: fd.Line, Column: fd.Column, Note: fd.Function}
		switch fd.Scope {
		case childprocess.ScopeNotInImage:
			notIn[string(fd.Origin)] = append(notIn[string(fd.Origin)], e)
			continue
		case childprocess.ScopeNotReachable:
			notReached[string(fd.Origin)] = append(notReached[string(fd.Origin)], e)
			continue
		case childprocess.ScopeReachable, childprocess.ScopeUnresolved:
		}
		fb, known := knownFallback(fd)
		enabled, on := fb.enabledIn(env)
		switch why, kind := excusedBy(fd, fb, known, env); kind {
		case excusedOptIn:
			optIns.add(fd, e, why)
			continue
		case excusedFallback:
			fallbacks.add(fd, e, why)
			continue
		case excusedForeign:
			foreign.add(fd, e, why)
			continue
		}
		evs := []probe.Evidence{e}
		if len(fd.Chain) > 1 {
			evs[0].Note = fd.Function + ", reached by " + strings.Join(fd.Chain, " → ")
		} else if len(fd.Chain) == 1 {
			evs[0].Note = fd.Function + ", in the entrypoint itself"
		} else if fd.ScopeNote != "" {
			evs[0].Note = fd.Function + "; " + fd.ScopeNote
		}
		if on {
			evs[0].Note += fmt.Sprintf("; it runs when %s, and the image's ENV sets %s, which turns it on", fb.RunsWhen, enabled)
		}
		where := "the app"
		dep := fd.Origin == childprocess.OriginDependency
		if dep {
			where = "dependency " + fd.Package
		}
		what := fd.Function
		if fd.Command != "" {
			what = fmt.Sprintf("%s(%q)", fd.Function, clip(fd.Command, 60))
		}
		switch fd.Kind {
		case childprocess.KindShell:
			fix := "call execFile or spawn with an argv (no shell: true) instead of a command line"
			id := childprocess.WarnShellInApp
			if dep {
				id = childprocess.WarnShellInDependency
				fix = fmt.Sprintf("pin or patch %s, or show with a trace that the call never runs", fd.Package)
			}
			b.Add(probe.Blocker{ID: id, Kind: probe.ShellAtRuntime, Rule: RuleShellInCode, Title: fmt.Sprintf("%s calls %s, which runs /bin/sh", where, what), Fix: fix, Evidence: evs})
		case childprocess.KindMaybeShell:
			id := pick(dep, childprocess.WarnMaybeShellInDependency, childprocess.WarnMaybeShellInApp)
			b.Add(probe.Blocker{ID: id, Kind: probe.UnknownKind, Rule: RuleUnclassified, Title: fmt.Sprintf("%s calls %s with options that may set shell: true", where, what),
				Fix: "make the shell option a literal false, or show with a trace that no shell runs", Evidence: evs})
		case childprocess.KindBinary:
			id := pick(dep, childprocess.WarnBinaryInDependency, childprocess.WarnBinaryInApp)
			bin := fd.Binary
			if bin == "" {
				bin = fd.Command
			}
			if line, ok := b.copiedProgram(bin, env); ok && staticGoBuild(b.judged, line) {
				// A static Go build the Dockerfile copies in links nothing:
				// it runs on distroless as it did before.
				continue
			} else if ok {
				// The Dockerfile copies the program in, and the rewrite
				// keeps the copy: it is there, but whether it runs
				// depends on the libraries it links.
				evs = append(evs, probe.Evidence{File: b.judged.Path, Line: line, Note: "copies " + baseName(bin) + " into the image"})
				b.Add(copiedProgramBlocker(id, where, bin, line, evs))
				continue
			}
			fix := "keep a non-distroless image, copy a static build of it in, or do the work in Node"
			if name := baseName(bin); name == "node" || name == "nodejs" {
				// DOMAIN.md row 4: /nodejs/bin/node, not on the PATH.
				fix = "spawn process.execPath instead: distroless has node at /nodejs/bin/node, not on the PATH"
			}
			b.Add(probe.Blocker{ID: id, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime, Title: fmt.Sprintf("%s runs %s, which a distroless image does not have", where, bin),
				Fix: fix, Evidence: evs})
		case childprocess.KindDynamic:
			id := pick(dep, childprocess.WarnDynamicInDependency, childprocess.WarnDynamicInApp)
			b.Add(probe.Blocker{ID: id, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s calls %s with a command that is not a literal; what it runs is unknown", where, fd.Function),
				Fix:   "make the command a literal (or an allow-list), or show with a trace what runs", Evidence: evs})
		case childprocess.KindNode:
		}
	}
	optIns.note(b, NoteOptIn, "%d child_process use(s) in dependency code the entrypoint may reach run only when the app's code or its deployment's configuration turns them on, and the image's ENV does not; they block nothing here, but on distroless they fail if the app or the deployment does (check): %s")
	foreign.note(b, NoteForeignProgram, "%d child_process use(s) the entrypoint may reach run a program of another system, which no Linux image has (no Debian trixie package installs it; "+
		"Contents-amd64 and Contents-all, read 2026-12-03): the call fails on the original image as it would on distroless, so the move changes nothing: %s")
	fallbacks.note(b, NoteKnownFallback, "%d child_process use(s) in dependency code the entrypoint may reach are known fallbacks that do not run, or do not fail, on distroless; they block nothing: %s")
	for _, o := range []string{"app", "dependency"} {
		if e := notIn[o]; len(e) > 0 {
			b.Note(probe.Note{ID: NoteNotInImage, Message: fmt.Sprintf("%d child_process use(s) in %s code are not in the image (no COPY of the judged target brings them in); they block nothing", len(e), o), Evidence: e})
		}
		if e := notReached[o]; len(e) > 0 {
			b.Note(probe.Note{ID: NoteNotReachable, Message: fmt.Sprintf("%d child_process use(s) in %s code are in the image but not reachable from the entrypoint; they block nothing", len(e), o), Evidence: e})
		}
	}
}

// tableNotes gathers the dependency calls that fallbacks.json entries of
// one kind answer, for one note: their evidence and each entry's reason,
// once.
type tableNotes struct {
	ev   []probe.Evidence
	whys []string
}

func (t *tableNotes) add(fd childprocess.Finding, e probe.Evidence, why string) {
	e.Note = fmt.Sprintf("%s, in %s %s", fd.Function, fd.Package, fd.PackageVersion)
	t.ev = append(t.ev, e)
	if !slices.Contains(t.whys, why) {
		t.whys = append(t.whys, why)
	}
}

// note records the note, format taking the count and the reasons.
func (t *tableNotes) note(b *builder, id, format string) {
	if len(t.ev) > 0 {
		b.Note(probe.Note{ID: id, Message: fmt.Sprintf(format, len(t.ev), strings.Join(t.whys, "; ")), Evidence: t.ev})
	}
}
