package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/fleet"
	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
	"github.com/codegenie/codegenie/internal/testbin"
)

// pushAllTo makes each checkout under src a git repository whose origin
// is its bare repository under base (named after its folder), reached at
// url(name), pushed and fetched back, as a clone is.
func pushAllTo(t *testing.T, base string, url func(string) string, src string) {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		dir := filepath.Join(src, e.Name())
		if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
			t.Fatal(err)
		}
		bare := filepath.Join(base, e.Name()+".git")
		fleettest.Git(t, base, "init", "-q", "--bare", "--template=", bare)
		fleettest.Git(t, dir, "init", "-q", "-b", "main", "--template=")
		fleettest.Git(t, dir, "add", "-A", "-f")
		fleettest.Git(t, dir, "commit", "-q", "-m", "service")
		fleettest.Git(t, dir, "push", "-q", bare, "main")
		fleettest.Git(t, dir, "remote", "add", "origin", url(e.Name()))
		fleettest.Git(t, dir, "fetch", "-q", "origin")
	}
}

// generateNamed writes n single-service repositories of shapes into src,
// named prefix-0000 and on, so that their service IDs differ from other
// portfolios'.
func generateNamed(t *testing.T, src, prefix string, n int, shapes []string) {
	t.Helper()
	tmp := t.TempDir()
	dirs := portfoliotest.GenerateFrom(t, tmp, n, shapes)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		if err := os.Rename(d, filepath.Join(src, fmt.Sprintf("%s-%04d", prefix, i))); err != nil {
			t.Fatal(err)
		}
	}
}

// tmpEntries lists the half-made fetches in a checkout cache.
func tmpEntries(root string) []string {
	ents, _ := os.ReadDir(root)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// lineCount counts, across ps, the lines of msg for service id.
func lineCount(ps []*proc, msg, id string) int {
	n := 0
	for _, p := range ps {
		for _, l := range strings.Split(p.text(), "\n") {
			if m := serviceField.FindStringSubmatch(l); m != nil && m[1] == id && strings.Contains(l, " msg="+msg+" ") {
				n++
			}
		}
	}
	return n
}

// judgedIDs lists the services of doc that are not skipped.
func judgedIDs(doc *portfolio.Document) []string {
	var ids []string
	for _, e := range doc.Services {
		if e.State != portfolio.StateSkipped {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// sameAsLocal compares a fleet run's services with a local run's, but for
// timings and attempts (which faults add to).
func sameAsLocal(t *testing.T, local, remote *portfolio.Document) {
	t.Helper()
	if len(local.Services) != len(remote.Services) {
		t.Fatalf("%d services locally, %d on the fleet", len(local.Services), len(remote.Services))
	}
	for i := range local.Services {
		a, b := local.Services[i], remote.Services[i]
		a.Timings, b.Timings = portfolio.Timings{}, portfolio.Timings{}
		a.Attempts, b.Attempts = 0, 0
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s differs (-local +fleet):\n%s", a.ID, diff)
		}
	}
}

func attemptsOf(doc *portfolio.Document, id string) int {
	i := slices.IndexFunc(doc.Services, func(e portfolio.Entry) bool { return e.ID == id })
	if i < 0 {
		return -1
	}
	return doc.Services[i].Attempts
}

// TestFleetNoSharedFilesystemSurvivesFaults runs portfolios in the shape of
// a fleet that shares no filesystem: a Temporal dev server, a git daemon
// (behind a gate the test opens, holds and closes), an S3 server
// (versitygw; each worker host reaches it through a relay of its own), and
// two static workers, each in a mount namespace in which the client's
// folders are empty. Mid-run it kills a worker with SIGKILL while its
// fetches hang, and the other while it binds a judged service's result;
// it restarts the S3 server; and it makes the git server unreachable for
// a while, then for good. Nothing is lost or judged twice, the results
// equal a local run's, a retried fetch recovers, and one that never
// reaches the server fails with codegenie.git_unreachable.
func TestFleetNoSharedFilesystemSurvivesFaults(t *testing.T) {
	work := t.TempDir()
	srv := fleettest.Start(t, work)
	s3 := fleettest.StartS3(t, filepath.Join(work, "s3"))
	s3.SetEnv(t)
	git := fleettest.StartGit(t, filepath.Join(work, "git"))
	gate := fleettest.StartGate(t, git.Addr, fleettest.GatePass)
	bin := testbin.Path(t)

	// The client's folders: three portfolios, pushed to the git server
	// through the gate and fetched back, so that each checkout's origin is
	// the gate's URL.
	client := filepath.Join(work, "client")
	src, late, gone := filepath.Join(client, "src"), filepath.Join(client, "late"), filepath.Join(client, "gone")
	portfoliotest.Generate(t, src, 12)
	generateNamed(t, late, "late", 3, []string{"npm-start-plain", "already-distroless", "healthcheck-curl"})
	generateNamed(t, gone, "gone", 1, []string{"npm-start-plain"})
	for _, d := range []string{src, late, gone} {
		pushAllTo(t, git.Base, gate.GitURL, d)
	}
	storeURL := s3.URL("fleet")
	local := func(dir, name string) *portfolio.Document {
		out := filepath.Join(client, "local-"+name)
		r := execute(t, t.Context(), "--cache-dir", filepath.Join(client, "lcache"), "portfolio", "--no-sandbox", "--temporal", "", "--out", out, dir)
		if r.code != ExitNotReady {
			t.Fatalf("the local run of %s: exit %d, want %d:\n%s", name, r.code, ExitNotReady, r.stderr)
		}
		return readDocument(t, out)
	}
	local1, local2 := local(src, "src"), local(late, "late")
	judged := len(judgedIDs(local1))

	type host struct {
		dir   string
		store *fleettest.StoreGate
	}
	hosts := []*host{{dir: filepath.Join(work, "host-a")}, {dir: filepath.Join(work, "host-b")}}
	for _, h := range hosts {
		h.store = fleettest.StartStoreGate(t, s3.Endpoint)
	}
	checkouts := func(h *host) string { return filepath.Join(h.dir, "checkouts") }
	startWorker := func(tb *testing.T, name string, h *host) *proc {
		cmd := hiddenFrom(t, []string{client}, bin, "--cache-dir", filepath.Join(h.dir, "cache"), "worker", "--tier", "static",
			"--parallel", "2", "--temporal", srv.Addr, "--store", h.store.URL(s3, "fleet"), "--checkout-cache", checkouts(h))
		cmd.Env = append(os.Environ(), s3.Env()...)
		p := startCmd(t, name, cmd)
		p.waitLine(tb, "worker ready")
		return p
	}
	portfolioRun := func(name, dir string) *proc {
		return startProc(t, name, bin, s3.Env(), "--cache-dir", filepath.Join(client, "ccache"), "portfolio", "--no-sandbox",
			"--temporal", srv.Addr, "--store", storeURL, "--workers-fetch", "--static-heartbeat", "5s", "--concurrency", "8",
			"--out", filepath.Join(client, "fleet-"+name), dir)
	}

	// Every fetch hangs at the git server from the start.
	gate.Set(fleettest.GateHold)
	a1 := startWorker(t, "host-a-1", hosts[0])
	b1 := startWorker(t, "host-b-1", hosts[1])
	run1 := portfolioRun("src", src)

	var a2, b2 *proc
	var killedA, killedB []string
	if !t.Run("kill -9 a worker mid-fetch", func(tt *testing.T) {
		// Every fetch begun has reached the git server and hangs there,
		// host a's among them.
		waitFor(tt, "host a's fetches to hang at the git server", func() bool {
			ta, tb := tmpEntries(checkouts(hosts[0])), tmpEntries(checkouts(hosts[1]))
			return len(ta) > 0 && gate.Counts().Held == len(ta)+len(tb)
		})
		half := tmpEntries(checkouts(hosts[0]))
		before := gate.Counts()
		a1.kill9(tt)
		killedA = a1.inFlight()
		if len(killedA) == 0 {
			tt.Fatalf("host a was killed in no activity:\n%s", a1.text())
		}
		// Its git processes died with it: their connections left.
		waitFor(tt, "the killed worker's fetches to leave the git server", func() bool {
			return gate.Counts().Dropped >= before.Dropped+len(half)
		})
		a2 = startWorker(tt, "host-a-2", hosts[0])
		for _, d := range half {
			if _, err := os.Stat(filepath.Join(checkouts(hosts[0]), d)); err == nil {
				tt.Errorf("the restarted worker left the killed one's half-made fetch %s", d)
			}
		}
	}) {
		return
	}
	if !t.Run("kill -9 a worker mid-activity, binding a judged result", func(tt *testing.T) {
		hosts[1].store.Hold(true)
		gate.Set(fleettest.GatePass)
		waitFor(tt, "host b to bind a judged service's result", func() bool {
			held, _, _ := hosts[1].store.Counts()
			return held > 0
		})
		b1.kill9(tt)
		killedB = b1.inFlight()
		if len(killedB) == 0 {
			tt.Fatalf("host b was killed in no activity:\n%s", b1.text())
		}
		waitFor(tt, "host b's binds to leave the store relay", func() bool {
			held, dropped, _ := hosts[1].store.Counts()
			return held == 0 && dropped > 0
		})
		hosts[1].store.Hold(false)
	}) {
		return
	}
	var doc1 *portfolio.Document
	if !t.Run("restart the object store mid-run", func(tt *testing.T) {
		// Host b's killed service is bound by nobody yet: its retry
		// finishes after the restart.
		doneBefore := a2.count("msg=done")
		s3.Restart(tt)
		b2 = startWorker(tt, "host-b-2", hosts[1])
		if err := waitExit(run1, 5*time.Minute); err != nil && !isExit(err, ExitNotReady) {
			tt.Fatalf("the portfolio run: %v", err)
		}
		if a2.count("msg=done")+b2.count("msg=done") <= doneBefore {
			tt.Error("no activity finished after the object store restarted")
		}
	}) {
		return
	}
	workers := []*proc{a1, b1, a2, b2}
	t.Run("nothing lost, nothing judged twice, the same as a local run", func(tt *testing.T) {
		doc1 = readDocument(tt, filepath.Join(client, "fleet-src"))
		sameAsLocal(tt, local1, doc1)
		for _, id := range judgedIDs(local1) {
			if n := lineCount(workers, "done", id); n > 1 {
				tt.Errorf("%s was judged %d times", id, n)
			}
		}
		for _, id := range append(slices.Clone(killedA), killedB...) {
			if a := attemptsOf(doc1, id); a < 2 {
				tt.Errorf("%s, killed mid-activity, records %d attempts, want at least 2", id, a)
			}
		}
		st, err := fleet.OpenStore(tt.Context(), storeURL)
		if err != nil {
			tt.Fatal(err)
		}
		defer func() { _ = st.(*fleet.BlobStore).Close() }()
		if n, err := st.(*fleet.BlobStore).Keys(tt.Context()); err != nil || n != judged {
			tt.Errorf("the store binds %d results (%v), want %d: one per judged service", n, err, judged)
		}
	})

	t.Run("the git server unreachable for a while", func(tt *testing.T) {
		refusedBefore := gate.Counts().Refused
		gate.Set(fleettest.GateRefuse)
		run2 := portfolioRun("late", late)
		ids := judgedIDs(local2)
		// Every service's fetch failed and was tried again.
		waitFor(tt, "every service of the second portfolio to be tried twice", func() bool {
			for _, id := range ids {
				if lineCount(workers, "start", id) < 2 {
					return false
				}
			}
			return true
		})
		gate.Set(fleettest.GatePass)
		if err := waitExit(run2, 5*time.Minute); err != nil && !isExit(err, ExitNotReady) {
			tt.Fatalf("the portfolio run: %v", err)
		}
		doc2 := readDocument(tt, filepath.Join(client, "fleet-late"))
		sameAsLocal(tt, local2, doc2)
		for _, id := range ids {
			if a := attemptsOf(doc2, id); a < 2 {
				tt.Errorf("%s records %d attempts, want at least 2 (its first fetch was refused)", id, a)
			}
		}
		if n := gate.Counts().Refused - refusedBefore; n < len(ids) {
			tt.Errorf("the git server refused %d fetches, want at least %d", n, len(ids))
		}
	})

	t.Run("the git server unreachable for good", func(tt *testing.T) {
		gate.Set(fleettest.GateRefuse)
		run3 := portfolioRun("gone", gone)
		if err := waitExit(run3, 5*time.Minute); err != nil && !isExit(err, ExitNotReady) {
			tt.Fatalf("the portfolio run: %v", err)
		}
		doc3 := readDocument(tt, filepath.Join(client, "fleet-gone"))
		if len(doc3.Services) != 1 {
			tt.Fatalf("%d services, want 1", len(doc3.Services))
		}
		e := doc3.Services[0]
		if e.State != portfolio.StateFailed || !strings.Contains(e.Reason, fleet.ErrTypeGitUnreachable) {
			tt.Errorf("%s: %s %q, want failed with %s", e.ID, e.State, e.Reason, fleet.ErrTypeGitUnreachable)
		}
		// The workers' logs are read as they come: the last attempt's
		// line may arrive after the run has ended.
		want := int(fleet.DefaultStatic.Attempts)
		waitFor(tt, fmt.Sprintf("the workers' logs to show %s's %d attempts", e.ID, want), func() bool { return lineCount(workers, "start", e.ID) >= want })
		if n := lineCount(workers, "start", e.ID); n != want {
			tt.Errorf("%s was tried %d times, want %d (the static tier's attempts)", e.ID, n, want)
		}
	})
	t.Logf("%d judged services; host a was killed in %v mid-fetch, host b in %v mid-bind; git gate %+v",
		judged, killedA, killedB, gate.Counts())
}
