package nodenpm_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gatecontrol/client"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/pipeline"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/internal/testbin"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// TestMain removes the synthetic repository the benchmarks share.
func TestMain(m *testing.M) {
	code := m.Run()
	// The shared trace environment's gate-control removes its folder
	// (key, audit log, runsc state) only when stopped: exiting without
	// stopping it left one under the temporary folder per test run.
	if env != nil {
		env.stop()
	}
	testbin.Remove()
	if synthDir != "" {
		os.RemoveAll(synthDir)
	}
	os.Exit(code)
}

var (
	synthOnce sync.Once
	synthDir  string
	synthErr  error
)

// synthRepo writes a service of 50,000 files, most of them under
// node_modules (1,000 packages of 48 files, some shelling out, some naming
// child_process only in comments), once per test binary.
func synthRepo(b *testing.B) string {
	b.Helper()
	synthOnce.Do(func() {
		synthDir, synthErr = os.MkdirTemp("", "codegenie-synth-")
		if synthErr != nil {
			return
		}
		write := func(rel, body string) {
			if synthErr != nil {
				return
			}
			p := filepath.Join(synthDir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				synthErr = err
				return
			}
			synthErr = os.WriteFile(p, []byte(body), 0o644)
		}
		deps := ""
		for i := range 1000 {
			name := fmt.Sprintf("pkg%04d", i)
			if i < 200 {
				deps += fmt.Sprintf("%q: \"1.0.0\",", name)
			}
			write("node_modules/"+name+"/package.json", fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js","dependencies":{"pkg%04d":"1"}}`, name, (i+1)%1000))
			for j := range 47 {
				body := fmt.Sprintf("'use strict';\nmodule.exports = function f%d(a, b) { return a + b + %d; };\n", j, i)
				switch {
				case j == 0 && i%50 == 0:
					body += "const { execSync } = require('child_process');\nexports.arch = () => execSync('getconf LONG_BIT').toString();\n"
				case j == 1 && i%10 == 0:
					body += "// child_process is not used here; this comment must not count\n"
				}
				write(fmt.Sprintf("node_modules/%s/lib/f%02d.js", name, j), body)
			}
		}
		for i := range 1000 {
			write(fmt.Sprintf("src/module%04d.js", i), fmt.Sprintf("export const v%d = %d;\n", i, i))
		}
		write("package.json", `{"name":"synth","scripts":{"start":"node src/index.js"},"dependencies":{`+deps+`"z":"1"}}`)
		write("package-lock.json", "{}")
		write("src/index.js", "require('node:child_process').execFileSync('/bin/true');\n")
		write("Dockerfile", "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\nRUN npm ci\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /app /app\nCMD [\"src/index.js\"]\n")
	})
	if synthErr != nil {
		b.Fatal(synthErr)
	}
	return synthDir
}

// BenchmarkLightProbesCold50k runs every light probe, uncached, on the
// synthetic 50,000-file repository: a new Repo each time, so the file walk
// is counted. Issue 3's target is 1 s on this 2-core machine.
//
//	go test -run '^$' -bench LightProbesCold50k -benchtime 5x ./plugins/distroless-migration--node--npm/
func BenchmarkLightProbesCold50k(b *testing.B) {
	dir := synthRepo(b)
	reg := staticRegistry()
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cold-cache" // hashing declared inputs and writing entries
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p := &pipeline.Pipeline{Registry: reg, Version: "bench"}
				if cached {
					b.StopTimer()
					c, err := cache.Open(b.TempDir())
					if err != nil {
						b.Fatal(err)
					}
					p.Cache = c
					b.StartTimer()
				}
				repo, err := probe.OpenRepo(dir)
				if err != nil {
					b.Fatal(err)
				}
				recs, err := p.Run(b.Context(), repo, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if r.Result.Confidence == probe.Low {
						b.Fatalf("%s: %s %s", r.Result.Probe, r.Result.Reason, r.Result.Detail)
					}
				}
			}
		})
	}
	// warm: every result and every input digest is cached; the run lists
	// the repository, stats each declared input and reads the entries.
	b.Run("warm", func(b *testing.B) {
		c, err := cache.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		p := &pipeline.Pipeline{Registry: reg, Version: "bench", Cache: c}
		time.Sleep(cache.RacyWindow) // let the files age out of the racy window
		for range 2 {
			repo, err := probe.OpenRepo(dir)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Run(b.Context(), repo, nil); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			repo, err := probe.OpenRepo(dir)
			if err != nil {
				b.Fatal(err)
			}
			recs, err := p.Run(b.Context(), repo, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range recs {
				if !r.CacheHit {
					b.Fatalf("%s missed the cache", r.Result.Probe)
				}
			}
		}
	})
}

// BenchmarkTraceTwoStage measures the traced two-stage fixture
// (testdata/trace/builder-shells: a builder RUN step, a distroless final
// stage, a server that keeps listening) with the default readiness-driven
// boot, four ways side by side in each iteration:
//
//   - cold: a whole gather, from a fresh private gate-control and an empty
//     shared base-image store (so both bases are pulled) to the verdict;
//   - cold-fixed: the same with the boot of old, a fixed 10 s window (a
//     settle period as long as the maximum, so the boot runs to it);
//   - warm-bases: the same with the bases already in the store (a fresh
//     content cache: everything else is built again); its build part is
//     its pull and build phases (cold-build sums the two pulls, which run
//     at once, so it overstates the cold build's wall time);
//   - runc-bud: the baseline, an untraced buildah bud of the same
//     Dockerfile with runc as the OCI runtime and buildah's default of no
//     layer per step, in an empty private store holding only the already
//     pulled bases.
//
// It reports the medians and the ratios the issues set goals for
// (cold ≤ 8 s; build part ≤ 1.3× runc-bud):
//
//	go test -run '^$' -bench TraceTwoStage -benchtime 3x ./plugins/distroless-migration--node--npm/
func BenchmarkTraceTwoStage(b *testing.B) {
	e := setupTrace(b)
	src := filepath.Join("testdata", "trace", "builder-shells")
	bin := e.bin
	// fixed runs the boot for the old fixed 10 s window: a settle period
	// as long as the maximum is never reached first.
	gatherOnce := func(store string, fixed bool) (time.Duration, time.Duration, *shelltrace.Facts) {
		b.Setenv(runsc.EnvBaseStore, store)
		boot, settle := time.Duration(0), time.Duration(0)
		if fixed {
			boot, settle = 10*time.Second, 10*time.Second
		}
		lazy := client.NewLazy(client.PrivateConfig{Executable: bin, Stderr: io.Discard})
		defer lazy.Close()
		c, err := cache.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		out, err := gather.Run(b.Context(), src, gather.Options{
			Registry: builtin.NewRegistry(), Version: "bench", Cache: c, Task: nodenpm.Task,
			Sandbox: lazy, Images: &image.Remote{Mirrors: e.mirrors},
			RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host},
			BootFor:         boot, Settle: settle,
		})
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		var f *shelltrace.Facts
		for _, r := range out.Context.Probes {
			if r.Probe == shelltrace.Name {
				f = new(shelltrace.Facts)
				if err := strictjson.Unmarshal(r.Facts, f); err != nil {
					b.Fatal(err)
				}
				if r.Confidence != probe.High {
					b.Fatalf("trace %s/%s: %s", r.Confidence, r.Reason, r.Detail)
				}
			}
		}
		if f == nil {
			b.Fatal("no trace result")
		}
		var build time.Duration
		for _, p := range f.Phases {
			if strings.HasPrefix(p.Name, "pull:") || (strings.HasPrefix(p.Name, "build:") && !strings.Contains(p.Name, ":step ")) {
				build += time.Duration(p.DurationMS) * time.Millisecond
			}
		}
		return d, build, f
	}
	var cold, coldFixed, warm, warmBuild, coldBuild, bud []time.Duration
	for i := 0; b.Loop(); i++ {
		store := b.TempDir()
		for k := range 4 {
			// Each case starts with no dirty pages of the one before: the
			// earlier cases write gigabytes (vfs stores), whose writeback
			// would otherwise land on whichever case runs next.
			b.StopTimer()
			syscall.Sync()
			b.StartTimer()
			switch (i + k) % 4 {
			case 0:
				d, build, _ := gatherOnce(filepath.Join(store, "cold"), false)
				cold, coldBuild = append(cold, d), append(coldBuild, build)
			case 3:
				d, _, _ := gatherOnce(filepath.Join(store, "cold-fixed"), true)
				coldFixed = append(coldFixed, d)
			case 1:
				// Bases already pulled: a first gather fills the store,
				// untimed.
				ws := filepath.Join(store, "warm")
				gatherOnce(ws, false)
				d, build, _ := gatherOnce(ws, false)
				warm, warmBuild = append(warm, d), append(warmBuild, build)
			case 2:
				bud = append(bud, runcBud(b, e, src))
			}
		}
		b.StopTimer()
		if err := os.RemoveAll(store); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(medianD(cold)), "cold-verdict-p50-ms")
	b.ReportMetric(ms(medianD(coldBuild)), "cold-build-p50-ms")
	b.ReportMetric(ms(medianD(warm)), "warm-bases-verdict-p50-ms")
	b.ReportMetric(ms(medianD(warmBuild)), "warm-bases-build-p50-ms")
	b.ReportMetric(ms(medianD(bud)), "runc-bud-p50-ms")
	b.ReportMetric(float64(medianD(warmBuild))/float64(medianD(bud)), "build/runc-bud")
	b.ReportMetric(ms(medianD(coldFixed)), "cold-fixed-10s-window-p50-ms")
	b.ReportMetric(float64(medianD(cold))/float64(medianD(coldFixed)), "cold/cold-fixed-window")
	b.ReportMetric(float64(medianD(cold))/float64(8*time.Second), "cold/8s")
	b.Logf("cold %v (build %v); cold with the fixed 10 s window %v; warm bases %v (build %v); runc bud %v", cold, coldBuild, coldFixed, warm, warmBuild, bud)
	b.ReportMetric(0, "ns/op")
}

func medianD(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// runcBud times the baseline: buildah bud of the fixture under runc, no
// trace, in a private store whose bases were pulled first (untimed), in a
// private mount namespace (buildah's blob info cache stays private).
func runcBud(b *testing.B, e *traceEnv, src string) time.Duration {
	b.Helper()
	dir := b.TempDir()
	for _, d := range []string{"s", "rr", "c", "t"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	conf := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "s"), filepath.Join(dir, "rr"))
	regs := fmt.Sprintf("unqualified-search-registries = [\"docker.io\"]\n[[registry]]\nlocation = \"docker.io\"\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n[[registry]]\nlocation = \"gcr.io\"\n[[registry.mirror]]\nlocation = %q\ninsecure = true\n", e.registry.Host, e.registry.Host)
	files := map[string]string{"storage.conf": conf, "registries.conf": regs, "policy.json": `{"default":[{"type":"insecureAcceptAnything"}]}`}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	buildah := func(args ...string) *exec.Cmd {
		script := `mount --bind "$1" /var/lib/containers/cache; shift; exec buildah "$@"`
		full := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", filepath.Join(dir, "c"),
			"--registries-conf", filepath.Join(dir, "registries.conf")}, args...)
		cmd := exec.Command("unshare", full...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "TMPDIR=" + filepath.Join(dir, "t"),
			"CONTAINERS_STORAGE_CONF=" + filepath.Join(dir, "storage.conf")}
		return cmd
	}
	for _, base := range []string{"node:22", "gcr.io/distroless/nodejs22-debian13"} {
		if out, err := buildah("pull", "--signature-policy", filepath.Join(dir, "policy.json"), "--quiet", base).CombinedOutput(); err != nil {
			b.Fatalf("pulling %s: %v\n%s", base, err, out)
		}
	}
	cmd := buildah("bud", "--signature-policy", filepath.Join(dir, "policy.json"), "--isolation=oci", "--runtime=runc",
		"--network=none", "--format=docker", "--pull=false", "-f", filepath.Join(src, "Dockerfile"), "-t", "localhost/bench", src)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("buildah bud under runc: %v\n%s", err, out)
	}
	return d
}

// BenchmarkMigrate measures `codegenie migrate` on the npm-start service
// (testdata/migrate-e2e/npm-start) and on the bundled example
// (examples/hello-service), each with the readiness-driven boot and with
// the fixed 10 s window of old, side by side: the wall time, split into
// gather, recipe and gates, and the share of the gates that the original
// image's build and boot takes.
//
//	go test -run '^$' -bench Migrate -benchtime 3x ./plugins/distroless-migration--node--npm/
func BenchmarkMigrate(b *testing.B) {
	e := setupTrace(b)
	for _, svc := range []struct{ name, dir string }{
		{"npm-start", filepath.Join("testdata", "migrate-e2e", "npm-start")},
		{"hello-service", filepath.Join("..", "..", "examples", "hello-service")},
	} {
		b.Run(svc.name, func(b *testing.B) {
			// Side by side: the two modes alternate within each iteration.
			var total, fixed, gatherD, recipeD, gatesD, origD []time.Duration
			for i := 0; b.Loop(); i++ {
				for k := range 2 {
					o := migrateOptions(e)
					if (i+k)%2 == 1 {
						o.BootFor, o.Settle = 10*time.Second, 10*time.Second
					}
					start := time.Now()
					m, err := migrate.Run(b.Context(), svc.dir, o)
					if err != nil {
						b.Fatal(err)
					}
					d := time.Since(start)
					if !m.Migrated {
						b.Fatalf("not migrated: %+v", m.Gates)
					}
					if (i+k)%2 == 1 {
						fixed = append(fixed, d)
						continue
					}
					total = append(total, d)
					ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
					gatherD, recipeD = append(gatherD, ms(m.Timings.GatherMS)), append(recipeD, ms(m.Timings.RecipeMS))
					gatesD, origD = append(gatesD, ms(m.Timings.GatesMS)), append(origD, ms(m.Timings.OriginalMS))
				}
			}
			b.StopTimer()
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(medianD(total)), "migrate-p50-ms")
			b.ReportMetric(ms(medianD(fixed)), "migrate-fixed-10s-window-p50-ms")
			b.ReportMetric(float64(medianD(total))/float64(medianD(fixed)), "migrate/fixed-window")
			b.ReportMetric(ms(medianD(gatherD)), "gather-p50-ms")
			b.ReportMetric(ms(medianD(recipeD)), "recipe-p50-ms")
			b.ReportMetric(ms(medianD(gatesD)), "gates-p50-ms")
			b.ReportMetric(float64(medianD(origD))/float64(medianD(gatesD)), "original/gates")
			b.ReportMetric(0, "ns/op")
			b.Logf("readiness %v; fixed 10 s window %v", total, fixed)
		})
	}
}
