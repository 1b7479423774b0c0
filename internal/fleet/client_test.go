package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/probe"
)

// followLimit only ends a run that never finishes; it decides nothing.
const followLimit = 5 * time.Minute

// fleetRun is what runFleet saw of a run.
type fleetRun struct {
	report   *Report
	snap     *Snapshot
	observed map[string][]portfolio.State
	notices  []Notice
	runs     int32
}

// runFleet drives a portfolio of n services (the last one skipped) through
// a Client dialed with cfg, with results in st, and one in-process static
// worker that it starts only once Follow says that no worker polls: the
// run waits for it, as a real one would.
func runFleet(t *testing.T, cfg Config, st ResultStore, n int) fleetRun {
	t.Helper()
	ctx := t.Context()
	c, err := Dial(ctx, cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	services := make([]portfolio.Service, n)
	digests := make([]string, n)
	for i := range services {
		services[i] = portfolio.Service{ID: fmt.Sprintf("svc%d:Dockerfile#0", i), Dir: dir, Context: ".", Dockerfile: "Dockerfile"}
		digests[i] = fmt.Sprintf("digest-%s-%d", t.Name(), i)
	}
	services[n-1].Skip = "no Dockerfile builds an image"
	g := &countingGather{verdict: probe.Ready}
	a := &Activities{Store: st, Runner: func(Settings) (*portfolio.Runner, error) {
		return &portfolio.Runner{Options: gather.Options{Registry: builtin.NewRegistry(), Task: "distroless-migration"}, Gather: g.run}, nil
	}}
	sr, err := c.Start(ctx, services, digests, StartOptions{Concurrency: 2, Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, followLimit)
	defer cancel()
	run := fleetRun{observed: map[string][]portfolio.State{}}
	var once sync.Once
	started := false
	w := c.NewWorker(portfolio.TierStatic, a, WorkerOptions{Parallel: 2})
	defer func() {
		if started {
			w.Stop()
		}
	}()
	snap, err := c.Follow(fctx, sr.ID, FollowOptions{
		Poll:      50 * time.Millisecond,
		IdleCheck: 50 * time.Millisecond,
		Observe: func(r portfolio.Record) {
			run.observed[r.Service.ID] = append(run.observed[r.Service.ID], r.State)
		},
		Notify: func(n Notice) {
			run.notices = append(run.notices, n)
			if n.Kind == NoticeNoPoller {
				once.Do(func() {
					if err := w.Start(); err != nil {
						t.Error(err)
						return
					}
					started = true
				})
			}
		},
	})
	if err != nil {
		t.Fatalf("following %s: %v (notices %+v)", sr.ID, err, run.notices)
	}
	run.snap = snap
	if run.report, err = c.Report(ctx, snap); err != nil {
		t.Fatal(err)
	}
	run.runs = g.runs.Load()
	return run
}

// TestClientFollowsARun drives a run through the library API alone: the
// client says that no worker polls, follows each service to its end, and
// reports every record.
func TestClientFollowsARun(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t, t.TempDir())
	st, err := OpenFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := runFleet(t, Config{HostPort: srv.Addr}, st, 7)
	checkRun(t, run, 7)
	// The run waited for a worker: its progress query went unanswered, and
	// the client said which queue no worker polls.
	if !slices.ContainsFunc(run.notices, func(n Notice) bool { return n.Kind == NoticeNoPoller && n.Queue == QueueStatic }) {
		t.Errorf("notices %+v, want one that no worker polls %s", run.notices, QueueStatic)
	}
}

// checkRun checks a run of n services: each judged one observed running
// then done, with a ready verdict in the report; the last one skipped.
func checkRun(t *testing.T, run fleetRun, n int) {
	t.Helper()
	if !run.snap.Closed || run.snap.Status != "completed" {
		t.Errorf("snapshot %s closed=%v", run.snap.Status, run.snap.Closed)
	}
	if len(run.report.Records) != n || run.report.Tiers != "static" {
		t.Fatalf("%d records (tiers %s), want %d (static)", len(run.report.Records), run.report.Tiers, n)
	}
	for i, r := range run.report.Records {
		if i == n-1 {
			if r.State != portfolio.StateSkipped || r.Reason == "" {
				t.Errorf("%s: %s %q, want skipped with its reason", r.Service.ID, r.State, r.Reason)
			}
			continue
		}
		if r.State != portfolio.StateDone || r.Result == nil || r.Result.Verdict != probe.Ready {
			t.Errorf("%s: %s %+v, want done and ready", r.Service.ID, r.State, r.Result)
		}
		// Queued first, unless it was running by the first read; then
		// running and done, once each.
		got := run.observed[r.Service.ID]
		if len(got) > 0 && got[0] == portfolio.StateQueued {
			got = got[1:]
		}
		if len(got) != 2 || got[0] != portfolio.StateRunning || got[1] != portfolio.StateDone {
			t.Errorf("%s was observed %v, want (queued,) running then done", r.Service.ID, run.observed[r.Service.ID])
		}
		if sarif, err := run.report.SARIF.SARIF(r.Service.ID); err != nil || len(sarif) == 0 {
			t.Errorf("%s: SARIF %d bytes, %v", r.Service.ID, len(sarif), err)
		}
	}
	if int(run.runs) != n-1 {
		t.Errorf("the pipeline ran %d times, want %d", run.runs, n-1)
	}
}

// TestClientRunsWithAnS3Store runs a portfolio with its results in a real
// S3 server: the records, SARIF logs and bindings live in the bucket, and
// the same portfolio again is answered from them.
func TestClientRunsWithAnS3Store(t *testing.T) {
	srv := fleettest.Start(t, t.TempDir())
	s3 := fleettest.StartS3(t, t.TempDir())
	s3.SetEnv(t)
	st := openS3Store(t, s3, "fleet")
	run := runFleet(t, Config{HostPort: srv.Addr}, st, 7)
	checkRun(t, run, 7)
	if n, err := st.Keys(t.Context()); err != nil || n != 6 {
		t.Errorf("the bucket binds %d results (%v), want 6: one per judged service", n, err)
	}
	// Another host's client of the same bucket reads the run back.
	other := openS3Store(t, s3, "fleet")
	c, err := Dial(t.Context(), Config{HostPort: srv.Addr}, other)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.Read(t.Context(), run.snap.ID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Report(t.Context(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(run.report.Records, rep.Records); diff != "" {
		t.Errorf("another client's report differs (-first +other):\n%s", diff)
	}
}
