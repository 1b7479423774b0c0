package shelltrace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
)

// fakeSandbox is an in-memory sandbox.Client returning a canned result.
type fakeSandbox struct {
	mu   sync.Mutex
	reqs []sandbox.SpawnRequest
	res  sandbox.Result
	err  error
}

func (f *fakeSandbox) Spawn(_ context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := req.Validate(); err != nil {
		return sandbox.Result{}, err
	}
	f.reqs = append(f.reqs, req)
	return f.res, f.err
}

const testDockerfile = `FROM node:22 AS builder
WORKDIR /app
COPY . .
RUN npm ci && echo built

FROM node:22-slim
WORKDIR /app
COPY --from=builder /app /app
CMD ["npm", "start"]
`

func repo(t *testing.T) *probe.Repo {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"Dockerfile":   testDockerfile,
		"package.json": "{\n  \"scripts\": {\n    \"start\": \"node server.js\"\n  }\n}\n",
		"server.js":    "require('http').createServer().listen(8080)\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := probe.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// npmStartTrace is what the boot of CMD ["npm","start"] on node:22 looks
// like, plus one builder RUN step.
func npmStartTrace() []trace.Event {
	return []trace.Event{
		{Kind: trace.KindStart, PID: 1, Argv: []string{"/bin/sh", "-c", "npm ci && echo built"}, Phase: "build:builder:step 4"},
		{Kind: trace.KindExec, PID: 1, Binary: "/bin/busybox", Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "npm ci && echo built"}, Phase: "build:builder:step 4"},
		{Kind: trace.KindStart, PID: 1, Argv: []string{"docker-entrypoint.sh", "npm", "start"}, Phase: "boot"},
		{Kind: trace.KindExec, PID: 1, Binary: "/usr/local/bin/docker-entrypoint.sh", Argv: []string{"docker-entrypoint.sh", "npm", "start"}, Interp: "/bin/sh", Phase: "boot"},
		{Kind: trace.KindExec, PID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node", "/usr/local/bin/npm", "start"}, Phase: "boot"},
		{Kind: trace.KindClone, PID: 1, ChildPID: 12, Phase: "boot"},
		{Kind: trace.KindExec, PID: 12, PPID: 1, Binary: "/bin/busybox", Execfn: "/bin/sh", Argv: []string{"sh", "-c", "node server.js"}, Cwd: "/app", Phase: "boot"},
		{Kind: trace.KindExec, PID: 12, PPID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node", "server.js"}, Phase: "boot"},
	}
}

func TestTracedShells(t *testing.T) {
	t.Parallel()
	sb := &fakeSandbox{res: sandbox.Result{Backend: "gvisor", TraceComplete: true, Trace: npmStartTrace(),
		Phases: []sandbox.PhaseResult{{Name: "build:builder:step 4"}, {Name: "build:1"}, {Name: "boot", TimedOut: true, Duration: 10 * time.Second}}}}
	pctx := &probe.Context{Sandbox: sb, RegistryMirrors: map[string]string{"docker.io": "127.0.0.1:5000"}, BootFor: 3 * time.Second}
	out, err := New().Run(t.Context(), repo(t), pctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Confidence != probe.High {
		t.Fatalf("confidence %s: %s %s", out.Confidence, out.Reason, out.Detail)
	}
	req := sb.reqs[0]
	if req.Role != sandbox.RoleProbe || !req.CaptureTrace || req.Build == nil || req.Build.Dockerfile != "Dockerfile" ||
		!cmp.Equal(req.Build.Targets, []string{""}) || !req.Build.Boot || req.Build.BootFor != 3*time.Second || req.Build.RegistryMirrors["docker.io"] != "127.0.0.1:5000" {
		t.Fatalf("spawn request = %+v / %+v", req, req.Build)
	}
	type inv struct {
		Phase, Kind, File string
		Line              int
		Ancestry          []string
	}
	var got []inv
	for _, i := range out.Facts.(*Facts).Invocations {
		got = append(got, inv{i.Phase, i.Cause.Kind, i.Cause.File, i.Cause.Line, i.Ancestry})
	}
	want := []inv{
		{"build:builder:step 4", "instruction", "Dockerfile", 4, nil},
		{"boot", "base_image_entrypoint", "Dockerfile", 6, nil},
		{"boot", "npm_script", "package.json", 3, []string{"node /usr/local/bin/npm start"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("invocations (-want +got):\n%s", diff)
	}
	var ids []string
	for _, w := range out.Warnings {
		ids = append(ids, w.ID)
	}
	if diff := cmp.Diff([]string{WarnShellInBuild, WarnShellAtBoot, WarnShellAtBoot}, ids); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestFailuresAreTypedAndUncached(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		sb     sandbox.Client
		reason probe.Reason
		line   int
	}{
		{"no sandbox", nil, ReasonSandboxUnavailable, 0},
		{"unsupported", &fakeSandbox{err: &sandbox.UnsupportedError{Backend: "gvisor", Reason: "no runsc"}}, ReasonSandboxUnavailable, 0},
		{"sandbox error", &fakeSandbox{err: errors.New("runsc: creating container: boom")}, ReasonSandboxBootFailed, 0},
		{"timeout", &fakeSandbox{res: sandbox.Result{TimedOut: true}, err: sandbox.ErrTimeout}, ReasonTimeout, 0},
		{"build failed", &fakeSandbox{res: sandbox.Result{ExitCode: 1, TraceComplete: true, Phases: []sandbox.PhaseResult{
			{Name: "build:builder:step 4", ExitCode: 1, Failed: true, OutputTail: "npm ERR! missing script\nexit 1\n"}}}}, ReasonBuildFailed, 4},
		{"boot failed", &fakeSandbox{res: sandbox.Result{TraceComplete: true, Phases: []sandbox.PhaseResult{{Name: "boot", Failed: true, OutputTail: "no entrypoint"}}}}, ReasonBootFailed, 0},
		{"incomplete trace", &fakeSandbox{res: sandbox.Result{TraceComplete: false, Trace: npmStartTrace()}}, ReasonTraceIncomplete, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := New().Run(t.Context(), repo(t), &probe.Context{Sandbox: tt.sb})
			if err != nil {
				t.Fatal(err)
			}
			if err := out.Validate(); err != nil {
				t.Fatal(err)
			}
			if out.Confidence != probe.Low || out.Reason != tt.reason || !out.Uncacheable {
				t.Fatalf("got %s/%s (uncacheable %v), want low/%s uncacheable", out.Confidence, out.Reason, out.Uncacheable, tt.reason)
			}
			if len(out.Facts.(*Facts).Invocations) != 0 {
				t.Error("a failed run reported invocations")
			}
			if tt.line > 0 && (len(out.Evidence) == 0 || out.Evidence[0].Line != tt.line) {
				t.Errorf("evidence = %+v, want the failing step's line %d", out.Evidence, tt.line)
			}
		})
	}
}

func TestDistrolessAttemptAndUnknownInterpreter(t *testing.T) {
	t.Parallel()
	evs := []trace.Event{
		{Kind: trace.KindExec, PID: 1, Binary: "/nodejs/bin/node", Argv: []string{"/nodejs/bin/node", "server.js"}, Phase: "boot"},
		{Kind: trace.KindClone, PID: 1, ChildPID: 5, Phase: "boot"},
		{Kind: trace.KindExecAttempt, PID: 5, PPID: 1, Execfn: "/bin/sh", Argv: []string{"/bin/sh", "-c", "echo hi"}, Phase: "boot"},
		{Kind: trace.KindExec, PID: 1, Binary: "/app/tool", Interp: trace.InterpUnknown, Phase: "boot"},
	}
	sb := &fakeSandbox{res: sandbox.Result{TraceComplete: true, Trace: evs, Phases: []sandbox.PhaseResult{{Name: "boot", ExitCode: 1}}}}
	out, err := New().Run(t.Context(), repo(t), &probe.Context{Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	f := out.Facts.(*Facts)
	if len(f.Invocations) != 1 || !f.Invocations[0].Attempted || f.Invocations[0].Cause.Kind != "child_process" {
		t.Fatalf("invocations = %+v", f.Invocations)
	}
	if out.Confidence != probe.Medium || out.Reason != ReasonInterpreterUnknown || len(f.Unresolved) != 1 {
		t.Errorf("got %s/%s with %d unresolved", out.Confidence, out.Reason, len(f.Unresolved))
	}
}

func TestImageInputs(t *testing.T) {
	t.Parallel()
	got, err := New().ImageInputs(t.Context(), repo(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"node:22", "node:22-slim"}, got); diff != "" {
		t.Errorf("image inputs (-want +got):\n%s", diff)
	}
}

func TestTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dockerfile, final string
		want                    []string
	}{
		{"single stage", "FROM node:22\nCMD [\"node\"]\n", "", []string{""}},
		{"final copies from builder: one build", "FROM node:22 AS builder\nRUN true\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=builder /a /a\n", "", []string{""}},
		{"final built on builder: one build", "FROM node:22 AS builder\nRUN true\nFROM builder\nCMD [\"node\"]\n", "", []string{""}},
		{"through another stage", "FROM node:22 AS builder\nRUN true\nFROM node:22 AS mid\nCOPY --from=builder /a /a\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=mid /a /a\n", "", []string{""}},
		{"builder the final does not need: built on its own", "FROM node:22 AS builder\nRUN true\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY a /a\n", "", []string{"builder", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := dockerfile.Parse("Dockerfile", []byte(tt.dockerfile))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, targets(f, tt.final)); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStepTimeoutKeepsTheShellsSeen: a step stopped at the step timeout
// is a timeout, low, naming the step, and the shells the trace showed up
// to then are still reported, with the exec witness's gaps. A step that
// retried TLS handshakes its client gave up until the timeout (npm on a
// network that inspects TLS, RoboShop1/r-user) names --build-ca.
func TestStepTimeoutKeepsTheShellsSeen(t *testing.T) {
	t.Parallel()
	tr := npmStartTrace()[:2]
	sb := &fakeSandbox{res: sandbox.Result{Backend: "gvisor", TimedOut: true, ExitCode: -1, Trace: tr,
		Egress: &sandbox.EgressReport{Allow: []string{"registry.npmjs.org"}, Conns: []sandbox.EgressConn{
			{Phase: "build:builder:step 4", Host: "registry.npmjs.org", Port: 443, Up: 1595, Down: 3343, Allowed: true, TLSAbandoned: true}}},
		TraceGaps: []string{"the exec witness saw /bin/sh that the trace did not"},
		Phases:    []sandbox.PhaseResult{{Name: "build:builder:step 4", Failed: true, TimedOut: true, ExitCode: -1}, {Name: "build:1", Failed: true, TimedOut: true, ExitCode: -1}}}}
	out, err := New().Run(t.Context(), repo(t), &probe.Context{Sandbox: sb, StepTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if out.Confidence != probe.Low || out.Reason != ReasonTimeout || !strings.Contains(out.Detail, "build:builder:step 4 ran past the step timeout") ||
		!strings.Contains(out.Detail, "exec witness saw /bin/sh") || !strings.Contains(out.Detail, "--build-ca FILE") {
		t.Fatalf("%s/%s %q; want a low timeout naming the step, --build-ca and the witness's gap", out.Confidence, out.Reason, out.Detail)
	}
	if got := out.Facts.(*Facts).Invocations; len(got) != 1 || got[0].Phase != "build:builder:step 4" {
		t.Errorf("invocations %+v; want the step's shell", got)
	}
	ids := []string{}
	for _, w := range out.Warnings {
		ids = append(ids, w.ID)
	}
	if diff := cmp.Diff([]string{WarnTimeout, WarnShellInBuild}, ids); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if req := sb.reqs[0]; req.Build.StepTimeout != time.Minute {
		t.Errorf("step timeout %v, want the run's", req.Build.StepTimeout)
	}
}
