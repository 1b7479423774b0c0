package readiness

import (
	"fmt"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/noderuntime"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/npmscripts"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// Name is the assessment's name.
const Name = "distroless_readiness"

// Note IDs (registered warnings, used as notes).
const (
	NoteStaticOnly    = "distroless_readiness.static_evidence_only"
	NoteNotReached    = "distroless_readiness.static_not_reached"
	NoteUnexplained   = "distroless_readiness.trace_unexplained"
	NoteBuilderShells = "distroless_readiness.builder_stage_shells"
	NoteNotInImage    = "distroless_readiness.not_in_image"
	NoteNotReachable  = "distroless_readiness.not_reachable"
	NoteKnownFallback = "distroless_readiness.known_fallback"
	NoteOptIn         = "distroless_readiness.opt_in_exec"
	// NoteForeignProgram: a call of a macOS or Windows program.
	NoteForeignProgram = "distroless_readiness.foreign_program"
)

// Warnings are the IDs this assessor uses for notes.
var Warnings = []probe.WarningDesc{
	{ID: NoteStaticOnly, Summary: "the verdict rests on static evidence only; no traced build and boot ran"},
	{ID: NoteNotReached, Summary: "a shell use found statically did not run during the traced boot (it may run later, on another path)"},
	{ID: NoteUnexplained, Summary: "the traced boot ran a shell that no static finding explains"},
	{ID: NoteBuilderShells, Summary: "shells ran in builder-stage build steps; they stay in the builder and do not block"},
	{ID: NoteNotInImage, Summary: "code that runs a shell or a binary is not in the judged image (no COPY brings it in), so it blocks nothing"},
	{ID: NoteNotReachable, Summary: "code that runs a shell or a binary is in the image but not reachable from the entrypoint, so it blocks nothing"},
	{ID: NoteForeignProgram, Summary: "a child_process call runs a program of another system (macOS's sw_vers, Windows' wmic) that no Linux image has, so it fails on the original image too and blocks nothing"},
	{ID: NoteKnownFallback, Summary: "a dependency's child_process call is a known fallback (fallbacks.json, with its source) that does not run, or does not fail, on distroless, so it blocks nothing"},
	{ID: NoteOptIn, Summary: "a dependency's child_process call runs only when the app's code or its deployment's configuration turns it on (fallbacks.json names the condition, with its source), and the image's ENV does not; check that the app and the deployment do not either"},
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

// needed are the probes the verdict rests on: a low-confidence result of
// one of them leaves the verdict unknown. node_project is among them: its
// dependencies name the wrapper binaries a start command runs. The trace
// is not: a verdict without it is answered from static evidence and
// unconfirmed.
var needed = map[string]bool{
	dockerfileprobe.Name: true, npmscripts.Name: true, entrypoints.Name: true, noderuntime.Name: true, childprocess.Name: true,
	nodeproject.Name: true,
}

// Assess combines the results.
func (a *Assessor) Assess(results []probe.Result) (probe.Assessment, error) {
	as, _, err := a.assess(results)
	return as, err
}

func (a *Assessor) assess(results []probe.Result) (probe.Assessment, *builder, error) {
	var as probe.Assessment
	byName := map[string]probe.Result{}
	for _, r := range results {
		byName[r.Probe] = r
		as.Basis = append(as.Basis, r.Probe)
	}
	b := &builder{}
	var unknown []string
	for _, r := range results {
		if r.Confidence == probe.Low && needed[r.Probe] {
			unknown = append(unknown, fmt.Sprintf("%s: %s", r.Probe, r.Reason))
		}
	}
	var df dockerfileprobe.Facts
	if err := decode(byName, dockerfileprobe.Name, &df); err != nil {
		return as, nil, err
	}
	var cp childprocess.Facts
	if err := decode(byName, childprocess.Name, &cp); err != nil {
		return as, nil, err
	}
	var np nodeproject.Facts
	if err := decode(byName, nodeproject.Name, &np); err != nil {
		return as, nil, err
	}
	b.depBinaries, b.depLibraries, b.depBundled = map[string]string{}, map[string]string{}, map[string]string{}
	for _, d := range np.Dependencies {
		w := wrappersByPackage[d.Name]
		for _, bin := range w.Programs {
			b.depBinaries[bin] = d.Name
		}
		for _, lib := range w.Libraries {
			b.depLibraries[libraryStem(lib)] = d.Name
		}
		for _, x := range w.Bundled {
			b.depBundled[x] = d.Name
		}
	}
	b.reachableBinaries = reachableBinaries(&cp)
	b.unread, b.hasUnread = unreadCommand(&cp)
	b.depsUnscanned = byName[childprocess.Name].Reason == childprocess.ReasonDependenciesNotInstalled
	b.dockerfiles(&df)
	var ep entrypoints.Facts
	if err := decode(byName, entrypoints.Name, &ep); err != nil {
		return as, nil, err
	}
	b.scriptBinaries = map[string]string{}
	for _, e := range ep.Executables {
		if e.Script == nil {
			continue
		}
		for _, prog := range e.Script.Programs {
			if _, ok := b.scriptBinaries[baseName(prog)]; !ok {
				b.scriptBinaries[baseName(prog)] = e.Command
			}
		}
	}
	b.jsEntries = map[string][]string{}
	b.binCommands = map[string]bool{}
	for _, e := range ep.Executables {
		switch {
		case e.NodeArgv != nil:
			b.jsEntries[e.Command] = e.NodeArgv
		case e.Kind == entrypoints.KindInferred || e.ResolvedBy == "bin":
			b.binCommands[e.Command] = true
		}
	}
	if r, ok := byName[npmscripts.Name]; ok {
		var f npmscripts.Facts
		if err := decode(byName, npmscripts.Name, &f); err != nil {
			return as, nil, err
		}
		b.chains(&f, r)
	}
	b.executables(&ep)
	b.healthProgramsCopied()
	var nr noderuntime.Facts
	if err := decode(byName, noderuntime.Name, &nr); err != nil {
		return as, nil, err
	}
	b.runtime(&nr)
	b.startProgram(&ep, &nr)
	b.childProcess(&cp)
	heavyRan := false
	if r, ok := byName[shelltrace.Name]; ok && r.Confidence != probe.Low {
		var f shelltrace.Facts
		if err := decode(byName, shelltrace.Name, &f); err != nil {
			return as, nil, err
		}
		b.trace(&f)
		heavyRan = true
	} else if ok {
		b.notes = append(b.notes, probe.Note{ID: NoteStaticOnly, Message: fmt.Sprintf(
			"unconfirmed: the traced build and boot did not run (%s); only a trace confirms that no shell runs", r.Reason)})
	}
	if !heavyRan && !hasNote(b.notes, NoteStaticOnly) {
		b.notes = append(b.notes, probe.Note{ID: NoteStaticOnly, Message: "unconfirmed: no traced build and boot ran; only a trace confirms that no shell runs"})
	}
	if d := judgedFile(&df); d != nil {
		b.appDir(d)
	}
	as.Blockers, as.Notes = b.sorted(), b.notes
	if d := judgedFile(&df); d != nil {
		for i := range as.Blockers {
			as.Blockers[i].Stage = stageOf(d, as.Blockers[i].Evidence)
		}
	}
	as.Confirmed = heavyRan
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
	startUnknown := ""
	if !heavyRan {
		startUnknown = unknownStart(byName)
	}
	nonNode := notNode(&df, &ep)
	switch {
	case nonNode != "":
		// Not a Node service: what blocks a Node migration does not apply.
		as.Verdict, as.Reason, as.Blockers = probe.Unknown, nonNode, nil
	case hard > 0:
		as.Verdict = probe.Blocked
	case len(cp.UnreadInImage) > 0:
		// Nothing unread may end in ready.
		as.Verdict, as.Reason = probe.Unknown, fmt.Sprintf("%s: %s: too large to parse (over %d bytes), and a token scan found calls only a parse classifies; split the bundle or show with the traced boot what runs",
			ReasonUnread, strings.Join(first(cp.UnreadInImage, 3), ", "), childprocess.MaxParseBytes)
	case startUnknown != "":
		// Never ready without knowing what starts: the start command
		// comes from a base image codegenie does not read.
		as.Verdict, as.Reason = probe.Unknown, ReasonUnknownStart+": "+startUnknown+
			"; judge a stage whose start command is in the Dockerfile (--target), build on a base whose config codegenie reads, or run the traced boot (drop --no-sandbox)"
	case len(unknown) > 0:
		as.Verdict, as.Reason = probe.Unknown, "low confidence: "+strings.Join(unknown, "; ")
	case unknownKind > 0:
		as.Verdict, as.Reason = probe.Unknown, fmt.Sprintf("%d finding(s) could not be classified", unknownKind)
	case removable > 0:
		as.Verdict = probe.ReadyAfterRewrite
	default:
		as.Verdict = probe.Ready
	}
	if as.Verdict == probe.Unknown {
		as.Confirmed = false
	}
	return as, b, nil
}

// ReasonUnread begins the reason of an unknown verdict that rests on a
// file the image runs and codegenie could not read.
const ReasonUnread = "file_unread"

// ReasonUnknownStart begins the reason of an unknown verdict whose start
// command codegenie cannot read.
const ReasonUnknownStart = "unknown_start_command"

// unknownStart returns why the judged image's start command is unknown
// ("" when it is known): a probe that reads it says it comes from a base
// image whose config is not read statically.
func unknownStart(byName map[string]probe.Result) string {
	for _, name := range []string{entrypoints.Name, npmscripts.Name} {
		if r, ok := byName[name]; ok && r.Reason == npmscripts.ReasonUnknownBase {
			if r.Detail != "" {
				return r.Detail
			}
			return string(r.Reason)
		}
	}
	return ""
}

func hasNote(ns []probe.Note, id string) bool {
	for _, n := range ns {
		if n.ID == id {
			return true
		}
	}
	return false
}

// decode reads a probe's facts into v; a probe that did not run leaves v
// zero.
func decode(byName map[string]probe.Result, name string, v any) error {
	r, ok := byName[name]
	if !ok || len(r.Facts) == 0 {
		return nil
	}
	if err := strictjson.Unmarshal(r.Facts, v); err != nil {
		return fmt.Errorf("decoding %s facts: %w", name, err)
	}
	return nil
}
