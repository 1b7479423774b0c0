package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
	"github.com/codegenie/codegenie/internal/testbin"
)

// These tests run real gVisor sandboxes through gate-control. They skip
// only when the runsc backend answers with a *sandbox.UnsupportedError (no
// runsc, not root); on the CI machines they run. They run one after
// another: sandboxes are heavy and the machines have two cores.

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// newRunsc returns a runsc backend with a private state directory, or
// skips the test when runsc cannot run here.
func newRunsc(t testing.TB, rootfs string) *runsc.Backend {
	t.Helper()
	b, err := runsc.New(runsc.Config{StateDir: shortDir(t), Rootfs: rootfs})
	if ue, ok := errors.AsType[*sandbox.UnsupportedError](err); ok {
		t.Skipf("gVisor backend unsupported here: %v", ue)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConformanceThroughGateControl runs the sandbox conformance suite
// against the client, through a gate-control whose backend is runsc, over
// the unix socket and over TLS 1.3 with client certificates.
func TestConformanceThroughGateControl(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	backend := newRunsc(t, "")
	s := startServer(t, backend, runsc.Name, true)
	for _, transport := range []string{"unix", "tls"} {
		t.Run(transport, func(t *testing.T) {
			sandboxtest.Run(t, func(t *testing.T) sandbox.Client {
				if transport == "unix" {
					return s.unixClient(t)
				}
				return s.tlsClient(t)
			}, sandboxtest.Env{Rootfs: rootfs})
		})
	}
	// Cancelled and timed-out spawns were killed, not left running.
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if left := runscProcesses(t, backend.Config().StateDir); len(left) > 0 {
		t.Errorf("runsc processes left after the suite:\n%s", strings.Join(left, "\n"))
	}
}

// TestRoleProbeSameTopologyDifferentAuditTag is ADR-0003's integration
// test: through the one gate-control, RoleProbe gets the very sandbox
// RoleGate gets, and the audit log tells them apart by the role alone.
func TestRoleProbeSameTopologyDifferentAuditTag(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	s := startServer(t, newRunsc(t, rootfs), runsc.Name, false)
	c := s.unixClient(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	const script = `cat /proc/self/mountinfo; hostname; cat /proc/net/dev; id; ls -a / /workspace
ls -l /proc/self/ns/ 2>&1 | while read -r a b c d e f g h i j k; do echo "$i $j $k"; done
cat /proc/self/cgroup; ulimit -n; ulimit -u; head -1 /proc/meminfo; env | sort`
	out := map[sandbox.Role]string{}
	ids := map[string]string{}
	for _, role := range sandbox.Roles() {
		res, err := c.Spawn(t.Context(), sandbox.SpawnRequest{
			Role: role, Workspace: sandbox.Workspace{Dir: ws}, Command: []string{"sh", "-c", script}, Timeout: time.Minute,
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%v: %v, exit %d, stderr %s", role, err, res.ExitCode, res.Stderr)
		}
		out[role] = string(res.Stdout)
		ids[res.AuditID] = role.String()
	}
	if diff := cmp.Diff(out[sandbox.RoleGate], out[sandbox.RoleProbe]); diff != "" {
		t.Errorf("the sandbox differs between roles (-gate +probe):\n%s", diff)
	}
	recs := readAudit(t, s.cfg.AuditLog)
	byRole := map[string][]audit.Record{}
	for _, r := range recs {
		if want := ids[r.SpawnID]; r.Role != want {
			t.Errorf("record %d of spawn %s: role %q, want %q", r.Seq, r.SpawnID, r.Role, want)
		}
		byRole[r.Role] = append(byRole[r.Role], r)
	}
	gate, probe := byRole["gate"], byRole["probe"]
	if len(gate) != 3 || len(probe) != 3 {
		t.Fatalf("records: %d gate, %d probe; want 3 each (requested, started, finished)", len(gate), len(probe))
	}
	strip := func(r audit.Record) audit.Record {
		r.Seq, r.Time, r.Prev, r.SpawnID, r.Role, r.DurationMS = 0, time.Time{}, "", "", "", 0
		return r
	}
	for i := range gate {
		if diff := cmp.Diff(strip(gate[i]), strip(probe[i])); diff != "" {
			t.Errorf("%s records differ beyond the role tag (-gate +probe):\n%s", gate[i].Event, diff)
		}
	}
	if gate[0].Backend != runsc.Name || !strings.HasPrefix(gate[0].WorkspaceDigest, "sha256:") {
		t.Errorf("requested record: %+v", gate[0])
	}
}

func readAudit(t testing.TB, file string) []audit.Record {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := audit.NewReader(f)
	var out []audit.Record
	for {
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		out = append(out, r)
	}
}

// runscProcesses lists the live runsc processes (runsc, runsc-gofer,
// runsc-sandbox) whose arguments name dir.
func runscProcesses(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if strings.Contains(filepath.Base(args[0]), "runsc") && strings.Contains(string(b), dir) {
			out = append(out, e.Name()+" "+strings.Join(args, " "))
		}
	}
	return out
}

// serveCmd starts "codegenie gate-control serve" on dir and waits until it
// answers a ping.
func serveCmd(t *testing.T, bin, dir, rootfs string, stderr io.Writer) (*exec.Cmd, *Client) {
	t.Helper()
	cmd := exec.Command(bin, "gate-control", "serve",
		"--key-file", filepath.Join(dir, "key"),
		"--audit-log", filepath.Join(dir, "audit.log"),
		"--socket", filepath.Join(dir, "gc.sock"),
		"--state-dir", filepath.Join(dir, "runsc"),
		"--rootfs", rootfs)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var c *Client
	waitFor(t, "gate-control serve to answer a ping", func() bool {
		if _, err := os.Stat(filepath.Join(dir, "key")); err != nil {
			return false
		}
		cl, err := New(Config{Socket: filepath.Join(dir, "gc.sock"), KeyFile: filepath.Join(dir, "key")})
		if err != nil {
			t.Fatal(err)
		}
		if cl.Ping(t.Context()) != nil {
			cl.Close()
			return false
		}
		c = cl
		return true
	})
	t.Cleanup(func() { c.Close() })
	return cmd, c
}

// guestRuns reports whether the guest of a spawn under stateDir runs a
// process whose command is name, as "runsc ps" lists it: its sandbox has
// booted all the way and started the spawn's command.
func guestRuns(t testing.TB, runscBin, stateDir, name string) bool {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(stateDir, "cg-*"))
	for _, d := range dirs {
		out, err := exec.CommandContext(t.Context(), runscBin, "--root="+filepath.Join(d, "root"), "ps", filepath.Base(d)).Output()
		if err != nil {
			continue // not created yet, or gone
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == name {
				return true
			}
		}
	}
	return false
}

// TestKill9LeavesNoOrphans kills gate-control with SIGKILL while a long
// spawn runs its command: no runsc process of it is left (its sandboxes
// die with it; how soon is logged, measured at about 2 s). It then
// restarts gate-control on the same state, and checks that the restart
// reaps what the spawn left, audits it with the spawn's ID, and leaves a
// log that verifies.
func TestKill9LeavesNoOrphans(t *testing.T) {
	runscBin := newRunsc(t, "").Config().Runsc // skips where runsc cannot run
	bin := testbin.Path(t)
	rootfs := sandboxtest.BusyboxRootfs(t)
	dir := shortDir(t)
	var logs bytes.Buffer
	// Registered before serveCmd's cleanups, this runs after them, once
	// every gate-control has been killed: nothing writes logs any more.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gate-control's log:\n%s", logs.String())
		}
	})
	first, c := serveCmd(t, bin, dir, rootfs, &syncWriter{w: &logs})

	spawnErr := make(chan error, 1)
	go func() {
		_, err := c.Spawn(context.Background(), sandbox.SpawnRequest{
			Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: t.TempDir()}, Command: []string{"sleep", "60"}, Timeout: 2 * time.Minute,
		})
		spawnErr <- err
	}()
	stateDir := filepath.Join(dir, "runsc")
	var spawnID string // the long spawn's, as its spawn.started record says
	waitFor(t, "the long spawn's spawn.started record and its sleep running in the sandbox", func() bool {
		recs := readAudit(t, filepath.Join(dir, "audit.log"))
		i := slices.IndexFunc(recs, func(r audit.Record) bool { return r.Event == audit.EventSpawnStarted })
		if i < 0 {
			return false
		}
		spawnID = recs[i].SpawnID
		return guestRuns(t, runscBin, stateDir, "sleep")
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	first.Wait()
	if err := <-spawnErr; err == nil {
		t.Error("the spawn of a killed gate-control succeeded")
	}
	var left []string
	defer func() {
		if len(left) > 0 {
			t.Logf("left: %q", left)
		}
	}()
	waitFor(t, "every runsc process to exit after gate-control's SIGKILL", func() bool {
		left = runscProcesses(t, stateDir)
		return len(left) == 0
	})
	t.Logf("no runsc process left %v after SIGKILL", time.Since(killed).Round(time.Millisecond))
	spawnDirs, _ := filepath.Glob(filepath.Join(stateDir, "cg-*"))
	if len(spawnDirs) == 0 {
		t.Fatal("the killed spawn left no directory to reap: the test proves nothing")
	}

	second, c2 := serveCmd(t, bin, dir, rootfs, &syncWriter{w: &logs})
	waitFor(t, "no runsc process to be left after the restart", func() bool { return len(runscProcesses(t, stateDir)) == 0 })
	recs := readAudit(t, filepath.Join(dir, "audit.log"))
	var reaped []string
	for _, r := range recs {
		if r.Event == audit.EventOrphanReaped {
			reaped = append(reaped, r.SpawnID)
		}
	}
	if want := []string{spawnID}; !slices.Equal(reaped, want) {
		t.Errorf("orphan.reaped records name %q, want %q; events: %v", reaped, want, eventNames(recs))
	}
	t.Logf("reaped: %v", reaped)
	// The restarted gate-control works.
	if res, err := c2.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()}, Command: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Errorf("spawn after the restart: %v, %+v", err, res)
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("gate-control after SIGTERM: %v\n%s", err, logs.String())
	}
	out, err := exec.Command(bin, "audit", "verify", filepath.Join(dir, "audit.log")).CombinedOutput()
	if err != nil {
		t.Errorf("codegenie audit verify: %v\n%s", err, out)
	}
	t.Logf("audit verify: %s", out)
}

func eventNames(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Event.String())
	}
	return out
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func TestStartPrivate(t *testing.T) {
	newRunsc(t, "") // skips where runsc cannot run
	bin := testbin.Path(t)
	rootfs := sandboxtest.BusyboxRootfs(t)
	var logs bytes.Buffer
	c, stop, err := StartPrivate(t.Context(), PrivateConfig{Executable: bin, ServeArgs: []string{"--rootfs", rootfs}, Stderr: &syncWriter{w: &logs}, StartTimeout: waitLimit})
	if err != nil {
		t.Fatalf("StartPrivate: %v", err)
	}
	dir := filepath.Dir(c.keyFile)
	res, err := c.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: t.TempDir()}, Command: []string{"echo", "private"}})
	if err != nil || string(res.Stdout) != "private\n" || res.Backend != runsc.Name {
		t.Errorf("spawn: %v, %+v", err, res)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v\n%s", err, logs.String())
	}
	if err2 := stop(); err2 != nil {
		t.Errorf("second stop: %v", err2)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private directory left: %v", err)
	}
	if err := c.Ping(t.Context()); err == nil {
		t.Error("the private gate-control answers after stop")
	}

	// A child that cannot start is reported with its own words, as soon as
	// it exits: the error says it exited, not that time ran out.
	start := time.Now()
	_, _, err = StartPrivate(t.Context(), PrivateConfig{Executable: bin, ServeArgs: []string{"--platform", "kvm"}, StartTimeout: waitLimit})
	if err == nil || !strings.Contains(err.Error(), "platform") || !strings.Contains(err.Error(), "it exited") {
		t.Errorf("StartPrivate with a bad flag: %v; want the child's exit, in its own words", err)
	}
	t.Logf("a failed start returned after %v", time.Since(start).Round(time.Millisecond))
}

// BenchmarkSpawnOverhead runs /bin/true in gVisor directly through the
// runsc backend and through client → gate-control (unix socket) → runsc,
// alternating, on the same rootfs and workspace, and reports the median
// of each and the difference. The goal is a median overhead of at most
// 20 ms.
func BenchmarkSpawnOverhead(b *testing.B) {
	rootfs := sandboxtest.BusyboxRootfs(b)
	direct := newRunsc(b, rootfs)
	s := startServer(b, newRunsc(b, rootfs), runsc.Name, false)
	c, err := New(Config{Socket: s.cfg.Socket, KeyFile: s.cfg.KeyFile})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := sandbox.SpawnRequest{Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: b.TempDir()}, Command: []string{"/bin/true"}}
	run := func(cl sandbox.Client) time.Duration {
		t0 := time.Now()
		res, err := cl.Spawn(context.Background(), req)
		d := time.Since(t0)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("spawn: %v, exit %d, stderr %s", err, res.ExitCode, res.Stderr)
		}
		return d
	}
	run(direct) // warm the page cache and the connection
	run(c)
	var dd, gd []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			dd = append(dd, run(direct))
			gd = append(gd, run(c))
		} else {
			gd = append(gd, run(c))
			dd = append(dd, run(direct))
		}
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return float64(s[len(s)/2]) / float64(time.Millisecond)
	}
	paired := make([]time.Duration, len(dd))
	for i := range dd {
		paired[i] = gd[i] - dd[i]
	}
	b.ReportMetric(p50(dd), "direct-p50-ms")
	b.ReportMetric(p50(gd), "gatecontrol-p50-ms")
	b.ReportMetric(p50(gd)-p50(dd), "overhead-p50-ms")
	b.ReportMetric(p50(paired), "paired-overhead-p50-ms")
}

// BenchmarkGateControlRoundTrip is the overhead of gate-control alone: a
// spawn through client → gate-control (unix socket: signing, verifying,
// the workspace digest, three fsynced audit records) → a fake backend
// that runs nothing.
func BenchmarkGateControlRoundTrip(b *testing.B) {
	s := startServer(b, nil, "", false)
	c, err := New(Config{Socket: s.cfg.Socket, KeyFile: s.cfg.KeyFile})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := request(b.TempDir(), "true")
	for b.Loop() {
		if _, err := c.Spawn(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
