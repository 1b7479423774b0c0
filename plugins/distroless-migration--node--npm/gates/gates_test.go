package gates

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/childprocess"
)

func parse(t *testing.T, src string) *dockerfile.File {
	t.Helper()
	f, err := dockerfile.Parse("Dockerfile", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// booted is a result of a build that worked and a service that stayed up
// and answered GET /.
func booted() sandbox.Result {
	now := time.Unix(1000, 0)
	return sandbox.Result{
		TraceComplete: true,
		Phases: []sandbox.PhaseResult{
			{Name: "build:1"},
			{Name: sandbox.PhaseBoot, ExitCode: -1, Duration: 4 * time.Second,
				Boot: &sandbox.BootReport{Ended: sandbox.BootAnsweredAndSettled, Port: 8080, Awaited: []int{8080}, ToListen: time.Second, ToFirstAnswer: time.Second}},
			{Name: "request:/", OutputTail: "GET / on port 8080: 200\n", Response: &sandbox.Response{Status: 200, ContentType: "text/plain", BodySHA256: "ab"}},
			{Name: sandbox.PhaseHealthcheck},
		},
		Trace: []trace.Event{
			{Kind: trace.KindStart, Time: now, PID: 1, Binary: "/nodejs/bin/node", Argv: []string{"/nodejs/bin/node", "server.js"}, Phase: sandbox.PhaseBoot},
			{Kind: trace.KindExec, Time: now, PID: 1, Binary: "/nodejs/bin/node", Argv: []string{"/nodejs/bin/node", "server.js"}, Phase: sandbox.PhaseBoot},
		},
	}
}

// clean is a scan of shipped code with nothing in it that blocks.
func clean() *childprocess.Shipped {
	return &childprocess.Shipped{Confidence: probe.High, Facts: &childprocess.Facts{FilesScanned: 12, DependenciesScanned: 2,
		Findings: []childprocess.Finding{
			{File: "node_modules/a/x.js", Line: 3, Function: "exec", Kind: childprocess.KindShell, Origin: childprocess.OriginDependency, Package: "a", Scope: childprocess.ScopeNotReachable},
			{File: "launch.js", Line: 9, Function: "spawn", Kind: childprocess.KindNode, Origin: childprocess.OriginApp, Scope: childprocess.ScopeReachable},
		}}}
}

const withHealth = "FROM gcr.io/distroless/nodejs22-debian13\nEXPOSE 8080\nHEALTHCHECK CMD [\"/nodejs/bin/node\", \"hc.js\"]\nCMD [\"server.js\"]\n"

func check(t *testing.T, ev *Evidence) map[string]Outcome {
	t.Helper()
	out := map[string]Outcome{}
	for _, g := range All {
		out[g.Name] = g.Check(ev)
	}
	return out
}

func TestGatesPass(t *testing.T) {
	orig := booted()
	ev := &Evidence{File: parse(t, withHealth), Migrated: booted(), Original: &orig, Shipped: clean()}
	for name, o := range check(t, ev) {
		if o.Status != Passed {
			t.Errorf("%s: %s (%s), want passed", name, o.Status, o.Detail)
		}
	}
}

func TestGatesFail(t *testing.T) {
	f := parse(t, withHealth)
	for _, tc := range []struct {
		name   string
		mutate func(*Evidence)
		gate   string
		want   Status
		detail string
	}{
		{"build step fails", func(ev *Evidence) { ev.Migrated.Phases[0].Failed, ev.Migrated.Phases[0].ExitCode = true, 1 }, "builds", Failed, "build:1 failed"},
		{"a step given up on TLS", func(ev *Evidence) {
			ev.Migrated.Phases[0] = sandbox.PhaseResult{Name: "build:build:step 4", Failed: true, TimedOut: true, ExitCode: -1,
				OutputTail: "codegenie: the step ran past the step timeout (10m0s) and was stopped\n"}
			ev.Migrated.Egress = &sandbox.EgressReport{Conns: []sandbox.EgressConn{{Phase: "build:build:step 4", Host: "registry.npmjs.org", Port: 443, Allowed: true, TLSAbandoned: true}}}
		}, "builds", Failed, "pass its CA bundle with --build-ca FILE"},
		{"every gate needs the build", func(ev *Evidence) { ev.MigratedErr = errors.New("gate-control: refused") }, "no_shell", Failed, "not checked"},
		{"boot exits 1", func(ev *Evidence) {
			ev.Migrated.Phases[1] = sandbox.PhaseResult{Name: sandbox.PhaseBoot, ExitCode: 1, Failed: true, OutputTail: "Error: Cannot find module"}
		}, "boots", Failed, "exited 1"},
		{"job exits 0", func(ev *Evidence) { ev.Migrated.Phases[1] = sandbox.PhaseResult{Name: sandbox.PhaseBoot} }, "boots", Passed, "exited 0"},
		{"attempted shell", func(ev *Evidence) {
			ev.Migrated.Trace = append(ev.Migrated.Trace, trace.Event{Kind: trace.KindExecAttempt, Time: time.Unix(1001, 0), PID: 1, Execfn: "/bin/sh",
				Binary: "/bin/sh", Argv: []string{"/bin/sh", "-c", "git rev-parse HEAD"}, Phase: sandbox.PhaseBoot, Errno: "ENOENT"})
		}, "no_shell", Failed, "shell exec"},
		{"shell in a request", func(ev *Evidence) {
			ev.Migrated.Trace = append(ev.Migrated.Trace,
				trace.Event{Kind: trace.KindClone, Time: time.Unix(1001, 0), PID: 1, ChildPID: 7, Phase: "request:/"},
				trace.Event{Kind: trace.KindExec, Time: time.Unix(1001, 0), PID: 7, PPID: 1, Binary: "/bin/sh", Argv: []string{"/bin/sh", "-c", "date"}, Phase: "request:/"})
		}, "no_shell", Failed, "shell exec"},
		{"incomplete trace", func(ev *Evidence) {
			ev.Migrated.TraceComplete, ev.Migrated.TraceGaps = false, []string{"3 events dropped"}
		}, "no_shell", Failed, "3 events dropped"},
		{"no answer on EXPOSE", func(ev *Evidence) { ev.Migrated.Phases = ev.Migrated.Phases[:2] }, "serves", Failed, "exposes 8080"},
		{"healthcheck fails", func(ev *Evidence) { ev.Migrated.Phases[3].ExitCode, ev.Migrated.Phases[3].Failed = 1, true }, "healthcheck", Failed, "exited 1"},
		{"healthcheck never ran", func(ev *Evidence) { ev.Migrated.Phases = ev.Migrated.Phases[:3] }, "healthcheck", Failed, "did not run"},
		{"other body", func(ev *Evidence) {
			ev.Migrated.Phases[2].Response = &sandbox.Response{Status: 200, ContentType: "text/plain", BodySHA256: "cd"}
		}, "same_behaviour", Failed, "body differs"},
		// next build writes a new build ID each time, into every page:
		// two builds of the same sources differ in it only.
		{"a body that differs only in generated tokens", func(ev *Evidence) {
			ev.Original.Phases[2].Response = &sandbox.Response{Status: 200, ContentType: "text/html", BodySHA256: "ab", ShapeSHA256: "5e"}
			ev.Migrated.Phases[2].Response = &sandbox.Response{Status: 200, ContentType: "text/html", BodySHA256: "cd", ShapeSHA256: "5e"}
		}, "same_behaviour", Passed, "1 of them differ only in tokens that look generated"},
		{"a body whose shape differs too", func(ev *Evidence) {
			ev.Original.Phases[2].Response = &sandbox.Response{Status: 200, ContentType: "text/html", BodySHA256: "ab", ShapeSHA256: "5e"}
			ev.Migrated.Phases[2].Response = &sandbox.Response{Status: 200, ContentType: "text/html", BodySHA256: "cd", ShapeSHA256: "6f"}
		}, "same_behaviour", Failed, "body differs"},
		{"other status", func(ev *Evidence) {
			ev.Migrated.Phases[2].Response = &sandbox.Response{Status: 500, ContentType: "text/plain", BodySHA256: "ab"}
		}, "same_behaviour", Failed, "status 500, was 200"},
		{"still up at the maximum", func(ev *Evidence) {
			ev.Migrated.Phases[1] = sandbox.PhaseResult{Name: sandbox.PhaseBoot, ExitCode: -1, TimedOut: true, Duration: 30 * time.Second,
				Boot: &sandbox.BootReport{Ended: sandbox.BootMaximum}}
		}, "boots", Passed, "maximum"},
		{"never listened", func(ev *Evidence) {
			ev.Migrated.Phases = ev.Migrated.Phases[:2]
			ev.Migrated.Phases[1] = sandbox.PhaseResult{Name: sandbox.PhaseBoot, ExitCode: -1, TimedOut: true, Duration: 30 * time.Second,
				Boot: &sandbox.BootReport{Ended: sandbox.BootMaximum, Awaited: []int{8080}}}
		}, "serves", Failed, "never listened on 8080 within 30s"},
		{"a dependency shells on a path the boot did not take", func(ev *Evidence) {
			ev.Shipped.Facts.Findings = append(ev.Shipped.Facts.Findings, childprocess.Finding{File: "node_modules/node-cmd/cmd.js", Line: 10, Function: "exec",
				Kind: childprocess.KindShell, Origin: childprocess.OriginDependency, Package: "node-cmd", PackageVersion: "5.0.0", Scope: childprocess.ScopeReachable,
				Chain: []string{"server.js:2", "node_modules/node-cmd/cmd.js:10"}})
		}, "shipped_code", Failed, "node_modules/node-cmd/cmd.js:10: dependency node-cmd@5.0.0 calls exec (shell), reached by server.js:2 → node_modules/node-cmd/cmd.js:10"},
		{"the app runs a binary", func(ev *Evidence) {
			ev.Shipped.Facts.Findings = append(ev.Shipped.Facts.Findings, childprocess.Finding{File: "lib/git.js", Line: 4, Function: "execFileSync", Command: "git",
				Kind: childprocess.KindBinary, Origin: childprocess.OriginApp, Scope: childprocess.ScopeUnresolved})
		}, "shipped_code", Failed, `the app calls execFileSync("git") (binary)`},
		// What the verdict excuses, the gate excuses: next's lsof lookup
		// (a known fallback) and nodemailer's sendmail (an opt-in the
		// image's ENV leaves off), as gather read the same code.
		{"a known fallback and an opt-in pass, as the verdict excuses them", func(ev *Evidence) {
			ev.Shipped.Facts.Findings = append(ev.Shipped.Facts.Findings, childprocess.Finding{File: "node_modules/next/dist/server/lib/start-server.js", Line: 110, Function: "exec",
				Kind: childprocess.KindShell, Origin: childprocess.OriginDependency, Package: "next", PackageVersion: "16.5.0", Scope: childprocess.ScopeReachable},
				childprocess.Finding{File: "node_modules/nodemailer/lib/sendmail-transport/index.js", Line: 171, Function: "spawn", Command: "sendmail",
					Kind: childprocess.KindBinary, Origin: childprocess.OriginDependency, Package: "nodemailer", PackageVersion: "6.9.16", Scope: childprocess.ScopeReachable})
		}, "shipped_code", Passed, "2 call(s) the verdict excuses too"},
		{"an opt-in the image's ENV turns on fails", func(ev *Evidence) {
			ev.File = parse(t, "FROM gcr.io/distroless/nodejs22-debian13\nENV GOOGLE_API_USE_CLIENT_CERTIFICATE=true\nEXPOSE 8080\nHEALTHCHECK CMD [\"/nodejs/bin/node\", \"hc.js\"]\nCMD [\"server.js\"]\n")
			ev.Shipped.Facts.Findings = append(ev.Shipped.Facts.Findings, childprocess.Finding{File: "node_modules/google-gax/build/src/grpc.js", Line: 60, Function: "execFile",
				Kind: childprocess.KindDynamic, Origin: childprocess.OriginDependency, Package: "google-gax", PackageVersion: "4.4.1", Scope: childprocess.ScopeReachable})
		}, "shipped_code", Failed, "google-gax@4.4.1 calls execFile (dynamic)"},
		{"a fallback of another version still fails", func(ev *Evidence) {
			ev.Shipped.Facts.Findings = append(ev.Shipped.Facts.Findings, childprocess.Finding{File: "node_modules/next/dist/server/lib/start-server.js", Line: 110, Function: "exec",
				Kind: childprocess.KindShell, Origin: childprocess.OriginDependency, Package: "next", PackageVersion: "17.0.0", Scope: childprocess.ScopeReachable})
		}, "shipped_code", Failed, "dependency next@17.0.0 calls exec (shell)"},
		{"a file too large to parse", func(ev *Evidence) { ev.Shipped.Facts.UnreadInImage = []string{"node_modules/big/dist.js"} }, "shipped_code", Failed, "node_modules/big/dist.js"},
		{"a low-confidence scan", func(ev *Evidence) {
			ev.Shipped.Confidence, ev.Shipped.Reason, ev.Shipped.Detail = probe.Low, probe.ReasonPathEscapes, "../shared"
		}, "shipped_code", Failed, "scan is incomplete"},
		{"part of node_modules not read back", func(ev *Evidence) {
			ev.Shipped.Confidence, ev.Shipped.Reason, ev.Shipped.Detail = probe.Medium, childprocess.ReasonImageDependenciesPartial, "the image's node_modules are larger than 64 MiB"
		}, "shipped_code", Failed, "larger than 64 MiB"},
		{"a medium scan passes and says why", func(ev *Evidence) {
			ev.Shipped.Confidence, ev.Shipped.Reason, ev.Shipped.Detail = probe.Medium, childprocess.ReasonInvalidPackageJSON, "1 package.json files could not be read"
		}, "shipped_code", Passed, "scan confidence medium: invalid_package_json"},
		{"the scan failed", func(ev *Evidence) { ev.Shipped, ev.ShippedErr = nil, errors.New("decoding the image's node_modules") }, "shipped_code", Failed, "could not be scanned"},
		{"no scan", func(ev *Evidence) { ev.Shipped = nil }, "shipped_code", Failed, "not scanned"},
		{"the scan needs the build", func(ev *Evidence) { ev.MigratedErr = errors.New("gate-control: refused") }, "shipped_code", Failed, "not checked"},
		{"original did not boot", func(ev *Evidence) { ev.Original, ev.OriginalErr = nil, errors.New("build failed") }, "same_behaviour", Inconclusive, "build failed"},
		{"original answered nothing", func(ev *Evidence) { ev.Original.Phases = ev.Original.Phases[:2] }, "same_behaviour", Inconclusive, "answered no request"},
		{"neither answered", func(ev *Evidence) {
			ev.Original.Phases = ev.Original.Phases[:2]
			ev.Migrated.Phases = ev.Migrated.Phases[:2]
		}, "same_behaviour", Skipped, "neither image answered"},
		{"only the original answered", func(ev *Evidence) { ev.Migrated.Phases = ev.Migrated.Phases[:2] }, "same_behaviour", Failed, "was not asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := booted()
			ev := &Evidence{File: f, Migrated: booted(), Original: &orig, Shipped: clean()}
			tc.mutate(ev)
			o := check(t, ev)[tc.gate]
			if o.Status != tc.want || !strings.Contains(o.Detail+strings.Join(o.Evidence, "\n"), tc.detail) {
				t.Fatalf("%s: %s %q %v, want %s with %q", tc.gate, o.Status, o.Detail, o.Evidence, tc.want, tc.detail)
			}
		})
	}
}

func TestGatesSkipWithoutPortOrHealthcheck(t *testing.T) {
	ev := &Evidence{File: parse(t, "FROM gcr.io/distroless/nodejs22-debian13\nCMD [\"job.js\"]\n"), Migrated: booted(), OriginalErr: ErrNoOriginal, Shipped: clean()}
	ev.Migrated.Phases = ev.Migrated.Phases[:2]
	got := check(t, ev)
	for _, g := range []string{"serves", "healthcheck", "same_behaviour"} {
		if got[g].Status != Skipped {
			t.Errorf("%s: %s (%s), want skipped", g, got[g].Status, got[g].Detail)
		}
	}
}

func TestEveryGateHasItsDocPage(t *testing.T) {
	for _, g := range All {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", g.Doc))
		if err != nil {
			t.Errorf("%s: %v", g.Name, err)
			continue
		}
		if !strings.Contains(string(data), "`"+g.Name+"`") || g.Description == "" {
			t.Errorf("%s: the doc page does not name the gate, or the gate has no description", g.Name)
		}
	}
}

// fakeClient records the spawns and answers with canned results: the
// original's (workspace /o), then the rewritten image's (/m).
type fakeClient struct {
	mu      sync.Mutex
	reqs    []sandbox.SpawnRequest
	results []sandbox.Result
}

func (c *fakeClient) Spawn(_ context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	if req.Workspace.Dir == "/o" {
		return c.results[0], nil
	}
	return c.results[1], nil
}

// workspace writes a rewritten workspace whose server.js requires dep.
func workspace(t *testing.T, dep string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range map[string]string{
		"package.json": `{"name":"svc","dependencies":{"` + dep + `":"1.0.0"}}`,
		"Dockerfile":   withHealth,
		"server.js":    "const d = require('" + dep + "');\nrequire('http').createServer((q, s) => s.end(String(d.run && d.run('uptime')))).listen(8080);\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withModules is booted() with the node_modules read back from the image:
// one package, whose index.js is body.
func withModules(dep, body string) sandbox.Result {
	r := booted()
	r.NodeModules = &sandbox.FileSet{Workdir: "/app", Roots: []string{"/app/node_modules"}, Files: []sandbox.File{
		{Path: "/app/node_modules/" + dep + "/index.js", Data: []byte(body)},
		{Path: "/app/node_modules/" + dep + "/package.json", Data: []byte(`{"name":"` + dep + `","version":"1.0.0"}`)},
	}}
	return r
}

func TestRunSpawnsAsGate(t *testing.T) {
	m := workspace(t, "quiet")
	fc := &fakeClient{results: []sandbox.Result{booted(), withModules("quiet", "module.exports = { run: (x) => x };\n")}}
	rep, err := Run(t.Context(), fc, Spec{Migrated: m, Original: "/o", Dockerfile: "Dockerfile", BootFor: time.Second}, parse(t, withHealth), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.Gates) != len(All) {
		t.Fatalf("report %+v", rep)
	}
	if dirs := []string{fc.reqs[0].Workspace.Dir, fc.reqs[1].Workspace.Dir}; len(fc.reqs) != 2 || !slices.Contains(dirs, "/o") || !slices.Contains(dirs, m) {
		t.Fatalf("spawns %+v", fc.reqs)
	}
	for _, r := range fc.reqs {
		if r.Role != sandbox.RoleGate || !r.CaptureTrace || r.Build == nil || !r.Build.Boot {
			t.Errorf("spawn %+v: want a traced gate build and boot", r)
		}
		// Only the rewritten image's node_modules are read back: they
		// are what shipped_code scans.
		if r.Build.ReadNodeModules != (r.Workspace.Dir == m) {
			t.Errorf("spawn of %s: ReadNodeModules %v", r.Workspace.Dir, r.Build.ReadNodeModules)
		}
	}
}

// TestRunShippedCode: a dependency of the rewritten image that runs a
// shell only when called passes every gate that watches the boot, and
// fails shipped_code, which scans the node_modules read back from the
// built image; the workspace holds no node_modules of its own.
func TestRunShippedCode(t *testing.T) {
	m := workspace(t, "runner")
	fc := &fakeClient{results: []sandbox.Result{booted(), withModules("runner", "const cp = require('child_process');\nmodule.exports = { run: (c) => cp.execSync(c) };\n")}}
	rep, err := Run(t.Context(), fc, Spec{Migrated: m, Original: "/o", Dockerfile: "Dockerfile", BootFor: time.Second}, parse(t, withHealth), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed {
		t.Fatalf("passed: %+v", rep.Gates)
	}
	for _, o := range rep.Gates {
		want := Passed
		if o.Gate == "shipped_code" {
			want = Failed
			if ev := strings.Join(o.Evidence, "\n"); !strings.Contains(ev, "node_modules/runner/index.js:2: dependency runner@1.0.0 calls execSync (shell), reached by server.js:1") {
				t.Errorf("shipped_code evidence %q", ev)
			}
		}
		if o.Status != want {
			t.Errorf("%s: %s (%s), want %s", o.Gate, o.Status, o.Detail, want)
		}
	}
}

// TestRunInconclusive: a gate that fails the same way for the original
// image, built and booted by the same path, is inconclusive, never passed;
// one the original passes stays failed.
func TestRunInconclusive(t *testing.T) {
	groupadd := func() sandbox.Result {
		r := booted()
		r.Phases = []sandbox.PhaseResult{{Name: "build:0:step 5", Failed: true, ExitCode: 127, OutputTail: "groupadd: not found\n"}}
		return r
	}
	silent := func() sandbox.Result {
		r := booted()
		r.Phases = []sandbox.PhaseResult{{Name: "build:1"}, {Name: sandbox.PhaseBoot, ExitCode: -1, TimedOut: true, Duration: 30 * time.Second,
			Boot: &sandbox.BootReport{Ended: sandbox.BootMaximum, Awaited: []int{8080}}}}
		return r
	}
	for _, tc := range []struct {
		name           string
		orig, migrated sandbox.Result
		want           map[string]Status
		detail         string
	}{
		{"both fail to build", groupadd(), groupadd(), map[string]Status{"builds": Inconclusive, "boots": Inconclusive, "serves": Inconclusive,
			"no_shell": Inconclusive, "healthcheck": Inconclusive, "same_behaviour": Inconclusive}, "fails here too: build:0:step 5 failed with exit 127: groupadd: not found"},
		{"only the rewrite fails to build", booted(), groupadd(), map[string]Status{"builds": Failed, "same_behaviour": Failed}, "groupadd"},
		{"neither listens", silent(), silent(), map[string]Status{"builds": Passed, "boots": Passed, "serves": Inconclusive,
			"healthcheck": Inconclusive, "same_behaviour": Skipped}, "never listened on 8080 within 30s"},
		{"only the rewrite is silent", booted(), silent(), map[string]Status{"serves": Failed, "same_behaviour": Failed}, "never listened"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{results: []sandbox.Result{tc.orig, tc.migrated}}
			rep, err := Run(t.Context(), fc, Spec{Migrated: "/m", Original: "/o", Dockerfile: "Dockerfile"}, parse(t, withHealth), 0)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Passed {
				t.Errorf("Passed with %+v", rep.Gates)
			}
			all := ""
			for _, o := range rep.Gates {
				all += o.Detail + "\n"
				if want, ok := tc.want[o.Gate]; ok && o.Status != want {
					t.Errorf("%s: %s (%s), want %s", o.Gate, o.Status, o.Detail, want)
				}
			}
			if !strings.Contains(all, tc.detail) {
				t.Errorf("details %q do not say %q", all, tc.detail)
			}
		})
	}
}

// TestRunImages: the report carries both images' facts; an original that
// did not build, or no original, is unknown with its reason, never zeros.
func TestRunImages(t *testing.T) {
	withFacts := func(r sandbox.Result, f sandbox.ImageFacts) sandbox.Result {
		r.ImageFacts = &f
		return r
	}
	before := sandbox.ImageFacts{Bytes: 316_000_000, Layers: 9, Packages: 65, PackageDBs: []string{"dpkg"}, SetuidCount: 1, Setuid: []string{"/bin/su"},
		ShellCount: 1, Shells: []sandbox.Shell{{Path: "/bin/sh", Target: "dash"}}}
	after := sandbox.ImageFacts{Bytes: 211_000_000, Layers: 4, Packages: 16, PackageDBs: []string{"dpkg"}}
	noBuild := booted()
	noBuild.Phases = []sandbox.PhaseResult{{Name: "pull:node:22-alpine", Failed: true, ExitCode: 125, OutputTail: "no such image\n"}}
	for _, tc := range []struct {
		name           string
		orig, migrated sandbox.Result
		original       string
		wantBefore     *sandbox.ImageFacts
		unknown        string
	}{
		{"both built", withFacts(booted(), before), withFacts(booted(), after), "/o", &before, ""},
		{"the original did not build", noBuild, withFacts(booted(), after), "/o", nil, "the image was not built here: pull:node:22-alpine failed with exit 125"},
		{"no original", booted(), withFacts(booted(), after), "", nil, ErrNoOriginal.Error()},
		{"no facts reported", booted(), withFacts(booted(), after), "/o", nil, "the sandbox reported no facts of the image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeClient{results: []sandbox.Result{tc.orig, tc.migrated}}
			rep, err := Run(t.Context(), fc, Spec{Migrated: "/m", Original: tc.original, Dockerfile: "Dockerfile"}, parse(t, withHealth), 0)
			if err != nil {
				t.Fatal(err)
			}
			im := rep.Images
			if im == nil || im.After == nil {
				t.Fatalf("images %+v; want the rewritten image's facts", im)
			}
			if diff := cmp.Diff(&after, im.After); diff != "" || im.AfterUnknown != "" {
				t.Errorf("after (-want +got):\n%s%s", diff, im.AfterUnknown)
			}
			if diff := cmp.Diff(tc.wantBefore, im.Before); diff != "" {
				t.Errorf("before (-want +got):\n%s", diff)
			}
			if !strings.Contains(im.BeforeUnknown, tc.unknown) || (tc.unknown == "") != (im.BeforeUnknown == "") {
				t.Errorf("before unknown %q; want %q", im.BeforeUnknown, tc.unknown)
			}
			text := strings.Join(im.Lines(), "\n")
			t.Logf("\n%s", text)
			wantSize := "size           316 MB → 211 MB (-33%)"
			if tc.wantBefore == nil {
				wantSize = "size           unknown → 211 MB\n"
			}
			if !strings.Contains(text, wantSize) {
				t.Errorf("lines\n%s\nwant %q", text, wantSize)
			}
		})
	}
}

// A shipped call the gate fails on says why it counts: its chain from the
// entrypoint, or, with none, the scope's reason (an incomplete graph, a
// computed load), so that the failure can be acted on.
func TestDescribeFindingSaysWhy(t *testing.T) {
	t.Parallel()
	fd := childprocess.Finding{File: "node_modules/tree-kill/index.js", Line: 45, Function: "spawn", Command: "ps", Kind: childprocess.KindBinary,
		Origin: childprocess.OriginDependency, Package: "tree-kill", PackageVersion: "1.2.2", Scope: childprocess.ScopeUnresolved,
		ScopeNote: "counted as in the image: node_modules lacks x"}
	if got := describeFinding(fd); !strings.HasSuffix(got, "; counted as in the image: node_modules lacks x") {
		t.Errorf("without a chain: %q", got)
	}
	fd.Chain = []string{"index.js:1", "node_modules/tree-kill/index.js:45"}
	if got := describeFinding(fd); !strings.HasSuffix(got, ", reached by index.js:1 → node_modules/tree-kill/index.js:45") {
		t.Errorf("with a chain: %q", got)
	}
}

// TestHealthcheckAfterExit: a HEALTHCHECK that failed in a boot whose
// image exited without listening says so (Ackee's rewrite exited on a
// missing MongoDB URI, and the check's own error was the runtime's
// refusal to exec into a container that had gone).
func TestHealthcheckAfterExit(t *testing.T) {
	res := booted()
	res.Phases = []sandbox.PhaseResult{
		{Name: "build:1"},
		{Name: sandbox.PhaseBoot, ExitCode: 1, Failed: true, Boot: &sandbox.BootReport{Ended: sandbox.BootExited, Awaited: []int{8080}}},
		{Name: sandbox.PhaseHealthcheck, ExitCode: 128, Failed: true, OutputTail: "connecting to control server: connection refused\n"},
	}
	o := check(t, &Evidence{File: parse(t, withHealth), Migrated: res, Shipped: clean()})["healthcheck"]
	if o.Status != Failed || !strings.Contains(o.Detail, "exited during the boot without listening") {
		t.Errorf("healthcheck: %s (%s), want failed, saying the image had exited", o.Status, o.Detail)
	}
	res = booted()
	res.Phases[3] = sandbox.PhaseResult{Name: sandbox.PhaseHealthcheck, ExitCode: 1, Failed: true, OutputTail: "unhealthy\n"}
	o = check(t, &Evidence{File: parse(t, withHealth), Migrated: res, Shipped: clean()})["healthcheck"]
	if o.Status != Failed || strings.Contains(o.Detail, "exited during the boot") {
		t.Errorf("healthcheck of a service that stayed up: %s (%s), want failed on its own", o.Status, o.Detail)
	}
}
