// Package readiness is the distroless_readiness assessor: it combines the
// plugin's probe results into one verdict: ready, ready_after_rewrite
// (every shell use is mechanically removable), blocked, or unknown. Each
// blocker names its kind, its evidence and, when known, its fix.
//
// The verdict is never ready while a probe it rests on has low confidence,
// and it is never ready while a heavy probe that should have run (the
// shell-invocation trace) could not. It is a pure function of the results.
package readiness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/shellcmd"
)

// Name is the assessment's name.
const Name = "distroless_readiness"

// Note IDs (registered warnings, used as notes).
const (
	NoteStaticOnly    = "distroless_readiness.static_evidence_only"
	NoteNotReached    = "distroless_readiness.static_not_reached"
	NoteUnexplained   = "distroless_readiness.trace_unexplained"
	NoteBuilderShells = "distroless_readiness.builder_stage_shells"
)

// Warnings are the IDs this assessor uses for notes.
var Warnings = []probe.WarningDesc{
	{ID: NoteStaticOnly, Summary: "the verdict rests on static evidence only; no traced build and boot ran"},
	{ID: NoteNotReached, Summary: "a shell use found statically did not run during the traced boot (it may run later, on another path)"},
	{ID: NoteUnexplained, Summary: "the traced boot ran a shell that no static finding explains"},
	{ID: NoteBuilderShells, Summary: "shells ran in builder-stage build steps; they stay in the builder and do not block"},
}

// Assessor is the distroless_readiness assessor.
type Assessor struct {
	task string
}

// New returns the assessor for task.
func New(task string) *Assessor { return &Assessor{task: task} }

var _ probe.Assessor = (*Assessor)(nil)

// Name returns "distroless_readiness".
func (*Assessor) Name() string { return Name }

// Task returns the task it answers.
func (a *Assessor) Task() string { return a.task }

// Assess combines the results.
func (a *Assessor) Assess(results []probe.Result) (probe.Assessment, error) {
	var as probe.Assessment
	byName := map[string]probe.Result{}
	for _, r := range results {
		byName[r.Probe] = r
		as.Basis = append(as.Basis, r.Probe)
	}
	b := &builder{}
	var unknown []string
	for _, r := range results {
		if r.Confidence == probe.Low {
			unknown = append(unknown, fmt.Sprintf("%s: %s", r.Probe, r.Reason))
		}
	}
	if r, ok := byName[dockerfileprobe.Name]; ok {
		var f dockerfileprobe.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.dockerfiles(&f)
	}
	if r, ok := byName[npmscripts.Name]; ok {
		var f npmscripts.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.chains(&f, byName[npmscripts.Name])
	}
	if r, ok := byName[entrypoints.Name]; ok {
		var f entrypoints.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.executables(&f)
	}
	if r, ok := byName[noderuntime.Name]; ok {
		var f noderuntime.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.runtime(&f)
	}
	if r, ok := byName[childprocess.Name]; ok {
		var f childprocess.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.childProcess(&f)
	}
	heavyRan := false
	if r, ok := byName[shelltrace.Name]; ok && r.Confidence != probe.Low {
		var f shelltrace.Facts
		if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
			return as, fmt.Errorf("decoding %s facts: %w", r.Probe, err)
		}
		b.trace(&f)
		heavyRan = true
	}
	if !heavyRan {
		b.notes = append(b.notes, probe.Note{ID: NoteStaticOnly, Message: "no traced build and boot confirmed these findings; only a trace proves that no shell runs"})
	}
	as.Blockers, as.Notes = b.sorted(), b.notes
	hard, unknownKind, removable := 0, 0, 0
	for _, bl := range as.Blockers {
		switch {
		case bl.Removable:
			removable++
		case bl.Kind == probe.UnknownKind:
			unknownKind++
		default:
			hard++
		}
	}
	switch {
	case hard > 0:
		as.Verdict = probe.Blocked
	case len(unknown) > 0:
		as.Verdict, as.Reason = probe.Unknown, "low confidence: "+strings.Join(unknown, "; ")
	case unknownKind > 0:
		as.Verdict, as.Reason = probe.Unknown, fmt.Sprintf("%d finding(s) could not be classified", unknownKind)
	case removable > 0:
		as.Verdict = probe.ReadyAfterRewrite
	default:
		as.Verdict = probe.Ready
	}
	return as, nil
}

// Builder collects blockers and notes.
type Builder = builder

type builder struct {
	blockers []probe.Blocker
	notes    []probe.Note
	seen     map[string]bool
}

// Add records a blocker once per (ID, first evidence).
func (b *builder) Add(bl probe.Blocker) {
	key := bl.ID
	if len(bl.Evidence) > 0 {
		key += fmt.Sprintf("@%s:%d", bl.Evidence[0].File, bl.Evidence[0].Line)
	}
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

// dockerfiles: shell needed while building the final stage, and shell-form
// health checks.
func (b *builder) dockerfiles(f *dockerfileprobe.Facts) {
	for _, file := range f.Files {
		d := file.Parsed
		if d == nil {
			continue
		}
		for i := d.Final; i >= 0; i = d.Stages[i].BaseStage {
			for _, in := range d.Stages[i].Instructions {
				switch {
				case in.Command == "run" && in.Form == dockerfile.FormShell:
					b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild,
						Title:    fmt.Sprintf("RUN %s needs /bin/sh in the final stage", strings.Join(in.Args, " ")),
						Fix:      "move this step into the builder stage and COPY its output into the final stage",
						Evidence: ev(d.Path, in.Line)})
				case in.Command == "run" && in.Form == dockerfile.FormExec:
					// Exec form needs no shell, but the binary must exist.
				case in.Command == "shell":
					b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellInstruction, Kind: probe.ShellInFinalStageBuild,
						Title: fmt.Sprintf("SHELL %v in the final stage", in.Args), Fix: "remove SHELL; distroless has no shell", Evidence: ev(d.Path, in.Line)})
				}
			}
		}
		if hc, ok := d.Effective(d.Final, "healthcheck"); ok && hc.Form == dockerfile.FormShell && len(hc.Args) > 0 {
			a := shellcmd.Analyze(hc.Args[0])
			bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("HEALTHCHECK CMD %s runs through /bin/sh -c", hc.Args[0]), Evidence: ev(d.Path, hc.Line)}
			if a.Removable && len(a.Env) == 0 {
				argv := a.Argv
				if argv[0] == "node" {
					argv = append([]string{"/nodejs/bin/node"}, argv[1:]...)
				}
				bl.Removable, bl.Fix = true, "HEALTHCHECK CMD "+quoteArgv(argv)
			} else {
				bl.Fix = "write the check as a Node script: HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"]"
			}
			b.Add(bl)
		}
	}
}

// chains: what the container runs at start.
func (b *builder) chains(f *npmscripts.Facts, r probe.Result) {
	warnEv := map[string][]probe.Evidence{}
	for _, w := range r.Warnings {
		warnEv[w.ID] = append(warnEv[w.ID], w.Evidence...)
	}
	for _, c := range f.Chains {
		startLine := 0
		switch {
		case c.Start.Cmd != nil:
			startLine = c.Start.Cmd.Line
		case c.Start.Entrypoint != nil:
			startLine = c.Start.Entrypoint.Line
		}
		evs := ev(c.Dockerfile, startLine)
		for _, s := range c.Scripts {
			if s.Line > 0 {
				evs = append(evs, probe.Evidence{File: pkgFile(c.Dockerfile), Line: s.Line, Note: s.Name + ": " + s.Command})
			}
		}
		switch c.Launcher {
		case "npm", "yarn", "pnpm":
			bl := probe.Blocker{ID: npmscripts.WarnPackageManagerStart, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("the container starts with %s, which runs %q through sh -c", strings.Join(c.Program, " "), c.Script), Evidence: evs}
			if c.Convertible {
				bl.Removable = true
				bl.Fix = "CMD " + quoteArgv(c.Direct)
				if len(c.Env) > 0 {
					bl.Fix = "ENV " + strings.Join(c.Env, " ") + " and " + bl.Fix
				}
			} else {
				bl.Fix = "reduce the start chain to one node command (" + strings.Join(c.Blockers, "; ") + ")"
			}
			b.Add(bl)
		case "shell":
			b.Add(probe.Blocker{ID: npmscripts.WarnShellFormStart, Kind: probe.ShellAtRuntime,
				Title: "the start command needs a shell: " + strings.Join(c.Blockers, "; "),
				Fix:   "split the command: one-off steps go into the build or an init job; the service runs as one exec-form command", Evidence: evs})
		case "node", "other":
			if sc := c.Start; (sc.Cmd != nil && sc.Cmd.Form == dockerfile.FormShell) || (sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell) {
				id := dockerfileprobe.WarnShellFormCmd
				if sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell {
					id = dockerfileprobe.WarnShellFormEntry
				}
				fix := "CMD " + quoteArgv(c.Direct)
				if len(c.Env) > 0 {
					fix = "ENV " + strings.Join(c.Env, " ") + " and " + fix
				}
				b.Add(probe.Blocker{ID: id, Kind: probe.ShellAtRuntime, Removable: true,
					Title: "the start command is in shell form and runs through /bin/sh -c", Fix: fix, Evidence: evs})
			}
		}
		for _, e := range warnEv[npmscripts.WarnDistrolessNodeTwice] {
			if e.File == c.Dockerfile {
				b.Add(probe.Blocker{ID: npmscripts.WarnDistrolessNodeTwice, Kind: probe.UnknownKind, Removable: true,
					Title: "CMD starts with node, but the distroless entrypoint is node already", Fix: "drop \"node\" from CMD: it holds node's arguments only",
					Evidence: []probe.Evidence{e}})
			}
		}
	}
}

func pkgFile(dockerfilePath string) string {
	if i := strings.LastIndex(dockerfilePath, "/"); i >= 0 {
		return dockerfilePath[:i] + "/package.json"
	}
	return "package.json"
}

// executables: entrypoint scripts, shims and the base image's entrypoint.
func (b *builder) executables(f *entrypoints.Facts) {
	for _, e := range f.Executables {
		evs := ev(e.File, e.Line)
		name := e.Command
		if e.RepoPath != "" && e.RepoPath != e.Command {
			name += " (" + e.RepoPath + ")"
		}
		switch {
		case e.Kind == entrypoints.KindBaseImage:
			b.Add(probe.Blocker{ID: entrypoints.WarnBaseEntry, Kind: probe.ShellAtRuntime, Removable: true,
				Title: "the node base image boots through docker-entrypoint.sh (#!/bin/sh) as pid 1",
				Fix:   "use a distroless node base, whose entrypoint is node itself", Evidence: evs})
		case e.InterpreterKind == "shell" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: pick(e.Origin == "bin_shim", entrypoints.WarnShellShim, entrypoints.WarnShellShebang), Kind: probe.ShellAtRuntime, Removable: true,
				Title: fmt.Sprintf("%s is a %s wrapper", name, e.Shebang), Fix: "run the package's JS entry directly: " + quoteArgv(e.NodeArgv), Evidence: evs})
		case e.InterpreterKind == "shell":
			b.Add(probe.Blocker{ID: entrypoints.WarnShellShebang, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("%s is a shell script (%s)", name, e.Shebang), Fix: "move its logic into Node or into the build; exec form cannot run it", Evidence: evs})
		case e.InterpreterKind == "env" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Removable: true,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Fix: "run it as " + quoteArgv(e.NodeArgv), Evidence: evs})
		case e.InterpreterKind == "env":
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Evidence: evs})
		case e.Kind == entrypoints.KindNotFound:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind,
				Title: fmt.Sprintf("%s (run as %s) is not in the repository; what it needs is unknown", e.Command, e.Origin), Evidence: evs})
		}
	}
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// runtime: missing binaries and native ABI.
func (b *builder) runtime(f *noderuntime.Facts) {
	for _, u := range f.Binaries {
		b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary,
			Title: fmt.Sprintf("the %s runs %s, which distroless lacks", u.Origin, u.Binary), Fix: u.Fix, Evidence: ev(u.Dockerfile, u.Line)})
	}
	for _, p := range f.OSPackages {
		if p.Flagged {
			b.Add(probe.Blocker{ID: noderuntime.WarnOSPackage, Kind: probe.MissingBinary,
				Title: fmt.Sprintf("the final stage installs %s (%s)", p.Name, p.Manager), Fix: "drop the package or keep a non-distroless image", Evidence: ev(p.Dockerfile, p.Line)})
		}
	}
	native := len(f.Native) > 0
	for _, img := range f.Images {
		if img.Builder == nil {
			continue
		}
		bl, rt := img.Builder, img.Runtime
		if native && bl.Libc == "musl" {
			b.Add(probe.Blocker{ID: noderuntime.WarnMuslGlibc, Kind: probe.NativeABI,
				Title: fmt.Sprintf("native addons are built on musl (%s) but distroless is glibc", bl.Ref),
				Fix:   fmt.Sprintf("build on node:%s-bookworm (glibc) with the runtime's Node major", majorOr(bl.NodeMajor)), Evidence: ev(img.Dockerfile, bl.Line)})
		}
		if native && bl.NodeMajor != 0 && rt.NodeMajor != 0 && bl.NodeMajor != rt.NodeMajor {
			b.Add(probe.Blocker{ID: noderuntime.WarnMajorMismatch, Kind: probe.NativeABI,
				Title: fmt.Sprintf("native addons are built for Node %d but run on Node %d", bl.NodeMajor, rt.NodeMajor),
				Fix:   "use the same Node major in the builder and the runtime", Evidence: ev(img.Dockerfile, bl.Line)})
		}
	}
}

func majorOr(m int) string {
	if m == 0 {
		return "22"
	}
	return fmt.Sprint(m)
}

// childProcess: calls that run a shell or a binary distroless lacks.
func (b *builder) childProcess(f *childprocess.Facts) {
	for _, fd := range f.Findings {
		evs := []probe.Evidence{{File: fd.File, Line: fd.Line, Column: fd.Column, Note: fd.Function}}
		where := "the app"
		dep := fd.Origin == childprocess.OriginDependency
		if dep {
			where = "dependency " + fd.Package
		}
		what := fd.Function
		if fd.Command != "" {
			what = fmt.Sprintf("%s(%q)", fd.Function, fd.Command)
		}
		switch fd.Kind {
		case childprocess.KindShell:
			fix := "call execFile or spawn with an argv (no shell: true) instead of a command line"
			id := childprocess.WarnShellInApp
			if dep {
				id = childprocess.WarnShellInDependency
				fix = fmt.Sprintf("pin or patch %s, or show with a trace that the call never runs", fd.Package)
			}
			b.Add(probe.Blocker{ID: id, Kind: probe.ShellAtRuntime, Title: fmt.Sprintf("%s calls %s, which runs /bin/sh", where, what), Fix: fix, Evidence: evs})
		case childprocess.KindMaybeShell:
			id := pick(dep, childprocess.WarnMaybeShellInDependency, childprocess.WarnMaybeShellInApp)
			b.Add(probe.Blocker{ID: id, Kind: probe.UnknownKind, Title: fmt.Sprintf("%s calls %s with options that may set shell: true", where, what), Evidence: evs})
		case childprocess.KindBinary:
			id := pick(dep, childprocess.WarnBinaryInDependency, childprocess.WarnBinaryInApp)
			bin := fd.Binary
			if bin == "" {
				bin = fd.Command
			}
			b.Add(probe.Blocker{ID: id, Kind: probe.MissingBinary, Title: fmt.Sprintf("%s runs %s, which a distroless image does not have", where, bin),
				Fix: "keep a non-distroless image, copy a static build of it in, or do the work in Node", Evidence: evs})
		case childprocess.KindDynamic, childprocess.KindNode:
		}
	}
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

// trace cross-checks the static blockers with the traced build and boot.
// A boot shell confirms the static blocker that predicted it and lends it
// the trace event as evidence; a boot shell nothing predicted becomes a
// blocker of its own. A static shell use in app code that the boot never
// reached is reported as a disagreement. Shells in builder-stage steps do
// not block.
func (b *builder) trace(f *shelltrace.Facts) {
	bootChildProcess := false
	var builderShells []string
	for _, inv := range f.Invocations {
		ev := probe.Evidence{Trace: &probe.TraceRef{Phase: inv.Phase, PID: inv.PID, Index: inv.Index},
			Note: fmt.Sprintf("%s %q", pick(inv.Attempted, "tried", "ran"), strings.Join(inv.Argv, " "))}
		if inv.Phase != "boot" {
			finalStage := false
			if inv.Cause.Line > 0 {
				finalStage = b.attach(probe.Evidence{File: inv.Cause.File, Line: inv.Cause.Line, Trace: ev.Trace, Note: ev.Note},
					dockerfileprobe.WarnShellFormRunFinal)
			}
			if !finalStage {
				builderShells = append(builderShells, inv.Phase)
			}
			continue
		}
		var ok bool
		switch inv.Cause.Kind {
		case "npm_script":
			ok = b.attach(ev, npmscripts.WarnPackageManagerStart)
		case "base_image_entrypoint":
			ok = b.attach(ev, entrypoints.WarnBaseEntry)
		case "instruction":
			ok = b.attach(ev, dockerfileprobe.WarnShellFormCmd, dockerfileprobe.WarnShellFormEntry, npmscripts.WarnShellFormStart)
		case "entrypoint_script":
			ok = b.attach(ev, entrypoints.WarnShellShebang, entrypoints.WarnShellShim)
		case "child_process":
			bootChildProcess = true
			ok = b.attach(ev, childprocess.WarnShellInApp, childprocess.WarnShellInDependency)
		}
		if !ok {
			b.Add(probe.Blocker{ID: shelltrace.WarnShellAtBoot, Kind: probe.ShellAtRuntime,
				Title:    fmt.Sprintf("the traced boot %s a shell: %s (under %s)", pick(inv.Attempted, "tried to run", "ran"), strings.Join(inv.Argv, " "), lastOr(inv.Ancestry)),
				Fix:      "find what starts it (cause: " + inv.Cause.Kind + ") and replace it with an exec-form command",
				Evidence: []probe.Evidence{ev}})
			b.Note(probe.Note{ID: NoteUnexplained, Message: fmt.Sprintf("no static finding explains the boot shell %q (pid %d)", strings.Join(inv.Argv, " "), inv.PID), Evidence: []probe.Evidence{ev}})
		}
	}
	if len(builderShells) > 0 {
		b.Note(probe.Note{ID: NoteBuilderShells, Message: fmt.Sprintf("%d shell(s) ran in builder-stage steps (%s); the runtime image does not need them", len(builderShells), strings.Join(dedupe(builderShells), ", "))})
	}
	// Static shell uses in the app that the boot did not reach.
	if !bootChildProcess {
		for _, bl := range b.blockers {
			if bl.ID == childprocess.WarnShellInApp && len(bl.Evidence) > 0 {
				b.Note(probe.Note{ID: NoteNotReached, Message: fmt.Sprintf("%s was not reached during the traced boot; it may still run on another path", bl.Title), Evidence: bl.Evidence[:1]})
			}
		}
	}
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
