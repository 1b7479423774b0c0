package nodenpm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/devimages"
	"github.com/codegenie/codegenie/internal/gatecontrol/client"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/runsc"
	"github.com/codegenie/codegenie/internal/strictjson"
	"github.com/codegenie/codegenie/internal/testbin"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// These tests build and boot real images in gVisor through a private
// gate-control child, with the local stand-in images behind a loopback
// registry mirror. They need root, runsc, buildah and the Node tarballs
// (scripts/setup.sh); they skip only where runsc cannot run, and say so.

type traceEnv struct {
	registry *devimages.Registry
	sandbox  *countingSandbox
	stop     func()
	mirrors  image.Mirrors
	bin      string // the codegenie binary gate-control runs as
}

// testServeArgs are the private gate-control's flags in these tests. Every
// spawn reserves its disk on the host when it starts and is refused when
// free space (less what live spawns were promised) is short; the default,
// 10 GiB, let only one or two spawns live at once on a machine with 20 GB
// free, and the subtests run two at a time, each with up to two spawns (a
// migration's gates build the original and the rewrite at once). No
// fixture writes near 4 GiB: the largest, apt-get install on the full
// node:22, copies its 645 MB base a few times.
var testServeArgs = []string{"--disk", strconv.Itoa(4 << 30)}

var (
	envOnce sync.Once
	env     *traceEnv
	envErr  error
	envSkip string
)

// countingSandbox counts spawns, to show cache hits never reach it.
type countingSandbox struct {
	inner  sandbox.Client
	spawns atomic.Int32
}

func (c *countingSandbox) Spawn(ctx context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	c.spawns.Add(1)
	return c.inner.Spawn(ctx, req)
}

func setupTrace(t testing.TB) *traceEnv {
	t.Helper()
	envOnce.Do(func() {
		stateDir, err := os.MkdirTemp("", "cgp")
		if err != nil {
			envErr = err
			return
		}
		defer os.RemoveAll(stateDir)
		if _, err := runsc.New(runsc.Config{StateDir: stateDir}); err != nil {
			var ue *sandbox.UnsupportedError
			if errors.As(err, &ue) {
				envSkip = ue.Error()
				return
			}
			envErr = err
			return
		}
		sets, err := devimages.Sets(devimages.DefaultInputs(), devimages.DefaultCacheDir())
		if err != nil {
			envErr = err
			return
		}
		reg, err := devimages.ServeSets(context.Background(), "127.0.0.1:0", sets)
		if err != nil {
			envErr = err
			return
		}
		bin, err := testbin.Build()
		if err != nil {
			envErr = err
			return
		}
		lazy := client.NewLazy(client.PrivateConfig{Executable: bin, Stderr: os.Stderr, ServeArgs: testServeArgs})
		mirrors, _ := image.ParseMirrors(reg.Mirrors())
		env = &traceEnv{registry: reg, sandbox: &countingSandbox{inner: lazy}, mirrors: mirrors, bin: bin,
			stop: func() { _ = lazy.Close(); _ = reg.Close(); testbin.Remove() }}
	})
	if envSkip != "" {
		t.Skipf("the gVisor backend cannot run here: %s", envSkip)
	}
	if envErr != nil {
		t.Fatal(envErr)
	}
	return env
}

func gatherTraced(t *testing.T, e *traceEnv, dir string, c *cache.Cache) *gather.Outcome {
	t.Helper()
	out, err := gather.Run(t.Context(), dir, gather.Options{
		Registry: builtin.NewRegistry(), Version: "test", Cache: c, Task: nodenpm.Task,
		Sandbox: e.sandbox, Images: &image.Remote{Mirrors: e.mirrors},
		RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host},
		// A maximum, not a window: the boot ends once it has answered
		// and settled, however slow the machine.
		BootFor: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func traceResult(t *testing.T, out *gather.Outcome) (probe.Result, *shelltrace.Facts) {
	t.Helper()
	for _, r := range out.Context.Probes {
		if r.Probe == shelltrace.Name {
			var f shelltrace.Facts
			if err := strictjson.Unmarshal(r.Facts, &f); err != nil {
				t.Fatal(err)
			}
			return r, &f
		}
	}
	t.Fatal("no shell_invocation_trace result")
	return probe.Result{}, nil
}

func bootShells(f *shelltrace.Facts) []shelltrace.Invocation {
	var out []shelltrace.Invocation
	for _, i := range f.Invocations {
		if i.Phase == sandbox.PhaseBoot {
			out = append(out, i)
		}
	}
	return out
}

// attemptedAtBoot checks a shell-less boot that tried a shell: the trace is
// complete and high, the attempt is an attempted child_process invocation
// whose command holds want, with its errno, and the boot's exit is code.
func attemptedAtBoot(want string, code int) func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
	return func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
		t.Helper()
		defer func() {
			if t.Failed() {
				b, _ := json.MarshalIndent(f, "", " ")
				t.Logf("facts: %s", b)
			}
		}()
		if r.Confidence != probe.High || !f.Complete {
			t.Fatalf("trace %s/%s (%s), complete %v: want high and complete", r.Confidence, r.Reason, r.Detail, f.Complete)
		}
		var found *shelltrace.Invocation
		for _, i := range bootShells(f) {
			if i.Attempted && strings.Contains(strings.Join(i.Argv, " "), want) {
				found = &i
				break
			}
		}
		if found == nil {
			t.Fatalf("no attempted boot shell running %q; boot shells: %+v", want, bootShells(f))
		}
		if found.Cause.Kind != "child_process" || found.Errno != "ENOENT" {
			t.Errorf("attempt %+v: want cause child_process and errno ENOENT", *found)
		}
		for _, ph := range f.Phases {
			if ph.Name == sandbox.PhaseBoot && ph.ExitCode != code {
				t.Errorf("boot exited %d, want %d", ph.ExitCode, code)
			}
		}
		if wantDetail := "node tried /bin/sh -c " + want; code > 0 && (!strings.HasPrefix(r.Detail, wantDetail) || !strings.HasSuffix(r.Detail, fmt.Sprintf(": ENOENT, then exited %d", code))) {
			t.Errorf("detail %q: want the boot failure attributed (%s…: ENOENT, then exited %d)", r.Detail, wantDetail, code)
		}
		if a.Verdict == probe.Ready {
			t.Errorf("verdict ready, want a blocker citing the attempt")
		}
		cited := false
		for _, bl := range a.Blockers {
			for _, ev := range bl.Evidence {
				if ev.Trace != nil && ev.Trace.Phase == sandbox.PhaseBoot && ev.Trace.PID == found.PID {
					cited = true
				}
			}
		}
		if !cited {
			t.Errorf("no blocker cites the trace event of pid %d: %+v", found.PID, a.Blockers)
		}
	}
}

func TestTraceFixtures(t *testing.T) {
	e := setupTrace(t)
	t.Cleanup(func() {})
	dir := func(name string) string { return filepath.Join("testdata", "trace", name) }
	type check func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment)
	hasBoot := func(kind string, pred func(shelltrace.Invocation) bool) check {
		return func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			t.Helper()
			if r.Confidence == probe.Low {
				t.Fatalf("trace low: %s %s", r.Reason, r.Detail)
			}
			for _, i := range bootShells(f) {
				if i.Cause.Kind == kind && (pred == nil || pred(i)) {
					return
				}
			}
			t.Errorf("no boot shell caused by %s; boot shells: %+v", kind, bootShells(f))
		}
	}
	tests := []struct {
		name  string
		check check
	}{
		{"npm-start", hasBoot("npm_script", func(i shelltrace.Invocation) bool {
			return strings.Join(i.Argv, " ") == "sh -c node server.js" && len(i.Ancestry) > 0 && strings.Contains(i.Ancestry[len(i.Ancestry)-1], "npm")
		})},
		{"shell-form-cmd", hasBoot("instruction", nil)},
		{"execsync-boot", hasBoot("child_process", func(i shelltrace.Invocation) bool {
			return strings.HasPrefix(i.Ancestry[len(i.Ancestry)-1], "node") && strings.Contains(strings.Join(i.Argv, " "), "echo hi")
		})},
		{"execfile-true", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Confidence != probe.High {
				t.Fatalf("trace %s: %s %s", r.Confidence, r.Reason, r.Detail)
			}
			if b := bootShells(f); len(b) != 0 {
				t.Errorf("boot shells %+v, want none", b)
			}
		}},
		{"sh-entrypoint", hasBoot("entrypoint_script", func(i shelltrace.Invocation) bool { return i.By == "shebang" })},
		{"builder-shells", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Confidence != probe.High {
				t.Fatalf("trace %s: %s %s", r.Confidence, r.Reason, r.Detail)
			}
			build := 0
			for _, i := range f.Invocations {
				if strings.HasPrefix(i.Phase, "build:builder:") {
					build++
				}
			}
			if build == 0 || len(bootShells(f)) != 0 {
				t.Errorf("invocations %+v: want shells in builder steps and none at boot", f.Invocations)
			}
			if a.Verdict != probe.Ready {
				t.Errorf("verdict %s (%+v), want ready: builder shells do not block", a.Verdict, a.Blockers)
			}
		}},
		{"build-fails", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Reason != shelltrace.ReasonBuildFailed || len(r.Evidence) == 0 || r.Evidence[0].Line != 4 {
				t.Errorf("got %s/%s %+v, want build_failed at Dockerfile:4", r.Confidence, r.Reason, r.Evidence)
			}
			if !strings.Contains(r.Detail, "exit 3") {
				t.Errorf("detail %q does not name the exit", r.Detail)
			}
		}},
		{"distroless-exec-startup", attemptedAtBoot("git rev-parse HEAD", 1)},
		{"distroless-dep-shell", attemptedAtBoot("git describe", 1)},
		{"distroless-exit-fast", attemptedAtBoot("echo done", 0)},
		// A shell 3 s after the service listens, with the default settle
		// period: the boot is still running when it starts. Exit -1: the
		// service was still up when its boot ended.
		{"delayed-shell", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			attemptedAtBoot("echo late", -1)(t, r, f, a)
			if f.Boot == nil || f.Boot.Ended != sandbox.BootAnsweredAndSettled || f.Boot.Port != 8080 || f.Boot.ToListenMS <= 0 ||
				f.Boot.ToFirstAnswerMS < f.Boot.ToListenMS {
				t.Errorf("boot %+v: want answered_and_settled on 8080, with the times to listen and to the first answer", f.Boot)
			}
			if !strings.Contains(r.Detail, "boot answered and settled after") {
				t.Errorf("detail %q does not say how the boot ended", r.Detail)
			}
		}},
		{"healthcheck-shell", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Confidence != probe.High {
				t.Fatalf("trace %s: %s %s", r.Confidence, r.Reason, r.Detail)
			}
			var hc *shelltrace.Invocation
			for _, i := range f.Invocations {
				if i.Phase == sandbox.PhaseHealthcheck {
					hc = &i
				}
			}
			if hc == nil || hc.Cause.Kind != "healthcheck" || hc.Cause.Line != 4 || !strings.Contains(strings.Join(hc.Argv, " "), "wget") {
				t.Fatalf("healthcheck shell %+v; want the HEALTHCHECK's sh -c wget, caused by Dockerfile:4 (invocations %+v)", hc, f.Invocations)
			}
			cited := false
			for _, bl := range a.Blockers {
				for _, ev := range bl.Evidence {
					cited = cited || (ev.Trace != nil && ev.Trace.Phase == sandbox.PhaseHealthcheck)
				}
			}
			if !cited {
				t.Errorf("no blocker cites the healthcheck's trace event: %+v", a.Blockers)
			}
		}},
		{"request-handler-shell", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Confidence != probe.High {
				t.Fatalf("trace %s: %s %s", r.Confidence, r.Reason, r.Detail)
			}
			var got *shelltrace.Invocation
			for _, i := range f.Invocations {
				if i.Phase == "request:/" && i.Attempted && strings.Contains(strings.Join(i.Argv, " "), "git rev-parse HEAD") {
					got = &i
				}
			}
			if got == nil || got.Cause.Kind != "child_process" || got.Errno != "ENOENT" {
				t.Fatalf("request shell %+v; want the handler's attempted sh -c git in request:/, ENOENT (invocations %+v, phases %+v)", got, f.Invocations, f.Phases)
			}
			if a.Verdict == probe.Ready {
				t.Error("verdict ready, though a request ran a shell")
			}
		}},
		{"image-unavailable", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			const ref = "gcr.io/distroless/nodejs99-debian13"
			if r.Reason != shelltrace.ReasonImageUnavailable || !strings.Contains(r.Detail, ref) || !strings.Contains(r.Detail, e.registry.Host+" (mirror of gcr.io)") {
				t.Errorf("got %s/%s %q, want image_unavailable naming %s and the mirror tried", r.Confidence, r.Reason, r.Detail, ref)
			}
			if len(r.Evidence) == 0 || r.Evidence[0].Line != 1 {
				t.Errorf("evidence %+v, want the FROM at Dockerfile:1", r.Evidence)
			}
		}},
		{"oversized-exec", func(t *testing.T, r probe.Result, f *shelltrace.Facts, a probe.Assessment) {
			if r.Confidence != probe.Low || r.Reason != shelltrace.ReasonTraceIncomplete {
				t.Errorf("got %s/%s, want low/trace_incomplete", r.Confidence, r.Reason)
			}
			if a.Verdict == probe.Ready {
				t.Error("an incomplete trace gave a ready verdict")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			out := gatherTraced(t, e, dir(tt.name), c)
			r, f := traceResult(t, out)
			t.Logf("%s: %s/%s in %s, %d execs, %d shells", tt.name, r.Confidence, r.Reason, time.Since(start).Round(time.Millisecond), f.Execs, len(f.Invocations))
			tt.check(t, r, f, out.Context.Assessments["distroless_readiness"])
		})
	}
}

// TestTraceCache: an unchanged repository is answered from the cache
// without touching the sandbox; a changed package.json or Dockerfile is not.
func TestTraceCache(t *testing.T) {
	e := setupTrace(t)
	src := filepath.Join("testdata", "trace", "npm-start")
	dir := t.TempDir()
	for _, f := range []string{"Dockerfile", "package.json", "server.js"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	before := e.sandbox.spawns.Load()
	gatherTraced(t, e, dir, c)
	if got := e.sandbox.spawns.Load() - before; got != 1 {
		t.Fatalf("cold gather spawned %d times, want 1", got)
	}
	gatherTraced(t, e, dir, c)
	if got := e.sandbox.spawns.Load() - before; got != 1 {
		t.Fatalf("warm gather touched the sandbox (%d spawns)", got)
	}
	for i, change := range []struct{ file, body string }{
		{"package.json", `{"name":"npm-start","scripts":{"start":"node server.js --port 8080"}}`},
		{"Dockerfile", "FROM node:22-slim\nWORKDIR /app\nCOPY . .\nENV PORT=8080\nCMD [\"npm\", \"start\"]\n"},
	} {
		if err := os.WriteFile(filepath.Join(dir, change.file), []byte(change.body), 0o644); err != nil {
			t.Fatal(err)
		}
		gatherTraced(t, e, dir, c)
		if got := e.sandbox.spawns.Load() - before; got != int32(2+i) {
			t.Fatalf("after changing %s: %d spawns, want %d", change.file, got, 2+i)
		}
	}
}

// TestTraceProgress: a traced gather whose context asks for progress gets
// the spawn's reports live through the private gate-control: the pull,
// the build's steps with their instructions, the boot's countdown and the
// shells seen, tagged with the probe and image, then done.
func TestTraceProgress(t *testing.T) {
	e := setupTrace(t)
	var mu sync.Mutex
	var reports []sandbox.Progress
	ctx := sandbox.WithProgress(t.Context(), func(p sandbox.Progress) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, p)
	})
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = gather.Run(ctx, filepath.Join("testdata", "trace", "npm-start"), gather.Options{
		Registry: builtin.NewRegistry(), Version: "test", Cache: c, Task: nodenpm.Task,
		Sandbox: e.sandbox, Images: &image.Remote{Mirrors: e.mirrors},
		RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host},
		BootFor:         3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	const src = shelltrace.Name + " Dockerfile"
	var kinds []string
	steps, ticks, shells := 0, 0, 0
	for _, p := range reports {
		if p.Source != src {
			t.Errorf("report %+v: source %q, want %q", p, p.Source, src)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != p.Kind.String() {
			kinds = append(kinds, p.Kind.String())
		}
		switch p.Kind {
		case sandbox.ProgressStep:
			if p.Steps == 0 || p.Instruction == "" {
				t.Errorf("step report %+v without its count or instruction", p)
			}
			steps++
		case sandbox.ProgressBoot:
			ticks++
		case sandbox.ProgressPhase, sandbox.ProgressShells, sandbox.ProgressDone:
		}
		shells = max(shells, p.Shells)
	}
	if steps == 0 || ticks == 0 || shells == 0 || kinds[len(kinds)-1] != "done" || reports[0].Phase != "pull:node:22-slim" {
		t.Errorf("reports %v (%d steps, %d boot ticks, %d shells); want a pull, steps, a countdown, shells, then done", kinds, steps, ticks, shells)
	}
}
