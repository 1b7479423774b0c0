// Package sandboxtest is the conformance suite that every sandbox.Client
// must pass: each backend, and the gate-control client in front of them.
// Run drives a client through roles, exit codes, output capture and limits,
// timeouts, cancellation, the read-only and writable workspace, the absence
// of a network, exec trace capture, and the identical topology of RoleGate
// and RoleProbe (ADR-0003). It runs real sandboxes; it is not a fake.
//
// The subtests run one after another, never in parallel: sandboxes are
// heavy, and the machines have two cores shared with other work. A subtest
// is skipped only when the client answers with a *sandbox.UnsupportedError,
// and the skip message carries its reason.
package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// Env is what the suite needs from the test that runs it.
type Env struct {
	// Rootfs is passed as SpawnRequest.Rootfs: a root filesystem with
	// busybox and the applets of BusyboxRootfs.
	Rootfs string
	// KillBound bounds how long Spawn may take to return after a timeout
	// or a cancellation. Default DefaultKillBound. It only ends a test whose
	// kill did not work: how long the kill took is logged, not judged.
	KillBound time.Duration
}

// DefaultKillBound is Env.KillBound when it is zero: minutes, so that a
// slow machine never fails a kill that works, and well under the ten
// minutes the killed command would otherwise run.
const DefaultKillBound = 3 * time.Minute

// Run runs the conformance suite against the clients that newClient makes.
// newClient is called once per subtest.
func Run(t *testing.T, newClient func(t *testing.T) sandbox.Client, env Env) {
	if env.KillBound == 0 {
		env.KillBound = DefaultKillBound
	}
	s := &suite{newClient: newClient, env: env}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Roles", s.roles},
		{"InvalidRole", s.invalidRole},
		{"InvalidRequest", s.invalidRequest},
		{"ExitCodes", s.exitCodes},
		{"Output", s.output},
		{"OutputLimit", s.outputLimit},
		{"Env", s.envAndCwd},
		{"Timeout", s.timeout},
		{"Cancel", s.cancel},
		{"WorkspaceReadOnly", s.workspaceReadOnly},
		{"WorkspaceWritableCopy", s.workspaceWritable},
		{"NoNetwork", s.noNetwork},
		{"Trace", s.trace},
		{"NoTraceUnlessAsked", s.noTrace},
		{"SameTopologyForRoles", s.topology},
	} {
		t.Run(tc.name, tc.fn)
	}
}

type suite struct {
	newClient func(t *testing.T) sandbox.Client
	env       Env
}

// workspace makes a host directory with one known file.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "data"), []byte("data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// request is a RoleGate request running sh -c script in a fresh workspace.
func (s *suite) request(t *testing.T, script string) sandbox.SpawnRequest {
	return sandbox.SpawnRequest{
		Role:      sandbox.RoleGate,
		Workspace: sandbox.Workspace{Dir: workspace(t)},
		Rootfs:    s.env.Rootfs,
		Command:   []string{"sh", "-c", script},
		Timeout:   time.Minute,
	}
}

// spawn runs req and skips the test if the client cannot run here.
func spawn(t *testing.T, c sandbox.Client, ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	t.Helper()
	res, err := c.Spawn(ctx, req)
	skipIfUnsupported(t, err)
	return res, err
}

// spawnWithin runs req as spawn does, but fails the test, saying what it
// waited for, if Spawn has not returned within bound. The abandoned Spawn
// ends with ctx, which the test's end cancels.
func spawnWithin(t *testing.T, c sandbox.Client, ctx context.Context, req sandbox.SpawnRequest, bound time.Duration, what string) (sandbox.Result, error) {
	t.Helper()
	type outcome struct {
		res sandbox.Result
		err error
	}
	ch := make(chan outcome, 1)
	go func() {
		res, err := c.Spawn(ctx, req)
		ch <- outcome{res, err}
	}()
	select {
	case o := <-ch:
		skipIfUnsupported(t, o.err)
		return o.res, o.err
	case <-time.After(bound):
		t.Fatalf("Spawn did not return within %v: waited for %s", bound, what)
		return sandbox.Result{}, nil
	}
}

func skipIfUnsupported(t *testing.T, err error) {
	t.Helper()
	if ue, ok := errors.AsType[*sandbox.UnsupportedError](err); ok {
		t.Skipf("backend %s cannot run on this host: %s", ue.Backend, ue.Reason)
	}
}

// mustSpawn runs req and fails the test on an error.
func mustSpawn(t *testing.T, c sandbox.Client, req sandbox.SpawnRequest) sandbox.Result {
	t.Helper()
	res, err := spawn(t, c, t.Context(), req)
	if err != nil {
		t.Fatalf("Spawn(%q): %v\nstderr: %s", req.Command, err, res.Stderr)
	}
	return res
}

func (s *suite) roles(t *testing.T) {
	c := s.newClient(t)
	for _, role := range sandbox.Roles() {
		req := s.request(t, "echo role ran")
		req.Role = role
		res := mustSpawn(t, c, req)
		if res.ExitCode != 0 || string(res.Stdout) != "role ran\n" {
			t.Errorf("role %v: exit %d, stdout %q, stderr %q; want 0, \"role ran\\n\"", role, res.ExitCode, res.Stdout, res.Stderr)
		}
		if res.Backend == "" {
			t.Errorf("role %v: Result.Backend is empty", role)
		}
		if res.Started.IsZero() || res.Duration <= 0 {
			t.Errorf("role %v: timing not set: started %v, duration %v", role, res.Started, res.Duration)
		}
	}
}

// invalidRole checks that a request without a valid role is refused before
// anything starts: the error matches ErrInvalidRole, and the Result says no
// sandbox started (zero Started, no output).
func (s *suite) invalidRole(t *testing.T) {
	c := s.newClient(t)
	for _, role := range []sandbox.Role{0, sandbox.Role(200)} {
		req := s.request(t, "echo should not run")
		req.Role = role
		req.CaptureTrace = true
		start := time.Now()
		res, err := spawn(t, c, t.Context(), req)
		if !errors.Is(err, sandbox.ErrInvalidRole) {
			t.Errorf("role %d: err = %v, want ErrInvalidRole", uint8(role), err)
		}
		if !res.Started.IsZero() || len(res.Stdout) != 0 || len(res.Trace) != 0 {
			t.Errorf("role %d: something ran: started %v, stdout %q, %d trace events", uint8(role), res.Started, res.Stdout, len(res.Trace))
		}
		t.Logf("role %d: refused after %v", uint8(role), time.Since(start).Round(time.Millisecond))
	}
}

func (s *suite) invalidRequest(t *testing.T) {
	c := s.newClient(t)
	for name, mutate := range map[string]func(*sandbox.SpawnRequest){
		"empty command":     func(r *sandbox.SpawnRequest) { r.Command = nil },
		"no workspace":      func(r *sandbox.SpawnRequest) { r.Workspace.Dir = "" },
		"negative timeout":  func(r *sandbox.SpawnRequest) { r.Timeout = -time.Second },
		"negative limit":    func(r *sandbox.SpawnRequest) { r.Limits.OutputBytes = -1 },
		"missing workspace": func(r *sandbox.SpawnRequest) { r.Workspace.Dir = filepath.Join(r.Workspace.Dir, "absent") },
	} {
		req := s.request(t, "echo should not run")
		mutate(&req)
		res, err := spawn(t, c, t.Context(), req)
		if !errors.Is(err, sandbox.ErrInvalidRequest) {
			t.Errorf("%s: err = %v, want ErrInvalidRequest", name, err)
		}
		if !res.Started.IsZero() || len(res.Stdout) != 0 {
			t.Errorf("%s: something ran: started %v, stdout %q", name, res.Started, res.Stdout)
		}
	}
}

func (s *suite) exitCodes(t *testing.T) {
	c := s.newClient(t)
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"/bin/false"}, 1},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "exit 128"}, 128},
		{[]string{"/bin/does-not-exist"}, 127},
		{[]string{"does-not-exist"}, 127},
		{[]string{"sh", "-c", "does-not-exist"}, 127},
	} {
		req := s.request(t, "")
		req.Command = tc.argv
		res, err := spawn(t, c, t.Context(), req)
		if err != nil {
			t.Errorf("%q: err = %v; a non-zero exit is a Result, not an error", tc.argv, err)
			continue
		}
		if res.ExitCode != tc.want {
			t.Errorf("%q: exit %d, want %d (stderr %q)", tc.argv, res.ExitCode, tc.want, res.Stderr)
		}
	}
}

func (s *suite) output(t *testing.T) {
	c := s.newClient(t)
	res := mustSpawn(t, c, s.request(t, "echo to stdout; echo to stderr >&2; echo more"))
	if diff := cmp.Diff("to stdout\nmore\n", string(res.Stdout)); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("to stderr\n", string(res.Stderr)); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if res.StdoutTruncated || res.StderrTruncated {
		t.Errorf("small output marked truncated: stdout %v, stderr %v", res.StdoutTruncated, res.StderrTruncated)
	}
}

func (s *suite) outputLimit(t *testing.T) {
	c := s.newClient(t)
	const limit = 1000
	req := s.request(t, "yes | head -c 200000; yes err | head -c 100000 >&2; echo done >&2")
	req.Limits.OutputBytes = limit
	res := mustSpawn(t, c, req)
	if res.ExitCode != 0 {
		t.Errorf("exit %d, want 0: the sandbox must not be broken by a full buffer", res.ExitCode)
	}
	if len(res.Stdout) != limit || !res.StdoutTruncated {
		t.Errorf("stdout: %d bytes, truncated %v; want %d, true", len(res.Stdout), res.StdoutTruncated, limit)
	}
	if len(res.Stderr) != limit || !res.StderrTruncated {
		t.Errorf("stderr: %d bytes, truncated %v; want %d, true", len(res.Stderr), res.StderrTruncated, limit)
	}
	if !bytes.HasPrefix(res.Stdout, []byte("y\ny\n")) {
		t.Errorf("stdout does not keep the first bytes: %q", res.Stdout[:min(len(res.Stdout), 16)])
	}

	req = s.request(t, "echo exactly")
	req.Limits.OutputBytes = int64(len("exactly\n"))
	res = mustSpawn(t, c, req)
	if string(res.Stdout) != "exactly\n" || res.StdoutTruncated {
		t.Errorf("output at the limit: %q, truncated %v", res.Stdout, res.StdoutTruncated)
	}
}

func (s *suite) envAndCwd(t *testing.T) {
	c := s.newClient(t)
	const marker = "CODEGENIE_SANDBOXTEST_HOST_MARKER"
	t.Setenv(marker, "leaked")
	req := s.request(t, `echo "foo=$FOO"; echo "marker=$`+marker+`"; pwd`)
	req.Env = []string{"FOO=bar baz", "PATH=/bin"}
	req.Cwd = "/workspace/sub"
	res := mustSpawn(t, c, req)
	want := "foo=bar baz\nmarker=\n/workspace/sub\n"
	if diff := cmp.Diff(want, string(res.Stdout)); diff != "" {
		t.Errorf("env and cwd (-want +got):\n%s\nstderr: %s", diff, res.Stderr)
	}

	req = s.request(t, "cat hello.txt; pwd")
	req.Workspace.Mount = "/src"
	req.Cwd = "/src"
	res = mustSpawn(t, c, req)
	if diff := cmp.Diff("hello from the host\n/src\n", string(res.Stdout)); diff != "" {
		t.Errorf("workspace at /src (-want +got):\n%s\nstderr: %s", diff, res.Stderr)
	}
}

func (s *suite) timeout(t *testing.T) {
	c := s.newClient(t)
	// The timeout is short, and fires during the boot or the sleep,
	// whichever the machine's speed makes it: either way the spawn must be
	// killed. The sleep outlasts KillBound, so a kill that did not work
	// fails the bound, not just the output check.
	req := s.request(t, "echo started; sleep 600; echo not killed")
	req.Timeout = time.Second
	req.CaptureTrace = true
	start := time.Now()
	res, err := spawnWithin(t, c, t.Context(), req, req.Timeout+s.env.KillBound, "the spawn killed by its timeout")
	took := time.Since(start)
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
	if !res.TimedOut {
		t.Error("TimedOut = false")
	}
	if res.ExitCode == 0 {
		t.Error("a killed spawn reports exit 0")
	}
	if res.TraceComplete {
		t.Error("a killed spawn reports a complete trace")
	}
	if bytes.Contains(res.Stdout, []byte("not killed")) {
		t.Errorf("sleep 600 was not killed: stdout %q", res.Stdout)
	}
	t.Logf("timeout of %v returned after %v", req.Timeout, took)
}

func (s *suite) cancel(t *testing.T) {
	c := s.newClient(t)
	// The cancellation comes during the boot or the sleep, whichever the
	// machine's speed makes it: either way the spawn must be killed.
	req := s.request(t, "sleep 600; echo not killed")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const after = time.Second
	timer := time.AfterFunc(after, cancel)
	defer timer.Stop()
	start := time.Now()
	res, err := spawnWithin(t, c, ctx, req, after+s.env.KillBound, "the spawn killed by the cancellation")
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if res.TimedOut {
		t.Error("a cancelled spawn reports TimedOut")
	}
	if bytes.Contains(res.Stdout, []byte("not killed")) {
		t.Errorf("sleep 600 was not killed: stdout %q", res.Stdout)
	}
	t.Logf("cancel after %v returned after %v", after, took)

	// A context that is already done runs nothing.
	res, err = spawn(t, c, ctx, s.request(t, "echo should not run"))
	if !errors.Is(err, context.Canceled) || len(res.Stdout) != 0 {
		t.Errorf("spawn with a done context: err %v, stdout %q", err, res.Stdout)
	}
}

func (s *suite) workspaceReadOnly(t *testing.T) {
	c := s.newClient(t)
	req := s.request(t, `cat /workspace/hello.txt /workspace/sub/data
echo x > /workspace/new && echo "created new"
echo x >> /workspace/hello.txt && echo "appended"
rm /workspace/sub/data && echo "removed"
mkdir /workspace/d && echo "made dir"
touch /workspace/hello.txt && echo "touched"
true`)
	before := snapshot(t, req.Workspace.Dir)
	res := mustSpawn(t, c, req)
	if diff := cmp.Diff("hello from the host\ndata\n", string(res.Stdout)); diff != "" {
		t.Errorf("read-only workspace (-want +got):\n%s\nstderr: %s", diff, res.Stderr)
	}
	if diff := cmp.Diff(before, snapshot(t, req.Workspace.Dir)); diff != "" {
		t.Errorf("host workspace changed (-before +after):\n%s", diff)
	}
}

func (s *suite) workspaceWritable(t *testing.T) {
	c := s.newClient(t)
	req := s.request(t, `set -e
echo changed > /workspace/hello.txt
echo new > /workspace/new
rm /workspace/sub/data
mkdir /workspace/d
cat /workspace/hello.txt /workspace/new
ls /workspace/sub`)
	req.Workspace.Writable = true
	before := snapshot(t, req.Workspace.Dir)
	res := mustSpawn(t, c, req)
	if res.ExitCode != 0 {
		t.Fatalf("writable workspace: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if diff := cmp.Diff("changed\nnew\n", string(res.Stdout)); diff != "" {
		t.Errorf("writable workspace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, req.Workspace.Dir)); diff != "" {
		t.Errorf("host workspace changed by a writable spawn (-before +after):\n%s", diff)
	}
}

// snapshot describes every file below dir: mode, size, mtime and content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v size=%d mtime=%d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (s *suite) noNetwork(t *testing.T) {
	c := s.newClient(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		accepted <- conn.RemoteAddr().String()
		_ = conn.Close()
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	req := s.request(t, fmt.Sprintf(`cat /proc/net/dev
echo ---
if echo hi | nc -w 2 127.0.0.1 %d; then echo connected; else echo refused; fi`, port))
	res := mustSpawn(t, c, req)
	dev, rest, _ := strings.Cut(string(res.Stdout), "---\n")
	if diff := cmp.Diff([]string{"lo"}, interfaces(dev)); diff != "" {
		t.Errorf("network interfaces (-want +got):\n%s\n%s", diff, dev)
	}
	if strings.TrimSpace(rest) != "refused" {
		t.Errorf("connect to a host loopback listener: %q, want refused (stderr %q)", rest, res.Stderr)
	}
	select {
	case from := <-accepted:
		t.Errorf("the host listener accepted a connection from %s", from)
	default:
	}
}

// interfaces lists the interface names in /proc/net/dev output.
func interfaces(procNetDev string) []string {
	var names []string
	for _, line := range strings.Split(procNetDev, "\n") {
		name, _, ok := strings.Cut(line, ":")
		if !ok || strings.Contains(name, "|") {
			continue
		}
		names = append(names, strings.TrimSpace(name))
	}
	slices.Sort(names)
	return names
}

func (s *suite) trace(t *testing.T) {
	c := s.newClient(t)
	// The trailing echo keeps sh from exec'ing the last command in place.
	req := s.request(t, `echo a; sh -c "exit 0"; /bin/sh -c "exit 0"; echo b`)
	req.CaptureTrace = true
	res := mustSpawn(t, c, req)
	if res.ExitCode != 0 || string(res.Stdout) != "a\nb\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !res.TraceComplete {
		t.Errorf("TraceComplete = false for a small, clean run")
	}
	var starts []trace.Event
	for _, e := range res.Trace {
		if !e.Kind.Valid() {
			t.Errorf("event of invalid kind: %+v", e)
		}
		if e.Kind == trace.KindStart {
			starts = append(starts, e)
		}
		if len(e.Env) != 0 {
			t.Errorf("event keeps env without KeepTraceEnv: %+v", e)
		}
	}
	if len(starts) != 1 {
		t.Fatalf("%d container start events, want 1:\n%s", len(starts), dump(res.Trace))
	}
	initPID := starts[0].PID
	// The first process is accounted for with an exec event of its own,
	// though gVisor reports it only as container/start.
	init := find(res.Trace, func(e trace.Event) bool {
		return e.Kind == trace.KindExec && e.PID == initPID && slices.Equal(e.Argv, req.Command)
	})
	if init == nil {
		t.Errorf("no exec event for the first process (pid %d, argv %q):\n%s", initPID, req.Command, dump(res.Trace))
	} else if init.Binary == "" || init.Execfn == "" {
		t.Errorf("first process's exec event lacks its binary or execfn: %+v", *init)
	}
	for _, argv := range [][]string{{"sh", "-c", "exit 0"}, {"/bin/sh", "-c", "exit 0"}} {
		child := find(res.Trace, func(e trace.Event) bool {
			return e.Kind == trace.KindExec && e.PID != initPID && slices.Equal(e.Argv, argv)
		})
		if child == nil {
			t.Errorf("no exec of %q:\n%s", argv, dump(res.Trace))
			continue
		}
		if child.PPID != initPID || child.Binary == "" {
			t.Errorf("exec of %q: ppid %d (want %d), binary %q", argv, child.PPID, initPID, child.Binary)
		}
		clone := find(res.Trace, func(e trace.Event) bool {
			return e.Kind == trace.KindClone && e.PID == initPID && e.ChildPID == child.PID
		})
		if clone == nil {
			t.Errorf("no clone by pid %d of pid %d:\n%s", initPID, child.PID, dump(res.Trace))
		}
		if find(res.Trace, func(e trace.Event) bool { return e.Kind == trace.KindExit && e.PID == child.PID }) == nil {
			t.Errorf("no exit of pid %d", child.PID)
		}
	}
	if find(res.Trace, func(e trace.Event) bool { return e.Kind == trace.KindExit && e.PID == initPID }) == nil {
		t.Errorf("no exit of the first process (pid %d)", initPID)
	}
}

func (s *suite) noTrace(t *testing.T) {
	c := s.newClient(t)
	res := mustSpawn(t, c, s.request(t, "sh -c true"))
	if len(res.Trace) != 0 || res.TraceComplete {
		t.Errorf("without CaptureTrace: %d events, complete %v; want none, false", len(res.Trace), res.TraceComplete)
	}
}

func find(events []trace.Event, pred func(trace.Event) bool) *trace.Event {
	for i := range events {
		if pred(events[i]) {
			return &events[i]
		}
	}
	return nil
}

func dump(events []trace.Event) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  %-12s pid=%d ppid=%d child=%d binary=%q execfn=%q argv=%q\n", e.Kind, e.PID, e.PPID, e.ChildPID, e.Binary, e.Execfn, e.Argv)
	}
	return b.String()
}

// topology checks ADR-0003: RoleProbe gets the very sandbox RoleGate gets.
// What a process sees of its sandbox (mounts, hostname, network, identity,
// limits, namespaces) is identical; only the audit tag differs.
func (s *suite) topology(t *testing.T) {
	c := s.newClient(t)
	const script = `cat /proc/self/mountinfo
echo --- hostname; hostname
echo --- net; cat /proc/net/dev
echo --- id; id
echo --- root; ls -a /
echo --- limits; ulimit -n; ulimit -Hn; ulimit -u
echo --- ns; ls -l /proc/self/ns/ 2>&1 | while read -r a b c d e f g h i j k; do echo "$i $j $k"; done
echo --- cgroup; cat /proc/self/cgroup
echo --- meminfo; head -1 /proc/meminfo
echo --- cpus; grep -c ^processor /proc/cpuinfo
echo --- env; env | sort`
	ws := workspace(t)
	out := make(map[sandbox.Role]string)
	for _, role := range sandbox.Roles() {
		req := s.request(t, script)
		req.Workspace.Dir = ws
		req.Role = role
		res := mustSpawn(t, c, req)
		if res.ExitCode != 0 {
			t.Fatalf("role %v: exit %d, stderr %q", role, res.ExitCode, res.Stderr)
		}
		out[role] = string(res.Stdout)
	}
	if diff := cmp.Diff(out[sandbox.RoleGate], out[sandbox.RoleProbe]); diff != "" {
		t.Errorf("the sandbox seen from inside differs between roles (-gate +probe):\n%s", diff)
	}
	t.Logf("topology seen by both roles:\n%s", out[sandbox.RoleGate])
}
