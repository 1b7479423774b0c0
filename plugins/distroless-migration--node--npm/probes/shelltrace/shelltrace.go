// Package shelltrace is the shell_invocation_trace probe of ADR-0002: it
// builds the repository's Dockerfile (the builder target, then the final
// stage) and boots the final image inside the sandbox, with every exec
// traced host-side, and reports each shell the build or the boot ran, with
// its phase, process ancestry and cause. Nothing is guessed: a run that did
// not finish, or whose trace may have lost events, is low confidence with a
// typed reason, never "no shell".
//
// Run makes one kind of privileged call, pctx.Sandbox.Spawn with
// sandbox.RoleProbe; the build and the boot happen inside gate-control and
// the sandbox, never in this process.
//
// Declared inputs: the ADR lists the Dockerfiles, package.json and the
// resolved base-image digests. A build whose Dockerfile copies the
// repository (COPY . .) also depends on the application's files, so the
// probe declares its sources and scripts as well: a warm answer must never
// describe code that has since changed.
package shelltrace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/failtail"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/images"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/nodeproject"
)

// Name is the probe's name.
const Name = "shell_invocation_trace"

// Reasons for low confidence.
const (
	ReasonSandboxUnavailable probe.Reason = "sandbox_unavailable"
	ReasonSandboxBootFailed  probe.Reason = "sandbox_boot_failed"
	ReasonBuildFailed        probe.Reason = "build_failed"
	ReasonBootFailed         probe.Reason = "boot_failed"
	ReasonTimeout            probe.Reason = "timeout"
	ReasonTraceIncomplete    probe.Reason = "trace_incomplete"
	ReasonNoDockerfile       probe.Reason = "no_dockerfile"
	ReasonInterpreterUnknown probe.Reason = "interpreter_unknown"
	// ReasonImageUnavailable: a base image could not be pulled; the
	// detail names the reference and the registries or mirrors tried.
	ReasonImageUnavailable probe.Reason = "image_unavailable"
	// ReasonEgressDenied: a build step failed after the egress proxy
	// refused one of its connections; the detail names the host, the
	// step and the flag that allows it.
	ReasonEgressDenied probe.Reason = "egress_denied"
)

// Warning IDs.
const (
	WarnSandboxBootFailed  = "shell_invocation_trace.sandbox_boot_failed"
	WarnSandboxUnavailable = "shell_invocation_trace.sandbox_unavailable"
	WarnBuildFailed        = "shell_invocation_trace.build_failed"
	WarnBootFailed         = "shell_invocation_trace.boot_failed"
	WarnTraceIncomplete    = "shell_invocation_trace.trace_incomplete"
	WarnTimeout            = "shell_invocation_trace.timeout"
	WarnShellAtBoot        = "shell_invocation_trace.shell_at_boot"
	WarnShellInBuild       = "shell_invocation_trace.shell_in_build"
	WarnInterpreterUnknown = "shell_invocation_trace.interpreter_unknown"
	WarnImageUnavailable   = "shell_invocation_trace.image_unavailable"
	WarnEgressDenied       = "shell_invocation_trace.egress_denied"
)

// Warnings are the warnings this probe raises.
var Warnings = []probe.WarningDesc{
	{ID: WarnSandboxBootFailed, Summary: "the sandbox could not start, so nothing was traced"},
	{ID: WarnSandboxUnavailable, Summary: "no sandbox was available (gate-control not configured and not root), so nothing was traced"},
	{ID: WarnBuildFailed, Summary: "the image did not build inside the sandbox; the failing step and its output are attached"},
	{ID: WarnBootFailed, Summary: "the built image could not be booted inside the sandbox"},
	{ID: WarnTraceIncomplete, Summary: "the trace may have lost events, so it cannot show that no shell ran"},
	{ID: WarnTimeout, Summary: "the traced build and boot ran past the probe's timeout"},
	{ID: WarnShellAtBoot, Summary: "the traced boot of the image ran (or tried to run) a shell"},
	{ID: WarnShellInBuild, Summary: "a traced build step ran a shell"},
	{ID: WarnInterpreterUnknown, Summary: "a script ran whose interpreter could not be read, so it may have been a shell"},
	{ID: WarnImageUnavailable, Summary: "a base image could not be pulled from its registry or any mirror, so nothing was built"},
	{ID: WarnEgressDenied, Summary: "the build's egress proxy refused a connection that a build step asked for (--build-egress allows a host)"},
}

// DefaultBootFor is the longest the boot runs when it neither exits nor
// settles (sandbox.BootReport).
const DefaultBootFor = 30 * time.Second

// Facts are the traced build and boot.
type Facts struct {
	Dockerfile  string         `json:"dockerfile,omitempty"`
	Targets     []string       `json:"targets,omitempty"`
	Backend     string         `json:"backend,omitempty"`
	Phases      []Phase        `json:"phases,omitempty"`
	Execs       int            `json:"execs"`
	Invocations []Invocation   `json:"invocations"`
	Complete    bool           `json:"trace_complete"`
	AuditID     string         `json:"audit_id,omitempty"`
	Unresolved  []UnresolvedEx `json:"unresolved,omitempty"`
	// Boot is why and when the boot ended; nil when the image did not
	// start.
	Boot *Boot `json:"boot,omitempty"`
	// NodeModules is the built image's node_modules as read back for the
	// dependency scans (package imagedeps); nil when the build failed.
	NodeModules *imagedeps.Ref `json:"node_modules,omitempty"`
	blob        []byte
	// Egress is what the build reached through the egress proxy; nil
	// when the build was offline.
	Egress *Egress `json:"egress,omitempty"`
	// EgressNotes say what of the repository's registry settings could
	// not be read.
	EgressNotes []string `json:"egress_notes,omitempty"`
}

// Egress is what the build's egress proxy saw (sandbox.EgressReport).
type Egress struct {
	// Allow is the allow-list the proxy enforced.
	Allow []string `json:"allow,omitempty"`
	// Conns are the connections the build's steps asked for.
	Conns   []sandbox.EgressConn `json:"conns,omitempty"`
	Dropped int                  `json:"dropped,omitempty"`
}

// String summarises the egress, for people: "egress: 14 connections to
// registry.npmjs.org (2.1 MB down), 1 refused (evil.example:443)".
func (e *Egress) String() string {
	if e == nil {
		return ""
	}
	hosts := map[string]bool{}
	var down int64
	var ok int
	var refused []string
	for _, c := range e.Conns {
		if !c.Allowed {
			refused = append(refused, fmt.Sprintf("%s:%d", c.Host, c.Port))
			continue
		}
		ok++
		hosts[c.Host] = true
		down += c.Down
	}
	names := make([]string, 0, len(hosts))
	for h := range hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	s := fmt.Sprintf("egress: %d connection(s)", ok)
	if len(names) > 0 {
		s += fmt.Sprintf(" to %s (%s down)", strings.Join(names, ", "), bytesString(down))
	}
	if len(refused) > 0 {
		s += fmt.Sprintf(", %d refused (%s)", len(refused), strings.Join(slices.Compact(refused), ", "))
	}
	return s
}

// bytesString is a byte count for people.
func bytesString(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Boot is how the traced boot ended (sandbox.BootReport).
type Boot struct {
	// Ended is answered_and_settled, settled, exited or maximum.
	Ended string `json:"ended"`
	// Port is the port the service listened on; 0 when none.
	Port int `json:"port,omitempty"`
	// Awaited are the ports the image declares, which the boot waited
	// for; empty when it waited for any.
	Awaited         []int `json:"awaited,omitempty"`
	ToListenMS      int64 `json:"to_listen_ms,omitempty"`
	ToFirstAnswerMS int64 `json:"to_first_answer_ms,omitempty"`
	DurationMS      int64 `json:"duration_ms"`
}

// String says how the boot ended, for people.
func (b *Boot) String() string {
	if b.Ended == sandbox.BootMaximum && b.Port == 0 && len(b.Awaited) > 0 {
		return "boot " + sandbox.NeverListened(b.Awaited, (time.Duration(b.DurationMS)*time.Millisecond).Round(time.Second))
	}
	s := fmt.Sprintf("boot %s after %s", strings.ReplaceAll(b.Ended, "_", " "), ms(b.DurationMS))
	if b.Port != 0 {
		s += fmt.Sprintf(" (listened on %d at %s", b.Port, ms(b.ToListenMS))
		if b.ToFirstAnswerMS > 0 {
			s += fmt.Sprintf(", first answer at %s", ms(b.ToFirstAnswerMS))
		}
		s += ")"
	}
	return s
}

// ms is a duration in milliseconds, for people.
func ms(v int64) string {
	return (time.Duration(v) * time.Millisecond).Round(100 * time.Millisecond).String()
}

// Phase is how a phase went.
type Phase struct {
	Name       string `json:"name"`
	ExitCode   int    `json:"exit_code"`
	Failed     bool   `json:"failed,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	OutputTail string `json:"output_tail,omitempty"`
}

// Invocation is one shell the trace saw.
type Invocation struct {
	Phase     string   `json:"phase"`
	Index     int      `json:"index"`
	PID       int32    `json:"pid"`
	PPID      int32    `json:"ppid"`
	Ancestry  []string `json:"ancestry,omitempty"`
	Binary    string   `json:"binary"`
	Argv      []string `json:"argv,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	UID       int32    `json:"uid"`
	By        string   `json:"by"`
	Shell     string   `json:"shell"`
	Attempted bool     `json:"attempted,omitempty"`
	// Errno is how an attempted exec failed (ENOENT), when the trace
	// tells it; empty when it does not or the exec succeeded.
	Errno string `json:"errno,omitempty"`
	Cause Cause  `json:"cause"`
}

// Cause is what made a shell run.
type Cause struct {
	// Kind: instruction (a shell-form RUN, CMD, ENTRYPOINT or HEALTHCHECK),
	// npm_script, child_process, entrypoint_script, base_image_entrypoint,
	// healthcheck (the image's HEALTHCHECK command, run during the boot
	// window) or unknown.
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// UnresolvedEx is an exec of a script whose interpreter was unreadable.
type UnresolvedEx struct {
	Phase  string `json:"phase"`
	PID    int32  `json:"pid"`
	Binary string `json:"binary"`
}

// Probe is the shell_invocation_trace probe.
type Probe struct {
	// BootFor is how long to boot the image; zero means DefaultBootFor.
	BootFor time.Duration
	// ProbePaths are more paths to GET during the boot, after / and the
	// HEALTHCHECK URL's (a --probe-path flag's values).
	ProbePaths []string
}

// New returns the probe.
func New() *Probe { return &Probe{} }

// probePaths are the probe's own paths, then the run's (gather
// --probe-path).
func (p *Probe) probePaths(pctx *probe.Context) []string {
	out := append([]string{}, p.ProbePaths...)
	if pctx != nil {
		out = append(out, pctx.ProbePaths...)
	}
	return out
}

var (
	_ probe.Probe       = (*Probe)(nil)
	_ probe.ImageLister = (*Probe)(nil)
	_ probe.Keyed       = (*Probe)(nil)
	_ probe.BlobUser    = (*Probe)(nil)
)

// KeySettings puts the boot time, the probe paths and the registry mirrors
// in the cache key: a longer boot or another request may see more, and
// another mirror may serve other images under the same tags.
func (p *Probe) KeySettings(pctx *probe.Context) []string {
	s := []string{"boot_for=" + p.bootFor(pctx).String(), "settle=" + settle(pctx).String(), "step_timeout=" + stepTimeout(pctx).String()}
	for _, path := range p.probePaths(pctx) {
		s = append(s, "probe_path="+path)
	}
	regs := make([]string, 0, len(pctx.RegistryMirrors))
	for reg := range pctx.RegistryMirrors {
		regs = append(regs, reg)
	}
	sort.Strings(regs)
	for _, reg := range regs {
		s = append(s, "mirror="+reg+"="+pctx.RegistryMirrors[reg])
	}
	return append(s, "build_net="+pctx.BuildNet.Key())
}

// stepTimeout is the run's bound on one build step.
func stepTimeout(pctx *probe.Context) time.Duration {
	if pctx != nil && pctx.StepTimeout > 0 {
		return pctx.StepTimeout
	}
	return sandbox.DefaultStepTimeout
}

// settle is the run's settle period.
func settle(pctx *probe.Context) time.Duration {
	if pctx != nil && pctx.Settle > 0 {
		return pctx.Settle
	}
	return sandbox.DefaultSettle
}

func (p *Probe) bootFor(pctx *probe.Context) time.Duration {
	switch {
	case pctx != nil && pctx.BootFor > 0:
		return pctx.BootFor
	case p.BootFor > 0:
		return p.BootFor
	}
	return DefaultBootFor
}

// Desc describes the probe.
func (*Probe) Desc() probe.Desc {
	inputs := append([]string{"package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml"}, images.Inputs()...)
	inputs = append(inputs, "**/*.js", "**/*.cjs", "**/*.mjs", "**/*.ts", "**/*.json", "**/*.sh", ".dockerignore")
	return probe.Desc{
		Name:           Name,
		Version:        "9", // 9: a response's shape masks numbers too (a health endpoint's timestamp and uptime); 8: a step stopped at the step timeout whose client gave up TLS handshakes names --build-ca; 7: the commands inside if, for, case and $(…) of a shell line are its commands too (shellcmd); 6: the build context guessed for a Dockerfile no compose file builds counts only COPY sources that are in one of its folder and the root (images.guessContext); 4: the image's node_modules handed on (issue 20); 5: processes keyed by container and PID
		Heaviness:      probe.Heavy,
		PerImage:       true,
		RunsLast:       true,
		CacheStrategy:  probe.CacheContent,
		DeclaredInputs: inputs,
		Timeout:        20 * time.Minute,
		NeedsSandbox:   true,
		NewFacts:       func() any { return new(Facts) },
	}
}

// ImageInputs lists the base images of the Dockerfile the probe builds, so
// that a new digest behind a tag invalidates the cache.
func (*Probe) ImageInputs(ctx context.Context, repo *probe.Repo, pctx *probe.Context) ([]string, error) {
	f, _, err := pick(ctx, repo, pctx)
	if err != nil || f == nil {
		return nil, err
	}
	return f.ImageBases(), nil
}

// pick returns the judged image's Dockerfile as built for its target, and
// the target to name in the build ("" when it is the last stage).
func pick(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (*dockerfile.File, string, error) {
	files, err := images.Selected(ctx, repo, pctx)
	if err != nil || len(files) == 0 {
		return nil, "", err
	}
	chosen := files[0]
	if chosen.Err != nil {
		return nil, "", chosen.Err
	}
	j, err := images.Image.Of(ctx, repo, pctx)
	if err != nil {
		return nil, "", err
	}
	final := ""
	if chosen.File.Final != j.Parsed.File.Final {
		final = chosen.File.StageName(chosen.File.Final)
	}
	return chosen.File, final, nil
}

func low(r probe.Reason, warn, detail string, facts *Facts) probe.Output {
	return probe.Output{Confidence: probe.Low, Reason: r, Detail: detail, Facts: facts, Uncacheable: true,
		Warnings: []probe.Warning{{ID: warn, Message: detail}}}
}

// Blobs names the blob of the image's node_modules (probe.BlobUser).
func (*Probe) Blobs(facts json.RawMessage) []string {
	if ref := imagedeps.RefOf(facts); ref != nil {
		return []string{ref.Digest}
	}
	return nil
}

// Run builds and boots the image in the sandbox, analyses the trace, and
// hands the image's node_modules on to the dependency scans.
func (p *Probe) Run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	out, err := p.run(ctx, repo, pctx)
	if f, ok := out.Facts.(*Facts); ok && err == nil && f.blob != nil {
		out.Blobs = [][]byte{f.blob}
	}
	return out, err
}

func (p *Probe) run(ctx context.Context, repo *probe.Repo, pctx *probe.Context) (probe.Output, error) {
	facts := &Facts{Invocations: []Invocation{}}
	f, final, err := pick(ctx, repo, pctx)
	if err != nil {
		var pe *dockerfile.ParseError
		if errors.As(err, &pe) {
			return probe.Output{Confidence: probe.Low, Reason: "dockerfile_parse_error", Detail: pe.Error(), Facts: facts}, nil
		}
		return probe.Output{}, err
	}
	if f == nil {
		return probe.Output{Confidence: probe.Low, Reason: ReasonNoDockerfile, Detail: "no Dockerfile to build", Facts: facts}, nil
	}
	facts.Dockerfile = f.Path
	if pctx == nil || pctx.Sandbox == nil {
		return low(ReasonSandboxUnavailable, WarnSandboxUnavailable,
			"no sandbox: configure a gate-control (--gate-control) or run as root so gather starts a private one", facts), nil
	}
	facts.Targets = targets(f, final)
	bootFor := p.bootFor(pctx)
	req := sandbox.SpawnRequest{
		Role:         sandbox.RoleProbe,
		Workspace:    sandbox.Workspace{Dir: repo.Root},
		CaptureTrace: true,
		Build: &sandbox.BuildSpec{
			Dockerfile: f.Path, Targets: facts.Targets, Boot: true, BootFor: bootFor, Settle: settle(pctx), StepTimeout: stepTimeout(pctx),
			RegistryMirrors: pctx.RegistryMirrors, ProbePaths: p.probePaths(pctx), ReadNodeModules: true,
		},
	}
	req.Build.Egress, req.Build.Secrets, facts.EgressNotes = pctx.BuildNet.For(repo.Root)
	req.Build.BootEnv = pctx.BuildNet.Env()
	if d, ok := ctx.Deadline(); ok {
		req.Timeout = time.Until(d)
	}
	spawnCtx := ctx
	if fn := sandbox.ProgressFrom(ctx); fn != nil {
		// The live display shows one line per probe and image.
		src := Name + " " + f.Path
		if final != "" {
			src += " (" + final + ")"
		}
		spawnCtx = sandbox.WithProgress(ctx, func(p sandbox.Progress) {
			p.Source = src
			fn(p)
		})
		defer fn(sandbox.Progress{Kind: sandbox.ProgressDone, Source: src})
	}
	res, err := pctx.Sandbox.Spawn(spawnCtx, req)
	facts.Backend, facts.AuditID, facts.Complete = res.Backend, res.AuditID, res.TraceComplete
	if res.NodeModules != nil {
		var eerr error
		if facts.blob, facts.NodeModules, eerr = imagedeps.Encode(res.NodeModules); eerr != nil {
			return low(ReasonSandboxBootFailed, WarnSandboxBootFailed, eerr.Error(), facts), nil
		}
	}
	if e := res.Egress; e != nil {
		facts.Egress = &Egress{Allow: e.Allow, Conns: e.Conns, Dropped: e.Dropped}
	}
	for _, ph := range res.Phases {
		facts.Phases = append(facts.Phases, Phase{Name: ph.Name, ExitCode: ph.ExitCode, Failed: ph.Failed, TimedOut: ph.TimedOut,
			DurationMS: ph.Duration.Milliseconds(), OutputTail: tail(ph.OutputTail, 2000)})
		if b := ph.Boot; ph.Name == sandbox.PhaseBoot && b != nil {
			facts.Boot = &Boot{Ended: b.Ended, Port: b.Port, Awaited: b.Awaited, ToListenMS: b.ToListen.Milliseconds(),
				ToFirstAnswerMS: b.ToFirstAnswer.Milliseconds(), DurationMS: ph.Duration.Milliseconds()}
		}
	}
	switch {
	case errors.Is(err, sandbox.ErrTimeout) || res.TimedOut:
		return timedOut(res, f, repo, facts), nil
	case ctx.Err() != nil:
		return probe.Output{}, ctx.Err()
	case errors.Is(err, sandbox.ErrNotSupported):
		return low(ReasonSandboxUnavailable, WarnSandboxUnavailable, err.Error(), facts), nil
	case err != nil:
		return low(ReasonSandboxBootFailed, WarnSandboxBootFailed, err.Error(), facts), nil
	}
	var bootFailed *sandbox.PhaseResult
	for i, ph := range res.Phases {
		// A failing healthcheck or request tells about the service, not
		// the build.
		if !ph.Failed || runtimePhase(ph.Name) && ph.Name != sandbox.PhaseBoot {
			continue
		}
		if ph.Name == sandbox.PhaseBoot {
			bootFailed = &res.Phases[i]
			break
		}
		if ref, ok := strings.CutPrefix(ph.Name, "pull:"); ok {
			detail := lastLines(ph.OutputTail, 3)
			if !strings.Contains(detail, ref) {
				detail = ref + ": " + detail
			}
			out := low(ReasonImageUnavailable, WarnImageUnavailable, detail, facts)
			if i := slices.IndexFunc(f.Stages, func(s dockerfile.Stage) bool { return s.ResolvedBase == ref || s.Base == ref }); i >= 0 {
				out.Evidence = []probe.Evidence{{File: f.Path, Line: f.Stages[i].Line}}
				out.Warnings[0].Evidence = out.Evidence
			}
			return out, nil
		}
		line := stepLine(f, ph.Name)
		out := low(ReasonBuildFailed, WarnBuildFailed, fmt.Sprintf("%s failed with exit %d: %s%s", ph.Name, ph.ExitCode, lastLines(ph.OutputTail, 5), sandbox.NetworkHint(res.Egress, ph.Name, ph.OutputTail)), facts)
		if d := deniedIn(res.Egress, ph.Name); d != nil {
			out = low(ReasonEgressDenied, WarnEgressDenied, fmt.Sprintf("%s failed with exit %d after the build's egress proxy refused %s:%d (%s); allow it with --build-egress %s",
				ph.Name, ph.ExitCode, d.Host, d.Port, d.Reason, egressFlag(*d)), facts)
		}
		if line > 0 {
			out.Warnings[0].Evidence = []probe.Evidence{{File: f.Path, Line: line}}
			out.Evidence = out.Warnings[0].Evidence
		}
		return out, nil
	}
	if !res.TraceComplete {
		if bootFailed != nil {
			return low(ReasonBootFailed, WarnBootFailed, fmt.Sprintf("boot failed: %s; the trace is incomplete, so it cannot tell why", lastLines(bootFailed.OutputTail, 5)), facts), nil
		}
		detail := "the trace may have dropped events (a burst, an oversized exec, or a broken stream); no conclusion about shells is possible"
		if len(res.TraceGaps) > 0 {
			detail += ": " + strings.Join(res.TraceGaps, "; ")
		}
		return low(ReasonTraceIncomplete, WarnTraceIncomplete, detail, facts), nil
	}
	out := analyze(res, f, repo, facts)
	if facts.Boot != nil {
		out.Detail = strings.TrimPrefix(out.Detail+"; "+facts.Boot.String(), "; ")
	}
	if facts.Egress != nil {
		out.Detail = strings.TrimPrefix(out.Detail+"; "+facts.Egress.String(), "; ")
		for _, d := range res.Egress.Denied() {
			out.Warnings = append(out.Warnings, probe.Warning{ID: WarnEgressDenied,
				Message:  fmt.Sprintf("the build's egress proxy refused %s:%d in %s (%s); allow it with --build-egress %s", d.Host, d.Port, d.Phase, d.Reason, egressFlag(d)),
				Evidence: stepEvidence(f, d.Phase)})
		}
	}
	if bootFailed == nil {
		return out, nil
	}
	// A boot that failed after a shell it could not run is explained by
	// that attempt (a distroless base: ENOENT, then the app crashes).
	expl := bootExplained(facts, bootFailed)
	if expl < 0 {
		return low(ReasonBootFailed, WarnBootFailed, fmt.Sprintf("boot failed: %s", lastLines(bootFailed.OutputTail, 5)), facts), nil
	}
	inv := facts.Invocations[expl]
	errno := inv.Errno
	if errno == "" {
		errno = "it failed"
	}
	out.Detail = fmt.Sprintf("%s tried %s: %s, then exited %d", first(parentOr(inv.Ancestry)), strings.Join(inv.Argv, " "), errno, bootFailed.ExitCode)
	out.Warnings = append(out.Warnings, probe.Warning{ID: WarnBootFailed, Message: "the boot failed: " + out.Detail,
		Evidence: []probe.Evidence{{Trace: &probe.TraceRef{Phase: inv.Phase, PID: inv.PID, Index: inv.Index}, Note: strings.Join(inv.Argv, " ")}}})
	return out, nil
}

// timedOut is the output of a spawn that ran past its timeout, or one of
// whose build steps ran past the step timeout: low, with the shells the
// trace showed up to then, and what the exec witness saw that the trace
// did not, so that a shell seen before the stop is not lost.
func timedOut(res sandbox.Result, f *dockerfile.File, repo *probe.Repo, facts *Facts) probe.Output {
	detail := "the build and boot ran past the timeout"
	for _, ph := range res.Phases {
		if ph.TimedOut && strings.Contains(ph.Name, ":step ") {
			detail = ph.Name + " ran past the step timeout (--step-timeout) and was stopped" + sandbox.NetworkHint(res.Egress, ph.Name, ph.OutputTail)
		}
	}
	out := low(ReasonTimeout, WarnTimeout, detail, facts)
	if len(res.Trace) == 0 {
		return out
	}
	partial := analyze(res, f, repo, facts)
	out.Warnings = append(out.Warnings, partial.Warnings...)
	out.Evidence = append(out.Evidence, partial.Evidence...)
	out.Detail += fmt.Sprintf("; up to then the trace shows %d shell(s)", len(facts.Invocations))
	if len(res.TraceGaps) > 0 {
		out.Detail += "; " + strings.Join(res.TraceGaps, "; ")
	}
	out.Warnings[0].Message = out.Detail
	return out
}

// runtimePhase reports whether a phase is the booted image at work: the
// boot itself, its healthcheck, or a request sent to it.
func runtimePhase(name string) bool {
	return name == sandbox.PhaseBoot || name == sandbox.PhaseHealthcheck || strings.HasPrefix(name, "request:")
}

// bootExplained returns the index in facts.Invocations of the shell
// attempt that explains a failed boot: the last boot shell that was only
// attempted, when the boot then exited with a status of its own (not a
// runsc failure, nor a kill). -1 when there is none.
func bootExplained(facts *Facts, boot *sandbox.PhaseResult) int {
	if boot.ExitCode <= 0 || boot.TimedOut {
		return -1
	}
	for i := len(facts.Invocations) - 1; i >= 0; i-- {
		if inv := facts.Invocations[i]; inv.Phase == sandbox.PhaseBoot && inv.Attempted {
			return i
		}
	}
	return -1
}

// first is the command name of a process's argv line.
func first(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return path.Base(w)
}

// analyze turns a complete trace into the probe's output: every shell
// with its cause, and the scripts whose interpreter could not be read.
func analyze(res sandbox.Result, f *dockerfile.File, repo *probe.Repo, facts *Facts) probe.Output {
	scripts := loadScripts(repo)
	tree := trace.BuildTree(res.Trace)
	a := trace.Analyze(tree, nil)
	facts.Execs = a.Execs
	out := probe.Output{Confidence: probe.High, Facts: facts}
	for _, inv := range a.Invocations {
		in := Invocation{Phase: inv.Phase, Index: inv.Index, PID: inv.PID, PPID: inv.PPID, Ancestry: inv.Ancestry, Binary: inv.Binary,
			Argv: inv.Argv, Cwd: inv.Cwd, UID: inv.UID, By: inv.Match.By, Shell: inv.Match.Shell, Attempted: inv.Attempted, Errno: inv.Errno}
		in.Cause = cause(f, tree, inv, scripts)
		facts.Invocations = append(facts.Invocations, in)
		ev := []probe.Evidence{{Trace: &probe.TraceRef{Phase: inv.Phase, PID: inv.PID, Index: inv.Index}, Note: strings.Join(inv.Argv, " ")}}
		if in.Cause.File != "" {
			ev = append(ev, probe.Evidence{File: in.Cause.File, Line: in.Cause.Line, Note: in.Cause.Kind})
		}
		verb := "ran"
		if in.Attempted {
			verb = "tried to run"
			if in.Errno != "" {
				ev[0].Note += ": " + in.Errno
			}
		}
		id := WarnShellInBuild
		if runtimePhase(inv.Phase) {
			id = WarnShellAtBoot
		}
		out.Warnings = append(out.Warnings, probe.Warning{ID: id,
			Message:  fmt.Sprintf("%s: %s %s %q (pid %d, under %s; cause: %s)", phaseOr(inv.Phase), strings.Join(in.Ancestry, " → "), verb, strings.Join(inv.Argv, " "), inv.PID, parentOr(in.Ancestry), in.Cause.Kind),
			Evidence: ev})
	}
	for _, i := range a.Unresolved {
		e := res.Trace[i]
		facts.Unresolved = append(facts.Unresolved, UnresolvedEx{Phase: e.Phase, PID: e.PID, Binary: e.Binary})
		out.Warnings = append(out.Warnings, probe.Warning{ID: WarnInterpreterUnknown,
			Message:  fmt.Sprintf("%s ran %s, whose interpreter could not be read", phaseOr(e.Phase), e.Binary),
			Evidence: []probe.Evidence{{Trace: &probe.TraceRef{Phase: e.Phase, PID: e.PID, Index: i}}}})
	}
	if len(a.Unresolved) > 0 {
		out.Confidence, out.Reason = probe.Medium, ReasonInterpreterUnknown
		out.Detail = fmt.Sprintf("%d script(s) ran whose interpreter could not be read", len(a.Unresolved))
	}
	return out
}

// targets: the final stage, in one build that builds the stages it
// depends on too; a named builder stage that the final stage does not
// depend on is built first, on its own, so that its steps are traced.
func targets(f *dockerfile.File, final string) []string {
	last := f.Final
	if final != "" {
		if i, ok := f.StageRef(final); ok {
			last = i
		}
	}
	if f.Builder >= 0 && f.Builder != last && f.Stages[f.Builder].Name != "" && !dependsOn(f, last, f.Builder) {
		return []string{f.Stages[f.Builder].Name, final}
	}
	return []string{final}
}

// dependsOn reports whether stage from needs stage to: it is built FROM
// it or copies from it, directly or through other stages.
func dependsOn(f *dockerfile.File, from, to int) bool {
	seen := map[int]bool{}
	var walk func(i int) bool
	walk = func(i int) bool {
		if i == to {
			return true
		}
		if i < 0 || i >= len(f.Stages) || seen[i] {
			return false
		}
		seen[i] = true
		s := f.Stages[i]
		if s.BaseStage >= 0 && walk(s.BaseStage) {
			return true
		}
		for _, ref := range s.CopiesFrom {
			if j, ok := f.StageRef(ref); ok && j < i && walk(j) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

func phaseOr(p string) string {
	if p == "" {
		return "unattributed"
	}
	return p
}

func parentOr(anc []string) string {
	if len(anc) == 0 {
		return "the container"
	}
	return anc[len(anc)-1]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// lastLines is up to n lines of a failure's output that say why: see
// failtail.Lines.
func lastLines(s string, n int) string {
	return failtail.Lines(s, n)
}

// stepLine maps "build:<stage>:step N" to the Dockerfile line of that
// stage's N-th instruction (FROM is step 1).
func stepLine(f *dockerfile.File, phase string) int {
	parts := strings.Split(phase, ":")
	if len(parts) != 3 || parts[0] != "build" {
		return 0
	}
	var n int
	if _, err := fmt.Sscanf(parts[2], "step %d", &n); err != nil || n < 1 {
		return 0
	}
	st, ok := f.StageRef(parts[1])
	if !ok {
		return 0
	}
	s := f.Stages[st]
	if n == 1 {
		return s.Line
	}
	if n-2 < len(s.Instructions) {
		return s.Instructions[n-2].Line
	}
	return 0
}

type scripts struct {
	path  string
	cmds  map[string]string
	lines map[string]int
}

func loadScripts(repo *probe.Repo) scripts {
	data, err := repo.ReadFile("package.json")
	if err != nil {
		return scripts{}
	}
	var pj nodeproject.Facts
	if nodeproject.Parse(data, &pj) != nil {
		return scripts{}
	}
	return scripts{path: "package.json", cmds: pj.Scripts, lines: nodeproject.ScriptLines(data)}
}

// cause explains a shell: the instruction of a build step, or at boot the
// process above it.
func cause(f *dockerfile.File, tree *trace.Tree, inv trace.Invocation, sc scripts) Cause {
	if strings.HasPrefix(inv.Phase, "build:") {
		c := Cause{Kind: "instruction", File: f.Path, Line: stepLine(f, inv.Phase)}
		if parts := strings.Split(inv.Phase, ":"); len(parts) == 3 {
			if st, ok := f.StageRef(parts[1]); ok {
				var n int
				if _, err := fmt.Sscanf(parts[2], "step %d", &n); err == nil && n >= 2 && n-2 < len(f.Stages[st].Instructions) {
					c.Detail = f.Stages[st].Instructions[n-2].Source
				}
			}
		}
		return c
	}
	if inv.Phase == sandbox.PhaseHealthcheck {
		if in, ok := f.Effective(f.Final, "healthcheck"); ok {
			return Cause{Kind: "healthcheck", Detail: in.Source, File: f.Path, Line: in.Line}
		}
		return Cause{Kind: "healthcheck"}
	}
	// At boot: who is above the shell?
	parent := ""
	if len(inv.Ancestry) > 0 {
		parent = inv.Ancestry[len(inv.Ancestry)-1]
	}
	line := ""
	if len(inv.Argv) >= 3 && inv.Argv[1] == "-c" {
		line = inv.Argv[2]
	}
	switch {
	case inv.Match.By == "shebang":
		if path.Base(inv.Binary) == dockerfile.NodeEntrypoint {
			return Cause{Kind: "base_image_entrypoint", Detail: inv.Binary, File: f.Path, Line: f.Stages[f.Final].Line}
		}
		return Cause{Kind: "entrypoint_script", Detail: inv.Binary}
	case strings.Contains(parent, "npm") || first(parent) == "yarn" || first(parent) == "pnpm":
		c := Cause{Kind: "npm_script", Detail: line}
		names := make([]string, 0, len(sc.cmds))
		for n := range sc.cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if sc.cmds[n] == line {
				c.Detail, c.File, c.Line = n+": "+line, sc.path, sc.lines[n]
				break
			}
		}
		return c
	case first(parent) == "node" || first(parent) == "nodejs":
		return Cause{Kind: "child_process", Detail: parent}
	case len(inv.Ancestry) == 0 || inv.PPID == 0:
		for _, c := range []string{"entrypoint", "cmd"} {
			if in, ok := f.Effective(f.Final, c); ok && in.Form == dockerfile.FormShell {
				return Cause{Kind: "instruction", Detail: in.Source, File: f.Path, Line: in.Line}
			}
		}
	case first(parent) == dockerfile.NodeEntrypoint || strings.HasPrefix(parent, "docker-entrypoint"):
		if in, ok := f.Effective(f.Final, "cmd"); ok && in.Form == dockerfile.FormShell {
			return Cause{Kind: "instruction", Detail: in.Source, File: f.Path, Line: in.Line}
		}
		return Cause{Kind: "base_image_entrypoint", Detail: parent}
	}
	return Cause{Kind: "unknown", Detail: parent}
}

// deniedIn is the first connection the egress proxy refused in the failed
// phase (a step), or in any step when the phase is a whole target; nil
// when none was.
func deniedIn(rep *sandbox.EgressReport, phase string) *sandbox.EgressConn {
	for _, d := range rep.Denied() {
		if d.Phase == phase || !strings.Contains(phase, ":step ") {
			return &d
		}
	}
	return nil
}

// egressFlag is the --build-egress value that allows c.
func egressFlag(c sandbox.EgressConn) string {
	if c.Port == 80 || c.Port == 443 {
		return c.Host
	}
	return fmt.Sprintf("%s:%d", c.Host, c.Port)
}

// stepEvidence is the Dockerfile line of a build step phase; nil when it
// has none.
func stepEvidence(f *dockerfile.File, phase string) []probe.Evidence {
	if line := stepLine(f, phase); line > 0 {
		return []probe.Evidence{{File: f.Path, Line: line}}
	}
	return nil
}
