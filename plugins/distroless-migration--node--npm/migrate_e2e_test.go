package nodenpm_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/gatecontrol/client"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/report"
	"github.com/codegenie/codegenie/internal/sandbox"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/dockerfile"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
)

// These tests migrate runnable services (testdata/migrate-e2e) on the local
// stand-in images and prove each rewrite with the gates in gVisor, through
// the same private gate-control as the trace tests.

func migrateOptions(e *traceEnv) migrate.Options {
	images := &image.Remote{Mirrors: e.mirrors}
	mirrors := map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host}
	return migrate.Options{
		Gather:         gather.Options{Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task, Images: images},
		RewriteOptions: nodenpm.RewriteOptions{Digest: images.Digest},
		Sandbox:        e.sandbox,
		// A maximum, not a window: each boot ends once it has answered
		// and settled.
		BootFor:         3 * time.Minute,
		RegistryMirrors: mirrors,
		Timeout:         3 * time.Minute,
	}
}

// TestMigrateE2E: each service migrates, every gate passes, --write
// applies the rewrite, and a traced gather of the result says ready,
// confirmed by the trace.
func TestMigrateE2E(t *testing.T) {
	e := setupTrace(t)
	for _, tc := range []struct {
		name string
		// skipped are the gates with nothing to check for this service,
		// and why the skip is right; inconclusive, those the original
		// image fails here too, and why. A service with an inconclusive
		// gate is not proven, and so not migrated.
		skipped, inconclusive map[string]string
		// targetImage is a --target-image.
		targetImage string
		dir         string
		// healthcheck: the service has a HEALTHCHECK to check.
		healthcheck bool
	}{
		{name: "npm-start"},
		{name: "shell-form-cmd"},
		{name: "var-prefix"},
		{name: "prestart-hook"},
		// A .dockerignore allow-list (*, then !server.js ...): the
		// generated launcher gets its own ! line, or the build finds no
		// file to COPY.
		{name: "dockerignore-allowlist"},
		{name: "healthcheck-curl", healthcheck: true},
		// wget -qO- URL | grep -q TEXT: grep decides, so the generated
		// check reads the body.
		{name: "healthcheck-grep", healthcheck: true},
		// "start": "sh -e bin/start.sh", a script that only sets
		// defaults and execs node: ENV and CMD, the script gone.
		{name: "npm-script-defaults-sh"},
		// "type": "module": the generated launcher and health check are
		// .cjs, or they would crash with require undefined.
		{name: "esm-module", healthcheck: true},
		// No musl Node is on the package registries, so there is no
		// node:22-alpine stand-in: the original cannot be built here, so
		// same_behaviour has nothing to compare with, says so, and the
		// rewrite, which builds, boots and is shell-free, is not proven.
		{name: "alpine-builder", inconclusive: map[string]string{"same_behaviour": "the original image fails here: pull:node:22-alpine failed"}},
		{name: "final-stage-run"},
		{name: "env-shebang-bin"},
		// USER node and --chown=node:node: the node image's users come along.
		{name: "user-node"},
		// Root wrote into a RUN-made directory; the nonroot target still can.
		{name: "root-data-dir"},
		// A Node 22 service moved to the Node 24 distroless image.
		{name: "npm-start-on-24", dir: "npm-start", targetImage: "gcr.io/distroless/nodejs24-debian13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := tc.name
			if tc.dir != "" {
				src = tc.dir
			}
			copyTree(t, filepath.Join("testdata", "migrate-e2e", src), dir)
			o := migrateOptions(e)
			o.TargetImage = tc.targetImage
			m, err := migrate.Run(t.Context(), dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if m.Result.Refused() {
				t.Fatalf("refused: %+v", m.Result.Refusals)
			}
			if m.Gates == nil {
				t.Fatal("the gates did not run")
			}
			for _, o := range m.Gates.Gates {
				want := gates.Passed
				if o.Gate == "healthcheck" && !tc.healthcheck {
					want = gates.Skipped // the service has no HEALTHCHECK
				}
				for status, whys := range map[gates.Status]map[string]string{gates.Skipped: tc.skipped, gates.Inconclusive: tc.inconclusive} {
					if why, ok := whys[o.Gate]; ok {
						want = status
						if !strings.Contains(o.Detail, why) {
							t.Errorf("%s %s for %q, want %q", o.Gate, status, o.Detail, why)
						}
					}
				}
				if o.Status != want {
					t.Errorf("gate %s: %s (%s %v), want %s", o.Gate, o.Status, o.Detail, o.Evidence, want)
				}
			}
			checkImages(t, m.Gates.Images, tc.inconclusive["same_behaviour"] == "")
			if len(tc.inconclusive) > 0 {
				if m.Proven || m.Gates.Passed {
					t.Fatalf("proven %v, passed %v with inconclusive gates", m.Proven, m.Gates.Passed)
				}
				return
			}
			if !m.Migrated || !m.Proven {
				t.Fatalf("migrated %v, proven %v", m.Migrated, m.Proven)
			}
			if tc.targetImage != "" && !strings.HasPrefix(m.Result.Target.Pinned(), "gcr.io/distroless/nodejs24-debian13:nonroot@sha256:") {
				t.Errorf("target %s, want the Node 24 image pinned by digest", m.Result.Target.Pinned())
			}
			if len(m.Gates.AuditIDs) == 0 {
				t.Error("the gate spawns have no audit records")
			}
			t.Logf("gather %.1f ms, recipe %.2f ms, gates %.0f ms (original image %.0f ms)", m.Timings.GatherMS, m.Timings.RecipeMS, m.Timings.GatesMS, m.Timings.OriginalMS)
			if err := m.Write(dir); err != nil {
				t.Fatal(err)
			}
			for _, f := range m.Result.Files {
				got, err := os.ReadFile(filepath.Join(dir, f.Path))
				if err != nil || string(got) != string(f.New) {
					t.Fatalf("%s after --write: %v", f.Path, err)
				}
			}
			out := gatherTraced(t, e, dir, nil)
			a := out.Context.Assessments["distroless_readiness"]
			if a.Verdict != probe.Ready || !a.Confirmed {
				t.Fatalf("gather on the migrated service: %s (confirmed %v), blockers %+v", a.Verdict, a.Confirmed, a.Blockers)
			}
		})
	}
}

// checkImages checks the facts of the gates' images: the rewritten one
// has no shell, and no more OS packages or setuid files than the
// original, which (built from a node stand-in) has a shell; an original
// that could not be built is unknown, not zeros.
func checkImages(t *testing.T, im *report.ImageChange, originalBuilt bool) {
	t.Helper()
	if im == nil {
		t.Fatal("the gates report no image facts")
	}
	t.Logf("images, original → rewritten:\n  %s", strings.Join(im.Lines(), "\n  "))
	a, b := im.After, im.Before
	if a == nil || a.Incomplete != "" || !report.Sized(a) {
		t.Fatalf("the rewritten image's facts %+v (%s); want them whole", a, im.AfterUnknown)
	}
	if a.ShellCount != 0 || len(a.Shells) != 0 {
		t.Errorf("the rewritten image has shells %v", a.Shells)
	}
	if !originalBuilt {
		if b != nil || !strings.Contains(im.BeforeUnknown, "not built here") {
			t.Errorf("before %+v (%q); want unknown: the original was not built here", b, im.BeforeUnknown)
		}
		return
	}
	if b == nil || b.Incomplete != "" || !report.Sized(b) {
		t.Fatalf("the original image's facts %+v (%s); want them whole", b, im.BeforeUnknown)
	}
	// /usr/bin/sh on a merged /usr (Debian): the walk does not follow the
	// /bin link.
	if !slices.ContainsFunc(b.Shells, func(s sandbox.Shell) bool { return s.Path == "/bin/sh" || s.Path == "/usr/bin/sh" }) {
		t.Errorf("the original image's shells %v; want /bin/sh", b.Shells)
	}
	if a.Packages > b.Packages || a.SetuidCount > b.SetuidCount {
		t.Errorf("after %d packages, %d setuid; want no more than before (%d, %d)", a.Packages, a.SetuidCount, b.Packages, b.SetuidCount)
	}
}

// TestMigratePlantedShell: a shell planted in the rewritten image after
// the rewrite (an execSync once the server listens) fails no_shell.
func TestMigratePlantedShell(t *testing.T) {
	e := setupTrace(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "migrate-e2e", "npm-start"), dir)
	o := migrateOptions(e)
	o.NoGates = true
	m, err := migrate.Run(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	// The plant: a shell the static probes would have refused, added
	// behind the recipe's back.
	server := filepath.Join(dir, "server.js")
	src, err := os.ReadFile(server)
	if err != nil {
		t.Fatal(err)
	}
	plant := "\nsetTimeout(() => { try { require('child_process').execSync('echo planted'); } catch (e) { console.error(e.message); } }, 300);\n"
	if err := os.WriteFile(server, append(src, plant...), 0o644); err != nil {
		t.Fatal(err)
	}
	newDF, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := dockerfile.Parse("Dockerfile", newDF)
	if err != nil {
		t.Fatal(err)
	}
	// A gate-control of its own, whose audit log the test reads.
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	gc := client.NewLazy(client.PrivateConfig{Executable: e.bin, Stderr: os.Stderr, AuditLog: auditLog})
	// BootFor is a maximum of minutes, as in migrateOptions: the boot ends
	// once the service has answered and settled, which holds the planted
	// exec, whatever the machine's speed; a 4 s maximum could end a slow
	// boot before the plant ran.
	rep, err := gates.Run(t.Context(), gc, gates.Spec{Migrated: dir, Dockerfile: "Dockerfile", BootFor: o.BootFor,
		RegistryMirrors: o.RegistryMirrors, Timeout: 3 * time.Minute}, parsed, parsed.Final)
	if cerr := gc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed {
		t.Fatal("the gates passed an image with a planted shell")
	}
	// The audit log shows each gate spawn with role gate.
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			SpawnID string `json:"spawn_id"`
			Role    string `json:"role"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.SpawnID != "" && r.Role != "" {
			roles[r.SpawnID] = append(roles[r.SpawnID], r.Role)
		}
	}
	if len(rep.AuditIDs) == 0 {
		t.Fatal("no audit IDs")
	}
	for _, id := range rep.AuditIDs {
		if len(roles[id]) == 0 || slices.ContainsFunc(roles[id], func(r string) bool { return r != "gate" }) {
			t.Errorf("audit records of %s have roles %v, want gate", id, roles[id])
		}
	}
	for _, g := range rep.Gates {
		if g.Gate != "no_shell" {
			continue
		}
		if g.Status != gates.Failed || !strings.Contains(strings.Join(g.Evidence, "\n"), "echo planted") {
			t.Fatalf("no_shell: %s %q %v, want failed citing the planted exec", g.Status, g.Detail, g.Evidence)
		}
		return
	}
	t.Fatal("no no_shell gate")
}

// TestMigrateInitSIGTERM: a service behind tini whose app has no SIGTERM
// handler still stops on SIGTERM once migrated, because the generated
// launcher, as pid 1, forwards it to the app (ADR-0016); and the entrypoint
// script's "$@" still receives CMD's arguments. The app, once listening,
// sends SIGTERM to pid 1 as docker stop does (SIGTERM_PID1, set by the
// test); the boot must end because the service exited. The control boots
// the same app as pid 1 without the launcher: the kernel drops the signal,
// and the boot ends only once the service has answered and settled, which
// shows the check can fail.
func TestMigrateInitSIGTERM(t *testing.T) {
	e := setupTrace(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join("testdata", "migrate-e2e", "init-sigterm"), dir)
	o := migrateOptions(e)
	o.NoGates = true
	m, err := migrate.Run(t.Context(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result.Refused() {
		t.Fatalf("refused: %+v", m.Result.Refusals)
	}
	if err := m.Write(dir); err != nil {
		t.Fatal(err)
	}
	rewritten, err := os.ReadFile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	const entry = `ENTRYPOINT ["/nodejs/bin/node", "/app/codegenie-launch.cjs"]`
	if !strings.Contains(string(rewritten), entry+"\nCMD [\"--name\", \"init-sigterm\"]\n") || strings.Contains(string(rewritten), "tini") {
		t.Fatalf("rewritten Dockerfile:\n%s\nwant %s and CMD's arguments, no tini", rewritten, entry)
	}
	boot := func(t *testing.T, dockerfile string) sandbox.PhaseResult {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile+"ENV SIGTERM_PID1=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := e.sandbox.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: dir}, Timeout: 5 * time.Minute, CaptureTrace: true,
			Build: &sandbox.BuildSpec{Dockerfile: "Dockerfile", Targets: []string{""}, Boot: true, BootFor: 3 * time.Minute,
				RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Phases {
			if p.Name == sandbox.PhaseBoot {
				return p
			}
		}
		t.Fatalf("no boot: phases %+v, stderr %s", res.Phases, res.Stderr)
		return sandbox.PhaseResult{}
	}
	t.Run("launcher", func(t *testing.T) {
		p := boot(t, string(rewritten))
		// 143 = 128 + SIGTERM: the app died of the forwarded signal and
		// the launcher exited with its status, as tini does; a boot that
		// ran on (answered and settled, or its maximum) would be 0 or -1.
		if p.ExitCode != 143 || p.TimedOut {
			t.Fatalf("boot exit %d (timed out %v), want 143: SIGTERM to pid 1 did not stop the service as tini did; boot %+v, output %s", p.ExitCode, p.TimedOut, p.Boot, p.OutputTail)
		}
		if p.Boot != nil && p.Boot.Ended != sandbox.BootExited {
			t.Errorf("boot ended %q, want %q", p.Boot.Ended, sandbox.BootExited)
		}
		// The app is the launcher's child, not pid 1, so the default
		// action of a signal applies to it on any kernel (Linux drops a
		// default-action signal to a namespace's pid 1), and it got CMD's
		// arguments as the script's "$@" gave them.
		out := p.OutputTail
		if !strings.Contains(out, "listening; pid ") || strings.Contains(out, "listening; pid 1;") || !strings.Contains(out, "; args: --name init-sigterm") {
			t.Errorf("output %q, want the app not pid 1 and given CMD's arguments", out)
		}
		t.Logf("exit %d after %v", p.ExitCode, p.Duration)
	})
	t.Run("node as pid 1", func(t *testing.T) {
		direct := strings.Replace(string(rewritten), entry, `ENTRYPOINT ["/nodejs/bin/node", "/app/server.js"]`, 1)
		p := boot(t, direct)
		if !strings.Contains(p.OutputTail, "listening; pid 1;") {
			t.Fatalf("output %q, want the app as pid 1 without the launcher, or the check above proves nothing", p.OutputTail)
		}
		// gVisor delivers a default-action SIGTERM to pid 1 where Linux
		// drops it, so here node as pid 1 may exit too; only its pid
		// tells the two starts apart.
		t.Logf("node as pid 1: exit %d", p.ExitCode)
	})
}
