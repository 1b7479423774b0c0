package runsc

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/devimages"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
	"github.com/codegenie/codegenie/internal/trace"
)

// devRegistry serves the stand-in base images (node:22, node:22-slim,
// gcr.io/distroless/nodejs22-debian13) once per test binary: building them
// takes several seconds. TestMain stops it.
var devRegistry struct {
	once sync.Once
	host string
	stop func()
	err  error
	took time.Duration
}

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == ShimName {
		// A build with egress runs this binary as its runtime (newBackend).
		fmt.Fprintln(os.Stderr, RunRuntimeShim(os.Args))
		os.Exit(1)
	}
	if len(os.Args) > 2 && slices.Equal(os.Args[1:3], testStepHookArgs) {
		// runsc runs this binary as a build step's hook (newBackend).
		if err := RunStepHook(os.Args[3:], os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv(ownerEnv); mode != "" {
		// A re-executed test binary that owns a backend until it is
		// killed (TestKill9OwnerLeavesNothing).
		os.Exit(runOwner(mode))
	}
	code := m.Run()
	if devRegistry.stop != nil {
		devRegistry.stop()
	}
	os.Exit(code)
}

// mirrors returns registry mirrors that send docker.io and gcr.io to the
// stand-in registry. The images come from the tarballs that
// scripts/setup.sh fetches; without them the test fails (CI runs setup).
// Under the race detector a helper process (testdata/devregistry) builds
// and serves them, since an instrumented build takes minutes.
func mirrors(t testing.TB) map[string]string {
	t.Helper()
	devRegistry.once.Do(func() {
		start := time.Now()
		if raceEnabled {
			devRegistry.host, devRegistry.stop, devRegistry.err = serveOutOfProcess()
		} else {
			devRegistry.host, devRegistry.stop, devRegistry.err = serveInProcess()
		}
		devRegistry.took = time.Since(start)
	})
	if devRegistry.err != nil {
		t.Fatalf("stand-in images: %v", devRegistry.err)
	}
	t.Logf("stand-in registry %s (built and served in %v)", devRegistry.host, devRegistry.took.Round(time.Millisecond))
	return map[string]string{"docker.io": devRegistry.host, "gcr.io": devRegistry.host}
}

func serveInProcess() (string, func(), error) {
	sets, err := devimages.Sets(devimages.DefaultInputs(), devimages.DefaultCacheDir())
	if err != nil {
		return "", nil, err
	}
	reg, err := devimages.ServeSets(context.Background(), "127.0.0.1:0", sets)
	if err != nil {
		return "", nil, err
	}
	return reg.Host, func() { _ = reg.Close() }, nil
}

// serveOutOfProcess builds testdata/devregistry (not instrumented) and runs
// it until stop closes its stdin.
func serveOutOfProcess() (string, func(), error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "cgdevreg")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "devregistry")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/devregistry").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building testdata/devregistry: %w\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	stop := func() {
		_ = stdin.Close()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	host, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("devregistry printed no host: %w", err)
	}
	return strings.TrimSpace(host), stop, nil
}

// workspace writes files into a fresh directory.
func workspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The two-stage fixture: a builder stage with a shell-form RUN, and an
// npm start service on node:22-slim.
const (
	twoStageDockerfile = `FROM node:22 AS builder
RUN echo building && mkdir -p /out && echo x > /out/x

FROM node:22-slim
COPY --from=builder /out /out
WORKDIR /app
COPY package.json server.js ./
CMD ["npm","start"]
`
	npmPackage = `{"name":"fixture","version":"1.0.0","private":true,"scripts":{"start":"node server.js"}}
`
	listeningServer = `require('http').createServer((q, r) => r.end('ok')).listen(8080, () => console.log('listening'));
`
)

func buildRequest(ws string, m map[string]string, targets ...string) sandbox.SpawnRequest {
	return sandbox.SpawnRequest{
		Role:         sandbox.RoleProbe,
		Workspace:    sandbox.Workspace{Dir: ws},
		CaptureTrace: true,
		Timeout:      3 * time.Minute,
		Build: &sandbox.BuildSpec{
			Dockerfile: "Dockerfile", Targets: targets, Boot: true, BootFor: 3 * time.Minute, RegistryMirrors: m,
		},
	}
}

// spawnTraced runs req on b and fails the test unless the build and boot
// succeeded with a complete trace.
func spawnTraced(ctx context.Context, t *testing.T, b *Backend, req sandbox.SpawnRequest) sandbox.Result {
	t.Helper()
	res, err := b.Spawn(ctx, req)
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	if res.ExitCode != 0 || !res.TraceComplete {
		dumpTrace(t, res.Trace)
		t.Fatalf("exit %d, trace complete %v (%v); want 0 and true; phases %+v", res.ExitCode, res.TraceComplete, res.TraceGaps, res.Phases)
	}
	return res
}

func phaseNames(ps []sandbox.PhaseResult) []string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return names
}

func phase(ps []sandbox.PhaseResult, name string) sandbox.PhaseResult {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return sandbox.PhaseResult{}
}

// logResult logs what a build spawn did, for the timings and for failures.
func logResult(t *testing.T, res sandbox.Result) {
	t.Helper()
	t.Logf("spawn took %v, exit %d, trace complete %v, %d events", res.Duration.Round(time.Millisecond), res.ExitCode, res.TraceComplete, len(res.Trace))
	for _, p := range res.Phases {
		t.Logf("phase %-22s exit %3d failed %-5v timed out %-5v %v", p.Name, p.ExitCode, p.Failed, p.TimedOut, p.Duration.Round(time.Millisecond))
	}
}

func dumpTrace(t *testing.T, events []trace.Event) {
	t.Helper()
	for i, e := range events {
		t.Logf("%3d %-12s %-22s pid %3d ppid %3d %s %q interp %q", i, e.Kind, e.Phase, e.PID, e.PPID, e.Binary, e.Argv, e.Interp)
	}
}

// checkFacts checks the facts of a build spawn's booted image: whole, of
// a few layers and some MB, with /bin/sh or without.
func checkFacts(t *testing.T, res sandbox.Result, shell bool) {
	t.Helper()
	f := res.ImageFacts
	if f == nil {
		t.Fatal("the spawn reported no image facts")
	}
	t.Logf("image facts: %d bytes, %d layers, %d packages %v, setuid %d %v, shells %d %v",
		f.Bytes, f.Layers, f.Packages, f.PackageDBs, f.SetuidCount, f.Setuid, f.ShellCount, f.Shells)
	if f.Incomplete != "" || f.Layers < 2 || f.Bytes < 1<<20 {
		t.Errorf("facts %+v; want whole, at least 2 layers and 1 MiB", *f)
	}
	// /usr/bin/sh where /bin is a link to usr/bin (merged /usr, as on
	// Debian since bookworm): the walk does not follow links.
	sh := slices.ContainsFunc(f.Shells, func(s sandbox.Shell) bool { return s.Path == "/bin/sh" || s.Path == "/usr/bin/sh" })
	if sh != shell || (f.ShellCount == 0) == shell {
		t.Errorf("shells %v (%d); want /bin/sh %v", f.Shells, f.ShellCount, shell)
	}
}

// TestBuildTwoStage builds the final target in one buildah run, which
// builds the builder stage too (each step attributed to its stage from the
// build output), and boots npm start.
func TestBuildTwoStage(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	// Its page carries an ID that changes with each boot, as a build's
	// ID changes with each build, and the time: the body's digest
	// changes, its shape does not.
	server := "const id = 'b' + Date.now().toString(36) + 'x9'\n" +
		"require('http').createServer((q, r) => r.end('<p data-build=\"' + id + '\" data-up=\"' + process.uptime() + '\">ok</p> function')).listen(8080, () => console.log('listening'));\n"
	ws := workspace(t, map[string]string{"Dockerfile": twoStageDockerfile, "package.json": npmPackage, "server.js": server})
	var mu sync.Mutex
	var reports []sandbox.Progress
	ctx := sandbox.WithProgress(t.Context(), func(p sandbox.Progress) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, p)
	})
	res := spawnTraced(ctx, t, b, buildRequest(ws, m, ""))
	checkProgress(t, reports)
	// The image declares no port: the service is found listening all the
	// same, and asked for / (before, its boot ran to the no-port minimum
	// with no request).
	if diff := cmp.Diff([]string{"pull:node:22", "pull:node:22-slim", "build:builder:step 2", "build:1", "boot", "request:/"}, phaseNames(res.Phases)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if r := phase(res.Phases, "request:/"); r.Failed || r.Response == nil || r.Response.Status != 200 {
		t.Errorf("request phase %+v; want / answered 200", r)
	} else if want := fmt.Sprintf("%x", sha256.Sum256([]byte("<p data-build=\"\x00\" data-up=\"\x00.\x00\">ok</p> function"))); r.Response.ShapeSHA256 != want || r.Response.BodySHA256 == want {
		t.Errorf("response %+v; want the shape %s, the body's ID and numbers masked", *r.Response, want)
	}
	for _, p := range res.Phases {
		if strings.Contains(p.OutputTail, b.Config().StateDir) || strings.Contains(p.OutputTail, b.idPrefix()) {
			t.Errorf("phase %s names a host path or the spawn's ID:\n%s", p.Name, p.OutputTail)
		}
	}
	for _, name := range []string{"build:1"} {
		if p := phase(res.Phases, name); p.Failed || !reImageID.MatchString(p.Image) {
			t.Errorf("%s: %+v; want built, with an image ID", name, p)
		}
	}
	checkFacts(t, res, true)
	if p := phase(res.Phases, "build:builder:step 2"); p.Failed || !strings.Contains(p.OutputTail, "building") {
		t.Errorf("builder step: %+v; want its output", p)
	}
	boot := phase(res.Phases, "boot")
	if b := boot.Boot; b == nil || boot.Failed || boot.ExitCode != -1 || !strings.Contains(boot.OutputTail, "listening") ||
		(b.Ended != sandbox.BootAnsweredAndSettled && b.Ended != sandbox.BootSettled) {
		t.Errorf("boot: %+v (%+v); want still running once it had settled, after listening", boot, boot.Boot)
	}

	tree := trace.BuildTree(res.Trace)
	a := trace.Analyze(tree, nil)
	var build, bootShells []trace.Invocation
	for _, inv := range a.Invocations {
		switch inv.Phase {
		case "build:builder:step 2":
			build = append(build, inv)
		case sandbox.PhaseBoot:
			bootShells = append(bootShells, inv)
		default:
			t.Errorf("invocation in phase %q: %+v", inv.Phase, inv)
		}
	}
	if len(build) != 1 || !slices.Equal(build[0].Argv, []string{"/bin/sh", "-c", "echo building && mkdir -p /out && echo x > /out/x"}) {
		t.Errorf("builder step shells: %+v; want /bin/sh -c of the RUN", build)
	}
	if len(a.Unresolved) > 0 {
		t.Errorf("unresolved interpreters: %v", a.Unresolved)
	}

	// The boot: docker-entrypoint.sh (a #!/bin/sh script of the base
	// image) first, then npm, then sh -c "node server.js" under npm.
	var bootExecs []trace.Event
	for _, e := range res.Trace {
		if e.Phase == sandbox.PhaseBoot && e.Kind == trace.KindExec {
			bootExecs = append(bootExecs, e)
		}
	}
	if len(bootExecs) < 3 {
		dumpTrace(t, res.Trace)
		t.Fatalf("%d boot execs, want at least 3", len(bootExecs))
	}
	first := bootExecs[0]
	if first.Binary != "/usr/local/bin/docker-entrypoint.sh" || first.Interp != "/bin/sh" || !slices.Equal(first.Argv, []string{"docker-entrypoint.sh", "npm", "start"}) {
		t.Errorf("first boot exec: %+v; want docker-entrypoint.sh npm start, interpreter /bin/sh", first)
	}
	if !strings.HasSuffix(bootExecs[1].Binary, "npm-cli.js") || bootExecs[1].Interp == "" {
		t.Errorf("second boot exec: %+v; want npm's script with its interpreter", bootExecs[1])
	}
	var npmSh *trace.Invocation
	for i, inv := range bootShells {
		if slices.Equal(inv.Argv, []string{"sh", "-c", "node server.js"}) {
			npmSh = &bootShells[i]
		}
	}
	if npmSh == nil || len(npmSh.Ancestry) == 0 || !strings.Contains(npmSh.Ancestry[len(npmSh.Ancestry)-1], "npm") {
		dumpTrace(t, res.Trace)
		t.Errorf("boot shells %+v; want sh -c node server.js under npm", bootShells)
	}
	if bootShells[0].Match.By != "shebang" || bootShells[0].PID != first.PID {
		t.Errorf("first boot shell %+v; want docker-entrypoint.sh by its shebang", bootShells[0])
	}
}

// TestBuildDistroless boots a distroless image whose server runs execSync
// at start: node's attempt to exec /bin/sh fails, and it exits non-zero.
func TestBuildDistroless(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY server.js ./\nCMD [\"server.js\"]\n",
		"server.js":  "require('child_process').execSync('echo hi');\n" + listeningServer,
	})
	res := spawnTraced(t.Context(), t, b, buildRequest(ws, m, ""))
	if diff := cmp.Diff([]string{"pull:gcr.io/distroless/nodejs22-debian13", "build:0", "boot"}, phaseNames(res.Phases)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	checkFacts(t, res, false)
	boot := phase(res.Phases, "boot")
	if boot.TimedOut || boot.ExitCode == 0 || !boot.Failed || !strings.Contains(boot.OutputTail, "ENOENT") {
		t.Errorf("boot: %+v; want a crash (spawnSync /bin/sh ENOENT)", boot)
	}
	a := trace.Analyze(trace.BuildTree(res.Trace), nil)
	var attempts []trace.Invocation
	for _, inv := range a.Invocations {
		if inv.Phase != sandbox.PhaseBoot || !inv.Attempted {
			t.Errorf("invocation %+v; want only failed attempts at boot", inv)
			continue
		}
		attempts = append(attempts, inv)
	}
	if len(attempts) != 1 || attempts[0].Binary != "/bin/sh" || !strings.HasPrefix(attempts[0].Ancestry[len(attempts[0].Ancestry)-1], "node") &&
		!strings.Contains(strings.Join(attempts[0].Ancestry, " "), "node") {
		dumpTrace(t, res.Trace)
		t.Errorf("attempts %+v; want one attempt of /bin/sh under node", attempts)
	}
	for _, e := range res.Trace {
		if e.Phase == sandbox.PhaseBoot && e.Kind == trace.KindExec {
			if e.Binary != "/nodejs/bin/node" || e.Interp != "" {
				t.Errorf("first boot exec %+v; want /nodejs/bin/node, an ELF binary", e)
			}
			break
		}
	}
}

// TestBootLeavesTheImageAlone checks that what the booted service writes
// (a setuid file in /usr/local/bin, a package under node_modules, a new
// shell) lands in the boot's own overlay, not in the image: the facts and
// the node_modules read from the image after the boot are the image's.
// The boot reads the image's root filesystem in place (mount reads the
// vfs layer, no copy), so this is what keeps the store's images intact.
func TestBootLeavesTheImageAlone(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY server.js ./\nRUN mkdir -p node_modules/left && echo '{}' > node_modules/left/package.json\nCMD [\"node\", \"server.js\"]\n",
		"server.js": `const fs = require('fs');
fs.writeFileSync('/usr/local/bin/made-at-boot', '#!/bin/sh\n', { mode: 0o4755 });
fs.chmodSync('/usr/local/bin/made-at-boot', 0o4755);
fs.copyFileSync('/bin/sh', '/usr/local/bin/bash');
fs.chmodSync('/usr/local/bin/bash', 0o755);
fs.mkdirSync('/app/node_modules/made-at-boot', { recursive: true });
fs.writeFileSync('/app/node_modules/made-at-boot/package.json', '{}');
fs.rmSync('/app/node_modules/left', { recursive: true });
console.log('wrote');
` + listeningServer,
	})
	req := buildRequest(ws, m, "")
	req.Build.ReadNodeModules = true
	res := spawnTraced(t.Context(), t, b, req)
	boot := phase(res.Phases, "boot")
	if boot.Failed || !strings.Contains(boot.OutputTail, "wrote") {
		t.Fatalf("boot: %+v; want the service to write its files and listen", boot)
	}
	f := res.ImageFacts
	if f == nil || f.Incomplete != "" {
		t.Fatalf("image facts %+v; want them whole", f)
	}
	for _, p := range f.Setuid {
		if p == "/usr/local/bin/made-at-boot" {
			t.Errorf("the image's setuid files %v hold the file the boot made", f.Setuid)
		}
	}
	for _, sh := range f.Shells {
		if sh.Path == "/usr/local/bin/bash" {
			t.Errorf("the image's shells %v hold the copy the boot made", f.Shells)
		}
	}
	if res.NodeModules == nil {
		t.Fatal("no node_modules read from the image")
	}
	var left bool
	for _, file := range res.NodeModules.Files {
		if strings.Contains(file.Path, "made-at-boot") {
			t.Errorf("the image's node_modules hold %s, which the boot wrote", file.Path)
		}
		left = left || file.Path == "/app/node_modules/left/package.json"
	}
	if !left {
		t.Errorf("the image's node_modules %v lack left/package.json, which the boot removed in its own overlay only", res.NodeModules.Files)
	}
}

// stepScriptsDockerfile runs a builder script that a later step deletes,
// and tries one that a later step creates: only the step's own rootfs
// tells the script's interpreter and the attempt's ENOENT. The final stage
// runs a script of its own, read from the final image.
const stepScriptsDockerfile = `FROM node:22 AS builder
WORKDIR /src
RUN printf '#!/bin/sh\necho built > /src/out\n' > build.sh && chmod +x build.sh
RUN ./build.sh && (./later.sh || true)
RUN rm build.sh && printf '#!/bin/sh\n' > later.sh && chmod +x later.sh

FROM node:22-slim
COPY --from=builder /src/out /out
RUN printf '#!/bin/sh\n' > /final.sh && chmod +x /final.sh && /final.sh
CMD ["node", "-e", "setTimeout(() => {}, 60000)"]
`

// TestBuildStepSnapshots checks that a builder step's files are read as
// they were right after that step (snapshot.go): the script it ran has its
// interpreter, and the script it tried and lacked has ENOENT, although the
// next step deleted the one and created the other. Without the step hook
// the build reads the stage's image after its last step, where neither
// holds: the subtest says so, so that the first cannot pass by accident.
func TestBuildStepSnapshots(t *testing.T) {
	m := mirrors(t)
	ws := workspace(t, map[string]string{"Dockerfile": stepScriptsDockerfile})
	run := func(t *testing.T, cfg Config) (script, later trace.Event, phases []sandbox.PhaseResult) {
		t.Helper()
		b := newBackend(t, cfg)
		req := buildRequest(ws, m, "")
		req.Build.Boot = false
		res := spawnTraced(t.Context(), t, b, req)
		final := trace.Event{}
		for _, e := range res.Trace {
			switch {
			case e.Phase == "build:1:step 3" && e.Kind == trace.KindExec && e.Binary == "/final.sh":
				final = e
			case e.Phase != "build:builder:step 4":
			case e.Kind == trace.KindExec && e.Binary == "/src/build.sh":
				script = e
			case e.Kind == trace.KindExecAttempt && e.Execfn == "./later.sh":
				later = e
			}
		}
		if final.Interp != "/bin/sh" {
			dumpTrace(t, res.Trace)
			t.Errorf("the final stage's /final.sh: %+v; want interpreter /bin/sh, from the final image", final)
		}

		if script.Binary == "" || later.Execfn == "" {
			dumpTrace(t, res.Trace)
			t.Fatalf("no exec of /src/build.sh or attempt of ./later.sh in build:builder:step 4")
		}
		return script, later, res.Phases
	}
	says := func(phases []sandbox.PhaseResult) string {
		return phase(phases, "build:builder:step 4").OutputTail
	}
	t.Run("snapshots", func(t *testing.T) {
		script, later, phases := run(t, Config{})
		if script.Interp != "/bin/sh" {
			t.Errorf("build.sh's interpreter %q; want /bin/sh, read from the step's snapshot", script.Interp)
		}
		if later.Errno != "ENOENT" {
			t.Errorf("attempt of ./later.sh: errno %q; want ENOENT: it did not exist yet", later.Errno)
		}
		if out := says(phases); strings.Contains(out, "cannot read") {
			t.Errorf("builder step's output says: %s", out)
		}
	})
	t.Run("hook fails", func(t *testing.T) {
		// Unknown, not the stage's image, and the step's output says why.
		script, later, phases := run(t, Config{StepHook: []string{"/bin/false"}})
		if script.Interp != trace.InterpUnknown || later.Errno != "" {
			t.Errorf("build.sh's interpreter %q, later.sh's errno %q; want unknown and none", script.Interp, later.Errno)
		}
		if out := says(phases); !strings.Contains(out, "codegenie: the trace cannot read this step's files: the step hook left no snapshot") {
			t.Errorf("builder step's output does not say why its files are unknown:\n%s", out)
		}
	})
	t.Run("no hook", func(t *testing.T) {
		script, later, _ := run(t, Config{StepHook: []string{}})
		if script.Interp != trace.InterpUnknown {
			t.Errorf("build.sh's interpreter %q; want unknown: the stage's image lacks it", script.Interp)
		}
		if later.Errno != "" {
			t.Errorf("attempt of ./later.sh: errno %q; want none: the stage's image has the file", later.Errno)
		}
	})
}

// TestBuildFails checks that a failing RUN stops the build: its phase is
// Failed with the step's exit code and output, and nothing boots.
func TestBuildFails(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\nRUN echo before\nRUN echo out; echo err >&2; exit 3\nRUN echo never\n",
	})
	res, err := b.Spawn(t.Context(), buildRequest(ws, m, ""))
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	if res.ExitCode != 3 {
		t.Errorf("exit %d, want 3 (the failing step's)", res.ExitCode)
	}
	if diff := cmp.Diff([]string{"pull:node:22-slim", "build:0:step 2", "build:0:step 3", "build:0"}, phaseNames(res.Phases)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	step := phase(res.Phases, "build:0:step 3")
	// The step's stdout and stderr reach buildah through two pipes: their
	// order is not kept.
	if !step.Failed || step.ExitCode != 3 || !strings.Contains(step.OutputTail, "out\n") || !strings.Contains(step.OutputTail, "err\n") {
		t.Errorf("failing step: %+v; want Failed, exit 3, its output", step)
	}
	if p := phase(res.Phases, "build:0:step 2"); p.Failed {
		t.Errorf("the step before: %+v", p)
	}
	if p := phase(res.Phases, "build:0"); !p.Failed || p.ExitCode != 3 || p.Image != "" {
		t.Errorf("target: %+v; want Failed with exit 3 and no image", p)
	}
	var sawStep3 bool
	for _, e := range res.Trace {
		if e.Phase == sandbox.PhaseBoot {
			t.Fatalf("a boot event after a failed build: %+v", e)
		}
		if e.Phase == "build:0:step 3" && e.Kind == trace.KindExec && slices.Equal(e.Argv, []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}) {
			sawStep3 = true
		}
	}
	if !sawStep3 {
		dumpTrace(t, res.Trace)
		t.Error("no exec of the failing step in its phase")
	}
	t.Logf("trace complete: %v", res.TraceComplete)
}

// TestBuildTimeout kills a build in the middle of a RUN step: the spawn
// says it timed out, and nothing is left (checkNoLeftovers: the spawn
// directories with the private store, the step's sandbox, its cgroups,
// its processes). Whether a timeout comes before the step or in it is the
// machine's speed (the pull, the step's boot): one that came before the
// step started is tried again twice as long, up to minutes, so that the
// kill in the step happens on any machine. How soon the spawn returned is
// logged, not judged.
func TestBuildTimeout(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	const step = "echo started; sleep 600" // outlasts the longest timeout tried
	ws := workspace(t, map[string]string{"Dockerfile": "FROM node:22-slim\nRUN " + step + "\n"})
	req := buildRequest(ws, m, "")
	for req.Timeout = 10 * time.Second; ; req.Timeout *= 2 {
		start := time.Now()
		res, err := b.Spawn(t.Context(), req)
		logResult(t, res)
		t.Logf("the spawn returned %v after it started, for a %v timeout", time.Since(start).Round(time.Millisecond), req.Timeout)
		if !errors.Is(err, sandbox.ErrTimeout) || !res.TimedOut || res.ExitCode != -1 || res.TraceComplete {
			t.Fatalf("err %v, timed out %v, exit %d, complete %v; want ErrTimeout, a partial result", err, res.TimedOut, res.ExitCode, res.TraceComplete)
		}
		if p := phase(res.Phases, "build:0"); !p.Failed || !p.TimedOut {
			t.Errorf("the killed target: %+v; want Failed, TimedOut", p)
		}
		if slices.ContainsFunc(res.Trace, func(e trace.Event) bool {
			return e.Kind == trace.KindStart && slices.Equal(e.Argv, []string{"/bin/sh", "-c", step})
		}) {
			if p := phase(res.Phases, "build:0:step 2"); p.Name != "" && (!p.Failed || !p.TimedOut || p.ExitCode != -1) {
				t.Errorf("the killed step: %+v; want Failed, TimedOut, exit -1", p)
			}
			return
		}
		if 2*req.Timeout > waitLimit {
			t.Fatalf("the RUN step had not started when a %v timeout passed: %+v", req.Timeout, res.Phases)
		}
		t.Logf("the step had not started when the %v timeout passed: again, twice as long", req.Timeout)
	}
}

// TestReapBuild simulates a gate-control that crashed during a build: a
// spawn directory with a private build store and a step sandbox still
// running in its runsc root. Reap removes it all.
func TestReapBuild(t *testing.T) {
	rootfs := sandboxtest.BusyboxRootfs(t)
	b := newBackend(t, Config{Rootfs: rootfs})
	tools, err := b.buildTools()
	if _, ok := errors.AsType[*sandbox.UnsupportedError](err); ok {
		t.Skipf("builds unsupported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	id, sp := newSpawnDir(t, b)
	if err := os.Mkdir(filepath.Join(sp.dir, "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	// The build's own filesystem, mounted as a build mounts it.
	if _, err := sp.mountDisk(t.Context(), filepath.Join(sp.dir, "b"), 64<<20); err != nil {
		t.Fatal(err)
	}
	bh, err := newBuildah(tools, filepath.Join(sp.dir, "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A store as buildah leaves it: read-only directories included.
	layer := filepath.Join(bh.path("s"), "vfs", "dir", "0123", "usr", "lib")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layer, "f"), []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(layer, 0o555); err != nil {
		t.Fatal(err)
	}
	// A step sandbox, as buildah would have started it, named as buildah
	// names them.
	step := "buildah-buildah" + strings.TrimPrefix(id, b.idPrefix())
	bundle := filepath.Join(sp.dir, "stepbundle")
	if err := os.Mkdir(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	spec := buildSpec(specInput{args: []string{"sleep", "600"}, env: []string{defaultPath}, cwd: "/", rootfs: rootfs, hostname: "step", platform: b.cfg.Platform})
	if err := writeSpec(bundle, spec); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "step.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	flags := []string{"--root=" + bh.runscRoot(), "--platform=" + b.cfg.Platform, "--overlay2=none", "--network=none", "--gofer-network-namespace=new"}
	if b.cfg.NoCgroups {
		flags = append(flags, "--ignore-cgroups")
	}
	cmd := exec.Command(b.cfg.Runsc, append(flags, "run", "--detach", "--bundle", bundle, step)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		o, _ := os.ReadFile(out.Name())
		t.Fatalf("starting the step sandbox: %v\n%s", err, o)
	}
	sp.lock.Close() // the crash
	pid := sandboxPID(t, b, bh.runscRoot(), step)

	reaped, err := b.Reap(t.Context())
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	if diff := cmp.Diff([]string{id}, reaped); diff != "" {
		t.Errorf("reaped (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(sp.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the build's spawn directory is still there: %v", err)
	}
	if len(cgroupLeaves(step)) > 0 {
		t.Errorf("the step's cgroups are still there: %v", cgroupLeaves(step))
	}
	waitFor(t, "the step's sandbox process to exit", func() bool { return syscall.Kill(pid, 0) != nil })
}

// checkProgress checks the live reports of the two-stage build: each pull
// and the target as phases, every step of both stages with its
// instruction, the shell of the builder's RUN step, and the boot's
// countdown.
func checkProgress(t *testing.T, reports []sandbox.Progress) {
	t.Helper()
	var phases, steps []string
	shells, ticks := 0, 0
	for _, p := range reports {
		switch p.Kind {
		case sandbox.ProgressPhase:
			phases = append(phases, p.Phase)
		case sandbox.ProgressStep:
			steps = append(steps, fmt.Sprintf("%s %d/%d %s", p.Phase, p.Step, p.Steps, strings.Fields(p.Instruction)[0]))
		case sandbox.ProgressBoot:
			if p.BootLeft > 0 {
				ticks++
			}
		case sandbox.ProgressShells, sandbox.ProgressDone:
		}
		shells = max(shells, p.Shells)
	}
	slices.Sort(phases[:2]) // the pulls run at once
	if diff := cmp.Diff([]string{"pull:node:22", "pull:node:22-slim", "build:1", "boot"}, phases); diff != "" {
		t.Errorf("phase reports (-want +got):\n%s", diff)
	}
	want := []string{"build:builder:step 1 1/2 FROM", "build:builder:step 2 2/2 RUN", "build:1:step 1 1/5 FROM", "build:1:step 2 2/5 COPY",
		"build:1:step 3 3/5 WORKDIR", "build:1:step 4 4/5 COPY", "build:1:step 5 5/5 CMD"}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("step reports (-want +got):\n%s", diff)
	}
	if shells < 1 || ticks < 1 {
		t.Errorf("shells %d, boot ticks %d; want the RUN step's shell and a countdown", shells, ticks)
	}
}

// TestBuildHealthcheck: the image's HEALTHCHECK runs once in the booted
// sandbox; its process and the shell it starts are in the healthcheck
// phase, the server's own processes stay in boot, and the trace stays
// complete (the witness agrees).
func TestBuildHealthcheck(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY server.js ./\nHEALTHCHECK CMD [\"node\", \"-e\", \"require('child_process').execSync('echo healthy')\"]\nCMD [\"node\", \"server.js\"]\n",
		"server.js":  listeningServer,
	})
	res, err := b.Spawn(t.Context(), buildRequest(ws, m, ""))
	logResult(t, res)
	if err != nil || res.ExitCode != 0 || !res.TraceComplete {
		dumpTrace(t, res.Trace)
		t.Fatalf("%v, exit %d, complete %v, gaps %q", err, res.ExitCode, res.TraceComplete, res.TraceGaps)
	}
	hc := phase(res.Phases, sandbox.PhaseHealthcheck)
	if hc.Name == "" || hc.Failed || hc.ExitCode != 0 {
		t.Fatalf("healthcheck phase %+v, want it run, exit 0", hc)
	}
	var node, shell bool
	for _, e := range res.Trace {
		if e.Phase != sandbox.PhaseHealthcheck || e.Kind != trace.KindExec {
			continue
		}
		node = node || (len(e.Argv) > 0 && e.Argv[0] == "node")
		shell = shell || (len(e.Argv) == 3 && e.Argv[2] == "echo healthy")
	}
	if !node || !shell {
		dumpTrace(t, res.Trace)
		t.Errorf("healthcheck events: node %v, its shell %v; want both in the healthcheck phase", node, shell)
	}
}

// TestBuildRequests: during the boot window a request from inside the
// sandbox reaches the service, and the shell its handler runs is in the
// request's phase.
func TestBuildRequests(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM gcr.io/distroless/nodejs22-debian13\nWORKDIR /app\nCOPY server.js ./\nEXPOSE 8080\nCMD [\"server.js\"]\n",
		"server.js":  "require('http').createServer((q, r) => { try { require('child_process').execSync('echo handled') } catch (e) {} r.end('ok') }).listen(8080);\n",
	})
	res, err := b.Spawn(t.Context(), buildRequest(ws, m, ""))
	logResult(t, res)
	if err != nil || res.ExitCode != 0 || !res.TraceComplete {
		dumpTrace(t, res.Trace)
		t.Fatalf("%v, exit %d, complete %v, gaps %q", err, res.ExitCode, res.TraceComplete, res.TraceGaps)
	}
	if p := phase(res.Phases, "request:/"); p.Name == "" || p.Failed || !strings.Contains(p.OutputTail, "GET / on port 8080: 200") {
		t.Fatalf("request phase %+v, want GET / answered 200", p)
	}
	found := false
	for _, e := range res.Trace {
		if e.Kind == trace.KindExecAttempt && e.Phase == "request:/" && len(e.Argv) == 3 && e.Argv[2] == "echo handled" {
			found = true
		}
	}
	if !found {
		dumpTrace(t, res.Trace)
		t.Error("no attempted shell of the handler in the request:/ phase")
	}
}
