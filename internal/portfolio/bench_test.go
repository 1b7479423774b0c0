package portfolio

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/portfolio/portfoliotest"
)

// benchServices generates synthetic repositories and returns the first n
// judged services (and the skipped ones among them).
func benchServices(b testing.TB, n int) []Service {
	b.Helper()
	root := b.TempDir()
	portfoliotest.Generate(b, root, n)
	sel, _ := builtin.NewRegistry().ImageSelector("distroless-migration")
	d := &Discovery{Selector: sel, Workspace: b.TempDir()}
	all, err := d.Discover(b.Context(), []Source{{Spec: root}})
	if err != nil {
		b.Fatal(err)
	}
	var out []Service
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
	if judged < n {
		b.Fatalf("only %d judged services", judged)
	}
	return out
}

func benchOptions(b testing.TB, c *cache.Cache) gather.Options {
	return gather.Options{Registry: builtin.NewRegistry(), Version: "bench", Task: "distroless-migration", Cache: c}
}

func openCache(b testing.TB) *cache.Cache {
	c, err := cache.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// portfolioRun is what the command does after discovery: run, summarise,
// write every output.
func portfolioRun(b *testing.B, out string, c *cache.Cache, ss []Service, workers int) {
	st, err := OpenStore(filepath.Join(out, StoreFile))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := &Runner{Store: st, Options: benchOptions(b, c), StaticWorkers: workers}
	recs, _, err := r.Run(b.Context(), ss)
	if err != nil {
		b.Fatal(err)
	}
	if err := WriteOutputs(out, st, NewDocument("bench", "static", time.Now(), recs)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPortfolioCold200 is 200 services through the static tier with an
// empty cache and an empty store. Goal: 10 s on 2 cores.
func BenchmarkPortfolioCold200(b *testing.B) {
	ss := benchServices(b, 200)
	for b.Loop() {
		b.StopTimer()
		out, c := b.TempDir(), openCache(b)
		b.StartTimer()
		portfolioRun(b, out, c, ss, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)/10, "ratio-to-10s-goal")
}

// BenchmarkPortfolioWarmRerun200 reruns a finished portfolio of 200
// services: every service is answered by its record, and the outputs are
// written again. Goal: 1 s.
func BenchmarkPortfolioWarmRerun200(b *testing.B) {
	ss := benchServices(b, 200)
	out, c := b.TempDir(), openCache(b)
	portfolioRun(b, out, c, ss, 0)
	for b.Loop() {
		portfolioRun(b, out, c, ss, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)/1, "ratio-to-1s-goal")
}

// BenchmarkPortfolioOverhead measures, one service at a time with a warm
// cache, a bare in-process gather.Run per service against the portfolio
// runner over the same services (a fresh store, so each one runs through
// the pipeline and its record and SARIF log are stored). Goal: the
// difference is at most 2 ms per service.
func BenchmarkPortfolioOverhead(b *testing.B) {
	ss := benchServices(b, 200)
	c := openCache(b)
	portfolioRun(b, b.TempDir(), c, ss, 1) // warm the cache
	opts := benchOptions(b, c)
	var bare, pf time.Duration
	judged := 0
	for _, s := range ss {
		if s.Skip == "" {
			judged++
		}
	}
	for b.Loop() {
		start := time.Now()
		for _, s := range ss {
			if s.Skip != "" {
				continue
			}
			o := opts
			o.Dockerfile, o.Target = s.Dockerfile, s.Target
			if s.Context != "." {
				o.Dockerfile = s.Dockerfile[len(s.Context)+1:]
			}
			if _, err := gather.Run(b.Context(), filepath.Join(s.Dir, s.Context), o); err != nil {
				b.Fatal(err)
			}
		}
		bare += time.Since(start)
		b.StopTimer()
		out := b.TempDir()
		b.StartTimer()
		start = time.Now()
		portfolioRun(b, out, c, ss, 1)
		pf += time.Since(start)
	}
	n := float64(b.N * judged)
	bareMS, pfMS := float64(bare.Microseconds())/1000/n, float64(pf.Microseconds())/1000/n
	b.ReportMetric(bareMS, "bare-ms/service")
	b.ReportMetric(pfMS, "portfolio-ms/service")
	b.ReportMetric(pfMS-bareMS, "overhead-ms/service")
	b.ReportMetric((pfMS-bareMS)/2, "ratio-to-2ms-goal")
}
