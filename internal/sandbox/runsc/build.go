package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// DefaultBootFor is the longest a build spawn boots the image when
// BuildSpec.BootFor is zero: a traced boot ends sooner, once it has
// settled (ready.go).
const DefaultBootFor = 30 * time.Second

// diskWatchInterval is how often a build samples its disk's free space.
const diskWatchInterval = 100 * time.Millisecond

// errDeadline is the cause of a build spawn's context when its Timeout
// passes.
var errDeadline = errors.New("build spawn timeout")

// errStepTimeout is the cause of a buildah run's context when one of its
// steps runs past BuildSpec.StepTimeout.
var errStepTimeout = errors.New("build step timeout")

// stepWatchInterval is how often a build checks how long its current step
// has run.
const stepWatchInterval = time.Second

// buildPlan is a validated build request.
type buildPlan struct {
	workspace  string
	dockerfile []byte
	// stages is nil when the Dockerfile does not parse; the build then
	// fails before buildah runs.
	stages   []stage
	parseErr error
	targets  []string
	limits   sandbox.Limits
	bootFor  time.Duration
	settle   time.Duration
	stepMax  time.Duration
}

// planBuild validates what SpawnRequest.Validate does not check of a build
// request, and reads the Dockerfile through the workspace root, so that a
// symlink cannot make buildah read a host file.
func (b *Backend) planBuild(req *sandbox.SpawnRequest) (buildPlan, error) {
	spec := req.Build
	bp := buildPlan{workspace: req.Workspace.Dir, targets: spec.Targets, bootFor: spec.BootFor, settle: spec.Settle, stepMax: spec.StepTimeout}
	switch {
	case len(req.Command) > 0:
		return bp, invalid("a build request runs the image it builds, not a command")
	case req.Rootfs != "" || req.Cwd != "" || len(req.Env) > 0:
		return bp, invalid("a build request takes its rootfs, cwd and env from the image it builds")
	case req.AllowNetwork:
		return bp, invalid("builds and boots run with the network off in the %s backend", Name)
	}
	if !filepath.IsAbs(bp.workspace) {
		return bp, invalid("workspace %q is not an absolute path", bp.workspace)
	}
	if err := isDir(bp.workspace); err != nil {
		return bp, invalid("workspace: %v", err)
	}
	for _, t := range spec.Targets {
		if len(t) > 128 || strings.ContainsAny(t, "\x00\n\r") || strings.HasPrefix(t, "-") {
			return bp, invalid("build target %q is not a stage name", t)
		}
	}
	if err := checkMirrors(spec.RegistryMirrors); err != nil {
		return bp, err
	}
	if bp.bootFor == 0 {
		bp.bootFor = DefaultBootFor
	}
	if bp.settle == 0 {
		bp.settle = sandbox.DefaultSettle
	}
	if bp.stepMax == 0 {
		bp.stepMax = sandbox.DefaultStepTimeout
	}
	bp.limits = withDefaultLimits(req.Limits, b.cfg.Limits)
	if bp.limits.DiskBytes < minDiskBytes {
		return bp, invalid("disk limit %d bytes is below the %d MiB minimum", bp.limits.DiskBytes, minDiskBytes>>20)
	}
	root, err := os.OpenRoot(bp.workspace)
	if err != nil {
		return bp, invalid("workspace: %v", err)
	}
	defer root.Close()
	f, err := root.Open(filepath.Clean(spec.Dockerfile))
	if err != nil {
		return bp, invalid("Dockerfile: %v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return bp, invalid("Dockerfile %s is not a regular file", spec.Dockerfile)
	}
	bp.dockerfile, err = readBounded(f, maxDockerfile)
	if err != nil {
		return bp, invalid("Dockerfile %s: %v", spec.Dockerfile, err)
	}
	bp.dockerfile = absMountTargets(bp.dockerfile)
	bp.stages, bp.parseErr = parseStages(bp.dockerfile)
	return bp, nil
}

// needsLayers reports whether building target needs a layer per step:
// when another target is built too (the final one reuses the first's
// steps), or, when the trace reads build steps' files from their stages'
// images (stageImages: a trace without step snapshots), a RUN step runs in
// a stage other than the target's.
func (bp *buildPlan) needsLayers(target string, stageImages bool) bool {
	idx, ok := bp.targetStage(target)
	if len(bp.targets) > 1 || !ok {
		return true
	}
	if !stageImages {
		return false
	}
	for i, st := range bp.stages {
		if i == idx {
			continue
		}
		for _, in := range st.instrs {
			if in.keyword == "RUN" {
				return true
			}
		}
	}
	return false
}

// targetStage returns the index of the stage a target builds: the last for
// "", else the stage of that name (case-insensitive, as buildah matches).
func (bp *buildPlan) targetStage(target string) (int, bool) {
	if target == "" {
		return len(bp.stages) - 1, true
	}
	for i, s := range bp.stages {
		if strings.EqualFold(s.name, target) {
			return i, true
		}
	}
	return 0, false
}

// targetPhase is the phase name of a whole target: "build:" and the
// stage's label (its name, else its index), as in the step phases. A
// target whose stage is unknown (the Dockerfile does not parse, or has no
// such stage) is named as requested, and "build" alone for the last
// stage.
func (bp *buildPlan) targetPhase(target string) string {
	if i, ok := bp.targetStage(target); ok && bp.parseErr == nil && i >= 0 && i < len(bp.stages) {
		return "build:" + bp.stages[i].label(i)
	}
	if target == "" {
		return "build"
	}
	return "build:" + target
}

// buildRun is one build spawn in progress.
type buildRun struct {
	b    *Backend
	req  *sandbox.SpawnRequest
	plan buildPlan
	sp   *spawnDir
	bh   *buildah
	tr   *tracer
	df   string // the private copy of the Dockerfile that buildah reads
	disk *disk  // the filesystem of the private buildah
	// targets are the targets buildah ran for, in order.
	targets []*targetRun
	// premounted is closed once premount has mounted the images of the
	// build steps' stages; nil when it did not run.
	premounted chan struct{}
	mounts     map[string]string // image ID → rootfs ("" when it failed)
	// snaps is the directory of the step snapshots (snapshot.go); "" when
	// the build takes none.
	snaps string
	// stepOf maps each build container of the trace to its step; attribute
	// sets it.
	stepOf map[string]ranStep
	// rep reports the spawn's progress.
	rep *reporter
	// act is when the boot last execed, from the live trace; nil
	// without a trace.
	act *activity
	// baseIDs are the image IDs of the pulled bases.
	baseIDs []string
	// eg is the build's egress proxy and runtime shim; nil when the
	// build is offline.
	eg *egressRun
	// bootEg is the boot's egress proxy; nil when the boot is offline.
	bootEg *egressRun
}

// targetRun is the outcome of one buildah bud.
type targetRun struct {
	target string
	stage  int
	log    *buildLog
	exit   int
	image  string // full image ID when it built
	// stepTimedOut: a step ran past the step timeout and buildah was
	// stopped; stopped and timedOut are set too.
	stepTimedOut bool
	// stopped: the spawn's deadline passed (timedOut) or its ctx ended
	// while buildah ran, and buildah was killed.
	stopped, timedOut bool
}

// spawnBuild builds req.Build's targets with buildah on the host, every
// RUN step in its own runsc sandbox, boots the last image in a runsc
// sandbox of its own, and attributes the trace to phases. See doc.go.
func (b *Backend) spawnBuild(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	res := sandbox.Result{Backend: Name, ExitCode: -1}
	bp, err := b.planBuild(&req)
	if err != nil {
		return res, err
	}
	tools, err := b.buildTools()
	if err != nil {
		return res, err
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("starting build: %w", ctxErr(ctx))
	}
	id, err := b.newID()
	if err != nil {
		return res, err
	}
	sp, err := b.createAuditedSpawnDir(id, sandbox.AuditIDFrom(ctx))
	if err != nil {
		return res, err
	}
	defer sp.release()

	parent := ctx
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Timeout, errDeadline)
		defer cancel()
	}
	br := &buildRun{b: b, req: &req, plan: bp, sp: sp, df: filepath.Join(sp.dir, "Dockerfile"), rep: newReporter(ctx)}
	if err := os.WriteFile(br.df, bp.dockerfile, 0o600); err != nil {
		return res, fmt.Errorf("copying the Dockerfile: %w", err)
	}
	bdir := filepath.Join(sp.dir, "b")
	if err := os.Mkdir(bdir, 0o700); err != nil {
		return res, fmt.Errorf("creating build directory: %w", err)
	}
	// The whole private buildah (store, runroot, TMPDIR, the steps' runsc
	// root) lives on the spawn's own filesystem: a RUN step that writes
	// without end fills it, not the host. cleanup unmounts it.
	if br.disk, err = sp.mountDisk(ctx, bdir, bp.limits.DiskBytes); err != nil {
		return res, err
	}
	if br.bh, err = newBuildah(tools, bdir, req.Build.RegistryMirrors); err != nil {
		return res, err
	}
	br.bh.cgroup = sp.cgroup
	if req.CaptureTrace {
		br.act = &activity{}
		observe := func(e trace.Event) {
			br.rep.observe(e)
			br.act.observe(e)
		}
		br.tr, err = startTracer(filepath.Join(sp.dir, "trace"), req.KeepTraceEnv, observe)
		if err != nil {
			return res, fmt.Errorf("starting trace listener (no sandbox started): %w", err)
		}
		defer br.tr.close()
		if err := os.Mkdir(br.bh.path("w"), 0o700); err != nil {
			return res, fmt.Errorf("creating the exec witness directory: %w", err)
		}
		if len(b.cfg.StepHook) > 0 {
			br.snaps = br.bh.path(stepSnapshotDir)
			if err := writeStepHook(br.bh.path(stepHookDir), b.cfg.StepHook, br.bh.path("s"), br.snaps); err != nil {
				return res, err
			}
		}
	}

	res.Started = time.Now()
	stopped := func() error {
		if ctx.Err() == nil {
			return nil
		}
		if parent.Err() == nil && errors.Is(context.Cause(ctx), errDeadline) {
			res.TimedOut = true
			return fmt.Errorf("building in sandbox %s: %w after %v", id, sandbox.ErrTimeout, req.Timeout)
		}
		return fmt.Errorf("building in sandbox %s: %w", id, ctxErr(parent))
	}
	var stopErr, infraErr error
	built := true
	if b.bases != nil && bp.parseErr == nil {
		use, err := b.bases.use()
		if err != nil {
			return res, err
		}
		defer func() {
			_ = use.Close()
			b.bases.fit(context.WithoutCancel(parent), tools)
		}()
		if err := os.WriteFile(br.bh.path("storage.conf"), []byte(b.bases.readOnlyConf(br.bh.path("s"), br.bh.path("rr"))), 0o600); err != nil {
			return res, fmt.Errorf("writing the build's storage.conf: %w", err)
		}
		br.bh.shared = b.bases.path("s")
		phases, pinned, err := br.pullBases(ctx)
		res.Phases = append(res.Phases, phases...)
		switch last := len(phases) - 1; {
		case stopped() != nil:
			stopErr, built = stopped(), false
		case err != nil:
			infraErr, built = err, false
		case last >= 0 && phases[last].Failed:
			res.ExitCode, built = max(phases[last].ExitCode, 1), false
		default:
			if err := os.WriteFile(br.df, pinBases(bp.dockerfile, bp.stages, pinned), 0o600); err != nil {
				return res, fmt.Errorf("copying the Dockerfile: %w", err)
			}
			for _, id := range pinned {
				br.baseIDs = append(br.baseIDs, id)
			}
			// From here to its end the build reads the store (its
			// builds, then the boot's mount of the image built on it).
			release, err := b.bases.reading(ctx)
			switch {
			case err != nil && stopped() != nil:
				stopErr, built = stopped(), false
			case err != nil:
				infraErr, built = err, false
			default:
				defer release()
			}
		}
	}
	if built {
		if br.eg, err = br.startEgress(); err != nil {
			return res, err
		}
		defer br.eg.close()
		if err := br.writeSecrets(); err != nil {
			return res, err
		}
	}
	for i, target := range bp.targets {
		if !built {
			break
		}
		tr, phases, err := br.buildTarget(ctx, i, target)
		res.Phases = append(res.Phases, phases...)
		if stopErr = stopped(); stopErr != nil {
			built = false
			break
		}
		if err != nil {
			infraErr, built = err, false
			break
		}
		if tr.exit != 0 {
			res.ExitCode, built = tr.exit, false
			// A step past the step timeout: the spawn timed out, with
			// the phases and the trace so far.
			res.TimedOut = tr.stepTimedOut
			break
		}
	}
	var boot *bootRun
	if built {
		res.ExitCode = 0
		if req.Build.Boot {
			boot, err = br.boot(ctx, br.targets[len(br.targets)-1].image)
			if boot != nil {
				res.Phases = append(res.Phases, boot.phase)
				if boot.requests != nil {
					res.Phases = append(res.Phases, boot.requests.phases()...)
				}
				if boot.health != nil {
					res.Phases = append(res.Phases, boot.health.phase)
				}
				res.Stdout, res.StdoutTruncated = boot.stdout, boot.stdoutTruncated
				res.Stderr, res.StderrTruncated = boot.stderr, boot.stderrTruncated
			}
			if stopErr = stopped(); stopErr == nil && err != nil {
				infraErr = err
			}
		}
	}
	if built && req.Build.ReadNodeModules && stopped() == nil {
		rootfs := ""
		if boot != nil {
			rootfs = boot.rootfs
		}
		res.NodeModules = br.imageNodeModules(ctx, br.targets[len(br.targets)-1].image, rootfs)
	}
	if boot != nil && boot.rootfs != "" && stopErr == nil && infraErr == nil {
		res.ImageFacts = br.imageFacts(ctx, boot.image, boot.rootfs)
	}
	if br.tr != nil {
		coll := br.tr.finish()
		// Interpreters are read from images mounted now; that needs a
		// live context, bounded, even when the spawn's own has ended.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 2*time.Minute)
		res.Trace, res.TraceComplete = br.attribute(rctx, coll, boot, stopErr == nil && parent.Err() == nil)
		cancel()
		res.TraceGaps = collectionGaps(coll)
		if !res.TraceComplete && len(res.TraceGaps) == 0 {
			res.TraceGaps = append(res.TraceGaps, "the trace's containers do not match the build steps that ran and the boot")
		}
		var ran []string
		if boot != nil && boot.id != "" {
			ran = append(ran, boot.id)
		}
		res.TraceGaps = append(res.TraceGaps, readWitness(br.bh.path("w")).compare(res.Trace, ran)...)
		if stopErr != nil || infraErr != nil {
			res.TraceGaps = append(res.TraceGaps, "the build spawn was stopped before it finished")
		}
		res.TraceComplete = res.TraceComplete && len(res.TraceGaps) == 0
		notes := br.snapshotNotes()
		for i := range res.Phases {
			if note, ok := notes[res.Phases[i].Name]; ok {
				res.Phases[i].OutputTail += "codegenie: the trace cannot read this step's files: " + note + "\n"
			}
		}
	}
	if br.eg != nil {
		br.eg.close()
		res.Egress = br.eg.report(br.ranSteps(), br.stepLabel)
		br.noteDenials(&res)
	}
	if br.bootEg != nil {
		br.bootEg.close()
		res.Egress = mergeEgress(res.Egress, br.bootEg.report(nil, nil))
	}
	res.Duration = time.Since(res.Started)
	for i := range res.Phases {
		res.Phases[i].OutputTail = br.scrub(res.Phases[i].OutputTail)
	}
	br.scrubSecrets(&res)
	if stopErr != nil {
		res.ExitCode = -1
		return res, stopErr
	}
	if infraErr != nil {
		res.ExitCode = -1
		return res, infraErr
	}
	return res, nil
}

// budArgs are the arguments of buildah bud for one target.
func (br *buildRun) budArgs(target, tag string) []string {
	b, bh := br.b, br.bh
	args := []string{"bud",
		"--signature-policy", bh.path("policy.json"),
		"--isolation=oci",
		"--runtime=" + b.cfg.Runsc,
		"--runtime-flag=root=" + bh.runscRoot(),
		"--runtime-flag=platform=" + b.cfg.Platform,
		// Without it a step's writes vanish before the next step reads
		// them (ENVIRONMENT.md): buildah commits the rootfs directory.
		"--runtime-flag=overlay2=none",
		"--runtime-flag=network=none",
		"--runtime-flag=gofer-network-namespace=new",
		"--network=none",
		// The default OCI format drops HEALTHCHECK.
		"--format=docker",
		// Pull a base image only when the private store lacks it: the
		// second target reuses the first's pulls.
		"--pull=false",
		"--cgroup-parent=/" + br.sp.id,
		fmt.Sprintf("--ulimit=nofile=%d:%d", nofileSoft, nofileHard),
	}
	if b.cfg.NoCgroups {
		args = append(args, "--runtime-flag=ignore-cgroups")
	} else {
		l := br.plan.limits
		if b.enforce.Memory {
			args = append(args, fmt.Sprintf("--memory=%db", l.MemoryBytes), fmt.Sprintf("--memory-swap=%db", l.MemoryBytes))
		}
		if b.enforce.CPU {
			quota := max(int64(l.CPUs*cpuPeriod), 1000)
			args = append(args, fmt.Sprintf("--cpu-period=%d", cpuPeriod), fmt.Sprintf("--cpu-quota=%d", quota))
		}
	}
	if br.tr != nil {
		args = append(args, "--runtime-flag=pod-init-config="+br.tr.config)
		for _, f := range witnessFlags(br.bh.path("w")) {
			if b.noWitness {
				break
			}
			// buildah reads --runtime-flag as a CSV list: a value with a
			// comma (the syscall list) is quoted to stay one flag.
			args = append(args, "--runtime-flag="+csvField(strings.TrimPrefix(f, "--")))
		}
	}
	if br.snaps != "" {
		args = append(args, "--hooks-dir", br.bh.path(stepHookDir))
	}
	// --layers commits every step (with vfs, a copy of the whole tree per
	// step). A trace without step snapshots reads a RUN step's files from
	// its stage's committed image; and the final target reuses the
	// builder target's steps. Without either need, the target's own image
	// is enough.
	if br.plan.needsLayers(target, br.tr != nil && br.snaps == "") {
		args = append(args, "--layers")
	} else {
		args = append(args, "--layers=false")
	}
	args = br.eg.budArgs(args)
	if br.req != nil && br.req.Build != nil {
		for _, sec := range br.req.Build.Secrets {
			args = append(args, "--secret", "id="+sec.ID+",src="+br.secretPath(sec.ID))
		}
	}
	args = append(args, "-f", br.df)
	if target != "" {
		args = append(args, "--target="+target)
	}
	return append(args, "-t", tag, br.plan.workspace)
}

// buildTarget runs buildah bud for the n-th target and returns its phases:
// one per RUN step that ran a sandbox (and one for a failing step of
// another kind), then one for the target. err reports a failure of the
// backend, not of the build.
func (br *buildRun) buildTarget(ctx context.Context, n int, target string) (*targetRun, []sandbox.PhaseResult, error) {
	name := br.plan.targetPhase(target)
	start := time.Now()
	fail := func(msg string) (*targetRun, []sandbox.PhaseResult, error) {
		tr := &targetRun{target: target, exit: 1}
		return tr, []sandbox.PhaseResult{{Name: name, ExitCode: 1, Failed: true, Duration: time.Since(start), OutputTail: msg + "\n"}}, nil
	}
	if br.plan.parseErr != nil {
		return fail(br.plan.parseErr.Error())
	}
	idx, ok := br.plan.targetStage(target)
	if !ok {
		return fail(fmt.Sprintf("no stage named %q in the Dockerfile", target))
	}
	tr := &targetRun{target: target, stage: idx, log: newBuildLog(br.plan.stages, idx)}
	br.rep.report(sandbox.Progress{Kind: sandbox.ProgressPhase, Phase: name})
	mark := snapshotMarker{into: br.snaps}
	// stepStart is when the current step began (Unix ns): onStep runs on
	// the output's goroutine, the step watch on its own.
	var stepStart atomic.Int64
	stepStart.Store(start.UnixNano())
	tr.log.onStep = func(st *step, line string) {
		stepStart.Store(time.Now().UnixNano())
		mark.step(st.stage != idx)
		stages := br.plan.stages
		br.rep.report(sandbox.Progress{Kind: sandbox.ProgressStep, Phase: sandbox.BuildPhase(stages[st.stage].label(st.stage), st.num),
			Step: st.num, Steps: len(stages[st.stage].instrs), Instruction: stepInstruction(line)})
	}
	tag := fmt.Sprintf("localhost/%s-%d", br.sp.id, n)
	lw := &lineWriter{fn: tr.log.line, now: time.Now}
	cmd := br.bh.command(br.budArgs(target, tag)...)
	cmd.Stdout, cmd.Stderr = lw, lw
	bctx, stopBuild := context.WithCancelCause(ctx)
	defer stopBuild(nil)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{}, 2)
	go func() {
		defer func() { watched <- struct{}{} }()
		br.disk.watch(wctx, diskWatchInterval)
	}()
	go func() {
		defer func() { watched <- struct{}{} }()
		watchStep(wctx, &stepStart, br.plan.stepMax, func() { stopBuild(errStepTimeout) })
	}()
	err := run(bctx, cmd)
	stopWatch()
	<-watched
	<-watched
	lw.flush()
	end := time.Now()
	tr.log.finish(end)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr), errors.Is(err, exec.ErrWaitDelay):
	case bctx.Err() != nil:
	default:
		return tr, nil, fmt.Errorf("running buildah: %w", err)
	}
	tr.exit = -1
	if cmd.ProcessState != nil {
		tr.exit = cmd.ProcessState.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		tr.exit, tr.stopped = -1, true
		tr.timedOut = errors.Is(context.Cause(ctx), errDeadline)
	case errors.Is(context.Cause(bctx), errStepTimeout):
		tr.exit, tr.stopped, tr.timedOut, tr.stepTimedOut = -1, true, true, true
	}
	br.targets = append(br.targets, tr)
	if err := br.b.cleanBuild(context.WithoutCancel(ctx), br.bh.runscRoot()); err != nil && tr.exit == 0 {
		return tr, nil, fmt.Errorf("cleaning up build sandboxes: %w", err)
	}

	phases := br.stepPhases(tr)
	tp := sandbox.PhaseResult{Name: name, ExitCode: tr.exit, Failed: tr.exit != 0, TimedOut: tr.timedOut,
		Duration: end.Sub(start), OutputTail: tr.log.all.String()}
	if tr.exit != 0 && !tr.stopped && br.disk.full(tp.OutputTail) {
		// Said last, where a reader of the tail looks first.
		msg := br.disk.fullMessage() + "\n"
		tp.OutputTail += msg
		for i := range phases {
			if phases[i].Failed {
				phases[i].OutputTail += msg
			}
		}
	}
	if tr.exit == 0 {
		id, err := br.bh.imageID(ctx, tag)
		if err != nil {
			return tr, append(phases, tp), fmt.Errorf("reading the image of %s: %w", name, err)
		}
		tr.image, tp.Image = id, id
		// The target stage's image is the committed one, whatever the
		// output said.
		tr.log.image[idx] = id
	}
	return tr, append(phases, tp), nil
}

// stepPhases are the phases of the steps of one target: every RUN step
// that ran a sandbox, in order, and, when the build failed at a step (or
// was killed during one), that step as Failed with its output tail.
func (br *buildRun) stepPhases(tr *targetRun) []sandbox.PhaseResult {
	l := tr.log
	var phases []sandbox.PhaseResult
	failing := (*step)(nil)
	if tr.exit != 0 && (l.failedAtStep || tr.stopped) {
		failing = l.last
	}
	for _, s := range l.steps {
		ranRun := s.keyword == "RUN" && !s.cached
		if !ranRun && s != failing {
			continue
		}
		p := sandbox.PhaseResult{
			Name:       sandbox.BuildPhase(l.stages[s.stage].label(s.stage), s.num),
			Duration:   s.end.Sub(s.start),
			OutputTail: s.out.String(),
		}
		if s == failing {
			p.Failed, p.TimedOut = true, tr.timedOut
			p.ExitCode = tr.exit
			if tr.stepTimedOut {
				p.OutputTail += fmt.Sprintf("codegenie: the step ran past the step timeout (%s) and was stopped\n", br.plan.stepMax)
			}
			if s.keyword == "RUN" && l.runExit >= 0 && !tr.stopped {
				p.ExitCode = l.runExit
			}
		}
		phases = append(phases, p)
	}
	return phases
}

// watchStep calls stop once the step that began at *start (Unix ns) has
// run for max, and returns then or when ctx is done.
func watchStep(ctx context.Context, start *atomic.Int64, max time.Duration, stop func()) {
	t := time.NewTicker(stepWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, start.Load())) >= max {
				stop()
				return
			}
		}
	}
}

// csvField quotes s as one CSV field when it holds a comma or a quote, as
// buildah's list flags (--runtime-flag) split their values as CSV.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// scrub takes the host's private paths and this spawn's random names out
// of build output (buildah names its configuration files and the
// spawn's tags in its messages), so that the same inputs give the same
// phase output on any machine: the spawn directory reads as <build>, the
// state directory as <state>, and the spawn ID as <spawn>.
func (br *buildRun) scrub(s string) string {
	return strings.NewReplacer(br.sp.dir, "<build>", br.b.cfg.StateDir, "<state>", br.sp.id, "<spawn>").Replace(s)
}
