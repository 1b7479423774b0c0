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
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/httpcheck"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/dockerfileprobe"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/entrypoints"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
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
	NoteNotInImage    = "distroless_readiness.not_in_image"
	NoteNotReachable  = "distroless_readiness.not_reachable"
)

// Warnings are the IDs this assessor uses for notes.
var Warnings = []probe.WarningDesc{
	{ID: NoteStaticOnly, Summary: "the verdict rests on static evidence only; no traced build and boot ran"},
	{ID: NoteNotReached, Summary: "a shell use found statically did not run during the traced boot (it may run later, on another path)"},
	{ID: NoteUnexplained, Summary: "the traced boot ran a shell that no static finding explains"},
	{ID: NoteBuilderShells, Summary: "shells ran in builder-stage build steps; they stay in the builder and do not block"},
	{ID: NoteNotInImage, Summary: "code that runs a shell or a binary is not in the judged image (no COPY brings it in), so it blocks nothing"},
	{ID: NoteNotReachable, Summary: "code that runs a shell or a binary is in the image but not reachable from the entrypoint, so it blocks nothing"},
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
	b.depBinaries = map[string]string{}
	for _, d := range np.Dependencies {
		for _, bin := range wrapperBinaries[d.Name] {
			b.depBinaries[bin] = d.Name
		}
	}
	b.reachableBinaries = reachableBinaries(&cp)
	b.dockerfiles(&df)
	var ep entrypoints.Facts
	if err := decode(byName, entrypoints.Name, &ep); err != nil {
		return as, nil, err
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

// Builder collects blockers and notes.
type Builder = builder

type builder struct {
	blockers []probe.Blocker
	notes    []probe.Note
	seen     map[string]bool
	// reachableBinaries are the programs reachable code runs by a literal
	// name (from child_process findings in shipped, reachable code).
	reachableBinaries map[string]bool
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
	start   *npmscripts.Chain
	startEv []probe.Evidence
	// keptRunBinaries are programs final-stage RUN steps that cannot move
	// run (so the image is set up for them), with the step's line.
	keptRunBinaries map[string]int
	// depBinaries are programs the production dependencies are known to
	// run (fluent-ffmpeg runs ffmpeg), with the dependency.
	depBinaries map[string]string
	// envBinaries are programs the final stage's ENV names by path
	// (PUPPETEER_EXECUTABLE_PATH=/usr/bin/chromium), with the variable.
	envBinaries map[string]string
	// binCommands are node_modules/.bin commands whose JS file is not
	// known statically (the launcher resolves them at run time).
	binCommands map[string]bool
	// edits hold the rewrite data of removable blockers, by blockerKey;
	// rewriteStart is the start command the rewrite gives the service.
	edits        map[string]Edit
	rewriteStart *Start
}

// composeFor finds the compose service that runs the judged image: the
// same Dockerfile and target, in a compose file that is not a development
// one (images.ServiceFor).
func composeFor(f *dockerfileprobe.Facts, dockerfilePath string) (images.ComposeBuild, bool) {
	for _, file := range f.Files {
		if f.Image != nil && file.Path == dockerfilePath && file.Parsed != nil {
			return images.ServiceFor(f.Compose, file.Parsed, dockerfilePath, f.Image.Stage)
		}
	}
	return images.ComposeBuild{}, false
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

// DistrolessCmd turns a node command into the CMD a distroless node image
// runs: its entrypoint is node, so CMD holds node's arguments only, and a
// preload given as two words (--require ./otel.js) is written as one
// (--require=./otel.js) so that the option and its value stay together.
// A command that does not start with node is returned as it is.
func DistrolessCmd(argv []string) []string {
	if len(argv) == 0 || !isNodeWord(argv[0]) {
		return argv
	}
	var out []string
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if preload[a] && i+1 < len(args) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

var preload = map[string]bool{"-r": false, "--require": true, "--import": true, "--loader": true, "--experimental-loader": true}

func isNodeWord(w string) bool {
	base := w
	if i := strings.LastIndex(w, "/"); i >= 0 {
		base = w[i+1:]
	}
	return base == "node" || base == "nodejs"
}

// cmdFix is the CMD (and ENV) that replaces a start command on distroless.
func cmdFix(argv, env []string) string {
	fix := "CMD " + quoteArgv(DistrolessCmd(argv))
	if len(env) > 0 {
		fix = "ENV " + strings.Join(env, " ") + " and " + fix
	}
	return fix
}

// stageOf names the stage of d that holds the first evidence in d.
func stageOf(d *dockerfile.File, evs []probe.Evidence) string {
	for _, e := range evs {
		if e.File != d.Path || e.Line < 1 {
			continue
		}
		// Stages are in line order: the last that starts at or before the
		// line, found without a scan per blocker.
		st := sort.Search(len(d.Stages), func(i int) bool { return d.Stages[i].Line > e.Line }) - 1
		if st >= 0 {
			return d.StageName(st)
		}
	}
	return ""
}

// judgedFile returns the judged image's Dockerfile as built for its target.
func judgedFile(f *dockerfileprobe.Facts) *dockerfile.File {
	if f.Image == nil {
		return nil
	}
	for _, file := range f.Files {
		if file.Path == f.Image.Dockerfile && file.Parsed != nil {
			return file.Parsed.AsTarget(f.Image.Stage)
		}
	}
	return nil
}

// appDir: a rewrite that moves a runtime stage built FROM another stage,
// or one whose RUN steps move to a files stage, copies the app's directory
// into a new stage. With no WORKDIR, that is the directory that holds
// every COPY destination; an app copied into / itself cannot be told from
// the base image's files, and the recipe cannot make the new stage.
func (b *builder) appDir(d *dockerfile.File) {
	st := d.Stages[d.Final]
	moves := slices.ContainsFunc(b.blockers, func(bl probe.Blocker) bool { return bl.Rule == RuleMoveToBuilder })
	if len(b.blockers) == 0 || st.BaseStage < 0 && !moves {
		return
	}
	if _, ok := d.AppDir(d.Final); ok {
		return
	}
	b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild, Rule: RuleRunSideEffects,
		Title:    "the runtime stage's files cannot move to a distroless stage: no WORKDIR is set and the app is copied into /",
		WhyNot:   "a distroless runtime stage copies the app's directory from the stage that builds it, and with the app in / its files cannot be told from the base image's; set a WORKDIR (or copy the app into a directory of its own)",
		Evidence: ev(d.Path, st.Line)})
}

// dockerfiles: what the judged image's final stage needs a shell for while
// it builds, and its health check.
func (b *builder) dockerfiles(f *dockerfileprobe.Facts) {
	d := judgedFile(f)
	if d == nil {
		return
	}
	b.startBinaries = startBinaries(d)
	startArgv := d.Start(d.Final).Argv
	if len(startArgv) > 0 && baseName(startArgv[0]) == dockerfile.NodeEntrypoint {
		startArgv = startArgv[1:] // docker-entrypoint.sh execs its arguments
	}
	b.init, b.startArgv = dockerfile.SplitInit(startArgv)
	b.envBinaries = envBinaries(d)
	if cmd, ok := d.Effective(d.Final, "cmd"); ok {
		b.cmdArgv = cmd.Args
		if cmd.Form == dockerfile.FormShell {
			b.cmdArgv = shellcmd.Analyze(strings.Join(cmd.Args, " ")).Argv
		}
	}
	// Each stage's working directory, once: not once per RUN, which made
	// the assessment quadratic in the Dockerfile's length.
	workdirs := d.Workdirs(d.Final)
	for i := d.Final; i >= 0; i = d.Stages[i].BaseStage {
		for _, in := range d.Stages[i].Instructions {
			switch {
			case in.Command == "run" && in.Form == dockerfile.FormShell:
				step := ClassifyRun(in, workdirs[i])
				bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.ShellInFinalStageBuild,
					Title:    fmt.Sprintf("RUN %s needs /bin/sh in the final stage", clip(strings.Join(in.Args, " "), 120)),
					Evidence: ev(d.Path, in.Line)}
				if step.Movable {
					bl.Rule, bl.Fix = RuleMoveToBuilder, "move this step into the builder stage and COPY its output into the final stage ("+step.Why+")"
				} else {
					bl.Rule, bl.WhyNot = RuleRunSideEffects, step.Why
					b.keepRun(in)
				}
				b.Add(bl)
			case in.Command == "run" && in.Form == dockerfile.FormExec && len(in.Args) > 0 && !isNodeWord(in.Args[0]):
				step := ClassifyRun(in, workdirs[i])
				bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormRunFinal, Kind: probe.MissingBinary,
					Title:    fmt.Sprintf("RUN %s runs %s in the final stage, which distroless lacks", quoteArgv(in.Args), in.Args[0]),
					Evidence: ev(d.Path, in.Line)}
				if step.Movable {
					bl.Rule, bl.Fix = RuleMoveToBuilder, "move this step into the builder stage and COPY its output into the final stage"
				} else {
					bl.Rule, bl.WhyNot = RuleRunSideEffects, step.Why
				}
				b.Add(bl)
			case in.Command == "shell":
				b.Add(probe.Blocker{ID: dockerfileprobe.WarnShellInstruction, Kind: probe.ShellInFinalStageBuild, Rule: RuleExecForm,
					Title: fmt.Sprintf("SHELL %v in the final stage", in.Args), Fix: "remove SHELL once the final stage's instructions are in exec form", Evidence: ev(d.Path, in.Line)})
			}
		}
	}
	if cb, found := composeFor(f, d.Path); found {
		b.composeOverrides(cb)
	}
	// The image's HEALTHCHECK is judged on its own even when a compose
	// file sets the service's healthcheck: compose's overrides it only
	// where the service runs through compose, and the image ships its own
	// everywhere else.
	if hc, ok := d.Effective(d.Final, "healthcheck"); ok {
		b.healthcheck(d, hc, d.Path)
	}
	if cb, found := composeFor(f, d.Path); found && len(cb.Healthcheck) > 1 {
		switch cb.Healthcheck[0] {
		case "CMD-SHELL":
			b.healthcheck(d, dockerfile.Instruction{Command: "healthcheck", Form: dockerfile.FormShell, Args: cb.Healthcheck[1:2], Line: cb.HealthcheckLine}, cb.File)
		case "CMD":
			b.healthcheck(d, dockerfile.Instruction{Command: "healthcheck", Form: dockerfile.FormExec, Args: cb.Healthcheck[1:], Line: cb.HealthcheckLine}, cb.File)
		}
	}
}

// healthcheck judges one health check of the judged image: its
// HEALTHCHECK, or (hcFile a compose file) the compose service's.
func (b *builder) healthcheck(d *dockerfile.File, hc dockerfile.Instruction, hcFile string) {
	if hc.HealthcheckNone || len(hc.Args) == 0 {
		return
	}
	argv := hc.Args
	inCompose := hcFile != d.Path
	env := httpEnv{opts: httpcheck.Options{BusyboxWget: busyboxWget(d)}, proxy: proxyEnv(d)}
	var line string
	var bl probe.Blocker
	switch {
	case hc.Form == dockerfile.FormShell:
		line = hc.Args[0]
		bl = probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.ShellAtRuntime,
			Title: fmt.Sprintf("HEALTHCHECK CMD %s runs through /bin/sh -c", hc.Args[0]), Evidence: ev(hcFile, hc.Line)}
	case shellcmd.IsShell(argv[0]) && len(argv) >= 3 && argv[1] == "-c":
		// ["sh", "-c", LINE] is a shell-form check written as exec form.
		line = hc.Args[2]
		bl = probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.ShellAtRuntime,
			Title: fmt.Sprintf("HEALTHCHECK runs %s -c %q", hc.Args[0], hc.Args[2]), Evidence: ev(hcFile, hc.Line)}
	}
	if bl.ID != "" {
		a := healthAnalysis(line)
		cl, why, ok := shellcmd.ParseCheckLine(line)
		switch {
		case ok && httpcheck.IsClient(cl.Argv):
			b.httpHealth(bl, cl, env, inCompose)
		case len(a.Commands) > 0 && httpcheck.IsClient(a.Commands[0]):
			// A curl or wget check in a line that does more: a pipe into
			// grep, a second request, an expansion.
			if why == "" {
				why = "it does more than run " + a.Commands[0][0]
			}
			bl.Rule, bl.WhyNot = RuleShellLine, fmt.Sprintf("the %s check line cannot become a generated Node check that checks the same thing: %s; write the check as a Node script", path.Base(a.Commands[0][0]), why)
			b.Add(bl)
		default:
			b.health(bl, a, inCompose)
		}
		return
	}
	switch {
	case isNodeWord(argv[0]) && argv[0] != dockerfile.DistrolessEntrypoint:
		b.health(probe.Blocker{ID: dockerfileprobe.WarnShellFormHealth, Kind: probe.MissingBinary,
			Title:    fmt.Sprintf("HEALTHCHECK runs %q, but distroless has node only at /nodejs/bin/node, not on PATH", argv[0]),
			Evidence: ev(hcFile, hc.Line)}, shellcmd.Analysis{Removable: true, Argv: argv}, inCompose)
	case httpcheck.IsClient(argv):
		b.httpHealth(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary,
			Title:    fmt.Sprintf("HEALTHCHECK runs %s, which distroless lacks", argv[0]),
			Evidence: ev(hcFile, hc.Line)}, shellcmd.CheckLine{Argv: argv}, env, inCompose)
	}
}

// httpEnv is what decides how the image's curl or wget behaves beyond its
// command line: which wget it is, and a proxy its ENV sets.
type httpEnv struct {
	opts  httpcheck.Options
	proxy map[string]string // proxy variables the final stage's ENV sets, and no_proxy
}

// busyboxWget reports a final stage whose wget is BusyBox's: an Alpine or
// BusyBox base (or a distroless :debug one) with no wget package added.
func busyboxWget(d *dockerfile.File) bool {
	root := ""
	for i, n := d.Final, 0; i >= 0 && i < len(d.Stages) && n <= len(d.Stages); i, n = d.Stages[i].BaseStage, n+1 {
		root = d.Stages[i].ResolvedBase
		for _, in := range d.Stages[i].Instructions {
			if in.Command == "run" && apkAddWgetRE.MatchString(strings.Join(in.Args, " ")) {
				return false
			}
		}
	}
	return strings.Contains(root, "alpine") || strings.Contains(root, "busybox") || strings.HasSuffix(root, ":debug") ||
		strings.Contains(root, ":debug-")
}

var apkAddWgetRE = regexp.MustCompile(`\bapk\s+(?:[^&;|]*\s)?add\b[^&;|]*\swget\b`)

// proxyEnv returns the proxy variables (and no_proxy) the final stage's
// ENV sets, by lower-case name: curl and wget send their requests through
// them. A later ENV wins, as in the image.
func proxyEnv(d *dockerfile.File) map[string]string {
	var chain []int
	for i := d.Final; i >= 0 && i < len(d.Stages) && len(chain) <= len(d.Stages); i = d.Stages[i].BaseStage {
		chain = append([]int{i}, chain...)
	}
	out := map[string]string{}
	for _, i := range chain {
		for _, in := range d.Stages[i].Instructions {
			if in.Command != "env" {
				continue
			}
			for _, kv := range in.Args {
				k, v, ok := strings.Cut(kv, "=")
				switch k = strings.ToLower(k); k {
				case "http_proxy", "https_proxy", "all_proxy", "no_proxy":
					if ok {
						out[k] = strings.Trim(v, `"'`)
					}
				}
			}
		}
	}
	return out
}

// viaProxy names the proxy variable a check's request would go through,
// "" when none (no proxy set, or no_proxy lists every URL's host).
func viaProxy(proxy map[string]string, c *httpcheck.Check) string {
	if c.UnixSocket != "" {
		return ""
	}
	for _, raw := range c.URLs {
		u, err := url.Parse(raw)
		if err != nil {
			return "a proxy"
		}
		name := "http_proxy"
		if u.Scheme == "https" {
			name = "https_proxy"
		}
		for _, n := range []string{name, "all_proxy"} {
			if proxy[n] == "" || noProxy(proxy["no_proxy"], u.Hostname()) {
				continue
			}
			return n
		}
	}
	return ""
}

func noProxy(list, host string) bool {
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimPrefix(strings.TrimSpace(h), ".")
		if h == "*" || h != "" && (strings.EqualFold(h, host) || strings.HasSuffix(strings.ToLower(host), "."+strings.ToLower(h))) {
			return true
		}
	}
	return false
}

// httpHealth decides a curl or wget health check's blocker: a generated
// Node check that checks the same thing, or, when the command does
// something a generated check would not, a rewrite by hand, saying what.
func (b *builder) httpHealth(bl probe.Blocker, cl shellcmd.CheckLine, env httpEnv, inCompose bool) {
	prog := path.Base(cl.Argv[0])
	c, err := httpcheck.Parse(cl.Argv, env.opts)
	why := ""
	switch {
	case len(cl.Env) > 0:
		name, _, _ := strings.Cut(cl.Env[0], "=")
		why = fmt.Sprintf("the line sets %s for %s", name, prog)
	case err != nil:
		why = err.Error()
	default:
		if p := viaProxy(env.proxy, c); p != "" {
			why = fmt.Sprintf("the image's ENV sets %s, so %s sends the request through a proxy", p, prog)
		}
	}
	if why != "" {
		bl.Rule, bl.WhyNot = RuleShellLine, fmt.Sprintf("the %s check cannot become a generated Node check that checks the same thing: %s; write the check as a Node script", prog, why)
		b.Add(bl)
		return
	}
	c.AlwaysSucceeds = cl.AlwaysSucceeds
	bl.Rule, bl.Fix = RuleHealthNode, healthFix(c)
	if inCompose {
		bl.Fix = "the compose healthcheck's test: " + strings.TrimPrefix(bl.Fix, "HEALTHCHECK CMD ")
	}
	b.addEdit(bl, Edit{HealthURL: c.URLs[0], HealthCheck: c, InCompose: inCompose})
}

// health decides a health check's blocker that is not curl or wget: exec
// form with node, or a check only a person can rewrite. A check the
// compose file sets is rewritten there.
func (b *builder) health(bl probe.Blocker, a shellcmd.Analysis, inCompose bool) {
	where := "HEALTHCHECK CMD "
	if inCompose {
		where = "the compose healthcheck's test: [\"CMD\", ...]: "
	}
	if a.Removable && len(a.Env) == 0 && len(a.Argv) > 0 && isNodeWord(a.Argv[0]) {
		bl.Rule, bl.Fix = RuleHealthExecForm, where+quoteArgv(append([]string{dockerfile.DistrolessEntrypoint}, a.Argv[1:]...))
		b.addEdit(bl, Edit{Health: a.Argv[1:], InCompose: inCompose})
		return
	}
	bl.Rule, bl.Fix = RuleShellLine, "write the check as a Node script: HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"]"
	b.Add(bl)
}

// composeOverrides judges a compose file's command and entrypoint, which
// replace the image's own when the service runs through compose: a shell
// or a package manager there needs a shell whatever the Dockerfile says,
// and the Dockerfile rewrite does not reach it.
func (b *builder) composeOverrides(cb images.ComposeBuild) {
	for _, o := range []struct {
		what string
		argv []string
		line int
	}{{"ENTRYPOINT", cb.Entrypoint, cb.EntrypointLine}, {"CMD", cb.Command, cb.CommandLine}} {
		if len(o.argv) == 0 {
			continue
		}
		prog := baseName(o.argv[0])
		var why string
		switch {
		case shellcmd.IsShell(prog):
			why = "runs " + prog
		case prog == "npm" || prog == "yarn" || prog == "pnpm" || prog == "npx":
			why = "starts through " + prog + ", which runs scripts through sh -c"
		default:
			continue
		}
		b.Add(probe.Blocker{ID: npmscripts.WarnShellFormStart, Kind: probe.ShellAtRuntime, Rule: RuleShellLine,
			Title:    fmt.Sprintf("the compose service %s overrides the image's %s with %s (%s)", cb.Service, o.what, strings.Join(o.argv, " "), why),
			WhyNot:   "the compose file, not the Dockerfile, sets this command: change it there to exec-form node arguments",
			Evidence: []probe.Evidence{{File: cb.File, Line: o.line}}})
	}
}

// keepRun records the programs a RUN step that stays in the final stage
// configures for run time.
func (b *builder) keepRun(in dockerfile.Instruction) {
	if b.keptRunBinaries == nil {
		b.keptRunBinaries = map[string]int{}
	}
	cmds := [][]string{in.Args}
	if in.Form == dockerfile.FormShell {
		cmds = shellcmd.Analyze(strings.Join(in.Args, " ")).Commands
	}
	for _, c := range cmds {
		// "git config --global ..." sets a program up for run time; other
		// uses at build time say nothing about run time.
		if len(c) > 1 && c[1] == "config" {
			b.keptRunBinaries[baseName(c[0])] = in.Line
		}
	}
}

// wrapperBinaries are npm packages that exist to run one program.
var wrapperBinaries = map[string][]string{
	"fluent-ffmpeg": {"ffmpeg", "ffprobe"}, "ffmpeg-static": nil, "ping": {"ping"}, "net-ping": nil,
	"simple-git": {"git"}, "gm": {"gm", "convert"}, "imagemagick": {"convert", "identify"},
	"youtube-dl-exec": {"yt-dlp", "python3"}, "yt-dlp-wrap": {"yt-dlp"}, "node-7z": {"7z"},
	"pdf-poppler": {"pdftoppm"}, "node-poppler": {"pdftotext", "pdftoppm"}, "ghostscript4js": {"gs"},
	"shelljs": {"sh"}, "node-cron-shell": {"sh"}, "git-clone": {"git"}, "isomorphic-git": nil,
	"puppeteer": {"chromium", "chromium-browser"}, "puppeteer-core": {"chromium", "chromium-browser"},
	"playwright": {"chromium"}, "playwright-core": {"chromium"}, "sharp-cli": nil, "wkhtmltopdf": {"wkhtmltopdf"},
}

// healthAnalysis analyses a shell-form health check. "CHECK || exit 1" is
// CHECK: Docker takes any non-zero exit as unhealthy, so the fallback adds
// nothing a shell is needed for (and output sent to /dev/null changes no
// exit status). A fallback that exits 0 is not dropped: it makes the check
// pass whatever CHECK does.
func healthAnalysis(line string) shellcmd.Analysis {
	a := shellcmd.Analyze(line)
	if a.Removable || !a.NeedsShell {
		return a
	}
	if cl, _, ok := shellcmd.ParseCheckLine(line); ok && !cl.AlwaysSucceeds && len(cl.Env) == 0 {
		return shellcmd.Analysis{NeedsShell: true, Reasons: a.Reasons, Removable: true, Argv: cl.Argv, Commands: [][]string{cl.Argv}}
	}
	return a
}

// envBinaries names the programs the final stage's ENV values point at by
// an absolute path, with the variable that does.
func envBinaries(d *dockerfile.File) map[string]string {
	out := map[string]string{}
	for i := d.Final; i >= 0; i = d.Stages[i].BaseStage {
		for _, in := range d.Stages[i].Instructions {
			if in.Command != "env" {
				continue
			}
			for _, kv := range in.Args {
				k, v, ok := strings.Cut(kv, "=")
				v = strings.Trim(v, `"'`)
				if ok && strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " :") {
					out[baseName(v)] = k
				}
			}
		}
	}
	return out
}

// startBinaries names the programs the final stage's ENTRYPOINT, CMD and
// HEALTHCHECK run, each with the instruction that names it.
func startBinaries(d *dockerfile.File) map[string]string {
	out := map[string]string{}
	for _, c := range []string{"entrypoint", "cmd", "healthcheck"} {
		in, ok := d.Effective(d.Final, c)
		if !ok || len(in.Args) == 0 {
			continue
		}
		cmds := [][]string{in.Args}
		if in.Form == dockerfile.FormShell {
			cmds = shellcmd.Analyze(strings.Join(in.Args, " ")).Commands
		}
		for _, cmd := range cmds {
			if init, rest := dockerfile.SplitInit(cmd); init != nil && !dockerfile.IsUserWrapper(init[0]) {
				cmd = rest // the rewrite drops the init; the wrapped command is judged on its own
			}
			if len(cmd) > 0 {
				if c == "healthcheck" && httpcheck.IsClient(cmd) {
					continue // replaced by a Node check
				}
				out[baseName(cmd[0])] = strings.ToUpper(c)
			}
		}
	}
	return out
}

// healthFix is the Node health check that checks what c does.
func healthFix(c *httpcheck.Check) string {
	return fmt.Sprintf("HEALTHCHECK CMD [\"/nodejs/bin/node\", \"healthcheck.js\"] with a script that requests %s as %s did and %s",
		strings.Join(c.URLs, " and "), healthTool(c.Tool), c.Rule())
}

func healthTool(t string) string {
	if t == httpcheck.BusyboxWget {
		return "BusyBox wget"
	}
	return t
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
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
				file := s.Package
				if file == "" {
					file = pkgFileOf(c)
				}
				evs = append(evs, probe.Evidence{File: file, Line: s.Line, Note: s.Name + ": " + s.Command})
			}
		}
		switch c.Launcher {
		case "npx":
			bl := probe.Blocker{ID: npmscripts.WarnPackageManagerStart, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("the container starts with %s, which distroless lacks", strings.Join(c.Program, " ")), Evidence: evs}
			st := b.nodeStart(c.Direct, c.Env, "the npx command")
			st.Dir = c.Dir
			switch {
			case c.Convertible && st.Program == nil:
				bl.Rule, bl.Fix = RuleScriptArgv, cmdFix(b.viaJSEntry(c.Direct), c.Env)
				if st.Bin != "" {
					bl.Fix = fmt.Sprintf("run %s's JS file (the one its package's \"bin\" names) from a generated launcher that finds it in node_modules at run time: CMD [%q]", st.Bin, LauncherFile)
				}
				b.setStart(st, false)
			case c.Convertible:
				bl.Rule, bl.WhyNot = RuleBinaryAtRuntime, fmt.Sprintf("npx runs %s, which is not node", strings.Join(st.Program, " "))
			default:
				bl.Rule, bl.WhyNot = RuleShellLine, "the npx command cannot be rewritten: "+strings.Join(c.Blockers, "; ")
			}
			b.Add(bl)
		case "npm", "yarn", "pnpm", string(shellcmd.NodeRun):
			bl := probe.Blocker{ID: npmscripts.WarnPackageManagerStart, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("the container starts with %s, which runs %q through sh -c", strings.Join(c.Program, " "), c.Script), Evidence: evs}
			steps, launcher := launcherSteps(c)
			st := b.nodeStart(c.Direct, c.Env, "the "+c.Script+" script")
			st.Dir = c.Dir
			switch {
			case c.Convertible && st.Program == nil:
				bl.Rule, bl.Fix = RuleScriptArgv, cmdFix(b.viaJSEntry(c.Direct), c.Env)
				if c.Dir != "" {
					// Relative to the image's WORKDIR, as Docker reads it.
					bl.Fix = "WORKDIR " + c.Dir + " and " + bl.Fix
				}
				if st.Bin != "" {
					// A .bin command whose JS file is known only once the
					// dependencies are installed.
					bl.Fix = fmt.Sprintf("run %s's JS file (the one its package's \"bin\" names) from a generated launcher that finds it in node_modules at run time: CMD [%q]", st.Bin, LauncherFile)
				}
				b.setStart(st, false)
			case launcher:
				bl.Rule = RuleNodeLauncher
				bl.Fix = launcherFix(steps)
				b.setStart(Start{Steps: steps, Dir: c.Dir, From: "the " + c.Script + " script and its hooks"}, false)
			case c.Convertible:
				bl.Rule, bl.WhyNot = RuleBinaryAtRuntime, fmt.Sprintf("the %s script runs %s, which is not node", c.Script, strings.Join(st.Program, " "))
			default:
				bl.Rule, bl.WhyNot = RuleShellLine, "the start chain does not reduce to node commands: "+strings.Join(c.Blockers, "; ")
			}
			b.Add(bl)
		case "shell":
			bl := probe.Blocker{ID: npmscripts.WarnShellFormStart, Kind: probe.ShellAtRuntime,
				Title: "the start command needs a shell: " + strings.TrimPrefix(strings.Join(c.Blockers, "; "), "start command needs a shell: "), Evidence: evs}
			if steps, ok := launcherSteps(c); ok {
				bl.Rule = RuleNodeLauncher
				bl.Fix = launcherFix(steps)
				b.setStart(Start{Steps: steps, From: "the start command line"}, false)
			} else {
				bl.Rule, bl.WhyNot = RuleShellLine, "one-off steps go into the build or an init job; the service runs as one exec-form command"
			}
			b.Add(bl)
		case "node", "other":
			sc := c.Start
			shellForm := (sc.Cmd != nil && sc.Cmd.Form == dockerfile.FormShell) || (sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell)
			if shellForm || c.ViaShell {
				id := dockerfileprobe.WarnShellFormCmd
				if sc.Entrypoint != nil && sc.Entrypoint.Form == dockerfile.FormShell {
					id = dockerfileprobe.WarnShellFormEntry
				}
				title := "the start command is in shell form and runs through /bin/sh -c"
				if !shellForm {
					title = "the start command runs through an explicit sh -c (" + strings.Join(sc.Argv, " ") + ")"
				}
				bl := probe.Blocker{ID: id, Kind: probe.ShellAtRuntime, Rule: RuleExecForm, Title: title, Fix: cmdFix(c.Direct, c.Env), Evidence: evs}
				if len(c.Direct) == 0 {
					bl.Rule, bl.Fix, bl.WhyNot = RuleShellLine, "", "the command line needs a shell: "+strings.Join(c.Blockers, "; ")
				}
				b.Add(bl)
				b.setStart(b.nodeStart(c.Direct, c.Env, "the shell-form command"), false)
			}
			b.start, b.startEv = &c, evs
		}
		for _, e := range warnEv[npmscripts.WarnDistrolessNodeTwice] {
			if e.File == c.Dockerfile {
				// Program is the entrypoint (node) then CMD, which starts
				// with node again.
				cmd := c.Program
				if len(cmd) > 1 && isNodeWord(cmd[0]) && isNodeWord(cmd[1]) {
					cmd = cmd[1:]
				}
				b.Add(probe.Blocker{ID: npmscripts.WarnDistrolessNodeTwice, Kind: probe.UnknownKind, Rule: RuleDropNodeArgv,
					Title: "CMD starts with node, but the distroless entrypoint is node already", Fix: cmdFix(cmd, nil),
					Evidence: []probe.Evidence{e}})
				b.setStart(Start{Args: DistrolessCmd(cmd), From: "CMD"}, true)
			}
		}
		// What the container runs now, when no rule above changed it.
		prog := c.Direct
		if len(prog) == 0 {
			prog = c.Program
		}
		b.setStart(b.nodeStart(prog, c.Env, "the start command"), false)
	}
}

// LauncherFile is the generated launcher's name, beside the app's
// package.json in the image's WORKDIR.
const LauncherFile = "codegenie-launch.cjs"

func launcherFix(steps [][]string) string {
	s := make([]string, len(steps))
	for i, st := range steps {
		s[i] = strings.Join(st, " ")
	}
	return fmt.Sprintf("run the %d node steps (%s) from a generated launcher: CMD [%q]", len(steps), strings.Join(s, "; "), LauncherFile)
}

// viaJSEntry replaces a command that is a shim or an env-node script by
// the node command that runs its JS file.
func (b *builder) viaJSEntry(argv []string) []string {
	if len(argv) == 0 || isNodeWord(argv[0]) {
		return argv
	}
	if js, ok := b.jsEntries[argv[0]]; ok {
		return append(append([]string{}, js...), argv[1:]...)
	}
	return argv
}

// startProgram checks that what the container starts exists in the image:
// a program other than node must be a file of the repository or an OS
// package the image installs, and node's script must be a file the image
// holds. Otherwise a distroless image will not have it either, and the
// verdict cannot be ready.
func (b *builder) startProgram(ep *entrypoints.Facts, nr *noderuntime.Facts) {
	c := b.start
	if c == nil || len(c.Program) == 0 {
		return
	}
	prog := c.Program[0]
	switch c.Launcher {
	case "other":
		name := baseName(prog)
		for _, e := range ep.Executables {
			if e.Command == prog {
				return // judged as an executable of its own
			}
		}
		for _, p := range nr.OSPackages {
			for _, bin := range noderuntime.PackageBinaries(p.Name) {
				if bin == name {
					return // judged with the OS packages
				}
			}
		}
		for _, u := range nr.Binaries {
			if u.Binary == name {
				return
			}
		}
		b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
			Title: fmt.Sprintf("the container starts %s, which is neither a file of the repository nor a package the image installs", prog),
			Fix:   "run the service with node and its JS file in exec form", Evidence: b.startEv})
	case "node":
		// A script a build generates (dist/, a bundle) is not in the
		// repository and may well be in the image; a tool's name is not
		// the app's script in any image (CMD ["npm", "start"] on a
		// distroless base runs node /app/npm).
		script := nodeScriptOf(c.Program[1:])
		if shellcmd.IsShell(script) && len(c.Program) >= 4 && c.Program[1] == script && c.Program[2] == "-c" {
			// CMD ["sh", "-c", LINE] on a distroless base runs node sh -c
			// LINE; exec form of LINE is what was meant.
			a := shellcmd.Analyze(c.Program[3])
			bl := probe.Blocker{ID: dockerfileprobe.WarnShellFormCmd, Kind: probe.ShellAtRuntime,
				Title: fmt.Sprintf("CMD runs %s -c %q, which on the distroless entrypoint is node %s: a shell the image does not have", script, c.Program[3], script), Evidence: b.startEv}
			if a.Removable && len(a.Argv) > 0 && isNodeWord(a.Argv[0]) {
				bl.Rule, bl.Fix = RuleExecForm, cmdFix(a.Argv, a.Env)
				b.setStart(b.nodeStart(a.Argv, a.Env, "the sh -c line"), true)
			} else {
				bl.Rule, bl.WhyNot = RuleShellLine, "the line needs a shell: "+strings.Join(a.Reasons, ", ")
			}
			b.Add(bl)
			return
		}
		if isNodeWord(script) && b.hasBlocker(npmscripts.WarnDistrolessNodeTwice) {
			return // CMD ["node", ...] on distroless: drop_node_argv removes it
		}
		if notAScript[baseName(script)] {
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("node runs %q as its script, but %s is a tool, not the app's JS file (the distroless entrypoint is node)", script, baseName(script)),
				Fix:   "point CMD at the service's JS file (relative to WORKDIR)", Evidence: b.startEv})
		}
	}
}

// notAScript are names of tools that are never the app's own script.
var notAScript = map[string]bool{"npm": true, "npx": true, "yarn": true, "pnpm": true, "corepack": true, "pm2": true, "pm2-runtime": true,
	"nodemon": true, "ts-node": true, "tsx": true, "next": true, "sh": true, "bash": true, "node": true}

// nodeScriptOf returns the script of node's arguments: the first that is
// not an option or a preload's value.
func nodeScriptOf(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case preload[a] || a == "-r":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// launcherSteps reports whether a chain is a sequence of node commands
// (pre/post hooks, && chains) that a generated Node launcher can run
// without a shell, and lists them.
func launcherSteps(c npmscripts.Chain) ([][]string, bool) {
	var steps [][]string
	add := func(a shellcmd.Analysis) bool {
		if a.Removable && len(a.Argv) > 0 {
			if !isNodeWord(a.Argv[0]) || len(a.Env) > 0 {
				return false
			}
			steps = append(steps, a.Argv)
			return true
		}
		for _, r := range a.Reasons {
			if r != "operator &&" {
				return false
			}
		}
		for _, cmd := range a.Commands {
			if len(cmd) == 0 || !isNodeWord(cmd[0]) {
				return false
			}
			for _, w := range cmd {
				if w == "<expanded>" {
					return false
				}
			}
			steps = append(steps, cmd)
		}
		return len(a.Commands) > 0
	}
	if len(c.Scripts) == 0 {
		if len(c.Program) == 3 && shellcmd.IsShell(c.Program[0]) {
			return steps, add(shellcmd.Analyze(c.Program[2]))
		}
		if c.Start.Cmd != nil && c.Start.Cmd.Form == dockerfile.FormShell && len(c.Start.Cmd.Args) > 0 {
			return steps, add(shellcmd.Analyze(c.Start.Cmd.Args[0]))
		}
		return nil, false
	}
	for _, s := range c.Scripts {
		if s.Role == "handover" {
			continue // it only runs the next script, which is listed too
		}
		if s.Role == "called" || !add(s.Analysis) {
			return nil, false
		}
	}
	return steps, len(steps) > 1
}

func pkgFileOf(c npmscripts.Chain) string {
	if c.Package != "" {
		return c.Package
	}
	return pkgFile(c.Dockerfile)
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
			b.Add(probe.Blocker{ID: entrypoints.WarnBaseEntry, Kind: probe.ShellAtRuntime, Rule: RuleDistrolessBase,
				Title: "the node base image boots through docker-entrypoint.sh (#!/bin/sh) as pid 1",
				Fix:   "use a distroless node base, whose entrypoint is node itself", Evidence: evs})
		case e.ShellRunner != "":
			b.Add(probe.Blocker{ID: entrypoints.WarnShellShim, Kind: probe.ShellAtRuntime, Rule: RuleShellLine,
				Title: fmt.Sprintf("%s %s", e.Command, e.ShellRunner), WhyNot: e.Command + " is a development runner that needs a shell; run the service with node directly", Evidence: evs})
		case e.Kind == entrypoints.KindInferred:
			b.Add(probe.Blocker{ID: pick(e.InterpreterKind == "shell", entrypoints.WarnShellShim, entrypoints.WarnEnvShebang), Kind: pick2(e.InterpreterKind == "shell", probe.ShellAtRuntime, probe.MissingBinary), Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s is a node_modules/.bin command; with a %s lockfile it is %s (inferred: node_modules is not in the repository)", e.Command, strings.TrimPrefix(e.ResolvedBy, "lockfile:"), pick(e.InterpreterKind == "shell", "a #!/bin/sh wrapper", "a #!/usr/bin/env node script")),
				Fix:   "point CMD at the JavaScript file that the \"bin\" field of the package providing " + path.Base(e.Command) + " names", Evidence: evs})
		case e.Kind == entrypoints.KindOutside:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s is a symlink that leads outside the repository; it was not read", e.Command), Evidence: evs})
		case e.Kind == entrypoints.KindNotRegular:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s is not a regular file (a FIFO, socket or device); it was not read", e.Command), Evidence: evs})
		case e.InterpreterKind == "shell" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: pick(e.Origin == "bin_shim", entrypoints.WarnShellShim, entrypoints.WarnShellShebang), Kind: probe.ShellAtRuntime, Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s is a %s wrapper", name, e.Shebang), Fix: "run the package's JS entry directly: CMD " + quoteArgv(DistrolessCmd(e.NodeArgv)), Evidence: evs})
		case e.InterpreterKind == "shell" && e.Script != nil && e.Script.DefaultsOnly && e.Origin == "entrypoint":
			exec := e.Script.Exec
			scriptArgs := b.scriptArgs(e.Command)
			if len(exec) == 1 && exec[0] == `"$@"` {
				exec = scriptArgs
			}
			if e.RepoPath != "" && e.Script.ExecLine > 0 {
				// The script's own lines: its defaults and its exec.
				for _, l := range e.Script.Lines {
					evs = append(evs, probe.Evidence{File: e.RepoPath, Line: l})
				}
			}
			bl := probe.Blocker{ID: entrypoints.WarnShellShebang, Kind: probe.ShellAtRuntime, Rule: RuleEntrypointToEnv,
				Title: fmt.Sprintf("%s is a shell script (%s) that only sets defaults and execs %s", name, e.Shebang, strings.Join(e.Script.Exec, " ")), Evidence: evs}
			fixed, appends := cutDollarAt(exec)
			switch {
			case slices.Contains(fixed, `"$@"`):
				bl.Rule, bl.WhyNot = RuleScriptLogic, `the script passes its arguments ("$@") before other words, which ENTRYPOINT and CMD cannot express`
			case appends && len(fixed) > 0 && isNodeWord(fixed[0]):
				// exec node app.js "$@": node app.js stays fixed, and the
				// script's arguments (what docker run passes) follow it.
				st := b.nodeStart(fixed, e.Script.Env, "the entrypoint script "+e.Command)
				if st.Program != nil || st.Bin != "" {
					bl.Rule, bl.WhyNot = RuleScriptLogic, "the script execs "+strings.Join(exec, " ")+", which is not a node script with its arguments"
					break
				}
				st.AppendArgs, st.CmdArgs = true, scriptArgs
				bl.Fix = "drop the script; " + appendFix(st)
				b.setStart(st, true)
			case len(exec) > 0 && isNodeWord(exec[0]):
				bl.Fix = "drop the ENTRYPOINT; " + cmdFix(exec, e.Script.Env)
				st := b.nodeStart(exec, e.Script.Env, "the entrypoint script "+e.Command)
				b.setStart(st, true)
			default:
				bl.Rule, bl.WhyNot = RuleScriptLogic, "the script only sets defaults, but what it execs is not node ("+strings.Join(exec, " ")+")"
			}
			b.Add(bl)
		case e.InterpreterKind == "shell":
			bl := probe.Blocker{ID: entrypoints.WarnShellShebang, Kind: probe.ShellAtRuntime, Rule: RuleScriptLogic,
				Title: fmt.Sprintf("%s is a shell script (%s)", name, e.Shebang), Evidence: evs}
			if e.Script != nil && len(e.Script.Reasons) > 0 {
				bl.WhyNot = "the script does more than set defaults: " + strings.Join(first(e.Script.Reasons, 3), "; ")
			}
			b.Add(bl)
		case e.InterpreterKind == "env" && e.NodeArgv != nil:
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Rule: RuleJSEntry,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Fix: "point CMD at the JS file: CMD " + quoteArgv(DistrolessCmd(e.NodeArgv)), Evidence: evs})
		case e.InterpreterKind == "env":
			b.Add(probe.Blocker{ID: entrypoints.WarnEnvShebang, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
				Title: fmt.Sprintf("%s starts with %s; distroless has no /usr/bin/env", name, e.Shebang), Evidence: evs})
		case e.Kind == entrypoints.KindNotFound:
			b.Add(probe.Blocker{ID: entrypoints.WarnNotFound, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s (run as %s) is not in the repository; what it needs is unknown", e.Command, e.Origin), Evidence: evs})
		}
	}
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

func baseName(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// runtime: OS packages, binaries, Node versions and native ABI.
func (b *builder) runtime(f *noderuntime.Facts) {
	runtimeBins := map[string]bool{}
	for _, u := range f.Binaries {
		if u.Origin == "healthcheck" && (u.Binary == "curl" || u.Binary == "wget") {
			continue // the dockerfile rules above replace the check
		}
		if dockerfile.IsInit(u.Binary) && u.Origin != "healthcheck" {
			b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleInitWrapper,
				Title: fmt.Sprintf("the %s runs the init %s, which distroless lacks; it forwards signals to the command it wraps", u.Origin, u.Binary),
				Fix:   "drop " + u.Binary + ": the generated launcher runs the wrapped command as its child and forwards SIGTERM, SIGINT and SIGHUP to it", Evidence: ev(u.Dockerfile, u.Line)})
			continue
		}
		runtimeBins[u.Binary] = true
		b.Add(probe.Blocker{ID: noderuntime.WarnMissingBinary, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title: fmt.Sprintf("the %s runs %s, which distroless lacks", u.Origin, u.Binary), Fix: u.Fix, Evidence: ev(u.Dockerfile, u.Line)})
	}
	var buildOnly []string
	var buildEv []probe.Evidence
	for _, p := range f.OSPackages {
		need := ""
		for _, bin := range noderuntime.PackageBinaries(p.Name) {
			switch {
			case runtimeBins[bin]:
				need = "the container runs " + bin
			case b.startBinaries[bin] != "":
				need = "its " + b.startBinaries[bin] + " runs " + bin
			case b.keptRunBinaries[bin] > 0:
				need = fmt.Sprintf("a final-stage RUN configures %s for run time (line %d)", bin, b.keptRunBinaries[bin])
			case b.depBinaries[bin] != "":
				need = "the production dependency " + b.depBinaries[bin] + " runs " + bin
			case b.envBinaries[bin] != "":
				need = "ENV " + b.envBinaries[bin] + " points the service at " + bin
			case b.reachableBinaries[bin]:
				need = "code the entrypoint reaches runs " + bin
			}
		}
		if need == "" {
			buildOnly = append(buildOnly, p.Name)
			buildEv = append(buildEv, probe.Evidence{File: p.Dockerfile, Line: p.Line, Note: p.Manager + " " + p.Name})
			continue
		}
		b.Add(probe.Blocker{ID: noderuntime.WarnOSPackage, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime,
			Title: fmt.Sprintf("the final stage installs %s (%s) and %s", p.Name, p.Manager, need), Evidence: ev(p.Dockerfile, p.Line)})
	}
	if len(buildOnly) > 0 {
		b.Note(probe.Note{ID: noderuntime.WarnOSPackage, Message: fmt.Sprintf(
			"the final stage installs %s, which nothing at run time uses (no CMD, ENTRYPOINT, HEALTHCHECK or reachable code runs them); they stay in the builder", strings.Join(dedupe(buildOnly), ", ")),
			Evidence: buildEv})
	}
	native := len(f.Native) > 0
	for _, img := range f.Images {
		rt := img.Runtime
		if rt.EndOfLife != "" {
			b.Add(probe.Blocker{ID: noderuntime.WarnEndOfLife, Kind: probe.RuntimeVersion, Rule: RuleDistrolessBase,
				Title: fmt.Sprintf("the runtime image %s is end of life: %s", rt.Ref, rt.EndOfLife),
				Fix:   fmt.Sprintf("FROM gcr.io/distroless/nodejs%d-debian13", noderuntime.NextSupported(majorOf(img))), Evidence: ev(img.Dockerfile, rt.Line)})
		}
		if m := majorOf(img); m != 0 && !noderuntime.Supported(m) && rt.EndOfLife == "" {
			line := rt.Line
			if rt.NodeMajor == 0 && img.Builder != nil {
				line = img.Builder.Line
			}
			b.Add(probe.Blocker{ID: noderuntime.WarnUnsupportedMajor, Kind: probe.RuntimeVersion, Rule: RuleBumpNode,
				Title: fmt.Sprintf("Node %d has no distroless image (only %s are published)", m, majorsList()),
				Fix:   fmt.Sprintf("bump to Node %d, the nearest supported LTS, and test the service on it", noderuntime.NextSupported(m)), Evidence: ev(img.Dockerfile, line)})
		}
		if img.Builder == nil {
			continue
		}
		bl := img.Builder
		if native && bl.Libc == "musl" {
			b.Add(probe.Blocker{ID: noderuntime.WarnMuslGlibc, Kind: probe.NativeABI, Rule: RuleGlibcBuilder,
				Title: fmt.Sprintf("native addons are built on musl (%s) but distroless is glibc", bl.Ref),
				Fix:   fmt.Sprintf("build on node:%s-bookworm-slim (glibc), the runtime's Node major", majorOr(bl.NodeMajor)), Evidence: ev(img.Dockerfile, bl.Line)})
		}
		if native && bl.NodeMajor != 0 && rt.NodeMajor != 0 && bl.NodeMajor != rt.NodeMajor {
			b.Add(probe.Blocker{ID: noderuntime.WarnMajorMismatch, Kind: probe.NativeABI, Rule: RuleSameMajor,
				Title: fmt.Sprintf("native addons are built for Node %d but run on Node %d", bl.NodeMajor, rt.NodeMajor),
				Fix:   "use the same Node major in the builder and the runtime", Evidence: ev(img.Dockerfile, bl.Line)})
		}
	}
}

// majorOf is the Node major the service runs: the runtime's when its base
// tells (a builder may use another major only to build), else the
// builder's (a runtime such as alpine with apk's nodejs follows it in the
// rewrite).
func majorOf(img noderuntime.Image) int {
	if img.Runtime.NodeMajor != 0 {
		return img.Runtime.NodeMajor
	}
	if img.Builder != nil {
		return img.Builder.NodeMajor
	}
	return 0
}

func majorsList() string {
	var s []string
	for _, m := range noderuntime.DistrolessMajors {
		s = append(s, fmt.Sprint(m))
	}
	return strings.Join(s, ", ")
}

func majorOr(m int) string {
	if m == 0 {
		return "22"
	}
	return fmt.Sprint(m)
}

// childProcess: calls that run a shell or a binary distroless lacks. Only
// code the image holds and the entrypoint reaches (or may reach) blocks;
// the rest is a note that says why it does not.
func (b *builder) childProcess(f *childprocess.Facts) {
	notIn, notReached := map[string][]probe.Evidence{}, map[string][]probe.Evidence{}
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
		evs := []probe.Evidence{e}
		if len(fd.Chain) > 1 {
			evs[0].Note = fd.Function + ", reached by " + strings.Join(fd.Chain, " → ")
		} else if len(fd.Chain) == 1 {
			evs[0].Note = fd.Function + ", in the entrypoint itself"
		} else if fd.ScopeNote != "" {
			evs[0].Note = fd.Function + "; " + fd.ScopeNote
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
			b.Add(probe.Blocker{ID: id, Kind: probe.MissingBinary, Rule: RuleBinaryAtRuntime, Title: fmt.Sprintf("%s runs %s, which a distroless image does not have", where, bin),
				Fix: "keep a non-distroless image, copy a static build of it in, or do the work in Node", Evidence: evs})
		case childprocess.KindDynamic:
			id := pick(dep, childprocess.WarnDynamicInDependency, childprocess.WarnDynamicInApp)
			b.Add(probe.Blocker{ID: id, Kind: probe.UnknownKind, Rule: RuleUnclassified,
				Title: fmt.Sprintf("%s calls %s with a command that is not a literal; what it runs is unknown", where, fd.Function),
				Fix:   "make the command a literal (or an allow-list), or show with a trace what runs", Evidence: evs})
		case childprocess.KindNode:
		}
	}
	for _, o := range []string{"app", "dependency"} {
		if e := notIn[o]; len(e) > 0 {
			b.Note(probe.Note{ID: NoteNotInImage, Message: fmt.Sprintf("%d child_process use(s) in %s code are not in the image (no COPY of the judged target brings them in); they block nothing", len(e), o), Evidence: e})
		}
		if e := notReached[o]; len(e) > 0 {
			b.Note(probe.Note{ID: NoteNotReachable, Message: fmt.Sprintf("%d child_process use(s) in %s code are in the image but not reachable from the entrypoint; they block nothing", len(e), o), Evidence: e})
		}
	}
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
		if inv.Errno != "" {
			ev.Note += ": " + inv.Errno
		}
		if inv.Phase != "boot" && inv.Phase != "healthcheck" && !strings.HasPrefix(inv.Phase, "request:") {
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
		case "healthcheck":
			ok = b.attach(ev, dockerfileprobe.WarnShellFormHealth)
		case "child_process":
			bootChildProcess = true
			ok = b.attach(ev, childprocess.WarnShellInApp, childprocess.WarnShellInDependency)
		}
		if !ok {
			b.Add(probe.Blocker{ID: shelltrace.WarnShellAtBoot, Kind: probe.ShellAtRuntime, Rule: RuleTracedShell,
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

// scriptArgs are the arguments the container passes an entrypoint script
// (its "$@"): the words after it in the start command, which ENTRYPOINT
// and CMD (without the init wrapper) give.
func (b *builder) scriptArgs(script string) []string {
	for i, w := range b.startArgv {
		if w == script {
			return append([]string{}, b.startArgv[i+1:]...)
		}
	}
	return append([]string{}, b.cmdArgv...)
}

// cutDollarAt splits exec's trailing "$@" off: exec node app.js "$@" is
// node app.js, to which the script's arguments are appended.
func cutDollarAt(exec []string) (fixed []string, appends bool) {
	if n := len(exec); n > 1 && exec[n-1] == `"$@"` {
		return exec[:n-1], true
	}
	return exec, false
}

// appendFix is the ENTRYPOINT and CMD that run node's fixed arguments
// with the arguments docker run gives (CMD when it gives none).
func appendFix(st Start) string {
	fix := "ENTRYPOINT " + quoteArgv(append([]string{dockerfile.DistrolessEntrypoint}, st.Args...))
	if len(st.CmdArgs) > 0 {
		fix += " and CMD " + quoteArgv(st.CmdArgs)
	}
	if len(st.Env) > 0 {
		fix = "ENV " + strings.Join(st.Env, " ") + ", " + fix
	}
	return fix
}
