package nodenpm_test

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/buildnet"
	"github.com/codegenie/codegenie/internal/builtin"
	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/gatecontrol/client"
	"github.com/codegenie/codegenie/internal/gather"
	"github.com/codegenie/codegenie/internal/image"
	"github.com/codegenie/codegenie/internal/migrate"
	"github.com/codegenie/codegenie/internal/probe"
	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/gates"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/probes/shelltrace"
)

// hostCA is the host's trust store. This machine's HTTPS presents a CA that
// only it holds (ENVIRONMENT.md), as a TLS-inspecting corporate network
// does: the builds get it with --build-ca.
const hostCA = "/etc/ssl/certs/ca-certificates.crt"

// depsNet is the build network of the real-dependency tests: the defaults
// (the npm registry, the repository's registries, the base images'
// mirrors) and the host's CA bundle.
func depsNet(t *testing.T) *buildnet.Settings {
	t.Helper()
	if _, err := os.Stat(hostCA); err != nil {
		t.Skipf("no host CA bundle at %s: this machine reaches no registry over HTTPS from a sandbox without it (%v)", hostCA, err)
	}
	bn, err := buildnet.Parse(nil, false, hostCA, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bn
}

// TestDepsE2E: services with real npm dependencies, installed during the
// sandboxed build from the npm registry through gate-control's egress
// proxy, are traced to a confirmed verdict, and migrate with every gate
// passed. The proxy's report names what the build reached. One build
// step runs apt-get install on the Debian node:22 stand-in, reaching the
// mirror that the base image's own apt sources name.
func TestDepsE2E(t *testing.T) {
	e := setupTrace(t)
	bn := depsNet(t)
	mirrors := map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host}
	for _, tc := range []struct {
		name string
		// verdict is the traced verdict before the migration; a
		// blocked service is not migrated.
		verdict probe.Verdict
		// blocker names a blocker the verdict must hold.
		blocker string
		// failsGate, for a blocked service, is the gate that fails when
		// migrate rewrites it from a static verdict that cannot see
		// the blocker (the checkout holds no node_modules).
		failsGate string
		// host is the destination a build step must have reached, with
		// bytes down: the npm registry unless set.
		host string
	}{
		// npm start: the boot runs sh, which a rewrite removes.
		{name: "express", verdict: probe.ReadyAfterRewrite},
		// An npm workspace, installed from the root lockfile.
		{name: "workspace", verdict: probe.ReadyAfterRewrite},
		// physical-cpu-count, from the registry, runs sh when required.
		{name: "shell-on-require", verdict: probe.Blocked, blocker: "physical-cpu-count"},
		// node-cmd, from the registry, runs sh only when called, on a
		// request no boot makes: the trace shows no shell, the image's
		// node_modules do, and migrate's shipped_code gate fails.
		{name: "shell-when-called", verdict: probe.Blocked, blocker: "node-cmd", failsGate: "shipped_code"},
		// apt-get install on the Debian node:22, from deb.debian.org,
		// which only the base image's own apt sources allow.
		{name: "apt-install", verdict: probe.ReadyAfterRewrite, host: "deb.debian.org"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyTree(t, filepath.Join("testdata", "deps", tc.name), dir)
			out, err := gather.Run(t.Context(), dir, gather.Options{
				Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task,
				Sandbox: e.sandbox, Images: &image.Remote{Mirrors: e.mirrors}, RegistryMirrors: mirrors,
				BootFor: 3 * time.Minute, HeavyTimeout: 10 * time.Minute, BuildNet: bn,
			})
			if err != nil {
				t.Fatal(err)
			}
			r, facts := traceResult(t, out)
			if r.Confidence == probe.Low {
				t.Fatalf("trace: low, %s: %s", r.Reason, r.Detail)
			}
			if facts.Egress == nil {
				t.Fatal("no egress facts: the build was offline")
			}
			host := tc.host
			if host == "" {
				host = buildnet.DefaultRegistry
			}
			if !slices.ContainsFunc(facts.Egress.Allow, func(a string) bool { return strings.HasPrefix(a, host) }) {
				t.Errorf("the allow-list %v does not name %s", facts.Egress.Allow, host)
			}
			var reached bool
			for _, c := range facts.Egress.Conns {
				if !c.Allowed {
					t.Errorf("refused: %+v", c)
				}
				if c.Host == host && c.Down > 0 && strings.HasPrefix(c.Phase, "build:build:step ") {
					reached = true
				}
			}
			if !reached {
				t.Errorf("no connection to %s from a build step with bytes down: %+v", host, facts.Egress.Conns)
			}
			t.Logf("%s", facts.Egress)
			// The dependency code that ships was read from the image.
			if b, err := json.Marshal(out.Context.Probes); err != nil || strings.Contains(string(b), "dependency_not_installed") {
				t.Errorf("a traced run says dependency_not_installed (%v)", err)
			}
			a := out.Context.Assessments["distroless_readiness"]
			if a.Verdict != tc.verdict || !a.Confirmed {
				t.Fatalf("verdict %s (confirmed %v), want %s confirmed; blockers %+v", a.Verdict, a.Confirmed, tc.verdict, a.Blockers)
			}
			if tc.blocker != "" {
				b, err := json.Marshal(a.Blockers)
				if err != nil || !strings.Contains(string(b), tc.blocker) {
					t.Fatalf("blockers %s: want one naming %s", b, tc.blocker)
				}
				t.Logf("blockers: %s", b)
			}
			if tc.verdict == probe.Blocked && tc.failsGate == "" {
				return
			}

			o := migrateOptions(e)
			o.BuildNet = bn
			o.Timeout = 10 * time.Minute
			m, err := migrate.Run(t.Context(), dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if m.Result.Refused() {
				t.Fatalf("refused: %+v", m.Result.Refusals)
			}
			for _, g := range m.Gates.Gates {
				want := gates.Passed
				switch g.Gate {
				case "healthcheck":
					want = gates.Skipped // no HEALTHCHECK
				case tc.failsGate:
					want = gates.Failed
					if ev := strings.Join(g.Evidence, "\n"); !strings.Contains(ev, tc.blocker) {
						t.Errorf("gate %s evidence %q: want it to name %s", g.Gate, ev, tc.blocker)
					}
				}
				if g.Status != want {
					t.Errorf("gate %s: %s (%s), want %s", g.Gate, g.Status, g.Detail, want)
				}
				t.Logf("gate %s: %s: %s %v", g.Gate, g.Status, g.Detail, g.Evidence)
			}
			if m.Proven != (tc.failsGate == "") {
				t.Fatalf("proven %v", m.Proven)
			}
		})
	}
}

// TestEgressDeniedE2E: a build step that asks for a destination no rule
// allows (a listener on this machine: loopback, refused by default whatever
// the rules say) fails, and the trace says egress_denied with the host, the
// step and the flag; the listener sees no connection.
func TestEgressDeniedE2E(t *testing.T) {
	e := setupTrace(t)
	bn := depsNet(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			_ = c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"package.json": `{"name":"denied","version":"1.0.0","scripts":{"start":"node server.js"}}`,
		"server.js":    `require("http").createServer((q, s) => s.end("ok")).listen(3000);`,
		".npmrc":       "registry=http://127.0.0.1:" + port + "/\n",
		"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY . .\n" +
			"RUN npm view --fetch-retries=0 left-pad version\n" +
			"CMD [\"node\", \"server.js\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := gather.Run(t.Context(), dir, gather.Options{
		Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task,
		Sandbox: e.sandbox, Images: &image.Remote{Mirrors: e.mirrors},
		RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host},
		BootFor:         3 * time.Minute, BuildNet: bn,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, facts := traceResult(t, out)
	if r.Reason != shelltrace.ReasonEgressDenied || !strings.Contains(r.Detail, "127.0.0.1:"+port) || !strings.Contains(r.Detail, "build:0:step 4") ||
		!strings.Contains(r.Detail, "--build-egress 127.0.0.1:"+port) {
		t.Fatalf("trace: %s %s: %s; want egress_denied naming 127.0.0.1:%s, the step and the flag", r.Confidence, r.Reason, r.Detail, port)
	}
	if facts.Egress == nil || len(facts.Egress.Conns) == 0 {
		t.Fatalf("no egress facts: %+v", facts.Egress)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the refused listener saw %d connections", n)
	}
}

// TestBuildSecretCanary: a build secret's bytes, read by a RUN step that
// prints them, appear nowhere outside the build: not in gather's result,
// its JSON, the cache, or gate-control's audit log.
func TestBuildSecretCanary(t *testing.T) {
	e := setupTrace(t)
	const canary = "cg-canary-5b1e0f9d7a3c44e2"
	dir := t.TempDir()
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"package.json": `{"name":"secret","version":"1.0.0"}`,
		"server.js":    `require("http").createServer((q, s) => s.end("ok")).listen(3000);`,
		"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY . .\n" +
			"RUN --mount=type=secret,id=token echo \"token is $(cat /run/secrets/token)\"\n" +
			"EXPOSE 3000\nCMD [\"node\", \"server.js\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bn, err := buildnet.Parse([]string{"none"}, false, "", []string{"id=token,src=" + secretFile})
	if err != nil {
		t.Fatal(err)
	}
	// A gate-control of its own, whose audit log the test reads.
	audit := filepath.Join(t.TempDir(), "audit.log")
	gc := client.NewLazy(client.PrivateConfig{Executable: e.bin, Stderr: os.Stderr, AuditLog: audit})
	defer gc.Close()
	cacheDir := t.TempDir()
	c, err := cache.Open(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := gather.Run(t.Context(), dir, gather.Options{
		Registry: builtin.NewRegistry(), Version: "test", Task: nodenpm.Task, Cache: c,
		Sandbox: gc, Images: &image.Remote{Mirrors: e.mirrors},
		RegistryMirrors: map[string]string{"docker.io": e.registry.Host, "gcr.io": e.registry.Host},
		BootFor:         3 * time.Minute, BuildNet: bn,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, facts := traceResult(t, out)
	if r.Confidence == probe.Low {
		t.Fatalf("trace: low, %s: %s", r.Reason, r.Detail)
	}
	var printed bool
	for _, p := range facts.Phases {
		printed = printed || strings.Contains(p.OutputTail, "token is <secret token>")
	}
	if !printed {
		t.Errorf("no step output with the scrubbed secret: %+v", facts.Phases)
	}
	if err := gc.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), canary) {
		t.Error("the canary is in gather's result")
	}
	for _, root := range []string{cacheDir, filepath.Dir(audit)} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), canary) {
				t.Errorf("the canary is in %s", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, err := os.ReadFile(audit); err != nil || len(a) == 0 {
		t.Errorf("no audit log to search (%v)", err)
	}
}
