package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/devimages"
	"github.com/codegenie/codegenie/internal/fleet"
	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
	"github.com/codegenie/codegenie/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// proc is a codegenie process whose stderr lines are kept and watched.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	all  []string
	subs []chan string
	done chan struct{}
}

func startProc(t *testing.T, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return startCmd(t, name, cmd)
}

// startCmd starts cmd as a watched process (killed with the test).
func startCmd(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.all = append(p.all, sc.Text())
			for _, s := range p.subs {
				select {
				case s <- sc.Text():
				default:
				}
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, p.text())
		}
	})
	return p
}

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.all, "\n")
}

// count counts the lines holding s.
func (p *proc) count(s string) int { return strings.Count(p.text(), s) }

// waitLine waits for a line holding s, for waitLimit at most.
func (p *proc) waitLine(t *testing.T, s string) {
	t.Helper()
	ch := make(chan string, 1024)
	p.mu.Lock()
	seen := strings.Contains(strings.Join(p.all, "\n"), s)
	p.subs = append(p.subs, ch)
	p.mu.Unlock()
	if seen {
		return
	}
	deadline := time.After(waitLimit)
	for {
		select {
		case l := <-ch:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("%s exited before printing %q:\n%s", p.name, s, p.text())
		case <-deadline:
			t.Fatalf("waited %v for %s to print %q:\n%s", waitLimit, p.name, s, p.text())
		}
	}
}

var serviceField = regexp.MustCompile(`service=(\S+)`)

// inFlight lists the services a worker started and did not finish.
func (p *proc) inFlight() []string {
	open := map[string]bool{}
	for _, l := range strings.Split(p.text(), "\n") {
		m := serviceField.FindStringSubmatch(l)
		switch {
		case m == nil:
		case strings.Contains(l, "msg=start"):
			open[m[1]] = true
		case strings.Contains(l, "msg=done"):
			delete(open, m[1])
		}
	}
	var out []string
	for id := range open {
		out = append(out, id)
	}
	return out
}

// waitTracedBuild waits until the sandbox worker is in an activity (started,
// not done) and gate-control, whose audit log is auditLog, runs a spawn:
// the activity's traced build, which the worker, the only client, asked
// for.
func (p *proc) waitTracedBuild(t *testing.T, auditLog string) {
	t.Helper()
	waitFor(t, p.name+" to be in an activity whose traced build runs in gate-control", func() bool {
		return p.count("msg=start") > p.count("msg=done") && spawnsRunning(auditLog) > 0
	})
}

// spawnsRunning counts the spawns that auditLog says started and did not
// finish. It reads what is there, up to a record still being written.
func spawnsRunning(auditLog string) int {
	f, err := os.Open(auditLog)
	if err != nil {
		return 0
	}
	defer f.Close()
	running := map[string]bool{}
	for rd := audit.NewReader(f); ; {
		r, err := rd.Next()
		if err != nil {
			return len(running)
		}
		switch r.Event {
		case audit.EventSpawnStarted:
			running[r.SpawnID] = true
		case audit.EventSpawnFinished:
			delete(running, r.SpawnID)
		case audit.EventSpawnRequested, audit.EventSpawnRejected, audit.EventOrphanReaped, audit.EventCheckpoint:
		}
	}
}

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	<-p.done
}

// TestTemporalPortfolioSurvivesFaults runs a 50-service portfolio on a real
// Temporal dev server with two static workers and one sandbox worker
// beside a gate-control. Mid-run it kills a static worker and the sandbox
// worker (in a traced build) with SIGKILL, starts a replacement sandbox
// worker, and restarts the server on the same database. The portfolio
// completes with exactly one result per service and tier. The same
// portfolio run again does no activity work.
func TestTemporalPortfolioSurvivesFaults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox tier needs root for gate-control (CI runs as root)")
	}
	probeDir, err := os.MkdirTemp("", "cgt")
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := runsc.New(runsc.Config{StateDir: probeDir})
	_ = os.RemoveAll(probeDir)
	var ue *sandbox.UnsupportedError
	if errors.As(rerr, &ue) {
		t.Skipf("the gVisor backend cannot run here: %v", ue)
	}
	bin := testbin.Path(t)
	work := t.TempDir()
	srv := fleettest.Start(t, work)

	sets, err := devimages.Sets(devimages.DefaultInputs(), devimages.DefaultCacheDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := devimages.ServeSets(context.Background(), "127.0.0.1:0", sets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })

	// gate-control: the one privileged process; the sandbox workers are its
	// clients. Its state directory must be short (runsc's socket paths).
	gcDir, err := os.MkdirTemp("", "cgg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(gcDir) })
	sock, key, auditLog := filepath.Join(gcDir, "gc.sock"), filepath.Join(gcDir, "key"), filepath.Join(gcDir, "audit.log")
	gc := startProc(t, "gate-control", bin, nil, "gate-control", "serve", "--key-file", key, "--audit-log", auditLog,
		"--socket", sock, "--state-dir", filepath.Join(gcDir, "runsc"))
	waitFile(t, sock, gc)

	src, cacheDir, store, out := filepath.Join(work, "src"), filepath.Join(work, "cache"), filepath.Join(work, "results"), filepath.Join(work, "out")
	// Two shapes that build and boot, and one whose Dockerfile does not
	// parse: 50 services, two distinct traced builds (the rest share the
	// content cache, as identical services do in a real portfolio).
	portfoliotest.GenerateFrom(t, src, 50, []string{"npm-start-plain", "already-distroless", "broken-dockerfile"})
	env := []string{"CODEGENIE_TEMPORAL=" + srv.Addr, "CODEGENIE_RESULT_STORE=" + store, "CI=1"}
	common := []string{"--cache-dir", cacheDir}
	// Processes belong to the whole test; tb is the (sub)test that waits.
	worker := func(tb *testing.T, name, tier string, extra ...string) *proc {
		args := append(append(append([]string{}, common...), "worker", "--tier", tier), extra...)
		p := startProc(t, name, bin, env, args...)
		p.waitLine(tb, "worker ready")
		return p
	}
	staticA := worker(t, "static-a", "static", "--parallel", "2")
	staticB := worker(t, "static-b", "static", "--parallel", "2")
	sbArgs := []string{"--gate-control", sock, "--gate-control-key", key, "--parallel", "1"}
	sandbox1 := worker(t, "sandbox-1", "sandbox", sbArgs...)

	runArgs := append(append([]string{}, common...), "portfolio", "--out", out, "--registry-mirror", reg.Mirrors(),
		"--static-heartbeat", "2s", "--sandbox-heartbeat", "5s", "--concurrency", "16", "--batch", "20", src)
	client := startProc(t, "portfolio", bin, env, runArgs...)

	var killed []string
	var sandbox2 *proc
	if !t.Run("kill -9 a static worker and the sandbox worker mid-activity", func(tt *testing.T) {
		// A static worker dies as the run starts, and the sandbox worker in
		// its first traced build.
		staticB.waitLine(tt, "msg=start")
		staticB.kill9(tt)
		// Killed in an activity, while its traced build runs (for
		// seconds).
		sandbox1.waitTracedBuild(tt, auditLog)
		sandbox1.kill9(tt)
		killed = sandbox1.inFlight()
		if len(killed) != 1 {
			tt.Fatalf("the sandbox worker was killed in %d activities, want 1: %v", len(killed), killed)
		}
		sandbox2 = worker(tt, "sandbox-2", "sandbox", sbArgs...)
	}) {
		return
	}
	var doc *portfolio.Document
	var judged int
	var id string
	if !t.Run("restart the server mid-run", func(tt *testing.T) {
		// The server restarts while the retried build runs.
		sandbox2.waitTracedBuild(tt, auditLog)
		down := srv.Restart(tt)
		doneAtRestart := sandbox2.count("msg=done tier=sandbox") + staticA.count("msg=done")
		tt.Logf("the server was down %s", down.Round(time.Millisecond))

		if err := waitExit(client, 5*time.Minute); err != nil && !isExit(err, ExitNotReady) {
			tt.Fatalf("the portfolio run: %v", err)
		}
		if sandbox2.count("msg=done tier=sandbox")+staticA.count("msg=done") <= doneAtRestart {
			tt.Fatal("no activity finished after the server restarted")
		}
		if !strings.Contains(client.text(), "done ") {
			tt.Fatalf("the client reported no finished service:\n%s", client.text())
		}

		doc = readDocument(tt, out)
		judged = checkOneResultEach(tt, doc, 50)
		// The killed service's record counts its static attempt, the killed
		// sandbox attempt and the retry.
		if i := slices.IndexFunc(doc.Services, func(e portfolio.Entry) bool { return e.ID == killed[0] }); i < 0 {
			tt.Errorf("the killed service %s is not in portfolio.json", killed[0])
		} else if a := doc.Services[i].Attempts; a < 3 {
			tt.Errorf("%s, killed mid-activity, records %d attempts, want at least 3", killed[0], a)
		}
		var firstRun string
		id, firstRun = workflowRun(tt, client)
		// The run that saw the faults replays from its history: the workflow
		// is deterministic.
		replay(tt, srv.Addr, id, firstRun)
		st, err := fleet.OpenFSStore(store)
		if err != nil {
			tt.Fatal(err)
		}
		if n, _ := st.Keys(); n != 2*judged {
			tt.Errorf("the result store binds %d results, want %d: one per judged service and tier", n, 2*judged)
		}
	}) {
		return
	}
	reused := 0
	if !t.Run("the same portfolio again does no activity work", func(tt *testing.T) {
		// The same portfolio again: every activity finds its result bound.
		workers := []*proc{staticA, sandbox2}
		startsBefore := 0
		for _, w := range workers {
			startsBefore += w.count("msg=start")
		}
		rerun := startProc(t, "portfolio-rerun", bin, env, runArgs...)
		if err := waitExit(rerun, 2*time.Minute); err != nil && !isExit(err, ExitNotReady) {
			tt.Fatalf("the rerun: %v", err)
		}
		startsAfter := 0
		for _, w := range workers {
			startsAfter += w.count("msg=start")
			reused += w.count("msg=reused")
		}
		if startsAfter != startsBefore {
			tt.Errorf("the rerun started %d activities' work, want none", startsAfter-startsBefore)
		}
		if reused < 2*judged {
			tt.Errorf("%d activities reused a result, want %d (every service, both tiers)", reused, 2*judged)
		}
		if rid, _ := workflowRun(tt, rerun); rid != id {
			tt.Errorf("the rerun started workflow %s, want %s (the same portfolio)", rid, id)
		}
		// status and report read the rerun back: every outcome reused.
		var st2 struct {
			Status  string         `json:"status"`
			Total   int            `json:"total"`
			Reused  int            `json:"reused"`
			ByState map[string]int `json:"by_state"`
		}
		status := runJSON(tt, bin, env, &st2, append(append([]string{}, common...), "portfolio", "status", id)...)
		if st2.Status != "completed" || st2.Total != 50 || st2.Reused != judged || st2.ByState["done"] != judged {
			tt.Errorf("status after the rerun: %s", status)
		}
		out2 := filepath.Join(work, "out2")
		var totals struct {
			Totals portfolio.Totals `json:"totals"`
		}
		runJSON(tt, bin, env, &totals, append(append([]string{}, common...), "portfolio", "report", "--out", out2, id)...)
		if reported := readDocument(tt, out2); reported.Totals.Services != 50 || totals.Totals.Services != 50 {
			tt.Errorf("report wrote %d services and printed %d, want 50", reported.Totals.Services, totals.Totals.Services)
		}
		again := readDocument(tt, out)
		if len(again.Services) != len(doc.Services) || again.Totals.ByVerdict["ready"] != doc.Totals.ByVerdict["ready"] {
			tt.Errorf("the rerun's totals %+v differ from the first run's %+v", again.Totals, doc.Totals)
		}
	}) {
		return
	}
	t.Logf("%d judged services; static-b started %d and finished %d before its kill, sandbox-1 started %d and finished %d; sandbox-2 finished %d; the rerun reused %d results",
		judged, staticB.count("msg=start"), staticB.count("msg=done"), sandbox1.count("msg=start"), sandbox1.count("msg=done"), sandbox2.count("msg=done"), reused)
}

// checkOneResultEach checks that a portfolio lists n services once each,
// every judged one done with a verdict from the sandbox tier, and returns
// how many were judged.
func checkOneResultEach(t *testing.T, doc *portfolio.Document, n int) int {
	t.Helper()
	if len(doc.Services) != n {
		t.Fatalf("%d services in portfolio.json, want %d", len(doc.Services), n)
	}
	ids := map[string]bool{}
	judged := 0
	for _, e := range doc.Services {
		if ids[e.ID] {
			t.Errorf("%s is listed twice", e.ID)
		}
		ids[e.ID] = true
		if e.State == portfolio.StateSkipped {
			continue
		}
		judged++
		if e.State != portfolio.StateDone || e.Verdict == "" {
			t.Errorf("%s: %s %q (%s), want done with a verdict", e.ID, e.State, e.Verdict, e.Reason)
		}
	}
	return judged
}

var runLine = regexp.MustCompile(`portfolio: workflow (\S+) \(run (\S+)\)`)

// workflowRun reads the workflow and run IDs a portfolio client printed.
func workflowRun(t *testing.T, p *proc) (string, string) {
	t.Helper()
	m := runLine.FindStringSubmatch(p.text())
	if m == nil {
		t.Fatalf("%s printed no workflow ID:\n%s", p.name, p.text())
	}
	return m[1], m[2]
}

// replay replays a workflow run's history against this build's workflow.
func replay(t *testing.T, addr, id, runID string) {
	t.Helper()
	c, err := fleet.DialTemporal(t.Context(), fleet.Config{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	iter := c.GetWorkflowHistory(t.Context(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for iter.HasNext() {
		e, err := iter.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(fleet.Portfolio, workflow.RegisterOptions{Name: fleet.WorkflowName})
	if err := r.ReplayWorkflowHistory(nil, h); err != nil {
		t.Errorf("replaying run %s of %s (%d events): %v", runID, id, len(h.Events), err)
	}
}

// runJSON runs the binary and decodes its stdout.
func runJSON(t *testing.T, bin string, env []string, v any, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && !isExit(err, ExitNotReady) {
		t.Fatalf("codegenie %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("codegenie %s printed %q: %v", strings.Join(args, " "), out, err)
	}
	return string(out)
}

// waitFile waits for path to appear, as p makes it (its log is shown when
// the test fails).
func waitFile(t *testing.T, path string, p *proc) {
	t.Helper()
	waitFor(t, p.name+" to make "+path, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
}

func waitExit(p *proc, timeout time.Duration) error {
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		_ = p.cmd.Wait()
		return fmt.Errorf("%s did not finish in %s:\n%s", p.name, timeout, p.text())
	}
	err := p.cmd.Wait()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, p.text())
	}
	return nil
}

func isExit(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}

// TestTemporalPortfolioSaysWhenNoWorkerPolls starts a portfolio on a server
// that no worker polls: the client says so, instead of waiting silently,
// and leaves the workflow running when interrupted.
func TestTemporalPortfolioSaysWhenNoWorkerPolls(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	src := filepath.Join(work, "src")
	portfoliotest.GenerateFrom(t, src, 2, []string{"npm-start-plain"})
	// Interrupted (as Ctrl-C does) once it has said that no worker polls
	// (after its first query timed out); the backstop ends a client that
	// never says so.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	backstop := time.AfterFunc(waitLimit, cancel)
	defer backstop.Stop()
	var stdout bytes.Buffer
	stderr := &callWhen{s: "no worker polls the task queue codegenie-static", fn: cancel}
	code := Execute(ctx, []string{"--cache-dir", filepath.Join(work, "cache"), "portfolio", "--no-sandbox", "--temporal", srv.Addr,
		"--store", filepath.Join(work, "results"), "--out", filepath.Join(work, "out"), src}, Streams{Out: &stdout, Err: stderr})
	r := result{code, stdout.String(), stderr.String()}
	if r.code != ExitCanceled {
		t.Errorf("exit %d, want %d (interrupted)", r.code, ExitCanceled)
	}
	for _, want := range []string{"no worker polls the task queue codegenie-static", "codegenie worker --tier static", "left the portfolio workflow"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
}

// callWhen is a syncBuffer that calls fn once what it holds contains s.
type callWhen struct {
	syncBuffer
	s    string
	fn   func()
	once sync.Once
}

func (w *callWhen) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.String(), w.s) {
		w.once.Do(w.fn)
	}
	return n, err
}

// TestTemporalPortfolioMatchesLocal runs one portfolio (every fixture
// shape, monorepos, skipped images, with --migrate) locally and on Temporal
// with two in-process static workers: the two give the same services,
// states, verdicts, blockers, migrations and SARIF logs.
func TestTemporalPortfolioMatchesLocal(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	src := filepath.Join(work, "src")
	portfoliotest.Generate(t, src, 20)
	store := filepath.Join(work, "results")
	ctx, cancel := context.WithCancel(t.Context())
	var workers sync.WaitGroup
	for i := range 2 {
		workers.Go(func() {
			r := execute(t, ctx, "--cache-dir", filepath.Join(work, fmt.Sprintf("wcache%d", i)), "worker", "--tier", "static",
				"--temporal", srv.Addr, "--store", store)
			if r.code != 0 {
				t.Errorf("worker %d: exit %d: %s", i, r.code, r.stderr)
			}
		})
	}
	defer func() { cancel(); workers.Wait() }()

	localOut, remoteOut := filepath.Join(work, "local"), filepath.Join(work, "remote")
	common := []string{"portfolio", "--no-sandbox", "--migrate", "--temporal", ""}
	local := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(work, "lcache")}, common...), "--out", localOut, src)...)
	// A heartbeat of minutes: a busy machine may starve a worker's
	// heartbeat for seconds, and the retry would count one more attempt
	// than the local run's, where no attempt failed.
	remote := execute(t, t.Context(), append(append([]string{"--cache-dir", filepath.Join(work, "ccache")}, common...),
		"--temporal", srv.Addr, "--store", store, "--static-heartbeat", waitLimit.String(), "--out", remoteOut, src)...)
	if local.code != remote.code || local.code != ExitNotReady {
		t.Fatalf("exit codes: local %d, temporal %d; want both %d\nlocal: %s\ntemporal: %s", local.code, remote.code, ExitNotReady, local.stderr, remote.stderr)
	}
	l, r := readDocument(t, localOut), readDocument(t, remoteOut)
	if len(l.Services) != len(r.Services) || len(l.Services) < 20 {
		t.Fatalf("%d services locally, %d on Temporal", len(l.Services), len(r.Services))
	}
	if diff := cmp.Diff(l.Totals, r.Totals); diff != "" {
		t.Errorf("totals differ (-local +temporal):\n%s", diff)
	}
	if diff := cmp.Diff(l.Blockers, r.Blockers); diff != "" {
		t.Errorf("blockers by kind differ (-local +temporal):\n%s", diff)
	}
	migrated := 0
	for i := range l.Services {
		a, b := l.Services[i], r.Services[i]
		a.Timings, b.Timings = portfolio.Timings{}, portfolio.Timings{}
		for _, m := range []*portfolio.Migration{a.Migration, b.Migration} {
			if m != nil {
				m.MS = 0
			}
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s differs (-local +temporal):\n%s", a.ID, diff)
		}
		if a.Migration != nil && a.Migration.Patch != "" {
			migrated++
		}
		if a.SARIF == "" {
			continue
		}
		la, _ := os.ReadFile(filepath.Join(localOut, a.SARIF))
		lb, _ := os.ReadFile(filepath.Join(remoteOut, b.SARIF))
		if len(la) == 0 || !bytes.Equal(la, lb) {
			t.Errorf("%s: the SARIF logs differ (%d and %d bytes)", a.ID, len(la), len(lb))
		}
	}
	if migrated == 0 {
		t.Error("no service was migrated: the comparison covers no migration")
	}
	// cache prune empties the result store too.
	pr := execute(t, t.Context(), "--cache-dir", filepath.Join(work, "ccache"), "cache", "prune", "--all", "--store", store, "--base-store", filepath.Join(work, "none"))
	fs, err := fleet.OpenFSStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := fs.Keys(); pr.code != 0 || !strings.Contains(pr.stdout, "results: removed") || n != 0 {
		t.Errorf("cache prune --all: exit %d, %d bindings left\n%s%s", pr.code, n, pr.stdout, pr.stderr)
	}
}
