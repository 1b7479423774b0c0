package runsc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// bootRun is the boot of a built image.
type bootRun struct {
	// id is the container ID of the boot sandbox; "" when none started.
	id     string
	image  string
	rootfs string // the working container's root filesystem
	argv   []string
	env    []string
	cwd    string
	lookup lookup
	phase  sandbox.PhaseResult

	stdout, stderr                   []byte
	stdoutTruncated, stderrTruncated bool
	// health is the image's HEALTHCHECK run; nil when there was none to
	// run (no HEALTHCHECK, or no trace).
	health *healthRun
	// requests are the requests sent during the window; nil when none
	// was answered or sent.
	requests *requestRun
}

// boot runs image with its entrypoint and cmd, env, working directory and
// user, network off, in a runsc sandbox of its own (the backend's spawn
// machinery, with the build's trace listener), until it has settled
// (ready.go), until it exits, or for BootFor at most. Reaching BootFor, or
// settling, is success: the service is up. A boot that
// cannot start (no command, an unknown user, a missing executable, runsc
// refusing the image) is a Failed phase, not an error; err reports a
// failure of the backend. The working container stays mounted, for the
// interpreters of the trace, until the build directory is removed.
func (br *buildRun) boot(ctx context.Context, image string) (*bootRun, error) {
	bt := &bootRun{image: image, phase: sandbox.PhaseResult{Name: sandbox.PhaseBoot, ExitCode: -1}}
	start := time.Now()
	failed := func(format string, args ...any) (*bootRun, error) {
		bt.phase.Failed = true
		bt.phase.Duration = time.Since(start)
		bt.phase.OutputTail = fmt.Sprintf(format, args...) + "\n"
		return bt, nil
	}
	m, err := br.bh.mount(ctx, image, "boot")
	if err != nil {
		return bt, fmt.Errorf("mounting the image to boot: %w", err)
	}
	bt.rootfs = m.rootfs
	cfg, err := br.bh.config(ctx, image)
	if err != nil {
		return bt, fmt.Errorf("reading the image config: %w", err)
	}
	bt.argv = append(slices.Clone(cfg.Entrypoint), cfg.Cmd...)
	if len(bt.argv) == 0 || bt.argv[0] == "" {
		return failed("the image has no entrypoint and no cmd: nothing to boot")
	}
	for _, a := range bt.argv {
		if strings.IndexByte(a, 0) >= 0 {
			return failed("the image's entrypoint or cmd contains NUL")
		}
	}
	hasPath, hasHome := false, false
	for _, kv := range cfg.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			return failed("the image's env entry %q is not NAME=value", kv)
		}
		hasPath = hasPath || name == "PATH"
		hasHome = hasHome || name == "HOME"
	}
	bt.env = slices.Clone(cfg.Env)
	if !hasPath {
		bt.env = append(bt.env, defaultPath)
	}
	u, err := resolveUser(bt.rootfs, cfg.User)
	if err != nil {
		return failed("resolving the image's user: %v", err)
	}
	if !hasHome {
		bt.env = append(bt.env, "HOME="+u.home)
	}
	// What `docker run -e` would add (BuildSpec.BootEnv).
	bt.env = mergeEnv(bt.env, br.req.Build.BootEnv)
	bt.cwd = "/"
	if cfg.WorkingDir != "" {
		bt.cwd = path.Clean("/" + cfg.WorkingDir)
	}

	view := fsView{rootfs: bt.rootfs, virtual: virtualMounts}
	bt.lookup = view.lookPath(bt.argv[0], bt.env, bt.cwd)
	switch bt.lookup.state {
	case lookupMissing:
		bt.phase.ExitCode = 127
		return failed("%s: not found", bt.argv[0])
	case lookupNotExecutable:
		bt.phase.ExitCode = 126
		return failed("%s: permission denied", bt.argv[0])
	case lookupFound, lookupUnknown, lookupInvalid:
	}

	b := br.b
	id, err := b.newID()
	if err != nil {
		return bt, err
	}
	sp, err := b.createAuditedSpawnDir(id, sandbox.AuditIDFrom(ctx))
	if err != nil {
		return bt, err
	}
	defer sp.release()
	bt.id = id
	// Docker, containerd and Kubernetes give every container an /etc/hosts
	// that names localhost; images (distroless among them) ship none, and a
	// health check of http://localhost/ needs it.
	hosts := filepath.Join(sp.dir, "hosts")
	if err := os.WriteFile(hosts, []byte(hostsFile(b.cfg.Hostname)), 0o644); err != nil {
		return bt, err
	}
	eg, egEnv, egCA, err := br.startBootEgress()
	if err != nil {
		return bt, err
	}
	if eg != nil {
		defer eg.close()
		br.bootEg = eg
		bt.env = mergeEnv(bt.env, egEnv)
	}
	c := container{
		spec: specInput{
			args:     bt.argv,
			env:      bt.env,
			cwd:      bt.cwd,
			rootfs:   bt.rootfs,
			hostname: b.cfg.Hostname,
			user:     ociUser{UID: u.uid, GID: u.gid, AdditionalGids: u.groups},
			platform: b.cfg.Platform,
			limits:   br.plan.limits,
			enforce:  b.enforce,
			hosts:    hosts,
			ca:       egCA,
		},
		timeout: br.plan.bootFor,
		output:  br.plan.limits.OutputBytes,
		// The boot writes to the build's disk: one limit for the spawn.
		upper: br.bh.path("o"),
	}
	if eg != nil {
		c.spec.netns = eg.ns.Path
	}
	if br.tr != nil {
		c.podInit = br.tr.config
		c.witness = br.bh.path("w")
	}
	if br.tr != nil {
		br.premount(ctx, image)
	}
	var res sandbox.Result
	br.rep.report(sandbox.Progress{Kind: sandbox.ProgressPhase, Phase: sandbox.PhaseBoot, BootLeft: br.plan.bootFor})
	stopTick := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		br.rep.countdown(br.plan.bootFor, stopTick)
	}()
	// With a trace, the boot is exercised (requests.go, then the
	// HEALTHCHECK, healthcheck.go) and ends once it has settled (ready.go).
	var rd *readiness
	if br.tr != nil {
		rd = &readiness{act: br.act, settle: br.plan.settle, max: br.plan.bootFor, ready: make(chan struct{})}
		if argv := healthArgv(cfg.Healthcheck); argv != nil {
			rd.hc = &healthRun{argv: argv, lookup: view.lookPath(argv[0], bt.env, bt.cwd)}
		}
		if node := nodeFor(view, bt.env, bt.cwd); node.state == lookupFound {
			rd.rr = &requestRun{plan: planRequests(cfg, br.req.Build.ProbePaths), node: node}
			rd.rr.plan.Connect = eg != nil
		}
		c.ready = rd.ready
		// c as it runs: the requests and the healthcheck run in it.
		rc := c
		rd.requests = func(ctx context.Context, deadline time.Time) { b.exercise(ctx, sp, id, rc, rd.rr, deadline) }
		rd.health = func(ctx context.Context, deadline time.Time) { b.runHealthcheck(ctx, sp, id, rc, rd.hc, deadline) }
	}
	bootDone, exDone := make(chan struct{}), make(chan struct{})
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	rdStart := time.Now()
	if rd != nil {
		rd.since = rdStart
		br.act.start(rdStart)
	}
	go func() {
		defer close(exDone)
		if rd != nil {
			rd.run(hctx, bootDone)
		}
	}()
	stopErr, err := b.runContainer(ctx, sp, c, &res)
	close(stopTick)
	<-ticked
	close(bootDone)
	hcancel()
	<-exDone
	if rd != nil {
		if rd.hc != nil && rd.hc.phase.Name != "" {
			bt.health = rd.hc
		}
		if rd.rr != nil && len(rd.rr.done) > 0 {
			bt.requests = rd.rr
		}
	}
	if err != nil {
		return bt, err
	}
	bt.stdout, bt.stdoutTruncated = res.Stdout, res.StdoutTruncated
	bt.stderr, bt.stderrTruncated = res.Stderr, res.StderrTruncated
	bt.phase.Duration = res.Duration
	bt.phase.ExitCode = res.ExitCode
	bt.phase.TimedOut = res.TimedOut
	bt.phase.OutputTail = outputTail(res.Stdout, res.Stderr)
	ready := rd != nil && closed(rd.ready)
	switch {
	case res.TimedOut || ready:
		// Still running at BootFor, or once it had settled: the service
		// is up.
	case stopErr != nil:
		// The spawn's own deadline or ctx: the caller reports it.
		bt.phase.Failed = true
	default:
		if msg := runscFailure(sp.log()); msg != "" {
			bt.phase.ExitCode = -1
			bt.phase.Failed = true
			bt.phase.OutputTail += "runsc: " + msg + "\n"
		} else {
			bt.phase.Failed = res.ExitCode != 0
		}
	}
	if rd != nil && stopErr == nil {
		bt.phase.Boot = rd.report(!res.TimedOut && !ready, res.TimedOut)
		bt.phase.OutputTail += rd.neverListened(bt.phase.Boot)
	}
	return bt, nil
}

// outputTail is the end of a boot's output: the last lines of stdout, then
// those of stderr, which tell why a boot failed.
func outputTail(stdout, stderr []byte) string {
	t := newTail(stepTailLines, stepTailBytes)
	for _, b := range [][]byte{stdout, stderr} {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 4096), len(b)+1)
		for sc.Scan() {
			line := sc.Text()
			if len(line) > maxLineBytes {
				line = line[:maxLineBytes] + " [cut]"
			}
			t.add(line)
		}
	}
	return t.String()
}

// maxPasswd bounds the /etc/passwd and /etc/group read from an image.
const maxPasswd = 1 << 20

// imageUser is a resolved image USER.
type imageUser struct {
	uid, gid uint32
	groups   []uint32 // supplementary groups
	home     string
}

// resolveUser resolves an image's USER (name, uid, name:group or uid:gid)
// against the rootfs's /etc/passwd and /etc/group, as Docker does: an empty
// user is root; a name must exist in /etc/passwd and a group name in
// /etc/group; a uid that /etc/passwd lacks gets gid 0 and HOME /. The
// supplementary groups are those of /etc/group that list the user by name.
// The files are read inside rootfs (os.Root: no symlink leaves it).
func resolveUser(rootfs, spec string) (imageUser, error) {
	u := imageUser{home: "/"}
	userPart, groupPart, hasGroup := strings.Cut(spec, ":")
	if userPart == "" {
		userPart = "0"
	}
	passwd, err := readImageFile(rootfs, "etc/passwd")
	if err != nil {
		return u, err
	}
	uid, numeric := parseID(userPart)
	name := ""
	found := false
	for _, f := range colonRecords(passwd, 7) {
		id, ok := parseID(f[2])
		if !ok {
			continue
		}
		if (numeric && id == uid) || (!numeric && f[0] == userPart) {
			gid, _ := parseID(f[3])
			u.uid, u.gid, name, found = id, gid, f[0], true
			if f[5] != "" {
				u.home = f[5]
			}
			break
		}
	}
	switch {
	case !found && !numeric:
		return u, fmt.Errorf("no user %q in /etc/passwd", userPart)
	case !found:
		u.uid = uid
	}
	group, err := readImageFile(rootfs, "etc/group")
	if err != nil {
		return u, err
	}
	groups := colonRecords(group, 4)
	if hasGroup {
		gid, ok := parseID(groupPart)
		if !ok {
			for _, f := range groups {
				if f[0] == groupPart {
					gid, ok = parseID(f[2])
					break
				}
			}
		}
		if !ok {
			return u, fmt.Errorf("no group %q in /etc/group", groupPart)
		}
		u.gid = gid
	}
	if name != "" {
		for _, f := range groups {
			gid, ok := parseID(f[2])
			if !ok || gid == u.gid || slices.Contains(u.groups, gid) {
				continue
			}
			if slices.Contains(strings.Split(f[3], ","), name) {
				u.groups = append(u.groups, gid)
			}
		}
	}
	return u, nil
}

// readImageFile reads a small file of an image's root filesystem, inside
// it. A missing file reads as empty.
func readImageFile(rootfs, name string) ([]byte, error) {
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading /%s: %w", name, err)
	}
	defer f.Close()
	b, err := readBounded(f, maxPasswd)
	if err != nil {
		return nil, fmt.Errorf("reading /%s: %w", name, err)
	}
	return b, nil
}

// colonRecords splits a passwd-style file into records of exactly n
// fields, skipping comments and malformed lines.
func colonRecords(b []byte, n int) [][]string {
	var out [][]string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if f := strings.Split(line, ":"); len(f) == n {
			out = append(out, f)
		}
	}
	return out
}

// parseID parses a decimal uid or gid.
func parseID(s string) (uint32, bool) {
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err == nil
}

// hostsFile is the /etc/hosts of a booted image.
func hostsFile(hostname string) string {
	return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + hostname + "\n"
}
