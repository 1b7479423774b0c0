package fleet

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/fleet/fleettest"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
)

// benchPortfolio generates synthetic repositories and returns the first n
// judged services (with the skipped ones among them) and their digests.
func benchPortfolio(b *testing.B, n int) ([]portfolio.Service, []string) {
	b.Helper()
	return benchPortfolioIn(b, b.TempDir(), n)
}

// benchPortfolioIn is benchPortfolio with the repositories in root.
func benchPortfolioIn(b *testing.B, root string, n int) ([]portfolio.Service, []string) {
	b.Helper()
	portfoliotest.Generate(b, root, n)
	sel, _ := builtin.NewRegistry().ImageSelector("distroless-migration")
	d := &portfolio.Discovery{Selector: sel, Workspace: b.TempDir()}
	all, err := d.Discover(b.Context(), []portfolio.Source{{Spec: root}})
	if err != nil {
		b.Fatal(err)
	}
	var out []portfolio.Service
	judged := 0
	for _, s := range all {
		if judged == n {
			break
		}
		if s.Skip == "" {
			judged++
		}
		out = append(out, s)
	}
	dg := portfolio.NewDigester(portfolio.Settings(benchOptions(nil), false, false))
	digests := make([]string, len(out))
	for i, s := range out {
		if digests[i], err = dg.Digest(s); err != nil {
			b.Fatal(err)
		}
	}
	return out, digests
}

func benchOptions(c *cache.Cache) gather.Options {
	return gather.Options{Registry: builtin.NewRegistry(), Version: "bench", Task: "distroless-migration", Cache: c}
}

func benchCache(b *testing.B) *cache.Cache {
	c, err := cache.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// runLocal is the local mode: the portfolio runner with workers static
// workers, a fresh store and a cold cache.
func runLocal(b *testing.B, ss []portfolio.Service, workers int) time.Duration {
	b.Helper()
	st, err := portfolio.OpenStore(filepath.Join(b.TempDir(), portfolio.StoreFile))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := &portfolio.Runner{Store: st, Options: benchOptions(benchCache(b)), StaticWorkers: workers}
	start := time.Now()
	if _, _, err := r.Run(b.Context(), ss); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// runTemporal is the same portfolio on Temporal: workers in-process static
// workers, one activity at a time each (as the local mode's workers), a
// fresh result store and a cold cache.
func runTemporal(b *testing.B, addr string, ss []portfolio.Service, digests []string, workers int) time.Duration {
	b.Helper()
	st, err := OpenFSStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return runTemporalWith(b, addr, st, ss, digests, workers, nil)
}

// benchFetch is how workers find the code when they fetch it: each
// service's source, and the workers' checkout cache.
type benchFetch struct {
	sources   []Source
	checkouts *Checkouts
}

// runTemporalWith is runTemporal with its results in st, which must be
// empty, and with the workers fetching the code when fetch is not nil.
func runTemporalWith(b *testing.B, addr string, st ResultStore, ss []portfolio.Service, digests []string, workers int, fetch *benchFetch) time.Duration {
	b.Helper()
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := benchCache(b)
	a := &Activities{Store: st, Runner: func(Settings) (*portfolio.Runner, error) {
		return &portfolio.Runner{Options: benchOptions(c)}, nil
	}}
	opts := StartOptions{}
	if fetch != nil {
		a.Checkouts, opts.Sources = fetch.checkouts, fetch.sources
	}
	var stops []func()
	for range workers {
		wc, err := client.Dial(client.Options{HostPort: addr, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		w := worker.New(wc, QueueStatic, worker.Options{MaxConcurrentActivityExecutionSize: 1})
		Register(w, portfolio.TierStatic, a)
		if err := w.Start(); err != nil {
			b.Fatal(err)
		}
		stops = append(stops, func() { w.Stop(); wc.Close() })
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	cl, err := client.Dial(client.Options{HostPort: addr, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	fc := &Client{Temporal: cl, Store: st}
	started, err := fc.Start(b.Context(), ss, digests, opts)
	if err != nil {
		b.Fatal(err)
	}
	var res Result
	if err := cl.GetWorkflow(b.Context(), started.ID, "").Get(b.Context(), &res); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	if ran, _ := a.Counts(); res.Count != len(ss) || int(ran) == 0 {
		b.Fatalf("the workflow judged %d of %d services (%d activities ran)", res.Count, len(ss), ran)
	}
	return elapsed
}

// BenchmarkFleet1000 runs 1,000 synthetic services through the static tier
// side by side: the local mode with three workers, and Temporal (a real dev
// server) with one and with three workers. Each case starts with a cold
// cache and an empty store. It reports each case's median wall time,
// Temporal's overhead per service against the local mode (goal: at most
// 20 ms), and the 1 → 3 workers speed-up.
func BenchmarkFleet1000(b *testing.B) {
	srv := fleettest.Start(b, b.TempDir())
	ss, digests := benchPortfolio(b, 1000)
	judged := 0
	for _, s := range ss {
		if s.Skip == "" {
			judged++
		}
	}
	var local, t1, t3 []time.Duration
	for b.Loop() {
		local = append(local, runLocal(b, ss, 3))
		t1 = append(t1, runTemporal(b, srv.Addr, ss, digests, 1))
		t3 = append(t3, runTemporal(b, srv.Addr, ss, digests, 3))
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	l, one, three := med(local), med(t1), med(t3)
	b.ReportMetric(l, "local3-ms")
	b.ReportMetric(one, "temporal1-ms")
	b.ReportMetric(three, "temporal3-ms")
	over := (three - l) / float64(judged)
	b.ReportMetric(over, "overhead-ms/service")
	b.ReportMetric(over/20, "ratio-to-20ms-goal")
	b.ReportMetric(one/three, "speedup-1-to-3")
}

// BenchmarkFleet1000S3 runs 1,000 synthetic services through the static
// tier on Temporal with three workers, side by side: results in a shared
// directory, and in a real S3 server on loopback (versitygw). Each case
// starts with a cold cache and an empty store. It reports each case's
// median wall time and the object store's overhead per service.
func BenchmarkFleet1000S3(b *testing.B) {
	srv := fleettest.Start(b, b.TempDir())
	s3 := fleettest.StartS3(b, b.TempDir())
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	ss, digests := benchPortfolio(b, 1000)
	judged := 0
	for _, s := range ss {
		if s.Skip == "" {
			judged++
		}
	}
	var dir, obj []time.Duration
	round := 0
	for b.Loop() {
		dir = append(dir, runTemporal(b, srv.Addr, ss, digests, 3))
		st, err := OpenStore(b.Context(), s3.URL(fmt.Sprintf("bench/%d", round)))
		if err != nil {
			b.Fatal(err)
		}
		obj = append(obj, runTemporalWith(b, srv.Addr, st, ss, digests, 3, nil))
		_ = st.(*BlobStore).Close()
		round++
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	d, o := med(dir), med(obj)
	b.ReportMetric(d, "dir3-ms")
	b.ReportMetric(o, "s3-3-ms")
	b.ReportMetric((o-d)/float64(judged), "s3-overhead-ms/service")
	b.ReportMetric(o/d, "s3/dir")
}

// benchSources makes a bare repository on git of each repository under
// root that holds a service of ss, and returns each service's source: its
// repository's git:// URL, the commit and its folder in the repository.
func benchSources(b *testing.B, git *fleettest.GitServer, root string, ss []portfolio.Service) []Source {
	b.Helper()
	commits := map[string]string{}
	out := make([]Source, len(ss))
	for i, s := range ss {
		if s.Skip != "" || s.Fail != "" {
			continue
		}
		rel, err := filepath.Rel(root, s.Dir)
		if err != nil || !filepath.IsLocal(rel) {
			b.Fatalf("service %s is not under %s", s.ID, root)
		}
		name, sub, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if _, ok := commits[name]; !ok {
			commits[name] = git.RepoFrom(b, name, filepath.Join(root, name))
		}
		out[i] = Source{URL: git.URL(name), Commit: commits[name], Subdir: sub}
	}
	return out
}

// warm fetches every source into co, four at a time.
func warm(b *testing.B, co *Checkouts, srcs []Source) {
	b.Helper()
	var uniq []Source
	seen := map[Source]bool{}
	for _, s := range srcs {
		s.Subdir = ""
		if !s.IsZero() && !seen[s] {
			seen[s] = true
			uniq = append(uniq, s)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(uniq))
	work := make(chan Source)
	for range 4 {
		wg.Go(func() {
			for s := range work {
				_, release, err := co.Acquire(b.Context(), s)
				if err != nil {
					errs <- fmt.Errorf("fetching %s: %w", s, err)
					continue
				}
				release()
			}
		})
	}
	for _, s := range uniq {
		work <- s
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if n := co.Fetches(); n != int64(len(uniq)) {
		b.Fatalf("%d fetches for %d repositories", n, len(uniq))
	}
}

// BenchmarkFleet1000Git runs 1,000 synthetic services through the static
// tier on Temporal with three workers, side by side, in three shapes: the
// shared-path mode (workers read the client's checkouts, results in a
// shared directory); workers that fetch the code from git URLs (a git
// daemon on loopback) into a warm checkout cache, results in the
// directory; and the same with results in a real S3 server on loopback
// (versitygw): the no-shared-filesystem shape. Each case starts with a
// cold content cache and an empty store. It reports each case's median
// wall time, the overhead per service of fetching and of the object store,
// and the whole shape's overhead against the goal of at most 30 ms per
// service above the shared-path mode.
func BenchmarkFleet1000Git(b *testing.B) {
	srv := fleettest.Start(b, b.TempDir())
	s3 := fleettest.StartS3(b, b.TempDir())
	git := fleettest.StartGit(b, b.TempDir())
	for _, kv := range s3.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	root := b.TempDir()
	ss, digests := benchPortfolioIn(b, root, 1000)
	judged := 0
	for _, s := range ss {
		if s.Skip == "" {
			judged++
		}
	}
	srcs := benchSources(b, git, root, ss)
	co := &Checkouts{Root: b.TempDir()}
	warm(b, co, srcs)
	fetched := co.Fetches()
	fetch := &benchFetch{sources: srcs, checkouts: co}

	var path, gitDir, gitS3 []time.Duration
	round := 0
	for b.Loop() {
		path = append(path, runTemporal(b, srv.Addr, ss, digests, 3))
		fs, err := OpenFSStore(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		gitDir = append(gitDir, runTemporalWith(b, srv.Addr, fs, ss, digests, 3, fetch))
		st, err := OpenStore(b.Context(), s3.URL(fmt.Sprintf("bench-git/%d", round)))
		if err != nil {
			b.Fatal(err)
		}
		gitS3 = append(gitS3, runTemporalWith(b, srv.Addr, st, ss, digests, 3, fetch))
		_ = st.(*BlobStore).Close()
		round++
	}
	if n := co.Fetches(); n != fetched {
		b.Fatalf("the warm checkout cache fetched %d more times", n-fetched)
	}
	med := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	p, g, o := med(path), med(gitDir), med(gitS3)
	n := float64(judged)
	b.ReportMetric(p, "path-dir-ms")
	b.ReportMetric(g, "git-dir-ms")
	b.ReportMetric(o, "git-s3-ms")
	b.ReportMetric((g-p)/n, "fetch-overhead-ms/service")
	b.ReportMetric((o-g)/n, "s3-overhead-ms/service")
	b.ReportMetric((o-p)/n, "overhead-ms/service")
	b.ReportMetric((o-p)/n/30, "ratio-to-30ms-goal")
	b.ReportMetric(o/p, "git-s3/path-dir")
}
