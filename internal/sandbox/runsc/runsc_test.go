package runsc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/internal/trace/seccheck"
)

// stateDir returns a short private state directory: the trace socket path
// inside it must fit a sockaddr_un, which t.TempDir's long names may not.
func stateDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cgrs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing state directory: %v", err)
		}
	})
	return dir
}

// testStepHookArgs run this test binary as the step hook.
var testStepHookArgs = []string{"gate-control", "step-hook"}

// newBackend makes a Backend for the test, or skips it when runsc cannot
// run here. On the CI machines (root, scripts/setup.sh) it never skips.
func newBackend(t testing.TB, cfg Config) *Backend {
	t.Helper()
	if cfg.StateDir == "" {
		cfg.StateDir = stateDir(t)
	}
	if cfg.StepHook == nil {
		// As gate-control does: this binary is the hook (TestMain). A
		// test passes an empty, non-nil StepHook for builds without it.
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cfg.StepHook = append([]string{exe}, testStepHookArgs...)
	}
	if cfg.Shim == "" {
		// As gate-control does: this binary is the runtime shim too
		// (TestMain).
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Shim = exe
	}
	b, err := New(cfg)
	if ue, ok := errors.AsType[*sandbox.UnsupportedError](err); ok {
		t.Skipf("gVisor backend unsupported here: %v", ue)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoLeftovers(t, b) })
	return b
}

// checkNoLeftovers fails the test if a spawn left a directory, a cgroup or
// a mount behind.
func checkNoLeftovers(t testing.TB, b *Backend) {
	t.Helper()
	entries, err := os.ReadDir(b.cfg.StateDir)
	if err != nil {
		t.Error(err)
		return
	}
	for _, e := range entries {
		if e.Name() != ".lock" {
			t.Errorf("left in the state directory: %s", e.Name())
		}
	}
	if names := cgroupNames(b.idPrefix()); len(names) > 0 {
		t.Errorf("cgroups left: %v", names)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	if strings.Contains(string(mi), b.cfg.StateDir) {
		t.Errorf("mounts left below %s", b.cfg.StateDir)
	}
	if procs := processesUsing(b.cfg.StateDir); len(procs) > 0 {
		t.Errorf("processes left that use %s: %q", b.cfg.StateDir, procs)
	}
}

// processesUsing lists the command lines that mention dir: runsc sandboxes
// and gofers, buildah, left running.
func processesUsing(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, dir+"/") {
			out = append(out, cmd)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	sandboxtest.Run(t, func(t *testing.T) sandbox.Client {
		return newBackend(t, Config{})
	}, sandboxtest.Env{Rootfs: rootfs})
}

func TestConformancePtrace(t *testing.T) {
	if testing.Short() {
		t.Skip("the ptrace platform runs in the full suite only")
	}
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Platform: PlatformPtrace, Rootfs: rootfs})
	res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
		Role:         sandbox.RoleProbe,
		Workspace:    sandbox.Workspace{Dir: t.TempDir()},
		Command:      []string{"sh", "-c", "echo ptrace; sh -c true"},
		CaptureTrace: true,
	})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "ptrace\n" || !res.TraceComplete {
		t.Fatalf("ptrace platform: err %v, exit %d, stdout %q, stderr %q, trace complete %v", err, res.ExitCode, res.Stdout, res.Stderr, res.TraceComplete)
	}
}

func TestNewUnsupported(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Runsc: "/nonexistent/runsc", StateDir: "/tmp/cg-unused"})
	ue, ok := errors.AsType[*sandbox.UnsupportedError](err)
	if !ok || !errors.Is(err, sandbox.ErrNotSupported) {
		t.Fatalf("New with a missing runsc: %v, want an UnsupportedError", err)
	}
	if ue.Backend != Name || !strings.Contains(ue.Reason, "scripts/setup.sh") {
		t.Errorf("UnsupportedError %+v should name the backend and say to run scripts/setup.sh", ue)
	}
	notExec := filepath.Join(t.TempDir(), "runsc")
	if err := os.WriteFile(notExec, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if _, err := New(Config{Runsc: notExec, StateDir: "/tmp/cg-unused"}); !errors.Is(err, sandbox.ErrNotSupported) {
			t.Errorf("New with a runsc that fails: %v, want ErrNotSupported", err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"minimal", Config{StateDir: "/run/codegenie/runsc"}, true},
		{"ptrace", Config{StateDir: "/tmp/x", Platform: PlatformPtrace}, true},
		{"no state dir", Config{}, false},
		{"relative state dir", Config{StateDir: "state"}, false},
		{"unclean state dir", Config{StateDir: "/tmp/x/../y"}, false},
		{"long state dir", Config{StateDir: "/" + strings.Repeat("x", 70)}, false},
		{"kvm platform", Config{StateDir: "/tmp/x", Platform: "kvm"}, false},
		{"relative runsc", Config{StateDir: "/tmp/x", Runsc: "runsc"}, false},
		{"relative rootfs", Config{StateDir: "/tmp/x", Rootfs: "rootfs"}, false},
		{"relative buildah", Config{StateDir: "/tmp/x", Buildah: "buildah"}, false},
		{"negative limit", Config{StateDir: "/tmp/x", Limits: sandbox.Limits{PIDs: -1}}, false},
		{"negative disk", Config{StateDir: "/tmp/x", Limits: sandbox.Limits{DiskBytes: -1}}, false},
		{"negative grace", Config{StateDir: "/tmp/x", KillGrace: -time.Second}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Setenv(EnvRunsc, "/opt/runsc")
	c := Config{StateDir: "/tmp/x"}.withDefaults()
	if c.Runsc != "/opt/runsc" || c.Platform != PlatformSystrap {
		t.Errorf("defaults: runsc %q, platform %q", c.Runsc, c.Platform)
	}
	want := sandbox.Limits{MemoryBytes: DefaultMemoryBytes, CPUs: DefaultCPUs, PIDs: DefaultPIDs, OutputBytes: DefaultOutputBytes, DiskBytes: DefaultDiskBytes}
	if diff := cmp.Diff(want, c.Limits); diff != "" {
		t.Errorf("default limits (-want +got):\n%s", diff)
	}
	t.Setenv(EnvRunsc, "")
	if c := (Config{StateDir: "/tmp/x"}).withDefaults(); c.Runsc != DefaultRunscPath {
		t.Errorf("default runsc %q, want %q", c.Runsc, DefaultRunscPath)
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws := t.TempDir()
	mk := func(dir, name string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	mk(root, "usr/bin/busybox", 0o755)
	mk(root, "usr/bin/data", 0o644)
	link("usr/bin", "bin")                // relative, like merged /usr
	link("busybox", "usr/bin/sh")         // relative applet link
	link("/usr/bin/busybox", "usr/bin/a") // absolute: resolved in the rootfs
	link("../../../../etc", "usr/bin/esc")
	link("loop2", "usr/bin/loop1")
	link("loop1", "usr/bin/loop2")
	mk(ws, "run.sh", 0o755)
	v := fsView{rootfs: root, mount: "/workspace", workspace: ws, virtual: virtualMounts}
	env := []string{"PATH=/usr/local/bin:/bin"}
	for _, tc := range []struct {
		argv0, cwd string
		want       lookup
	}{
		{"sh", "/", lookup{state: lookupFound, execfn: "/bin/sh", binary: "/usr/bin/busybox"}},
		{"/bin/sh", "/", lookup{state: lookupFound, execfn: "/bin/sh", binary: "/usr/bin/busybox"}},
		{"a", "/", lookup{state: lookupFound, execfn: "/bin/a", binary: "/usr/bin/busybox"}},
		{"./run.sh", "/workspace", lookup{state: lookupFound, execfn: "/workspace/run.sh", binary: "/workspace/run.sh"}},
		{"/workspace/../bin/sh", "/", lookup{state: lookupFound, execfn: "/bin/sh", binary: "/usr/bin/busybox"}},
		{"nope", "/", lookup{state: lookupMissing, execfn: "nope"}},
		{"/bin/nope", "/", lookup{state: lookupMissing, execfn: "/bin/nope"}},
		{"data", "/", lookup{state: lookupNotExecutable, execfn: "/bin/data"}},
		{"/bin", "/", lookup{state: lookupNotExecutable, execfn: "/bin"}},
		{"/tmp/x", "/", lookup{state: lookupUnknown, execfn: "/tmp/x"}},
		{"/bin/esc/passwd", "/", lookup{state: lookupMissing, execfn: "/bin/esc/passwd"}},
		{"loop1", "/", lookup{state: lookupUnknown, execfn: "/bin/loop1"}},
	} {
		got := v.lookPath(tc.argv0, env, tc.cwd)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(lookup{})); diff != "" {
			t.Errorf("lookPath(%q) (-want +got):\n%s", tc.argv0, diff)
		}
	}
}

func TestStartTracerFailsClosed(t *testing.T) {
	t.Parallel()
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	if tr, err := startTracer(long, false, nil); err == nil {
		tr.close()
		t.Fatal("startTracer with a socket path past sockaddr_un succeeded")
	}
}

func TestCtxErrKeepsCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("client went away")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cause)
	err := ctxErr(ctx)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("ctxErr = %v, want both context.Canceled and the cause", err)
	}
}

func TestBoundedBuffer(t *testing.T) {
	t.Parallel()
	b := newBoundedBuffer(5)
	for _, s := range []string{"ab", "cd", "efg", "h"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	got, trunc := b.result()
	if string(got) != "abcde" || !trunc {
		t.Errorf("result = %q, %v; want \"abcde\", true", got, trunc)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	t.Parallel()
	if got := unescapeMountinfo(`/tmp/a\040b\\c\01`); got != `/tmp/a b\\c\01` {
		t.Errorf("unescapeMountinfo = %q", got)
	}
}

// TestLimits measures the limits the backend says it enforces.
func TestLimits(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	e := b.Enforcement()
	t.Logf("enforcement here: %+v", e)
	run := func(t *testing.T, limits sandbox.Limits, script string) sandbox.Result {
		t.Helper()
		res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
			Role:      sandbox.RoleGate,
			Workspace: sandbox.Workspace{Dir: t.TempDir()},
			Command:   []string{"sh", "-c", script},
			Limits:    limits,
			Timeout:   time.Minute,
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		return res
	}
	t.Run("Memory", func(t *testing.T) {
		if !e.Memory {
			t.Skipf("memory limit not enforced here: %s", e.Reason)
		}
		// /tmp is sandbox memory: 200 MiB in it cannot fit in 64 MiB.
		res := run(t, sandbox.Limits{MemoryBytes: 64 << 20}, "head -1 /proc/meminfo; head -c 209715200 /dev/zero > /tmp/fill; echo survived")
		if res.ExitCode != 137 || strings.Contains(string(res.Stdout), "survived") {
			t.Errorf("200 MiB in a 64 MiB sandbox: exit %d, stdout %q; want 137 (OOM kill)", res.ExitCode, res.Stdout)
		}
		if !strings.Contains(string(res.Stdout), "65536 kB") {
			t.Errorf("guest MemTotal is not the limit: %q", res.Stdout)
		}
		res = run(t, sandbox.Limits{MemoryBytes: 256 << 20}, "head -c 52428800 /dev/zero > /tmp/fill; echo survived")
		if res.ExitCode != 0 || string(res.Stdout) != "survived\n" {
			t.Errorf("50 MiB in a 256 MiB sandbox: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	t.Run("PIDs", func(t *testing.T) {
		if !e.PIDs {
			t.Skipf("pids limit not enforced here: %s", e.Reason)
		}
		const script = `i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); echo $i; done`
		res := run(t, sandbox.Limits{PIDs: 20}, script)
		n := lastNumber(string(res.Stdout))
		if res.ExitCode == 0 || n < 20 || n >= 100 {
			t.Errorf("PIDs 20: started %d background processes, exit %d; want at least 20 and well under 300, then a failed fork", n, res.ExitCode)
		}
		t.Logf("PIDs 20: the guest started %d processes before fork failed (%q)", n, firstLine(res.Stderr))
	})
	t.Run("HostCgroup", func(t *testing.T) {
		if !e.CPU || !e.Memory || !e.PIDs {
			t.Skipf("cgroup limits not all enforced here: %s", e.Reason)
		}
		// Read what runsc configured on the host while the sandbox runs:
		// its command sleeps until the test has read it and cancels.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := b.Spawn(ctx, sandbox.SpawnRequest{
				Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: t.TempDir()},
				Command: []string{"sleep", "600"},
				Limits:  sandbox.Limits{CPUs: 0.5, MemoryBytes: 300 << 20, PIDs: 40},
			})
			done <- err
		}()
		var id string
		waitFor(t, "the sandbox's cgroups, with its pids limit", func() bool {
			names := cgroupNames(b.idPrefix())
			if len(names) == 1 {
				id = names[0]
			}
			return id != "" && len(cgroupLeaves(id)) > 0 && readCgroup(id, "pids", "pids.max") != ""
		})
		got := map[string]string{
			"cpu":    readCgroup(id, "cpu", "cpu.cfs_quota_us") + "/" + readCgroup(id, "cpu", "cpu.cfs_period_us"),
			"memory": readCgroup(id, "memory", "memory.limit_in_bytes"),
			"pids":   readCgroup(id, "pids", "pids.max"),
		}
		want := map[string]string{
			"cpu":    "50000/100000",
			"memory": strconv.Itoa(300 << 20),
			"pids":   strconv.FormatInt(hostPIDs(40, PlatformSystrap), 10),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("host cgroup of the sandbox (-want +got):\n%s", diff)
		}
		// It ran under the limits until cancelled: it did not fail first.
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("sleep 600 under the limits, cancelled once read: %v, want context.Canceled", err)
		}
	})
}

// readCgroup reads a cgroup v1 file of container id, or "" if absent.
func readCgroup(id, controller, file string) string {
	b, err := os.ReadFile(filepath.Join(cgroupRoot, controller, id, file))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func lastNumber(s string) int {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[len(f)-1])
	return n
}

// TestSpawnLeavesNothing checks the cleanup of every kind of end: a normal
// exit, a timeout, a command not found, and a runsc failure.
func TestSpawnLeavesNothing(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	req := func(argv ...string) sandbox.SpawnRequest {
		return sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()}, Command: argv, CaptureTrace: true}
	}
	if res, err := b.Spawn(t.Context(), req("true")); err != nil || res.ExitCode != 0 || !res.TraceComplete {
		t.Errorf("true: %v, exit %d, complete %v", err, res.ExitCode, res.TraceComplete)
	}
	// A short timeout is safe: the sleep outlasts it whatever the machine's
	// speed, and whether it fires in the boot or the sleep, the spawn must
	// leave nothing.
	r := req("sleep", "30")
	r.Timeout = 500 * time.Millisecond
	if _, err := b.Spawn(t.Context(), r); !errors.Is(err, sandbox.ErrTimeout) {
		t.Errorf("sleep: %v, want ErrTimeout", err)
	}
	// /tmp exists only inside: the lookup leaves it to runsc, which fails.
	res, err := b.Spawn(t.Context(), req("/tmp/nothing"))
	if err == nil || errors.Is(err, sandbox.ErrInvalidRequest) {
		t.Errorf("/tmp/nothing: err %v, exit %d; want a runsc failure", err, res.ExitCode)
	}
	if res.TraceComplete {
		t.Error("a runsc failure reports a complete trace")
	}
	t.Logf("runsc failure: %v", err)
}

// TestTraceKeepEnv checks that exec env reaches the trace only when asked,
// for the first process too.
func TestTraceKeepEnv(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	for _, keep := range []bool{false, true} {
		res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
			Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()},
			Command: []string{"sh", "-c", "sh -c true; true"}, Env: []string{"SECRET=s3cr3t", "PATH=/bin"},
			CaptureTrace: true, KeepTraceEnv: keep,
		})
		if err != nil || !res.TraceComplete {
			t.Fatalf("keep %v: %v, complete %v", keep, err, res.TraceComplete)
		}
		execs := 0
		for _, e := range res.Trace {
			if e.Kind != trace.KindExec {
				continue
			}
			execs++
			if has := slices.Contains(e.Env, "SECRET=s3cr3t"); has != keep {
				t.Errorf("keep %v: exec of %q has env %q", keep, e.Argv, e.Env)
			}
		}
		if execs != 2 {
			t.Errorf("keep %v: %d exec events, want 2 (the first process and sh -c true)", keep, execs)
		}
	}
}

// TestReap simulates a crashed gate-control: a sandbox started in a spawn
// directory whose lock nobody holds. Reap must kill and delete it, remove
// its cgroups and its directory, and leave a live spawn alone.
func TestReap(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})

	// The orphan: set up as Spawn would, then started by hand and left.
	id, sp := newSpawnDir(t, b)
	spec := buildSpec(specInput{
		args: []string{"sleep", "600"}, env: []string{defaultPath}, cwd: "/", rootfs: rootfs, hostname: "orphan",
		workspace: t.TempDir(), mount: DefaultMount, platform: b.cfg.Platform, cgroupPath: "/" + id, limits: b.cfg.Limits, enforce: b.enforce,
	})
	if b.cfg.NoCgroups {
		spec = buildSpec(specInput{args: []string{"sleep", "600"}, env: []string{defaultPath}, cwd: "/", rootfs: rootfs, hostname: "orphan", workspace: t.TempDir(), mount: DefaultMount})
	}
	if err := writeSpec(sp.bundle(), spec); err != nil {
		t.Fatal(err)
	}
	args := append(b.globalFlags(sp.root(), false, ""), "run", "--detach", "--bundle", sp.bundle(), id)
	// The detached sandbox keeps its stdio: give it a file, not a pipe that
	// would never reach end of file.
	out, err := os.Create(filepath.Join(t.TempDir(), "orphan.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(b.cfg.Runsc, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		o, _ := os.ReadFile(out.Name())
		t.Fatalf("starting the orphan: %v\n%s", err, o)
	}
	sp.lock.Close() // the crash: the lock goes with the process
	pid := sandboxPID(t, b, sp.root(), id)

	// A live spawn, running while Reap runs: its command sleeps until the
	// test cancels it, after Reap.
	liveCtx, cancelLive := context.WithCancel(t.Context())
	defer cancelLive()
	done := make(chan error, 1)
	go func() {
		_, err := b.Spawn(liveCtx, sandbox.SpawnRequest{
			Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: t.TempDir()},
			Command: []string{"sleep", "600"},
		})
		done <- err
	}()
	var live string
	waitFor(t, "the live spawn's sleep to run in its sandbox", func() bool {
		for _, d := range liveDirs(t, b) {
			if d != id && guestRuns(t, b, filepath.Join(b.cfg.StateDir, d, "root"), d, "sleep") {
				live = d
				return true
			}
		}
		return false
	})

	reaped, err := b.Reap(t.Context())
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if diff := cmp.Diff([]string{id}, reaped); diff != "" {
		t.Errorf("reaped (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(sp.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan directory still there: %v", err)
	}
	if len(cgroupLeaves(id)) > 0 {
		t.Errorf("orphan cgroups still there: %v", cgroupLeaves(id))
	}
	waitFor(t, "the orphan's sandbox process to exit", func() bool { return syscall.Kill(pid, 0) != nil })
	// The live spawn still runs, until the test cancels it.
	select {
	case err := <-done:
		t.Errorf("the live spawn ended during Reap: %v", err)
	default:
		if !guestRuns(t, b, filepath.Join(b.cfg.StateDir, live, "root"), live, "sleep") {
			t.Error("the live spawn's sleep stopped running during Reap")
		}
		cancelLive()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("the live spawn, cancelled after Reap: %v, want context.Canceled", err)
		}
	}
	if reaped, err := b.Reap(t.Context()); err != nil || len(reaped) != 0 {
		t.Errorf("second Reap: %v, %v; want nothing", reaped, err)
	}
}

// TestReapTruncatedState: a SIGKILL of the owner while runsc writes a
// container's state file leaves that file empty or cut short, and runsc
// delete then fails on it ("unexpected end of JSON input"). Reap removes
// the spawn without an error: no runsc command can act on the container,
// its processes go with its cgroups, and the file with the directory.
// (Found by TestKill9OwnerLeavesNothing on a fresh machine.)
func TestReapTruncatedState(t *testing.T) {
	b := newBackend(t, Config{Rootfs: sandboxtest.BusyboxRootfs(t)})
	for _, body := range []string{"", `{"id":"cut`} {
		id, sp := newSpawnDir(t, b)
		state := filepath.Join(sp.root(), id+"_sandbox:"+id+".state")
		if err := os.MkdirAll(sp.root(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(state, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := b.admin(t.Context(), sp.root(), "delete", "--force", id); err == nil {
			t.Fatalf("runsc delete of a container whose state file holds %q succeeded; this test no longer covers the case", body)
		}
		sp.lock.Close() // the crash
		reaped, err := b.Reap(t.Context())
		if err != nil {
			t.Errorf("state file %q: Reap: %v", body, err)
		}
		if diff := cmp.Diff([]string{id}, reaped); diff != "" {
			t.Errorf("state file %q: reaped (-want +got):\n%s", body, diff)
		}
		if _, err := os.Stat(sp.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state file %q: spawn directory still there: %v", body, err)
		}
	}
}

// newSpawnDir sets up a spawn directory as Spawn does, with a new ID.
func newSpawnDir(t *testing.T, b *Backend) (string, *spawnDir) {
	t.Helper()
	id, err := b.newID()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := b.createSpawnDir(id)
	if err != nil {
		t.Fatal(err)
	}
	return id, sp
}

func liveDirs(t *testing.T, b *Backend) []string {
	entries, err := os.ReadDir(b.cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), b.idPrefix()) {
			ids = append(ids, e.Name())
		}
	}
	return ids
}

// sandboxPID returns the host PID of the sandbox process of container id.
func sandboxPID(t *testing.T, b *Backend, root, id string) int {
	t.Helper()
	out, err := b.admin(t.Context(), root, "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("runsc list: %q", line)
			}
			if f[2] != "running" {
				t.Fatalf("orphan is %s, want running", f[2])
			}
			return pid
		}
	}
	t.Fatalf("orphan %s not in runsc list:\n%s", id, out)
	return 0
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

// waitFor waits until cond holds, and fails the test, naming what it
// waited for, if it does not within waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// guestRuns reports whether container id in runsc root runs a process
// whose command is one of names, as "runsc ps" lists it: its sandbox has
// booted all the way and started that process.
func guestRuns(t *testing.T, b *Backend, root, id string, names ...string) bool {
	t.Helper()
	out, err := b.admin(t.Context(), root, "ps", id)
	if err != nil {
		return false // not created yet, or gone
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && slices.Contains(names, f[len(f)-1]) {
			return true
		}
	}
	return false
}

func TestAccountInit(t *testing.T) {
	t.Parallel()
	p := plan{cwd: "/w", lookup: lookup{state: lookupFound, execfn: "/bin/sh", binary: "/bin/busybox"}}
	req := sandbox.SpawnRequest{Command: []string{"sh"}}
	start := trace.Event{Kind: trace.KindStart, PID: 1, Argv: []string{"sh"}, Cwd: "/w"}
	exit := trace.Event{Kind: trace.KindExit, PID: 1, TID: 1}
	for _, tc := range []struct {
		name     string
		events   []trace.Event
		complete bool
		want     int
	}{
		{"no start", []trace.Event{exit}, false, 1},
		{"two starts", []trace.Event{start, start, exit}, false, 3},
		{"other argv", []trace.Event{{Kind: trace.KindStart, PID: 1, Argv: []string{"sh", "-x"}}, exit}, false, 3},
		{"one start", []trace.Event{start, exit}, true, 3},
	} {
		got, complete := accountInit(&seccheck.Collection{Events: tc.events, Complete: true}, req, p)
		if complete != tc.complete || len(got) != tc.want {
			t.Errorf("%s: complete %v, %d events; want %v, %d", tc.name, complete, len(got), tc.complete, tc.want)
		}
	}
	got, _ := accountInit(&seccheck.Collection{Events: []trace.Event{start, exit}, Complete: true}, req, p)
	want := trace.Event{Kind: trace.KindExec, PID: 1, Binary: "/bin/busybox", Execfn: "/bin/sh", Argv: []string{"sh"}, Cwd: "/w"}
	if diff := cmp.Diff(want, got[1]); diff != "" {
		t.Errorf("first process's exec event (-want +got):\n%s", diff)
	}
	if _, complete := accountInit(&seccheck.Collection{Events: []trace.Event{start, exit}}, req, p); complete {
		t.Error("an incomplete collection became complete")
	}
}

// TestTraceWitness: a burst of execs ending in a fast exit. The seccheck
// stream and runsc's strace witness agree on every attempt, the trace is
// complete, and the failed attempt has its errno.
func TestTraceWitness(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
		Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()},
		Command:      []string{"sh", "-c", "/bin/nothere 2>/dev/null; i=0; while [ $i -lt 50 ]; do /bin/true; i=$((i+1)); done"},
		CaptureTrace: true,
	})
	if err != nil || !res.TraceComplete {
		t.Fatalf("%v, complete %v, gaps %q", err, res.TraceComplete, res.TraceGaps)
	}
	attempts, errnos := 0, map[string]string{}
	for _, e := range res.Trace {
		if e.Kind == trace.KindExecAttempt {
			attempts++
			errnos[e.Execfn] = e.Errno
		}
	}
	if attempts != 51 {
		t.Errorf("%d exec attempts, want 51", attempts)
	}
	if diff := cmp.Diff(map[string]string{"/bin/nothere": "ENOENT", "/bin/true": ""}, errnos); diff != "" {
		t.Errorf("errnos (-want +got):\n%s", diff)
	}
}

// TestTraceShellsByContent (issue 22, item 6): the sentry sends the digest
// of what each exec ran, which names a copy of the image's busybox in the
// sandbox's /tmp (the host cannot read it), and a login shell ("-sh") is a
// shell.
func TestTraceShellsByContent(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	res, err := b.Spawn(t.Context(), sandbox.SpawnRequest{
		Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()},
		Command:      []string{"sh", "-c", "cp /bin/busybox /tmp/bb; (exec -a busybox /tmp/bb true); exec -a -sh /bin/busybox -c true"},
		CaptureTrace: true,
	})
	if err != nil || !res.TraceComplete {
		t.Fatalf("%v, complete %v, gaps %q", err, res.TraceComplete, res.TraceGaps)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	bb, ok := trace.ReadIdentity(root, "/bin/busybox")
	if !ok || bb.Digest == "" {
		t.Fatalf("busybox's identity: %+v, %v", bb, ok)
	}
	shells := trace.NewShells()
	shells.AddRootfs(rootfs)
	shells.Identify(res.Trace, func(string) string { return rootfs })
	var got []string
	for i := range res.Trace {
		e := &res.Trace[i]
		if e.Kind != trace.KindExec || e.Binary == "/bin/cp" || (e.Binary == "/bin/busybox" && e.Argv[0] == "cp") {
			continue
		}
		m, shell, unknown := trace.ClassifyShell(e, nil)
		got = append(got, fmt.Sprintf("%s %q same_as=%s digest_is_busybox=%v: %s %s %v %v", e.Binary, e.Argv, e.SameAs, e.Digest == bb.Digest, m.By, m.Shell, shell, unknown))
	}
	want := []string{
		// The first process: accounted for by the backend, with no digest.
		`/bin/busybox ["sh" "-c" "cp /bin/busybox /tmp/bb; (exec -a busybox /tmp/bb true); exec -a -sh /bin/busybox -c true"] same_as=/bin/busybox digest_is_busybox=false: execfn sh true false`,
		// busybox by the sentry's digest (the host cannot read /tmp/bb),
		// running its true applet: not a shell.
		`/tmp/bb ["busybox" "true"] same_as=/bin/busybox digest_is_busybox=true:   false false`,
		`/bin/busybox ["-sh" "-c" "true"] same_as=/bin/busybox digest_is_busybox=true: argv0 sh true false`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("execs (-want +got):\n%s", diff)
	}
}
