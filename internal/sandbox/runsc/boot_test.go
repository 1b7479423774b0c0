package runsc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
	"github.com/codegenie/codegenie/internal/trace/seccheck"
)

func TestResolveUser(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(`root:x:0:0:root:/root:/bin/sh
# a comment
node:x:1000:1000:node:/home/node:/bin/sh
broken line
nonroot:x:65532:65532::/home/nonroot:/sbin/nologin
`), 0o644))
	must(os.WriteFile(filepath.Join(root, "etc/group"), []byte(`root:x:0:
node:x:1000:
audio:x:29:node,other
video:x:44:other
staff:x:50:node
`), 0o644))
	for _, tc := range []struct {
		spec string
		want imageUser
		err  bool
	}{
		{"", imageUser{home: "/root"}, false},
		{"root", imageUser{home: "/root"}, false},
		{"node", imageUser{uid: 1000, gid: 1000, groups: []uint32{29, 50}, home: "/home/node"}, false},
		{"1000", imageUser{uid: 1000, gid: 1000, groups: []uint32{29, 50}, home: "/home/node"}, false},
		{"65532", imageUser{uid: 65532, gid: 65532, home: "/home/nonroot"}, false},
		{"4242", imageUser{uid: 4242, home: "/"}, false},
		{"4242:7", imageUser{uid: 4242, gid: 7, home: "/"}, false},
		{"node:staff", imageUser{uid: 1000, gid: 50, groups: []uint32{29}, home: "/home/node"}, false},
		{"node:video", imageUser{uid: 1000, gid: 44, groups: []uint32{29, 50}, home: "/home/node"}, false},
		{"nobody", imageUser{}, true},
		{"node:nogroup", imageUser{}, true},
		{"node:", imageUser{}, true},
	} {
		got, err := resolveUser(root, tc.spec)
		if (err != nil) != tc.err {
			t.Errorf("resolveUser(%q): %v, want error %v", tc.spec, err, tc.err)
			continue
		}
		if err == nil && !cmp.Equal(tc.want, got, cmp.AllowUnexported(imageUser{})) {
			t.Errorf("resolveUser(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
	// An image without /etc/passwd: numeric users only.
	empty := t.TempDir()
	if u, err := resolveUser(empty, "123:45"); err != nil || u.uid != 123 || u.gid != 45 || u.home != "/" {
		t.Errorf("no passwd, 123:45: %+v, %v", u, err)
	}
	if _, err := resolveUser(empty, "node"); err == nil {
		t.Error("no passwd, node: resolved")
	}
	// A symlink out of the rootfs is not followed.
	esc := t.TempDir()
	must(os.MkdirAll(filepath.Join(esc, "etc"), 0o755))
	must(os.Symlink("/etc/passwd", filepath.Join(esc, "etc/passwd")))
	if _, err := resolveUser(esc, "root"); err == nil {
		t.Error("followed a symlink out of the rootfs")
	}
}

func TestRegistriesConf(t *testing.T) {
	t.Parallel()
	got := registriesConf(map[string]string{"gcr.io": "127.0.0.1:5000", "docker.io": "mirror.example.com/hub"})
	want := `unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"

[[registry]]
location = "docker.io"

[[registry.mirror]]
location = "mirror.example.com/hub"

[[registry]]
location = "gcr.io"

[[registry.mirror]]
location = "127.0.0.1:5000"
insecure = true
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registries.conf (-want +got):\n%s", diff)
	}
	for _, bad := range []map[string]string{
		{"docker.io": "127.0.0.1:5000\"\n[[registry]]"},
		{"docker.io\n": "127.0.0.1:5000"},
		{"docker.io": "http://127.0.0.1:5000"},
		{"": "127.0.0.1"},
	} {
		if err := checkMirrors(bad); !errors.Is(err, sandbox.ErrInvalidRequest) {
			t.Errorf("checkMirrors(%q) = %v, want ErrInvalidRequest", bad, err)
		}
	}
	if err := checkMirrors(map[string]string{"docker.io": "localhost:5000", "registry-1.example.com:443": "10.0.0.1"}); err != nil {
		t.Errorf("valid mirrors: %v", err)
	}
	for host, want := range map[string]bool{"127.0.0.1:5000": true, "localhost": true, "[::1]:5000": true, "10.0.0.1:5000": false, "example.com/x": false} {
		if loopbackHost(host) != want {
			t.Errorf("loopbackHost(%q) = %v", host, !want)
		}
	}
}

// TestPlanBuild checks the requests a build spawn refuses before anything
// runs.
func TestPlanBuild(t *testing.T) {
	t.Parallel()
	b := &Backend{cfg: Config{StateDir: "/tmp/unused"}.withDefaults()}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "Dockerfile"), []byte("FROM node:22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "Evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := func() sandbox.SpawnRequest {
		return sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: sandbox.Workspace{Dir: ws},
			Build: &sandbox.BuildSpec{Dockerfile: "Dockerfile", Targets: []string{""}}}
	}
	for _, tc := range []struct {
		name string
		edit func(r *sandbox.SpawnRequest)
	}{
		{"command", func(r *sandbox.SpawnRequest) { r.Command = []string{"true"} }},
		{"env", func(r *sandbox.SpawnRequest) { r.Env = []string{"A=b"} }},
		{"network", func(r *sandbox.SpawnRequest) { r.AllowNetwork = true }},
		{"relative workspace", func(r *sandbox.SpawnRequest) { r.Workspace.Dir = "ws" }},
		{"missing Dockerfile", func(r *sandbox.SpawnRequest) { r.Build.Dockerfile = "Nope" }},
		{"Dockerfile symlink out", func(r *sandbox.SpawnRequest) { r.Build.Dockerfile = "Evil" }},
		{"Dockerfile directory", func(r *sandbox.SpawnRequest) { r.Build.Dockerfile = "dir" }},
		{"target flag", func(r *sandbox.SpawnRequest) { r.Build.Targets = []string{"--help"} }},
		{"bad mirror", func(r *sandbox.SpawnRequest) { r.Build.RegistryMirrors = map[string]string{"docker.io": "a b"} }},
	} {
		r := base()
		tc.edit(&r)
		if _, err := b.planBuild(&r); !errors.Is(err, sandbox.ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrInvalidRequest", tc.name, err)
		}
	}
	nob := &Backend{cfg: Config{StateDir: "/tmp/unused", Buildah: "/nonexistent/buildah"}.withDefaults()}
	if _, err := nob.buildTools(); !errors.Is(err, sandbox.ErrNotSupported) {
		t.Errorf("buildTools without buildah: %v, want ErrNotSupported", err)
	}
	r := base()
	bp, err := b.planBuild(&r)
	if err != nil || bp.bootFor != DefaultBootFor || len(bp.stages) != 1 || bp.limits.OutputBytes != DefaultOutputBytes {
		t.Errorf("valid request: %+v, %v", bp, err)
	}
	if i, ok := bp.targetStage(""); !ok || i != 0 {
		t.Errorf("final stage %d %v", i, ok)
	}
	if _, ok := bp.targetStage("builder"); ok {
		t.Error("found a stage that does not exist")
	}
}

// TestAttribute feeds attribute a collection like the two-stage build's,
// without running anything: phases by container order, the inserted first
// execs, and the checks that make a trace incomplete.
func TestAttribute(t *testing.T) {
	t.Parallel()
	st := mustStages(t, twoStageDockerfileSecond)
	builderLog := newBuildLog(st, 0)
	feed(builderLog, "STEP 1/3: FROM node:22 AS builder\nSTEP 2/3: RUN echo building && mkdir -p /out && echo x > /out/x\nbuilding\n--> 065408d8d93\nSTEP 3/3: RUN echo second\nsecond\nCOMMIT x\n--> 80097768216\n")
	finalLog := newBuildLog(st, 1)
	feed(finalLog, twoStageFinalLog)

	bootFS := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bootFS, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"docker-entrypoint.sh": "#!/bin/sh\nexec \"$@\"\n", "node": "\x7fELF..."} {
		if err := os.WriteFile(filepath.Join(bootFS, "usr/local/bin", name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ep := lookup{state: lookupFound, execfn: "/usr/local/bin/docker-entrypoint.sh", binary: "/usr/local/bin/docker-entrypoint.sh"}
	boot := &bootRun{id: "cg-boot", image: "d161c74afe25", rootfs: bootFS, argv: []string{"docker-entrypoint.sh", "node"}, cwd: "/", lookup: ep}

	start := func(c string, argv ...string) trace.Event {
		return trace.Event{Kind: trace.KindStart, PID: 1, TID: 1, Argv: argv, Container: c, Cwd: "/"}
	}
	exit := func(c string) trace.Event { return trace.Event{Kind: trace.KindExit, PID: 1, TID: 1, Container: c} }
	events := []trace.Event{
		start("b1", "/bin/sh", "-c", "echo building && mkdir -p /out && echo x > /out/x"), exit("b1"),
		start("b2", "/bin/sh", "-c", "echo second"), exit("b2"),
		// The final target reused step 2 and ran step 3 again (a cache
		// miss, for the sake of the test).
		start("b3", "/bin/sh", "-c", "echo second"), exit("b3"),
		start("cg-boot", "/usr/local/bin/docker-entrypoint.sh", "node"),
		{Kind: trace.KindExec, PID: 1, TID: 1, Binary: "/usr/local/bin/node", Argv: []string{"node"}, Container: "cg-boot"},
		exit("cg-boot"),
	}
	run := func(events []trace.Event) ([]trace.Event, bool) {
		br := &buildRun{req: &sandbox.SpawnRequest{}, targets: []*targetRun{{log: builderLog}, {log: finalLog, stage: 1}}}
		return br.attribute(t.Context(), &seccheck.Collection{Events: slices.Clone(events), Complete: true}, boot, false)
	}
	got, complete := run(events)
	if !complete {
		t.Error("trace incomplete")
	}
	type view struct {
		Kind           trace.Kind
		Container      string
		Phase          string
		Binary, Execfn string
		Interp         string
	}
	var gv []view
	for _, e := range got {
		gv = append(gv, view{e.Kind, e.Container, e.Phase, e.Binary, e.Execfn, e.Interp})
	}
	want := []view{
		{trace.KindStart, "b1", "build:builder:step 2", "", "", ""},
		{trace.KindExec, "b1", "build:builder:step 2", "", "/bin/sh", ""},
		{trace.KindExit, "b1", "build:builder:step 2", "", "", ""},
		{trace.KindStart, "b2", "build:builder:step 3", "", "", ""},
		{trace.KindExec, "b2", "build:builder:step 3", "", "/bin/sh", ""},
		{trace.KindExit, "b2", "build:builder:step 3", "", "", ""},
		{trace.KindStart, "b3", "build:builder:step 3", "", "", ""},
		{trace.KindExec, "b3", "build:builder:step 3", "", "/bin/sh", ""},
		{trace.KindExit, "b3", "build:builder:step 3", "", "", ""},
		{trace.KindStart, "cg-boot", "boot", "", "", ""},
		{trace.KindExec, "cg-boot", "boot", "/usr/local/bin/docker-entrypoint.sh", "/usr/local/bin/docker-entrypoint.sh", "/bin/sh"},
		{trace.KindExec, "cg-boot", "boot", "/usr/local/bin/node", "", ""},
		{trace.KindExit, "cg-boot", "boot", "", "", ""},
	}
	if diff := cmp.Diff(want, gv); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A container too many, args that do not fit the step, a second
	// start: each makes the trace incomplete and leaves phases unset.
	for name, evs := range map[string][]trace.Event{
		"extra container": append(slices.Clone(events), start("b4", "/bin/sh", "-c", "x"), exit("b4")),
		"wrong args":      slices.Concat([]trace.Event{start("b1", "/bin/sh", "-c", "echo other"), exit("b1")}, events[2:]),
		"no container id": append(slices.Clone(events), trace.Event{Kind: trace.KindClone, PID: 3}),
		"two boot starts": append(slices.Clone(events), start("cg-boot", "/usr/local/bin/docker-entrypoint.sh", "node")),
	} {
		got, complete := run(evs)
		if complete {
			t.Errorf("%s: trace complete", name)
		}
		if name == "wrong args" && got[0].Phase != "" {
			t.Errorf("%s: phase %q set on a container that does not fit its step", name, got[0].Phase)
		}
	}
}

func TestOutputTail(t *testing.T) {
	t.Parallel()
	out := strings.Repeat("line\n", 2*stepTailLines)
	got := outputTail([]byte(out), []byte("Error: spawnSync /bin/sh ENOENT\n"))
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != stepTailLines || lines[len(lines)-1] != "Error: spawnSync /bin/sh ENOENT" {
		t.Errorf("tail %q", got)
	}
}

// TestNeedsLayers: a layer per step only when the trace reads another
// stage's files (a RUN step outside the target's stage) or a second target
// reuses the first's steps.
func TestNeedsLayers(t *testing.T) {
	cases := []struct {
		name       string
		dockerfile string
		targets    []string
		want       bool // when the trace reads stages' images
		wantSnaps  bool // when it does not (step snapshots, or no trace)
	}{
		{"single stage", "FROM node:22\nWORKDIR /app\nCOPY . .\nRUN npm ci\nCMD [\"node\", \"s.js\"]\n", []string{""}, false, false},
		{"runtime stage runs, builder copies", "FROM node:22 AS deps\nCOPY . .\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=deps /x /x\n", []string{""}, false, false},
		{"builder runs", "FROM node:22 AS b\nRUN npm ci\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=b /x /x\n", []string{""}, true, false},
		{"two targets", "FROM node:22 AS b\nCOPY . .\nFROM node:22\nCOPY --from=b /x /x\n", []string{"b", ""}, true, true},
		{"target builder only", "FROM node:22 AS b\nRUN npm ci\nFROM node:22\nRUN echo\n", []string{"b"}, true, false},
		{"unknown target", "FROM node:22 AS b\nRUN npm ci\n", []string{"nope"}, true, true},
	}
	for _, tc := range cases {
		stages, err := parseStages([]byte(tc.dockerfile))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		bp := &buildPlan{stages: stages, targets: tc.targets}
		target := tc.targets[len(tc.targets)-1]
		if got := bp.needsLayers(target, true); got != tc.want {
			t.Errorf("%s: needsLayers reading stages' images = %v, want %v", tc.name, got, tc.want)
		}
		if got := bp.needsLayers(target, false); got != tc.wantSnaps {
			t.Errorf("%s: needsLayers not reading them = %v, want %v", tc.name, got, tc.wantSnaps)
		}
	}
}

// TestBudArgsLayersAndHook checks the flags that decide what a build
// commits: a traced build with a step hook gives --hooks-dir and builds its
// builder stage without --layers; without the hook it needs --layers; an
// untraced build needs neither.
func TestBudArgsLayersAndHook(t *testing.T) {
	stages, err := parseStages([]byte("FROM node:22 AS b\nRUN npm ci\nFROM gcr.io/distroless/nodejs22-debian13\nCOPY --from=b /x /x\n"))
	if err != nil {
		t.Fatal(err)
	}
	newRun := func(traced bool, snaps string) *buildRun {
		br := &buildRun{
			b:     &Backend{cfg: Config{Runsc: "/runsc", Platform: PlatformSystrap, NoCgroups: true}},
			bh:    &buildah{dir: "/b"},
			sp:    &spawnDir{id: "cg-x"},
			plan:  buildPlan{workspace: "/ws", stages: stages, targets: []string{""}},
			df:    "/b/Dockerfile",
			snaps: snaps,
		}
		if traced {
			br.tr = &tracer{config: "/t/pod-init.json"}
		}
		return br
	}
	cases := []struct {
		name          string
		br            *buildRun
		layers, hooks bool
	}{
		{"traced, step hook", newRun(true, "/b/snap"), false, true},
		{"traced, no step hook", newRun(true, ""), true, false},
		{"untraced", newRun(false, ""), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.br.budArgs("", "localhost/x")
			if got := slices.Contains(args, "--layers"); got != tc.layers {
				t.Errorf("--layers in %q: %v, want %v", args, got, tc.layers)
			}
			if got := slices.Contains(args, "--layers=false"); got == tc.layers {
				t.Errorf("--layers=false in %q: %v, want %v", args, got, !tc.layers)
			}
			i := slices.Index(args, "--hooks-dir")
			if got := i >= 0; got != tc.hooks {
				t.Fatalf("--hooks-dir in %q: %v, want %v", args, got, tc.hooks)
			}
			if tc.hooks && args[i+1] != "/b/"+stepHookDir {
				t.Errorf("--hooks-dir %q, want /b/%s", args[i+1], stepHookDir)
			}
		})
	}
}
