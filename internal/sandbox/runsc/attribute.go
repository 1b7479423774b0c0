package runsc

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/internal/trace/seccheck"
)

// ranStep is a RUN step that ran a sandbox, and the build it ran in.
type ranStep struct {
	tr *targetRun
	s  *step
}

// attribute turns a build spawn's collection into its trace:
//
//   - Phases. Every RUN step that ran (not reused from the layer cache) is
//     one runsc sandbox, hence one container ID. Build steps run one after
//     the other, so the n-th build container to appear in the trace is the
//     n-th such step over all targets. The mapping is checked: the counts
//     must agree (the failing step of a failed build may lack a container,
//     if its sandbox never started), each container has one start, and its
//     args fit the step's RUN instruction (checkArgv). Any disagreement
//     leaves those events without a phase and the trace incomplete. The
//     boot's events are known by its container ID.
//   - First processes. Each container's first process appears only as
//     container/start (blind spot 2). After each build container's start
//     the backend inserts an exec event with the start's args, resolved
//     against the stage's image; after the boot's, one for the command it
//     ran, as Spawn does (insertInit).
//   - Interpreters. Every exec of a file that is not ELF gets Interp, the
//     shebang's interpreter read host-side (blind spot 1): for the boot from
//     the working container it ran in; for a step of a stage other than
//     the target's from the step's snapshot (snapshot.go), its rootfs
//     right after it ran, and from nothing when it has none (its hook
//     failed, the tree was too big, or the marker was late: see
//     snapshotNotes). A step of the target's stage, and every step when
//     there is no Config.StepHook, reads from the image of its stage after
//     the build, mounted now: the image after the stage's last step, where
//     a script that a later step deleted or rewrote reads as unknown or as
//     its later self. A file that cannot be read gets
//     trace.InterpUnknown. resolve false (the spawn was stopped) mounts
//     nothing, so those build interpreters are unknown.
//   - Errnos. An exec attempt that failed gets the errno read from the
//     same filesystem (inferErrnos).
//   - Shells by content. An exec whose file is one of the shells (or
//     busybox) of the images mounted here, by the sentry's digest or as
//     read from its image, gets SameAs (trace.Shells). A snapshotted step
//     adds no shells: its snapshot holds only executables' heads.
//
// ok is true when the collection is complete and every container is
// accounted for.
func (br *buildRun) attribute(ctx context.Context, coll *seccheck.Collection, boot *bootRun, resolve bool) ([]trace.Event, bool) {
	events := coll.Events
	complete := coll.Complete
	bootID := ""
	if boot != nil {
		bootID = boot.id
	}

	var order []string
	seen := map[string]bool{}
	for i := range events {
		c := events[i].Container
		if c == "" {
			complete = false
			continue
		}
		if c == bootID || seen[c] {
			continue
		}
		seen[c] = true
		order = append(order, c)
	}
	var ran []ranStep
	for _, tr := range br.targets {
		for _, s := range tr.log.ran() {
			ran = append(ran, ranStep{tr, s})
		}
	}
	lastMayLack := false
	if n := len(br.targets); n > 0 {
		tr := br.targets[n-1]
		l := tr.log
		lastMayLack = tr.exit != 0 && l.failedAtStep && l.last != nil && l.last.keyword == "RUN" && !l.last.cached
	}
	steps := map[string]ranStep{}
	if len(order) == len(ran) || (lastMayLack && len(order) == len(ran)-1) {
		for i, c := range order {
			steps[c] = ran[i]
		}
	} else {
		complete = false
	}
	starts := map[string]int{}
	for i := range events {
		e := &events[i]
		rs, ok := steps[e.Container]
		if !ok || e.Kind != trace.KindStart {
			continue
		}
		starts[e.Container]++
		if !rs.tr.log.stages[rs.s.stage].instrs[rs.s.num-1].checkArgv(e.Argv) {
			delete(steps, e.Container)
			complete = false
		}
	}
	for c := range steps {
		if starts[c] != 1 {
			delete(steps, c)
			complete = false
		}
	}
	br.stepOf = steps
	for i := range events {
		e := &events[i]
		if rs, ok := steps[e.Container]; ok {
			e.Phase = sandbox.BuildPhase(rs.tr.log.stages[rs.s.stage].label(rs.s.stage), rs.s.num)
		} else if bootID != "" && e.Container == bootID {
			e.Phase = sandbox.PhaseBoot
		}
	}
	if boot != nil {
		events = attributeHealth(events, bootID, boot.health)
		attributeRequests(events, bootID, boot.requests)
	}

	// The root filesystem each container's files are read from.
	fsys := &imageMounts{bh: br.bh, resolve: resolve, byImage: map[string]string{}}
	if br.premounted != nil {
		<-br.premounted
		maps.Copy(fsys.byImage, br.mounts)
	}
	if boot != nil && boot.rootfs != "" {
		fsys.byImage[boot.image] = boot.rootfs
	}
	rootfsOf := func(container string) string {
		if bootID != "" && container == bootID {
			return boot.rootfs
		}
		rs, ok := steps[container]
		if !ok {
			return ""
		}
		if snap := stepSnapshot(br.snaps, container); snap != "" {
			return snap
		}
		if br.snaps != "" && rs.s.stage != rs.tr.stage {
			// A step meant to be snapshotted is not read from an image:
			// its stage was not committed, or the image shows what later
			// steps left. Unknown, rather than wrong.
			return ""
		}
		return fsys.rootfs(ctx, rs.tr.log.image[rs.s.stage])
	}

	out := make([]trace.Event, 0, len(events)+len(order)+1)
	for _, e := range events {
		out = append(out, e)
		if e.Kind != trace.KindStart || e.Container == bootID || len(e.Argv) == 0 {
			continue
		}
		lk := lookup{}
		if rootfs := rootfsOf(e.Container); rootfs != "" {
			view := fsView{rootfs: rootfs, virtual: virtualMounts}
			lk = view.lookPath(e.Argv[0], []string{defaultPath}, path.Clean("/"+e.Cwd))
		} else if path.IsAbs(e.Argv[0]) {
			lk.execfn = path.Clean(e.Argv[0])
		}
		out = append(out, initExec(e, e.Argv, lk, e.Cwd))
	}
	if bootID != "" {
		ip := initProc{container: bootID, argv: boot.argv, lookup: boot.lookup, cwd: boot.cwd}
		if br.req.KeepTraceEnv {
			ip.env = boot.env
		}
		var ok bool
		out, ok = insertInit(out, ip)
		complete = complete && ok
	}

	inferErrnos(out, func(container string) (fsView, bool) {
		rootfs := rootfsOf(container)
		return fsView{rootfs: rootfs, virtual: virtualMounts}, rootfs != ""
	})

	interps := map[string]trace.Interpreters{}
	for i := range out {
		e := &out[i]
		if e.Kind != trace.KindExec || e.Binary == "" || e.Interp != "" {
			continue
		}
		rootfs := rootfsOf(e.Container)
		if rootfs == "" {
			e.Interp = trace.InterpUnknown
			continue
		}
		fn, ok := interps[rootfs]
		if !ok {
			fn = trace.RootfsInterpreters(rootfs)
			interps[rootfs] = fn
		}
		switch interp, isScript, ok := fn(e.Binary); {
		case !ok:
			e.Interp = trace.InterpUnknown
		case isScript:
			e.Interp = interp
		}
	}

	// Shells by content (trace.Shells): those of every image mounted
	// here, and each exec's file by the sentry's digest or as read from
	// its image, never from a step snapshot (it holds executables' heads).
	shells := trace.NewShells()
	dirs := slices.Compact(slices.Sorted(maps.Values(fsys.byImage)))
	for _, dir := range dirs {
		if dir != "" {
			shells.AddRootfs(dir)
		}
	}
	shells.Identify(out, func(container string) string {
		if stepSnapshot(br.snaps, container) != "" {
			return ""
		}
		return rootfsOf(container)
	})
	return out, complete
}

// snapshotNotes says, for each phase of a step that the trace meant to read
// from a snapshot and that has none, why: what its hook left
// (missingSnapshot). attribute must have run.
func (br *buildRun) snapshotNotes() map[string]string {
	notes := map[string]string{}
	if br.snaps == "" {
		return notes
	}
	for c, rs := range br.stepOf {
		if rs.s.stage == rs.tr.stage || stepSnapshot(br.snaps, c) != "" {
			continue
		}
		notes[sandbox.BuildPhase(rs.tr.log.stages[rs.s.stage].label(rs.s.stage), rs.s.num)] = missingSnapshot(br.snaps, c)
	}
	return notes
}

// imageMounts mounts the images that build steps' files are read from,
// once each, as working containers of the private store (removed with it).
type imageMounts struct {
	bh      *buildah
	resolve bool
	byImage map[string]string // image ID (full or short) → rootfs; "" when it failed
	n       int
}

func (m *imageMounts) rootfs(ctx context.Context, image string) string {
	if image == "" || !m.resolve {
		return ""
	}
	if dir, ok := m.byImage[image]; ok {
		return dir
	}
	for id, dir := range m.byImage {
		if strings.HasPrefix(id, image) || strings.HasPrefix(image, id) {
			return dir
		}
	}
	m.n++
	mt, err := m.bh.mount(ctx, image, fmt.Sprintf("step-image-%d", m.n))
	m.byImage[image] = mt.rootfs
	if err != nil {
		m.byImage[image] = ""
	}
	return m.byImage[image]
}

// premount mounts, in the background, the images that attribute will read
// build steps' files from: the image of each stage in which a RUN step ran
// and that is not snapshotted, except boot (the boot's image, mounted
// already). The boot calls it once its own working container is mounted,
// so that these copies (vfs copies whole images) overlap the boot instead
// of following it. attribute waits for it. The goroutine ends when its
// mounts are done; ctx bounds them.
func (br *buildRun) premount(ctx context.Context, boot string) {
	seen := map[string]bool{boot: true}
	var images []string
	for _, tr := range br.targets {
		for _, s := range tr.log.ran() {
			if br.snaps != "" && s.stage != tr.stage {
				continue // read from its snapshot
			}
			img := tr.log.image[s.stage]
			if img == "" || seen[img] || strings.HasPrefix(boot, img) {
				continue
			}
			seen[img] = true
			images = append(images, img)
		}
	}
	br.premounted = make(chan struct{})
	br.mounts = map[string]string{}
	go func() {
		defer close(br.premounted)
		for i, img := range images {
			mt, err := br.bh.mount(ctx, img, fmt.Sprintf("stage-image-%d", i))
			if err != nil {
				mt.rootfs = ""
			}
			br.mounts[img] = mt.rootfs
		}
	}()
}
