package runsc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/internal/trace/seccheck"
)

// Name is the backend name that Results carry.
const Name = "gvisor"

// adminTimeout bounds each runsc command the backend runs to inspect, kill
// or delete a sandbox.
const adminTimeout = 15 * time.Second

// runscEnv is the whole environment of the runsc processes: nothing of the
// caller's (which may hold keys) reaches them.
var runscEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// virtualMounts are the filesystems that exist only inside the sandbox.
var virtualMounts = []string{"/proc", "/dev", "/sys", "/tmp"}

// Backend runs spawns in gVisor sandboxes with runsc. Create it with New. It
// is safe for concurrent use; each spawn gets its own runsc root, bundle and
// container ID.
type Backend struct {
	cfg     Config
	enforce Enforcement
	tag     string
	wd      watchdog
	disks   diskBook
	// noWitness runs traced sandboxes without the exec witness, for the
	// benchmarks that measure its cost only; the trace is then never
	// complete.
	noWitness bool
	// bases is the shared base-image store; nil with Config.NoBaseStore.
	bases *baseStore
	// pulls counts the buildah pulls run into it.
	pulls atomic.Int64
}

var _ sandbox.Client = (*Backend)(nil)

// New checks that runsc can run here and returns a Backend. It returns a
// *sandbox.UnsupportedError when runsc is missing or does not run, or when
// the process is not root (runsc needs root for its namespaces and
// cgroups here), and another error when cfg is invalid or the state
// directory cannot be made.
func New(cfg Config) (*Backend, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(cfg.Runsc)
	if err != nil {
		return nil, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf(
			"no runsc at %s (%v): run scripts/setup.sh as root to build the pinned runsc, or set $%s", cfg.Runsc, err, EnvRunsc)}
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return nil, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf(
			"%s is not an executable file: run scripts/setup.sh as root to rebuild runsc", cfg.Runsc)}
	}
	if os.Geteuid() != 0 {
		return nil, &sandbox.UnsupportedError{Backend: Name, Reason: "runsc needs root here (namespaces, cgroups): run it from gate-control as root"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cfg.Runsc, "--version").CombinedOutput()
	if err != nil {
		return nil, &sandbox.UnsupportedError{Backend: Name, Reason: fmt.Sprintf(
			"%s --version failed (%v: %s): run scripts/setup.sh as root to rebuild the pinned runsc (cgo off)", cfg.Runsc, err, firstLine(out))}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating runsc state directory: %w", err)
	}
	if err := os.Chmod(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting runsc state directory: %w", err)
	}
	enforce := Enforcement{Output: true, Reason: "cgroups disabled by configuration"}
	if !cfg.NoCgroups {
		enforce = detectCgroups()
		if !enforce.Memory && !enforce.CPU && !enforce.PIDs {
			cfg.NoCgroups = true
		}
	}
	be := &Backend{cfg: cfg, enforce: enforce, tag: stateTag(cfg.StateDir)}
	if !cfg.NoBaseStore {
		be.bases = &baseStore{dir: cfg.BaseStore, maxBytes: cfg.BaseStoreBytes}
		if err := be.bases.open(); err != nil {
			return nil, err
		}
	}
	return be, nil
}

// Config returns the backend's configuration, with defaults applied.
func (b *Backend) Config() Config { return b.cfg }

// Enforcement reports which limits this backend applies on this host.
func (b *Backend) Enforcement() Enforcement { return b.enforce }

// plan is a validated request, resolved against the backend's defaults.
type plan struct {
	rootfs    string
	workspace string
	mount     string
	cwd       string
	env       []string
	limits    sandbox.Limits
	lookup    lookup
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", sandbox.ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// plan validates what SpawnRequest.Validate does not, without running
// anything.
func (b *Backend) plan(req *sandbox.SpawnRequest) (plan, error) {
	p := plan{rootfs: req.Rootfs, workspace: req.Workspace.Dir, mount: req.Workspace.Mount, cwd: req.Cwd}
	if len(req.Command) == 0 || req.Command[0] == "" {
		return p, invalid("the %s backend runs a command and the request has none", Name)
	}
	if p.rootfs == "" {
		p.rootfs = b.cfg.Rootfs
	}
	if p.rootfs == "" {
		return p, invalid("no rootfs: the request names none and the backend has no default")
	}
	if !filepath.IsAbs(p.rootfs) {
		return p, invalid("rootfs %q is not an absolute host directory (image references are not supported by the %s backend)", p.rootfs, Name)
	}
	if err := isDir(p.rootfs); err != nil {
		return p, invalid("rootfs: %v", err)
	}
	if !filepath.IsAbs(p.workspace) {
		return p, invalid("workspace %q is not an absolute path", p.workspace)
	}
	if err := isDir(p.workspace); err != nil {
		return p, invalid("workspace: %v", err)
	}
	if p.mount == "" {
		p.mount = DefaultMount
	}
	if !path.IsAbs(p.mount) || path.Clean(p.mount) != p.mount || p.mount == "/" {
		return p, invalid("workspace mount %q is not a clean absolute path below /", p.mount)
	}
	for _, v := range virtualMounts {
		if within(p.mount, v) || within(v, p.mount) {
			return p, invalid("workspace mount %q overlaps %s", p.mount, v)
		}
	}
	if p.cwd == "" {
		p.cwd = p.mount
	}
	if !path.IsAbs(p.cwd) {
		return p, invalid("cwd %q is not absolute", p.cwd)
	}
	for _, a := range req.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return p, invalid("command argument contains NUL")
		}
	}
	hasPath := false
	for _, kv := range req.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			return p, invalid("env entry %q is not NAME=value", kv)
		}
		hasPath = hasPath || name == "PATH"
	}
	p.env = slices.Clone(req.Env)
	if !hasPath {
		p.env = append(p.env, defaultPath)
	}
	p.limits = withDefaultLimits(req.Limits, b.cfg.Limits)
	if p.limits.DiskBytes < minDiskBytes {
		return p, invalid("disk limit %d bytes is below the %d MiB minimum", p.limits.DiskBytes, minDiskBytes>>20)
	}
	view := fsView{rootfs: p.rootfs, mount: p.mount, workspace: p.workspace, virtual: virtualMounts}
	p.lookup = view.lookPath(req.Command[0], p.env, p.cwd)
	return p, nil
}

func isDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// Spawn runs req.Command in a new gVisor sandbox and waits for it.
//
// A non-zero exit is a Result, not an error. A command that does not exist
// in the sandbox's filesystem gives exit 127, and one that is not executable
// exit 126, as a shell would; nothing is started then. When the timeout
// passes or ctx is done, the whole sandbox is killed and Spawn returns the
// partial Result (TimedOut set on a timeout, ExitCode -1, the output so far,
// TraceComplete false) together with an error: one matching
// sandbox.ErrTimeout, or ctx's error. Callers that only check the error can
// therefore never mistake a killed run for a finished one. Other errors mean
// the sandbox could not do its job: an invalid request (matching
// sandbox.ErrInvalidRole or sandbox.ErrInvalidRequest, before anything
// runs), a trace listener that cannot be created (the sandbox is not
// started: tracing fails closed), or runsc itself failing.
func (b *Backend) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	res := sandbox.Result{Backend: Name, ExitCode: -1}
	if err := req.Validate(); err != nil {
		return res, err
	}
	if req.Build != nil {
		return b.spawnBuild(ctx, req)
	}
	p, err := b.plan(&req)
	if err != nil {
		return res, err
	}
	switch p.lookup.state {
	case lookupMissing:
		return notRun(res, 127, fmt.Sprintf("%s: not found\n", req.Command[0])), nil
	case lookupNotExecutable:
		return notRun(res, 126, fmt.Sprintf("%s: permission denied\n", req.Command[0])), nil
	case lookupFound, lookupUnknown:
	case lookupInvalid:
		return res, fmt.Errorf("resolving %q: invalid lookup state", req.Command[0])
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("starting runsc sandbox: %w", ctxErr(ctx))
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

	// What the sandbox writes to its rootfs and workspace lands in a file
	// on the spawn's own disk, bounded by Limits.DiskBytes.
	upper := filepath.Join(sp.dir, "d")
	if err := os.Mkdir(upper, 0o700); err != nil {
		return res, fmt.Errorf("creating the spawn's disk directory: %w", err)
	}
	if _, err := sp.mountDisk(ctx, upper, p.limits.DiskBytes); err != nil {
		return res, err
	}

	var tr *tracer
	if req.CaptureTrace {
		tr, err = startTracer(filepath.Join(sp.dir, "trace"), req.KeepTraceEnv, newReporter(ctx).observe)
		if err != nil {
			return res, fmt.Errorf("starting trace listener (no sandbox started): %w", err)
		}
		defer tr.close()
	}

	c := container{
		spec: specInput{
			args:      req.Command,
			env:       p.env,
			cwd:       p.cwd,
			rootfs:    p.rootfs,
			hostname:  b.cfg.Hostname,
			workspace: p.workspace,
			mount:     p.mount,
			writable:  req.Workspace.Writable,
			network:   req.AllowNetwork,
			platform:  b.cfg.Platform,
			limits:    p.limits,
			enforce:   b.enforce,
		},
		timeout: req.Timeout,
		output:  p.limits.OutputBytes,
		upper:   upper,
	}
	if tr != nil {
		c.podInit = tr.config
		c.witness = filepath.Join(upper, "w")
	}
	stopErr, err := b.runContainer(ctx, sp, c, &res)
	if err != nil {
		return res, err
	}

	if tr != nil {
		coll := tr.finish()
		res.Trace, res.TraceComplete = accountInit(coll, req, p)
		res.TraceGaps = collectionGaps(coll)
		if !res.TraceComplete && len(res.TraceGaps) == 0 {
			res.TraceGaps = append(res.TraceGaps, "the container's start event is missing or does not match its command")
		}
		res.TraceGaps = append(res.TraceGaps, readWitness(c.witness).compare(res.Trace, []string{id})...)
		view := fsView{rootfs: p.rootfs, mount: p.mount, workspace: p.workspace, virtual: virtualMounts}
		inferErrnos(res.Trace, func(string) (fsView, bool) { return view, true })
		if stopErr != nil {
			res.TraceGaps = append(res.TraceGaps, "the sandbox was stopped before it exited")
		}
		res.TraceComplete = res.TraceComplete && len(res.TraceGaps) == 0
	}
	if stopErr != nil {
		return res, stopErr
	}
	if msg := runscFailure(sp.log()); msg != "" {
		res.ExitCode = -1
		res.TraceComplete = false
		return res, fmt.Errorf("running runsc sandbox %s: %s", id, msg)
	}
	return res, nil
}

// container is one runsc run in a prepared spawn directory: the spec to
// write, how long it may run, how much output to keep, and the
// pod-init-config of the trace it reports to ("" without a trace).
type container struct {
	spec    specInput
	timeout time.Duration
	output  int64
	podInit string
	// upper is the directory, on a disk of the spawn, that holds the
	// file backing the overlays' upper layer: what the sandbox writes to
	// its rootfs and workspace. "" keeps writes in sandbox memory.
	upper string
	// witness is the directory, on a disk of the spawn, of the exec
	// witness logs (see witness.go); "" runs without the witness.
	witness string
	// ready, when it closes, stops the container as done: a boot that has
	// settled (ready.go). Nil never stops it.
	ready <-chan struct{}
}

// runContainer writes c's spec to the spawn's bundle, runs it with runsc
// as container sp.id, and waits for it, or kills it when c.timeout passes
// or ctx is done, or c.ready closes. It fills res's ExitCode (-1 when killed), Stdout, Stderr,
// TimedOut, Started and Duration. stopErr reports a kill (matching
// sandbox.ErrTimeout or ctx's error); err reports that runsc could not be
// started at all. A failure of runsc itself is left to the caller, in
// runscFailure(sp.log()).
func (b *Backend) runContainer(ctx context.Context, sp *spawnDir, c container, res *sandbox.Result) (stopErr, err error) {
	id := sp.id
	if !b.cfg.NoCgroups {
		c.spec.cgroupPath = "/" + id
	}
	if err := writeSpec(sp.bundle(), buildSpec(c.spec)); err != nil {
		return nil, err
	}
	args := b.globalFlags(sp.root(), c.spec.network || c.spec.netns != "", c.upper)
	args = append(args, "--log="+sp.log(), "--log-format=json")
	if c.podInit != "" {
		args = append(args, "--pod-init-config="+c.podInit)
	}
	if c.witness != "" && !b.noWitness {
		if err := os.MkdirAll(c.witness, 0o700); err != nil {
			return nil, fmt.Errorf("creating the exec witness directory: %w", err)
		}
		args = append(args, witnessFlags(c.witness)...)
	}
	args = append(args, "run", "--bundle", sp.bundle(), id)

	stdout := newBoundedBuffer(c.output)
	stderr := newBoundedBuffer(c.output)
	cmd := exec.Command(b.cfg.Runsc, args...)
	cmd.Env = runscEnv
	cmd.Dir = sp.bundle()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	intoCgroup(cmd, sp.cgroup)
	cmd.WaitDelay = b.cfg.KillGrace

	res.Started = time.Now()
	// runsc run is attached: its sandbox and gofer die with it, and it
	// dies with this process (see lifetime.go).
	p, err := startPinned(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting runsc: %w", err)
	}
	// Wait's error adds nothing: the exit status is in cmd.ProcessState,
	// which Wait always sets once the process was reaped.
	waitc := p.done
	var timeout <-chan time.Time
	if c.timeout > 0 {
		t := time.NewTimer(c.timeout)
		defer t.Stop()
		timeout = t.C
	}
	settled := false
	select {
	case <-waitc:
	case <-c.ready:
		// Done, not stopped: the caller knows why.
		settled = true
		b.kill(sp, id, cmd, waitc)
	case <-timeout:
		res.TimedOut = true
		stopErr = fmt.Errorf("running sandbox %s: %w after %v", id, sandbox.ErrTimeout, c.timeout)
		b.kill(sp, id, cmd, waitc)
	case <-ctx.Done():
		stopErr = fmt.Errorf("running sandbox %s: %w", id, ctxErr(ctx))
		b.kill(sp, id, cmd, waitc)
	}
	res.Duration = time.Since(res.Started)
	res.ExitCode = -1
	if stopErr == nil && !settled && cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	res.Stdout, res.StdoutTruncated = stdout.result()
	res.Stderr, res.StderrTruncated = stderr.result()
	return stopErr, nil
}

// ctxErr is ctx's error, with its cause when the cause says more, so that
// both match with errors.Is.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// notRun is the Result of a command that does not exist in the sandbox.
// Started stays zero: no sandbox was started.
func notRun(res sandbox.Result, code int, stderr string) sandbox.Result {
	res.ExitCode = code
	res.Stderr = []byte(stderr)
	return res
}

// globalFlags are the runsc flags before the subcommand, shared by run and
// the admin commands (kill, delete, list), which must see the same root.
// upper is the host directory of the overlays' upper layer: "" keeps it in
// sandbox memory.
func (b *Backend) globalFlags(root string, network bool, upper string) []string {
	overlay := "--overlay2=all:memory"
	if upper != "" {
		overlay = "--overlay2=all:dir=" + upper
	}
	args := []string{
		"--root=" + root,
		"--platform=" + b.cfg.Platform,
		// Every mount under an overlay whose upper layer is a file in the
		// spawn's disk (or sandbox memory): the rootfs and the workspace on
		// the host are never written.
		overlay,
		// A fresh empty network namespace for the gofer, instead of one
		// that runsc bind-mounts into --root and never unmounts.
		"--gofer-network-namespace=new",
	}
	if network {
		args = append(args, "--network=host")
	} else {
		args = append(args, "--network=none")
	}
	if b.cfg.NoCgroups {
		args = append(args, "--ignore-cgroups")
	}
	return args
}

// kill stops a running sandbox: runsc kill --all, then, if runsc has not
// exited within the grace period, SIGKILL to its process group. It returns
// once cmd.Wait has returned. The spawn's cleanup then deletes whatever is
// left (see spawnDir.release).
func (b *Backend) kill(sp *spawnDir, id string, cmd *exec.Cmd, waitc <-chan struct{}) {
	sp.killed = true
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	_, _ = b.admin(ctx, sp.root(), "kill", "--all", id, "KILL")
	t := time.NewTimer(b.cfg.KillGrace)
	defer t.Stop()
	select {
	case <-waitc:
		return
	case <-t.C:
	}
	_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	<-waitc
}

// admin runs a runsc command against root and returns its bounded output.
func (b *Backend) admin(ctx context.Context, root string, args ...string) ([]byte, error) {
	full := append(b.globalFlags(root, false, ""), args...)
	cmd := exec.CommandContext(ctx, b.cfg.Runsc, full...)
	cmd.Env = runscEnv
	out := newBoundedBuffer(64 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	o, _ := out.result()
	if err != nil {
		return o, fmt.Errorf("runsc %s: %w: %s", args[0], err, firstLine(o))
	}
	return o, nil
}

// runscFailure returns runsc's own error, if it logged one: with --log and
// --log-format=json, runsc writes each fatal error as a record of level
// "error". The workload cannot write to that file, so its output cannot
// fake a runsc failure, and a workload exit of 128 is not mistaken for one.
func runscFailure(logFile string) string {
	f, err := os.Open(logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec struct {
			Msg   string `json:"msg"`
			Level string `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if rec.Level == "error" || rec.Level == "fatal" {
			return rec.Msg
		}
	}
	return ""
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}

// newID returns a container ID that starts with the backend's state tag.
func (b *Backend) newID() (string, error) {
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("making a container ID: %w", err)
	}
	return b.idPrefix() + hex.EncodeToString(r[:]), nil
}

// idPrefix starts every container ID, spawn directory and cgroup of this
// backend's state directory.
func (b *Backend) idPrefix() string { return "cg-" + b.tag + "-" }

// tracer is a spawn's trace listener and its running Collect.
type tracer struct {
	ln     *seccheck.Listener
	config string
	cancel context.CancelFunc
	done   chan struct{}
	coll   *seccheck.Collection
	err    error
}

// startTracer makes the private directory tdir (0700), listens on a
// socket in it and writes the pod-init-config that makes runsc connect to
// it.
func startTracer(tdir string, keepEnv bool, observe func(trace.Event)) (*tracer, error) {
	if err := os.Mkdir(tdir, 0o700); err != nil {
		return nil, fmt.Errorf("creating trace directory: %w", err)
	}
	sock := filepath.Join(tdir, "s")
	ln, err := seccheck.Listen(sock, seccheck.Options{Limits: seccheck.Limits{KeepEnv: keepEnv}, Observe: observe})
	if err != nil {
		return nil, err
	}
	config := filepath.Join(tdir, "pod-init.json")
	if err := seccheck.WritePodInitConfig(config, sock); err != nil {
		_ = ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tracer{ln: ln, config: config, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		t.coll, t.err = ln.Collect(ctx)
	}()
	return t, nil
}

// finish tells the listener that the sandbox has exited and returns what it
// collected. Collect bounds its own wait (seccheck.DefaultDrainTimeout).
func (t *tracer) finish() *seccheck.Collection {
	t.ln.Finish()
	<-t.done
	if t.err != nil || t.coll == nil {
		return &seccheck.Collection{}
	}
	return t.coll
}

// close stops the listener and removes its socket; it is safe after finish.
func (t *tracer) close() {
	t.cancel()
	_ = t.ln.Close()
	<-t.done
}

// accountInit completes the trace with the container's first process.
// gVisor reports it only as container/start, with the unresolved args of the
// OCI spec and no exec event (ENVIRONMENT.md, blind spot 2). The backend
// knows what it started, so it inserts, right after that start event, a
// KindExec event for the same PID and time with the command's argv, the
// path runsc executes as Execfn and, when the host-side lookup found it, the
// symlink-resolved Binary. The trace is complete only if the collection is,
// and it holds exactly one container start whose args are the command.
func accountInit(coll *seccheck.Collection, req sandbox.SpawnRequest, p plan) ([]trace.Event, bool) {
	ip := initProc{argv: req.Command, lookup: p.lookup, cwd: p.cwd}
	if req.KeepTraceEnv {
		ip.env = p.env
	}
	events, ok := insertInit(coll.Events, ip)
	return events, ok && coll.Complete
}

// initProc is what the backend knows of a container's first process.
type initProc struct {
	// container restricts the search to the events of one container ID;
	// "" takes every event.
	container string
	argv      []string
	lookup    lookup
	cwd       string
	env       []string // kept in the event only when the spawn keeps env
}

// insertInit inserts the exec event of ip's process right after the one
// container start it looks for (see accountInit). ok is false when there is
// no such start, more than one, or one whose args are not ip.argv.
func insertInit(events []trace.Event, ip initProc) ([]trace.Event, bool) {
	start := -1
	for i := range events {
		if events[i].Kind != trace.KindStart || (ip.container != "" && events[i].Container != ip.container) {
			continue
		}
		if start >= 0 {
			return events, false // one spawn, one container
		}
		start = i
	}
	if start < 0 {
		return events, false
	}
	s := events[start]
	ok := sameInitArgv(s.Argv, ip.argv, ip.lookup)
	init := initExec(s, ip.argv, ip.lookup, ip.cwd)
	init.Env = slices.Clone(ip.env)
	out := make([]trace.Event, 0, len(events)+1)
	out = append(out, events[:start+1]...)
	out = append(out, init)
	out = append(out, events[start+1:]...)
	return out, ok
}

// sameInitArgv reports whether the args of a container/start event are
// argv. gVisor reports the args of the spec, except that for a #! script
// the first is the script's resolved path (as the kernel passes it to the
// interpreter), so that one may also be the path the lookup found.
func sameInitArgv(start, argv []string, lk lookup) bool {
	if len(start) != len(argv) || len(argv) == 0 || !slices.Equal(start[1:], argv[1:]) {
		return false
	}
	return start[0] == argv[0] || (start[0] != "" && (start[0] == lk.execfn || start[0] == lk.binary))
}

// initExec is the exec event of the first process of the container whose
// start event is s: same PID, time, cwd and uid, with argv, and the execfn
// and symlink-resolved binary of the host-side lookup (empty when it could
// not tell).
func initExec(s trace.Event, argv []string, lk lookup, cwd string) trace.Event {
	init := trace.Event{
		Kind:      trace.KindExec,
		Time:      s.Time,
		PID:       s.PID,
		PPID:      s.PPID,
		TID:       s.TID,
		Binary:    lk.binary,
		Execfn:    lk.execfn,
		Argv:      slices.Clone(argv),
		Cwd:       s.Cwd,
		UID:       s.UID,
		Comm:      s.Comm,
		Container: s.Container,
		Phase:     s.Phase,
	}
	if init.Cwd == "" {
		init.Cwd = cwd
	}
	return init
}

// spawnDir is one spawn's directory in the state directory: its runsc root,
// bundle, log and trace socket, a lock file that it holds while it lives,
// so that Reap can tell it from a crashed process's leftovers, and the
// spawn's audit ID (sandbox.WithAuditID), so that Reap can name the spawn
// it reaps.
type spawnDir struct {
	b      *Backend
	id     string
	dir    string
	lock   *os.File
	killed bool
	// cgroup is the spawn's tracking cgroup, open; nil on a host without
	// one (see lifetime.go).
	cgroup *os.File
	// unwatch releases the backend's watchdog.
	unwatch func()
	// disk is the spawn's disk, once mounted.
	disk *disk
}

func (s *spawnDir) root() string   { return filepath.Join(s.dir, "root") }
func (s *spawnDir) bundle() string { return filepath.Join(s.dir, "bundle") }
func (s *spawnDir) log() string    { return filepath.Join(s.dir, "runsc.log") }

// auditIDFile holds a spawn's audit ID in its spawn directory.
const auditIDFile = "audit-id"

// createSpawnDir is createAuditedSpawnDir with no audit ID.
func (b *Backend) createSpawnDir(id string) (*spawnDir, error) {
	return b.createAuditedSpawnDir(id, "")
}

// createAuditedSpawnDir makes and locks the directory of spawn id, and
// writes auditID in it (none when it is ""). It holds the state
// directory's lock shared meanwhile, so that Reap (which holds it
// exclusively) never sees a directory before its lock is taken.
func (b *Backend) createAuditedSpawnDir(id, auditID string) (*spawnDir, error) {
	// The watchdog runs before anything of the spawn does.
	unwatch, err := b.holdWatchdog()
	if err != nil {
		return nil, err
	}
	g, err := lockFile(filepath.Join(b.cfg.StateDir, ".lock"), unix.LOCK_SH)
	if err != nil {
		unwatch()
		return nil, err
	}
	defer g.Close() // closing releases the shared lock
	dir := filepath.Join(b.cfg.StateDir, id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		unwatch()
		return nil, fmt.Errorf("creating spawn directory: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, "lock"), unix.LOCK_EX|unix.LOCK_NB)
	if err != nil {
		_ = os.RemoveAll(dir)
		unwatch()
		return nil, err
	}
	sp := &spawnDir{b: b, id: id, dir: dir, lock: lock, unwatch: unwatch}
	if sandbox.ValidAuditID(auditID) {
		if err := os.WriteFile(filepath.Join(dir, auditIDFile), []byte(auditID), 0o600); err != nil {
			sp.release()
			return nil, fmt.Errorf("writing the spawn's audit ID: %w", err)
		}
	}
	if sp.cgroup, err = makeTrackingCgroup(id); err != nil {
		sp.release()
		return nil, err
	}
	for _, d := range []string{sp.root(), sp.bundle()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			sp.release()
			return nil, fmt.Errorf("creating spawn directory: %w", err)
		}
	}
	return sp, nil
}

// release removes everything the spawn left: the container if runsc did not
// delete it (after a kill, or a runsc failure), its cgroups, and the
// directory. It is the same cleanup that Reap applies to a crashed
// process's spawns.
func (s *spawnDir) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*adminTimeout)
	defer cancel()
	if s.cgroup != nil {
		_ = s.cgroup.Close()
	}
	_ = s.b.cleanup(ctx, s.dir, s.id, s.killed)
	s.b.disks.drop(s.disk)
	_ = s.lock.Close()
	s.unwatch()
}

// cleanup deletes the containers left in a spawn directory's runsc root,
// kills and removes the cgroups of id, unmounts anything left below dir and
// removes dir. force runs runsc delete even when the root looks empty.
func (b *Backend) cleanup(ctx context.Context, dir, id string, force bool) error {
	var errs []error
	root := filepath.Join(dir, "root")
	if force || !emptyDir(root) {
		ids := []string{id}
		if out, err := b.admin(ctx, root, "list", "-quiet"); err == nil {
			for _, l := range strings.Fields(string(out)) {
				if l != id {
					ids = append(ids, l)
				}
			}
		}
		for _, c := range ids {
			_, _ = b.admin(ctx, root, "kill", "--all", c, "KILL")
			if _, err := b.admin(ctx, root, "delete", "--force", c); err != nil && !emptyDir(root) && !truncatedState(root, c) {
				errs = append(errs, err)
			}
		}
	}
	for _, cg := range cgroupLeaves(id) {
		if err := removeCgroup(ctx, cg); err != nil {
			errs = append(errs, err)
		}
	}
	// A build spawn's step sandboxes live in the runsc root of its private
	// buildah directory (see buildah), not in root.
	if err := b.cleanBuild(ctx, filepath.Join(dir, "b", "r")); err != nil {
		errs = append(errs, err)
	}
	// A build's disk is mounted at <dir>/b: detach it before removing the
	// directory, rather than emptying it file by file first. Its blocks go
	// with the image file.
	unmountBelow(dir)
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing spawn directory: %w", err))
	}
	return errors.Join(errs...)
}

// truncatedState reports whether container c's state file in the runsc
// root is not whole JSON: runsc was killed while it wrote the file (a
// SIGKILL of gate-control as a sandbox starts), so no runsc command can
// load the container, and delete fails with "unexpected end of JSON
// input". Nothing runs from such a file: the container's processes are
// in its cgroups, which cleanup kills and removes next, and the file goes
// with the spawn directory.
func truncatedState(root, c string) bool {
	files, _ := filepath.Glob(filepath.Join(root, c+"_sandbox:*.state"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && !json.Valid(b) {
			return true
		}
	}
	return false
}

// emptyDir reports whether dir has no entries (or does not exist).
func emptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && len(entries) == 0
}

// unmountBelow detaches every mount at or below dir, deepest first: a
// crashed runsc can leave its null network namespace bind-mounted in its
// root.
func unmountBelow(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
			if isDiskMount(dir, mp, f) {
				discardDisk(mp, f[2])
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, mp := range points {
		_ = unix.Unmount(mp, unix.MNT_DETACH)
	}
}

// isDiskMount reports whether the mountinfo record f, of mount point mp,
// is a spawn disk of the spawn directory dir: the root of an ext4
// filesystem on a loop device, mounted at <dir>/b (a build's) or <dir>/d
// (a command's).
func isDiskMount(dir, mp string, f []string) bool {
	if mp != filepath.Join(dir, "b") && mp != filepath.Join(dir, "d") || f[3] != "/" {
		return false
	}
	sep := slices.Index(f, "-")
	return sep > 0 && sep+2 < len(f) && f[sep+1] == "ext4" && strings.HasPrefix(f[sep+2], "/dev/loop")
}

// fsIocShutdown is FS_IOC_SHUTDOWN, _IOR('X', 125, __u32).
const fsIocShutdown = 0x8004587d

// discardDisk shuts down a spawn disk's filesystem before it is detached,
// with FS_SHUTDOWN_FLAGS_NOLOGFLUSH: its dirty pages (hundreds of MiB
// after a build with vfs) are dropped instead of being written back to an
// image file that is deleted right after; without it the unmount of the
// last reference writes them all, about 0.5 s here. dev is the mount's
// major:minor from mountinfo: the ioctl is made only on the root directory
// of that very device, never on the filesystem below it.
func discardDisk(mp, dev string) {
	fd, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Ino != 2 ||
		fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)) != dev {
		return
	}
	var parent unix.Stat_t
	if unix.Stat(filepath.Dir(mp), &parent) != nil || parent.Dev == st.Dev {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, fsIocShutdown, unix.FS_SHUTDOWN_FLAGS_NOLOGFLUSH)
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a
// mountinfo field.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// lockFile opens (creating) file and flocks it with how. Closing the file
// releases the lock.
func lockFile(file string, how int) (*os.File, error) {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", file, err)
	}
	return f, nil
}
