// Package gates proves a migration. Each gate is data: a name, a one-line
// description, a doc page under docs/gates/, and a check over the results
// of the gate spawns. The spawns are sandbox.RoleGate requests to the
// sandbox client (gate-control): the rewritten image is built, booted,
// exercised and traced exactly as the trace probe does it, and the
// original image is booted the same way for same_behaviour. Nothing here
// starts a process.
package gates

import (
	"github.com/codegenie/codegenie/internal/buildnet"

	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/failtail"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/readiness"
)

// Status is a gate's result.
type Status string

// The statuses. A skipped gate had nothing to check (same_behaviour with
// no port) and says why; it does not fail the migration. An inconclusive
// gate failed, but the original image, built and booted the same way,
// fails the same way here, so the rewrite is not shown to be the cause;
// or (same_behaviour) the original could not be built or answered
// nothing, so there is nothing to compare. It never counts as passed.
const (
	Passed       Status = "passed"
	Failed       Status = "failed"
	Skipped      Status = "skipped"
	Inconclusive Status = "inconclusive"
)

// ErrNoOriginal is Evidence.OriginalErr when no original image was given
// to compare with: same_behaviour is then skipped, not inconclusive.
var ErrNoOriginal = errors.New("no original image to compare with")

// Gate is one check.
type Gate struct {
	Name        string
	Description string
	// Doc is the gate's page, repository-relative.
	Doc   string
	Check func(*Evidence) Outcome
}

// Outcome is one gate's result.
type Outcome struct {
	Gate   string `json:"gate"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Evidence names the phases and trace events the result rests on.
	Evidence []string `json:"evidence,omitempty"`
}

// Evidence is what the gates check: the gate spawns' results and the
// rewritten image's Dockerfile.
type Evidence struct {
	// File is the rewritten Dockerfile, parsed, and Stage its judged stage.
	File  *dockerfile.File
	Stage int
	// Migrated is the rewritten image's build and boot; MigratedErr the
	// spawn's error.
	Migrated    sandbox.Result
	MigratedErr error
	// Original is the original image's boot, nil when it did not run;
	// OriginalErr says why it did not.
	Original    *sandbox.Result
	OriginalErr error
	// Shipped is the child_process scan of the code the rewritten image
	// ships: the workspace's app with the node_modules read back from the
	// built image. ShippedErr says why it did not run.
	Shipped    *childprocess.Shipped
	ShippedErr error
}

// All are the gates, in the order they run.
var All = []Gate{
	{Name: "builds", Description: "the rewritten Dockerfile builds in the sandbox", Check: builds},
	{Name: "boots", Description: "the image starts and stays up until it has answered and settled, or exits 0 if it is a job", Check: boots},
	{Name: "serves", Description: "when the image exposes a port or the app listens on one, a connection is accepted inside the sandbox before the boot's maximum", Check: serves},
	{Name: "no_shell", Description: "the boot trace is complete and shows no shell exec, attempted or run", Check: noShell},
	{Name: "shipped_code", Description: "the code the rewritten image ships (the app, and the node_modules read back from the built image) reaches no shell, no binary and no command unknown until run time from its entrypoint", Check: shippedCode},
	{Name: "healthcheck", Description: "the image's HEALTHCHECK, run inside the booted sandbox, succeeds", Check: healthcheck},
	{Name: "same_behaviour", Description: "the same requests get the same status, content type and body from the original and the rewritten image", Check: sameBehaviour},
}

func init() {
	for i := range All {
		All[i].Doc = "docs/gates/" + All[i].Name + ".md"
	}
}

// Spec is one proof: the rewritten workspace and the original.
type Spec struct {
	// Migrated and Original are the workspace directories of the rewritten
	// and the original repository; Original empty skips same_behaviour.
	Migrated, Original string
	// Dockerfile is the workspace-relative Dockerfile (the same path in
	// both), Target the stage to build ("" for the last).
	Dockerfile, Target string
	// OriginalTarget is the original's stage to build.
	OriginalTarget  string
	BootFor         time.Duration
	Settle          time.Duration
	StepTimeout     time.Duration
	RegistryMirrors map[string]string
	ProbePaths      []string
	Timeout         time.Duration
	// BuildNet is the builds' network; nil is offline.
	BuildNet *buildnet.Settings
}

// Report is every gate's outcome.
type Report struct {
	Gates []Outcome `json:"gates"`
	// Passed is true when every gate passed or was skipped: none failed
	// and none was inconclusive.
	Passed bool `json:"passed"`
	// AuditIDs are the gate spawns' audit records.
	AuditIDs []string `json:"audit_ids,omitempty"`
	// Spawns are how long each gate spawn took, by image.
	MigratedMS int64 `json:"migrated_ms"`
	OriginalMS int64 `json:"original_ms,omitempty"`
	// Images are the original and the rewritten image's facts (size,
	// layers, OS packages, setuid files, shells), before and after.
	Images *report.ImageChange `json:"images,omitempty"`
}

// Run spawns the gate builds and boots and checks every gate. file is the
// rewritten Dockerfile, parsed.
func Run(ctx context.Context, client sandbox.Client, spec Spec, file *dockerfile.File, stage int) (*Report, error) {
	if client == nil {
		return nil, errors.New("gates: no sandbox client")
	}
	ev := &Evidence{File: file, Stage: stage}
	rep := &Report{}
	var mu sync.Mutex
	spawn := func(ctx context.Context, dir, target, what string, readNodeModules bool) (sandbox.Result, error) {
		req := sandbox.SpawnRequest{
			Role:         sandbox.RoleGate,
			Workspace:    sandbox.Workspace{Dir: dir},
			CaptureTrace: true,
			Timeout:      spec.Timeout,
			Build: &sandbox.BuildSpec{Dockerfile: spec.Dockerfile, Targets: []string{target}, Boot: true, BootFor: spec.BootFor, Settle: spec.Settle, StepTimeout: spec.StepTimeout,
				RegistryMirrors: spec.RegistryMirrors, ProbePaths: spec.ProbePaths, ReadNodeModules: readNodeModules},
		}
		req.Build.Egress, req.Build.Secrets, _ = spec.BuildNet.For(dir)
		req.Build.BootEnv = spec.BuildNet.Env()
		if fn := sandbox.ProgressFrom(ctx); fn != nil {
			src := "gates: " + what
			ctx = sandbox.WithProgress(ctx, func(p sandbox.Progress) { p.Source = src; fn(p) })
			defer fn(sandbox.Progress{Kind: sandbox.ProgressDone, Source: src})
		}
		res, err := client.Spawn(ctx, req)
		if res.AuditID != "" {
			mu.Lock()
			rep.AuditIDs = append(rep.AuditIDs, res.AuditID)
			mu.Unlock()
		}
		return res, err
	}
	// The original too, by the same path, at the same time (its boot
	// mostly waits for its service): a gate that fails is then told apart
	// from a failure the original has here too.
	var wg sync.WaitGroup
	if spec.Original == "" {
		ev.OriginalErr = ErrNoOriginal
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			orig, err := spawn(ctx, spec.Original, spec.OriginalTarget, "the original image", false)
			rep.OriginalMS = time.Since(start).Milliseconds()
			ev.Original, ev.OriginalErr = &orig, err
		}()
	}
	start := time.Now()
	ev.Migrated, ev.MigratedErr = spawn(ctx, spec.Migrated, spec.Target, "the rewritten image", true)
	if ok, _ := built(ev); ok {
		// The boot shows what ran; the code that ships shows what can
		// run on a path the boot did not take.
		ev.Shipped, ev.ShippedErr = childprocess.ScanImage(ctx, spec.Migrated, probe.ImageRef{Dockerfile: spec.Dockerfile, Target: spec.Target}, ev.Migrated.NodeModules)
	}
	rep.MigratedMS = time.Since(start).Milliseconds()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep.Images = images(ev)
	rep.Passed = true
	for _, g := range All {
		o := g.Check(ev)
		o.Gate = g.Name
		if o.Status == Failed {
			if why := originalFailsToo(g.Name, ev); why != "" {
				o.Status, o.Detail = Inconclusive, o.Detail+"; "+why
			}
		}
		if o.Status == Failed || o.Status == Inconclusive {
			rep.Passed = false
		}
		rep.Gates = append(rep.Gates, o)
	}
	return rep, nil
}

// originalFailsToo says how the original image fails here the way the
// rewritten one failed gate, or "" when it does not (or did not run): a
// build that fails, a boot that fails, no answer, a failing HEALTHCHECK.
func originalFailsToo(gate string, ev *Evidence) string {
	if ev.Original == nil || ev.OriginalErr != nil {
		return ""
	}
	orig := *ev.Original
	if ok, _ := built(ev); !ok {
		if ok, why := builtResult(orig, nil); !ok {
			return "the original image fails here too: " + why
		}
		return ""
	}
	if ok, _ := builtResult(orig, nil); !ok {
		return ""
	}
	switch gate {
	case "boots":
		if ok, why := bootsResult(orig); !ok {
			return "the original image fails here too: " + why
		}
	case "serves":
		if len(answered(orig)) == 0 {
			return "the original image answered no request here either" + neverListened(orig)
		}
	case "healthcheck":
		ph := phase(orig, sandbox.PhaseHealthcheck)
		switch {
		case ph == nil:
			return "the original image's HEALTHCHECK did not run here either"
		case ph.Failed || ph.ExitCode != 0:
			return fmt.Sprintf("the original image's HEALTHCHECK exits %d here too: %s", ph.ExitCode, lastLines(ph.OutputTail, 2))
		}
	}
	return ""
}

// neverListened is ", which never listened on P within D" when the boot
// of res waited for its declared ports in vain.
func neverListened(res sandbox.Result) string {
	b := phase(res, sandbox.PhaseBoot)
	if b == nil || b.Boot == nil || b.Boot.Ended != sandbox.BootMaximum || b.Boot.Port != 0 || len(b.Boot.Awaited) == 0 {
		return ""
	}
	return ": it " + sandbox.NeverListened(b.Boot.Awaited, b.Duration.Round(time.Second))
}

// built reports whether the rewritten image built, and why not.
func built(ev *Evidence) (bool, string) { return builtResult(ev.Migrated, ev.MigratedErr) }

// builtResult reports whether a gate spawn built its image, and why not.
func builtResult(res sandbox.Result, err error) (bool, string) {
	if err != nil {
		return false, "the gate spawn failed: " + err.Error()
	}
	for _, ph := range res.Phases {
		if ph.Failed && (strings.HasPrefix(ph.Name, "build:") || strings.HasPrefix(ph.Name, "pull:")) {
			return false, fmt.Sprintf("%s failed with exit %d: %s%s", ph.Name, ph.ExitCode, lastLines(ph.OutputTail, 5), sandbox.NetworkHint(res.Egress, ph.Name, ph.OutputTail))
		}
	}
	if phase(res, sandbox.PhaseBoot) == nil {
		return false, "the spawn reported no boot, so the image was not built"
	}
	return true, ""
}

func phase(res sandbox.Result, name string) *sandbox.PhaseResult {
	for i := range res.Phases {
		if res.Phases[i].Name == name {
			return &res.Phases[i]
		}
	}
	return nil
}

func notRun(why string) Outcome {
	return Outcome{Status: Failed, Detail: "not checked: " + why}
}

func builds(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return Outcome{Status: Failed, Detail: why}
	}
	var steps []string
	for _, ph := range ev.Migrated.Phases {
		if strings.HasPrefix(ph.Name, "build:") && !strings.Contains(ph.Name, ":step ") {
			steps = append(steps, ph.Name)
		}
	}
	return Outcome{Status: Passed, Detail: "the rewritten Dockerfile built", Evidence: steps}
}

func boots(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	ok, why := bootsResult(ev.Migrated)
	if !ok {
		return Outcome{Status: Failed, Detail: why, Evidence: []string{sandbox.PhaseBoot}}
	}
	return Outcome{Status: Passed, Detail: why, Evidence: []string{sandbox.PhaseBoot}}
}

// bootsResult reports whether a built image's boot went well, and says how
// it went.
func bootsResult(res sandbox.Result) (bool, string) {
	b := phase(res, sandbox.PhaseBoot)
	if b == nil {
		return false, "the spawn reported no boot"
	}
	ended := ""
	if b.Boot != nil {
		ended = b.Boot.Ended
	}
	switch {
	case ended == sandbox.BootAnsweredAndSettled:
		return true, fmt.Sprintf("the image answered and settled, still running after %s", b.Duration.Round(time.Millisecond))
	case ended == sandbox.BootSettled:
		return true, fmt.Sprintf("the image settled with no port, still running after %s", b.Duration.Round(time.Millisecond))
	case b.TimedOut || ended == sandbox.BootMaximum:
		return true, fmt.Sprintf("the image stayed up to the boot's maximum (%s)", b.Duration.Round(time.Millisecond))
	case !b.Failed && b.ExitCode == 0:
		return true, "the image ran as a job and exited 0"
	}
	return false, fmt.Sprintf("the image exited %d during the boot: %s", b.ExitCode, lastLines(b.OutputTail, 5))
}

// answered are a result's request phases that got an answer.
func answered(res sandbox.Result) []sandbox.PhaseResult {
	var out []sandbox.PhaseResult
	for _, ph := range res.Phases {
		if strings.HasPrefix(ph.Name, "request:") && ph.Response != nil {
			out = append(out, ph)
		}
	}
	return out
}

// exposed are the EXPOSE ports of the judged stage's chain.
func exposed(f *dockerfile.File, stage int) []string {
	var out []string
	for i := stage; f != nil && i >= 0 && i < len(f.Stages); i = f.Stages[i].BaseStage {
		for _, in := range f.Stages[i].Instructions {
			if in.Command == "expose" {
				out = append(out, in.Args...)
			}
		}
	}
	return out
}

func serves(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	if a := answered(ev.Migrated); len(a) > 0 {
		var evs []string
		for _, ph := range a {
			evs = append(evs, fmt.Sprintf("%s: %d", ph.Name, ph.Response.Status))
		}
		return Outcome{Status: Passed, Detail: strings.TrimSpace(strings.SplitN(a[0].OutputTail, "\n", 2)[0]), Evidence: evs}
	}
	if ports := exposed(ev.File, ev.Stage); len(ports) > 0 {
		return Outcome{Status: Failed, Detail: fmt.Sprintf("the image exposes %s, but no connection was accepted during the boot%s", strings.Join(ports, ", "), neverListened(ev.Migrated))}
	}
	return Outcome{Status: Skipped, Detail: "the image exposes no port and the app listened on none during the boot"}
}

// runtimePhase reports a phase of the booted image.
func runtimePhase(name string) bool {
	return name == sandbox.PhaseBoot || name == sandbox.PhaseHealthcheck || strings.HasPrefix(name, "request:")
}

func noShell(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	res := ev.Migrated
	if !res.TraceComplete {
		why := "the trace is incomplete, so it cannot show that no shell ran"
		if len(res.TraceGaps) > 0 {
			why += ": " + strings.Join(res.TraceGaps, "; ")
		}
		return Outcome{Status: Failed, Detail: why}
	}
	a := trace.Analyze(trace.BuildTree(res.Trace), nil)
	var shells []string
	for _, inv := range a.Invocations {
		if !runtimePhase(inv.Phase) {
			continue
		}
		verb := "ran"
		if inv.Attempted {
			verb = "tried"
			if inv.Errno != "" {
				verb += " (" + inv.Errno + ")"
			}
		}
		shells = append(shells, fmt.Sprintf("%s: pid %d %s %s", inv.Phase, inv.PID, verb, strings.Join(inv.Argv, " ")))
	}
	var unresolved []string
	for _, i := range a.Unresolved {
		if e := res.Trace[i]; runtimePhase(e.Phase) {
			unresolved = append(unresolved, fmt.Sprintf("%s: pid %d ran %s", e.Phase, e.PID, e.Binary))
		}
	}
	switch {
	case len(shells) > 0:
		return Outcome{Status: Failed, Detail: fmt.Sprintf("%d shell exec(s) during the boot", len(shells)), Evidence: shells}
	case len(unresolved) > 0:
		return Outcome{Status: Failed, Detail: "scripts ran whose interpreter could not be read, so they may have been shells", Evidence: unresolved}
	}
	runtimeExecs := 0
	for _, e := range res.Trace {
		if runtimePhase(e.Phase) && e.Kind == trace.KindExec {
			runtimeExecs++
		}
	}
	return Outcome{Status: Passed, Detail: fmt.Sprintf("the trace is complete: %d exec(s) during the boot, none a shell, none attempted", runtimeExecs)}
}

// shippedCode fails on what the readiness verdict makes blockers of, found
// in the code the rewritten image ships: the gates' boot takes one path
// through it, and a dependency that runs a shell on another (a library's
// exec of gcloud, called only when credentials are looked up) would
// otherwise pass every other gate.
func shippedCode(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	if ev.ShippedErr != nil {
		return Outcome{Status: Failed, Detail: "the code the image ships could not be scanned: " + ev.ShippedErr.Error()}
	}
	s := ev.Shipped
	if s == nil || s.Facts == nil {
		return Outcome{Status: Failed, Detail: "the code the image ships was not scanned, so nothing shows that no path through it reaches a shell"}
	}
	var found []string
	excused := 0
	for _, fd := range s.Facts.Blocking() {
		// What the verdict excuses (a known fallback, an opt-in the
		// image's ENV leaves off, another system's program), this gate
		// excuses too: gather and migrate read the code alike.
		if readiness.Excused(fd, ev.File) != "" {
			excused++
			continue
		}
		found = append(found, describeFinding(fd))
	}
	scanned := fmt.Sprintf("%d file(s) scanned, from the app and %d dependency package(s)", s.Facts.FilesScanned, s.Facts.DependenciesScanned)
	if ref := s.Facts.ImageNodeModules; ref != nil {
		scanned += fmt.Sprintf(", node_modules read back from the built image (%d files)", ref.Files)
	}
	if excused > 0 {
		scanned += fmt.Sprintf("; %d call(s) the verdict excuses too (known fallbacks, opt-ins the image's ENV leaves off, programs of other systems)", excused)
	}
	switch {
	case len(found) > 0:
		return Outcome{Status: Failed, Detail: fmt.Sprintf("%d call(s) in code the entrypoint reaches run a shell, a binary the image lacks, or a command unknown until run time (%s)", len(found), scanned), Evidence: found}
	case len(s.Facts.UnreadInImage) > 0:
		return Outcome{Status: Failed, Detail: fmt.Sprintf("%d file(s) the entrypoint may reach are too large to parse, so the scan cannot show that they reach no shell", len(s.Facts.UnreadInImage)), Evidence: s.Facts.UnreadInImage}
	case s.Confidence == probe.Low || s.Reason == childprocess.ReasonImageDependenciesPartial:
		return Outcome{Status: Failed, Detail: fmt.Sprintf("the scan is incomplete, so it cannot show that no shell is reached: %s: %s", s.Reason, s.Detail)}
	}
	detail := scanned + ": none reaches a shell or a binary"
	if s.Reason != "" {
		detail += fmt.Sprintf(" (scan confidence %s: %s: %s)", s.Confidence, s.Reason, s.Detail)
	}
	return Outcome{Status: Passed, Detail: detail}
}

// describeFinding is one line of shipped_code's evidence.
func describeFinding(fd childprocess.Finding) string {
	what := fd.Function
	if fd.Command != "" {
		what = fmt.Sprintf("%s(%q)", fd.Function, fd.Command)
	}
	where := "the app"
	if fd.Origin == childprocess.OriginDependency {
		where = "dependency " + fd.Package
		if fd.PackageVersion != "" {
			where += "@" + fd.PackageVersion
		}
	}
	line := fmt.Sprintf("%s:%d: %s calls %s (%s)", fd.File, fd.Line, where, what, fd.Kind)
	switch {
	case len(fd.Chain) > 1:
		line += ", reached by " + strings.Join(fd.Chain, " → ")
	case fd.ScopeNote != "":
		// Not reached by a known chain: say why it still counts.
		line += "; " + fd.ScopeNote
	}
	return line
}

// exitedFirst reports a boot that ended because the container exited,
// without listening: a HEALTHCHECK run during it may have found the
// container gone.
func exitedFirst(res sandbox.Result) bool {
	b := phase(res, sandbox.PhaseBoot)
	return b != nil && b.Boot != nil && b.Boot.Ended == sandbox.BootExited && b.Boot.Port == 0
}

func healthcheck(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	hc, ok := ev.File.Effective(ev.Stage, "healthcheck")
	if !ok || hc.HealthcheckNone {
		return Outcome{Status: Skipped, Detail: "the image has no HEALTHCHECK"}
	}
	ph := phase(ev.Migrated, sandbox.PhaseHealthcheck)
	switch {
	case ph == nil:
		return Outcome{Status: Failed, Detail: "the HEALTHCHECK did not run during the boot (the image exited first, or reached the boot's maximum first)"}
	case ph.Failed || ph.ExitCode != 0:
		detail := fmt.Sprintf("the HEALTHCHECK exited %d: %s", ph.ExitCode, lastLines(ph.OutputTail, 3))
		if exitedFirst(ev.Migrated) {
			// The runtime's error for an exec into a container that has
			// gone says nothing about the check itself.
			detail += "; the image exited during the boot without listening (see boots), which the check may have found"
		}
		return Outcome{Status: Failed, Detail: detail, Evidence: []string{sandbox.PhaseHealthcheck}}
	}
	return Outcome{Status: Passed, Detail: "the HEALTHCHECK exited 0 inside the booted sandbox", Evidence: []string{sandbox.PhaseHealthcheck}}
}

func sameBehaviour(ev *Evidence) Outcome {
	if ok, why := built(ev); !ok {
		return notRun(why)
	}
	if errors.Is(ev.OriginalErr, ErrNoOriginal) {
		return Outcome{Status: Skipped, Detail: "no original image was given, so there is nothing to compare"}
	}
	if ev.Original == nil || ev.OriginalErr != nil {
		why := "the original image did not run"
		if ev.OriginalErr != nil {
			why += ": " + ev.OriginalErr.Error()
		}
		return Outcome{Status: Inconclusive, Detail: why + ", so there is nothing to compare"}
	}
	if ok, why := builtResult(*ev.Original, nil); !ok {
		return Outcome{Status: Inconclusive, Detail: "the original image fails here: " + why + ", so there is nothing to compare"}
	}
	mig, orig := answered(ev.Migrated), answered(*ev.Original)
	switch {
	case len(mig) == 0 && len(orig) == 0:
		return Outcome{Status: Skipped, Detail: "neither image answered a request (no port), so there is nothing to compare"}
	case len(orig) == 0:
		return Outcome{Status: Inconclusive, Detail: "the original image answered no request here" + neverListened(*ev.Original) + ", so there is nothing to compare"}
	}
	var diffs, same []string
	generated := 0
	for _, o := range orig {
		i := slices.IndexFunc(mig, func(m sandbox.PhaseResult) bool { return m.Name == o.Name })
		if i < 0 {
			why := "the rewritten image was not asked (it never listened, or reached the boot's maximum first)"
			if ph := phase(ev.Migrated, o.Name); ph != nil {
				why = "the rewritten image did not answer"
			}
			diffs = append(diffs, fmt.Sprintf("%s: the original answered %d; %s", o.Name, o.Response.Status, why))
			continue
		}
		a, b := o.Response, mig[i].Response
		switch {
		case a.Status != b.Status:
			diffs = append(diffs, fmt.Sprintf("%s: status %d, was %d", o.Name, b.Status, a.Status))
		case a.ContentType != b.ContentType:
			diffs = append(diffs, fmt.Sprintf("%s: content type %q, was %q", o.Name, b.ContentType, a.ContentType))
		case a.BodySHA256 != b.BodySHA256 && a.ShapeSHA256 != "" && a.ShapeSHA256 == b.ShapeSHA256:
			// The two images were built apart, and a build that writes a
			// new ID each time (next build) serves it in its pages: the
			// bodies differ in such tokens only.
			generated++
			same = append(same, fmt.Sprintf("%s: %d %s, the same but for tokens that look generated and numbers (sha256 %.12s, was %.12s; shape %.12s)",
				o.Name, b.Status, b.ContentType, b.BodySHA256, a.BodySHA256, b.ShapeSHA256))
		case a.BodySHA256 != b.BodySHA256:
			diffs = append(diffs, fmt.Sprintf("%s: the body differs (sha256 %.12s, was %.12s)", o.Name, b.BodySHA256, a.BodySHA256))
		default:
			same = append(same, fmt.Sprintf("%s: %d %s sha256:%.12s", o.Name, b.Status, b.ContentType, b.BodySHA256))
		}
	}
	if len(diffs) > 0 {
		return Outcome{Status: Failed, Detail: fmt.Sprintf("%d of %d request(s) answered differently", len(diffs), len(orig)), Evidence: diffs}
	}
	detail := fmt.Sprintf("%d request(s) answered the same by both images", len(same))
	if generated > 0 {
		detail += fmt.Sprintf("; %d of them differ only in tokens that look generated (a build's ID, a nonce: 8 or more letters and digits) and numbers (a timestamp, an uptime), which two builds and boots of the same sources may write differently", generated)
	}
	return Outcome{Status: Passed, Detail: detail, Evidence: same}
}

// lastLines is up to n lines of a failure's output that say why: see
// failtail.Lines.
func lastLines(s string, n int) string {
	return failtail.Lines(s, n)
}
