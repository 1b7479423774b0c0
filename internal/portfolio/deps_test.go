package portfolio

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/deps"
	"github.com/codegenie/codegenie/internal/deps/depstest"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

// sharedDeps is a local registry of the packages synthetic services share:
// dep-00 … dep-39 at 1.0.0, and dep-00 … dep-09 also at 2.0.0, which each
// dep-NN from 10 up depends on, so that services that pin a 1.0.0 at the
// top level get the 2.0.0 nested, as npm would lay them out.
type sharedDeps struct {
	reg  *depstest.Registry
	tgz  map[string][]byte // name@version → tarball
	urls map[string]string
}

const sharedN = 40

func depName(j int) string { return fmt.Sprintf("dep-%02d", j) }

func newSharedDeps(tb testing.TB) *sharedDeps {
	tb.Helper()
	s := &sharedDeps{reg: depstest.NewRegistry(tb), tgz: map[string][]byte{}, urls: map[string]string{}}
	add := func(j int, version string) {
		name := depName(j)
		var deps map[string]string
		files := map[string]string{}
		var requires strings.Builder
		if j >= 10 {
			deps = map[string]string{depName(j % 10): "^2.0.0"}
			fmt.Fprintf(&requires, "require(%q)\n", depName(j%10))
		}
		for k := range 8 {
			body := strings.Repeat(fmt.Sprintf("exports.f%d = function (a, b) { return a + b + %d }\n", k, j), 40)
			if k == 0 && j%4 == 0 {
				body += "const cp = require('child_process')\nexports.run = () => cp.execFile('git', ['status'])\n"
			}
			files[fmt.Sprintf("lib/m%d.js", k)] = body
			fmt.Fprintf(&requires, "require('./lib/m%d')\n", k)
		}
		files["index.js"] = requires.String()
		files["test/index.js"] = "require('child_process').execSync('npm test')\n"
		files["README.md"] = "# " + name + "\n"
		tgz := depstest.Package(tb, name, version, deps, files)
		s.tgz[name+"@"+version] = tgz
		s.urls[name+"@"+version] = s.reg.Add(name, version, tgz)
	}
	for j := range sharedN {
		add(j, "1.0.0")
	}
	for j := range 10 {
		add(j, "2.0.0")
	}
	return s
}

// pin makes the service at dir depend on 12 of the shared packages (which
// ones depends on i), with a package-lock.json v3 laid out as npm would
// and an .npmrc naming the local registry. It returns the name@version
// keys pinned.
func (s *sharedDeps) pin(tb testing.TB, dir string, i int) []string {
	tb.Helper()
	pjPath := filepath.Join(dir, "package.json")
	pj := map[string]any{}
	if data, err := os.ReadFile(pjPath); err == nil {
		_ = json.Unmarshal(data, &pj) // a fixture's broken package.json is replaced
	}
	rootDeps := map[string]string{}
	packages := map[string]any{}
	var pinned []string
	entry := func(name, version string) map[string]any {
		pinned = append(pinned, name+"@"+version)
		return map[string]any{"version": version, "resolved": s.urls[name+"@"+version], "integrity": depstest.Integrity(s.tgz[name+"@"+version])}
	}
	var top []int
	for k := range 12 {
		j := (i*7 + k*3) % sharedN
		if !slices.Contains(top, j) {
			top = append(top, j)
		}
	}
	for _, j := range top {
		rootDeps[depName(j)] = "^1.0.0"
		packages["node_modules/"+depName(j)] = entry(depName(j), "1.0.0")
	}
	for _, j := range top {
		if j < 10 {
			continue
		}
		inner := depName(j % 10)
		if _, taken := packages["node_modules/"+inner]; taken {
			packages["node_modules/"+depName(j)+"/node_modules/"+inner] = entry(inner, "2.0.0")
		} else {
			packages["node_modules/"+inner] = entry(inner, "2.0.0")
		}
	}
	pj["dependencies"] = rootDeps
	packages[""] = map[string]any{"name": "svc", "dependencies": rootDeps}
	lock, _ := json.Marshal(map[string]any{"name": "svc", "lockfileVersion": 3, "requires": true, "packages": packages})
	pjData, _ := json.Marshal(pj)
	for name, data := range map[string][]byte{"package.json": pjData, "package-lock.json": lock, ".npmrc": []byte("registry=" + s.reg.URL + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for _, stale := range []string{"yarn.lock", "pnpm-lock.yaml", "npm-shrinkwrap.json"} {
		_ = os.Remove(filepath.Join(dir, stale))
	}
	sort.Strings(pinned)
	return slices.Compact(pinned)
}

// pinAll pins dependencies in every judged service and returns the
// distinct name@version keys pinned.
func (s *sharedDeps) pinAll(tb testing.TB, ss []Service) []string {
	tb.Helper()
	var all []string
	for i, sv := range ss {
		if sv.Skip != "" || sv.Fail != "" {
			continue
		}
		all = append(all, s.pin(tb, filepath.Join(sv.Dir, filepath.FromSlash(sv.Context)), i)...)
	}
	sort.Strings(all)
	return slices.Compact(all)
}

// TestPortfolioDepsFetchEachOnce: a portfolio with --deps lockfile fetches
// each distinct package version once, however many services pin it, and
// scans it as installed.
func TestPortfolioDepsFetchEachOnce(t *testing.T) {
	ss := benchServices(t, 20)
	shared := newSharedDeps(t)
	distinct := shared.pinAll(t, ss)
	if len(distinct) < 20 {
		t.Fatalf("only %d distinct packages pinned; the test wants sharing across many", len(distinct))
	}
	st, err := OpenStore(filepath.Join(t.TempDir(), StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := benchOptions(t, openCache(t))
	o.Deps = &deps.Fetcher{Dir: t.TempDir()}
	r := &Runner{Store: st, Options: o}
	recs, _, err := r.Run(t.Context(), ss)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range distinct {
		name, version, _ := strings.Cut(key, "@")
		if n := shared.reg.Served(depstest.TarballPath(name, version)); n != 1 {
			t.Errorf("%s was fetched %d times, want once", key, n)
		}
	}
	if got := shared.reg.TotalServed(); got != len(distinct) {
		t.Errorf("%d tarballs fetched for %d distinct packages", got, len(distinct))
	}
	if o.Deps.Fetches() != int64(len(distinct)) {
		t.Errorf("the fetcher counts %d fetches, want %d", o.Deps.Fetches(), len(distinct))
	}
	// The dependencies were scanned as installed: a service's gather with
	// the same fetcher (nothing fetched again) finds their git calls.
	checked := false
	for i, sv := range ss {
		if sv.Skip != "" || sv.Fail != "" || recs[i].State != StateDone {
			continue
		}
		dir, so := r.serviceOptions(sv)
		out, err := gather.Run(t.Context(), dir, so)
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range out.Context.Probes {
			if res.Probe != childprocess.Name {
				continue
			}
			var f childprocess.Facts
			if err := json.Unmarshal(res.Facts, &f); err != nil {
				t.Fatal(err)
			}
			git := 0
			for _, fd := range f.Findings {
				if fd.Origin == childprocess.OriginDependency && fd.Binary == "git" {
					git++
				}
			}
			if f.DependenciesScanned < 12 || git == 0 {
				t.Errorf("%s: %d dependencies scanned, %d git calls found in them", sv.ID, f.DependenciesScanned, git)
			}
			checked = true
		}
		break
	}
	if !checked {
		t.Error("no service finished to check its child_process result")
	}
	if got := shared.reg.TotalServed(); got != len(distinct) {
		t.Errorf("a second gather fetched again: %d tarballs", got)
	}
}

// BenchmarkPortfolioDeps200 runs 200 synthetic services that share
// dependencies through the static tier, alternately without dependency
// scanning and with --deps lockfile over a warm dependency cache (every
// tarball already fetched and unpacked), each run with a fresh content
// cache and store. Goal: with-deps ≤ 2 × without, medians of the pairs.
func BenchmarkPortfolioDeps200(b *testing.B) {
	ss := benchServices(b, 200)
	shared := newSharedDeps(b)
	distinct := shared.pinAll(b, ss)
	depDir := b.TempDir()
	warm := &deps.Fetcher{Dir: depDir}
	for _, sv := range ss {
		if sv.Skip == "" && sv.Fail == "" {
			if _, err := warm.Install(b.Context(), filepath.Join(sv.Dir, filepath.FromSlash(sv.Context))); err != nil {
				b.Fatal(err)
			}
		}
	}
	if warm.Fetches() != int64(len(distinct)) {
		b.Fatalf("warming fetched %d tarballs for %d distinct packages", warm.Fetches(), len(distinct))
	}
	run := func(f *deps.Fetcher) time.Duration {
		out := b.TempDir()
		st, err := OpenStore(filepath.Join(out, StoreFile))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		o := benchOptions(b, openCache(b))
		o.Deps = f
		r := &Runner{Store: st, Options: o}
		start := time.Now()
		recs, _, err := r.Run(b.Context(), ss)
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteOutputs(out, st, NewDocument("bench", "static", time.Now(), recs)); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var without, with []time.Duration
	served := shared.reg.TotalServed()
	b.ResetTimer()
	for b.Loop() {
		without = append(without, run(nil))
		with = append(with, run(&deps.Fetcher{Dir: depDir}))
	}
	if shared.reg.TotalServed() != served {
		b.Fatalf("a warm run fetched %d tarballs", shared.reg.TotalServed()-served)
	}
	mw, md := median(without), median(with)
	b.ReportMetric(float64(mw.Milliseconds()), "without-deps-ms")
	b.ReportMetric(float64(md.Milliseconds()), "with-deps-ms")
	b.ReportMetric(float64(md)/float64(mw), "ratio")
	b.ReportMetric(float64(md)/float64(mw)/2, "ratio-to-2x-goal")
	b.ReportMetric(float64(len(distinct)), "distinct-packages")
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[len(s)/2]
}
