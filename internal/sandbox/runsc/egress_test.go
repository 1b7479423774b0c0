package runsc

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// TestBuildEgress builds with a route through the egress proxy: a RUN step
// reaches an allowed listener on this machine through it (npm, which reads
// the proxy variables the shim sets), and a direct connection that ignores
// the proxy finds nothing; a destination the rules do not name is refused,
// and nothing reaches it; the report attributes each connection to its
// step; the CA bundle is readable in the step and absent from the image;
// a build secret's canary appears nowhere in the result.
func TestBuildEgress(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	var served atomic.Int64
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"egress-probe","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"egress-probe","version":"1.0.0"}}}`))
	}))
	defer allowed.Close()
	// The listener the rules do not name: it must see no connection.
	var reached atomic.Int64
	denied, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	go func() {
		for {
			c, err := denied.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			_ = c.Close()
		}
	}()
	allowedPort := allowed.Listener.Addr().(*net.TCPAddr).Port
	deniedPort := denied.Addr().(*net.TCPAddr).Port
	const canary = "cg-canary-7f3a9c2e51d4"
	ca, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Skipf("no host CA bundle to pass (%v)", err)
	}
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\n" +
			// Through the proxy, to the allowed listener.
			"RUN npm view --registry http://127.0.0.1:" + strconv.Itoa(allowedPort) + "/ egress-probe version\n" +
			// Around the proxy: the namespace has no such listener.
			"RUN node -e 'require(\"http\").get(\"http://127.0.0.1:" + strconv.Itoa(allowedPort) + "/\").on(\"error\", e => { console.log(\"direct:\", e.code); })' \n" +
			"RUN head -c 27 \"$NODE_EXTRA_CA_CERTS\"; echo\n" +
			"RUN --mount=type=secret,id=tok cat /run/secrets/tok; echo\n" +
			// Through the proxy, to a destination no rule names.
			"RUN npm view --fetch-retries=0 --registry http://127.0.0.1:" + strconv.Itoa(deniedPort) + "/ egress-probe version\n",
	})
	req := buildRequest(ws, m, "")
	req.Build.Boot = false
	req.Build.Egress = sandbox.Egress{Allow: []string{"127.0.0.1:" + strconv.Itoa(allowedPort)}, Private: true, CA: ca}
	req.Build.Secrets = []sandbox.Secret{{ID: "tok", Data: []byte(canary)}}
	res, err := b.Spawn(t.Context(), req)
	logResult(t, res)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	if res.ExitCode == 0 {
		t.Fatalf("the build passed; want the last step to fail: its destination is not allowed")
	}
	step := func(n int) sandbox.PhaseResult { return phase(res.Phases, sandbox.BuildPhase("0", n)) }
	if p := step(2); p.Failed || !strings.Contains(p.OutputTail, "1.0.0") {
		t.Errorf("the allowed step: %+v; want the listener's answer, 1.0.0", p)
	}
	if served.Load() == 0 {
		t.Error("the allowed listener saw no request")
	}
	if p := step(3); !strings.Contains(p.OutputTail, "direct: ECONNREFUSED") {
		t.Errorf("the direct connection: %q; want ECONNREFUSED (no route but the proxy)", p.OutputTail)
	}
	if p := step(4); !strings.Contains(p.OutputTail, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("the CA step: %q; want the bundle's first line", p.OutputTail)
	}
	last := step(6)
	if !last.Failed || !strings.Contains(last.OutputTail, "codegenie: the build's egress proxy refused 127.0.0.1:"+strconv.Itoa(deniedPort)+" in build:0:step 6") {
		t.Errorf("the refused step: %+v; want Failed, and the proxy's note", last)
	}
	if reached.Load() != 0 {
		t.Errorf("the refused destination saw %d connections; want none", reached.Load())
	}
	if res.Egress == nil {
		t.Fatal("no egress report")
	}
	var okConn, deniedConn bool
	for _, c := range res.Egress.Conns {
		switch {
		case c.Allowed && c.Port == allowedPort && c.Phase == sandbox.BuildPhase("0", 2) && c.Down > 0 && c.Up > 0:
			okConn = true
		case !c.Allowed && c.Port == deniedPort && c.Phase == sandbox.BuildPhase("0", 6) && c.Reason != "":
			deniedConn = true
		}
	}
	if !okConn || !deniedConn {
		t.Errorf("egress conns %+v; want the allowed one in step 2 with bytes both ways, the refused one in step 6 with a reason", res.Egress.Conns)
	}
	if p := step(5); strings.Contains(p.OutputTail, canary) || !strings.Contains(p.OutputTail, "<secret tok>") {
		t.Errorf("the secret step's output %q: want the canary scrubbed to <secret tok>", p.OutputTail)
	}
	if b, err := json.Marshal(res); err != nil || strings.Contains(string(b), canary) {
		t.Error("the canary is in the result")
	}
}

// TestBootEgress: a boot given destinations reaches them through a proxy
// of its own, named by its HTTP_PROXY, and nothing else; its connections
// are in the report under the boot's phase; the boot still ends once the
// service has answered and settled. A boot without them stays offline.
func TestBootEgress(t *testing.T) {
	b := newBackend(t, Config{})
	m := mirrors(t)
	var served atomic.Int64
	// On 127.0.0.2: a loopback address the boot's NO_PROXY (its own
	// loopback, 127.0.0.1) does not name, as a real API's would not be.
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host's loopback: %v", err)
	}
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = w.Write([]byte("config"))
	}))
	_ = api.Listener.Close()
	api.Listener = l
	api.Start()
	defer api.Close()
	target := api.Listener.Addr().String()
	// The service fetches its configuration at start through the proxy
	// (an absolute-URI request to HTTP_PROXY, as proxy-aware clients
	// send), then tries the same address directly, then listens.
	// The service fetches its configuration at start with plain
	// http.get, which Node sends through HTTP_PROXY when
	// NODE_USE_ENV_PROXY is set (the boot's egress sets both); then it
	// tries the same address with a raw socket, which no proxy setting
	// touches; then it listens.
	server := `const http = require("http"), net = require("net");
console.log("greeting:", process.env.GREETING);
const listen = () => http.createServer((q, s) => s.end("ok")).listen(8080, () => console.log("listening"));
http.get("http://` + target + `/config", (r) => {
  let body = "";
  r.on("data", (d) => (body += d));
  r.on("end", () => {
    console.log("fetched:", r.statusCode, body);
    const [h, p] = "` + target + `".split(":");
    net.connect({ host: h, port: Number(p) }).on("connect", () => console.log("direct: connected")).on("error", (e) => console.log("direct:", e.code));
    listen();
  });
}).on("error", (e) => {
  console.log("fetched:", e.code);
  listen();
});
`
	ws := workspace(t, map[string]string{
		"Dockerfile": "FROM node:22-slim\nWORKDIR /app\nCOPY server.js ./\nEXPOSE 8080\nCMD [\"node\", \"server.js\"]\n",
		"server.js":  server,
	})
	for _, online := range []bool{true, false} {
		req := buildRequest(ws, m, "")
		// docker run -e: the service prints it, and the result says it
		// scrubbed.
		req.Build.BootEnv = []string{"GREETING=hello-from-boot-env"}
		if online {
			req.Build.Egress = sandbox.Egress{Boot: []string{target}, Private: true}
		}
		before := served.Load()
		res, err := b.Spawn(t.Context(), req)
		logResult(t, res)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("online %v: Spawn: %v, exit %d, output %q %q", online, err, res.ExitCode, res.Stdout, res.Stderr)
		}
		out := string(res.Stdout)
		if !strings.Contains(out, "greeting: <boot-env GREETING>") {
			t.Errorf("online %v: output %q; want the boot env's value, scrubbed", online, out)
		}
		boot := phase(res.Phases, sandbox.PhaseBoot)
		if boot.Boot == nil || boot.Boot.Ended != sandbox.BootAnsweredAndSettled {
			t.Errorf("online %v: boot %+v; want it answered and settled", online, boot.Boot)
		}
		if !online {
			if res.Egress != nil || served.Load() != before || !strings.Contains(out, "fetched: ECONNREFUSED") {
				t.Errorf("offline boot: egress %+v, served %d, output %q; want no proxy and nothing served", res.Egress, served.Load()-before, out)
			}
			continue
		}
		if !strings.Contains(out, "fetched: 200 config") || !strings.Contains(out, "direct: ECONNREFUSED") {
			t.Errorf("online boot output %q; want the answer through the proxy, and no direct route", out)
		}
		if served.Load() != before+1 {
			t.Errorf("the API saw %d requests; want 1 (through the proxy)", served.Load()-before)
		}
		if res.Egress == nil || len(res.Egress.Conns) != 1 || res.Egress.Conns[0].Phase != sandbox.PhaseBoot || !res.Egress.Conns[0].Allowed {
			t.Errorf("egress %+v; want one allowed connection in the boot", res.Egress)
		}
	}
}

// A build's CA reaches Node clients through NODE_EXTRA_CA_CERTS, and no
// step gets a YARN_* CA setting: Yarn 4 stops at YARN_CAFILE and
// YARN_CA_FILE_PATH ("Unrecognized or legacy configuration settings found:
// cafile"), which failed actual-server's yarn workspaces focus. Yarn 2+
// gets the proxy by its own names.
func TestEgressEnvCA(t *testing.T) {
	t.Parallel()
	env := egressEnv("127.0.0.1:3128", true)
	has := func(name string) bool {
		for _, kv := range env {
			if n, _, _ := strings.Cut(kv, "="); n == name {
				return true
			}
		}
		return false
	}
	for _, want := range []string{"NODE_EXTRA_CA_CERTS", "npm_config_cafile", "SSL_CERT_FILE", "HTTPS_PROXY", "YARN_HTTPS_PROXY"} {
		if !has(want) {
			t.Errorf("the step's environment lacks %s: %v", want, env)
		}
	}
	// Yarn 2+ reads its own proxy settings (YARN_HTTP_PROXY,
	// YARN_HTTPS_PROXY), which every Yarn since 2 knows; a CA setting by
	// any YARN_ name is one Yarn 4 refuses.
	for _, kv := range env {
		if n, _, _ := strings.Cut(kv, "="); strings.HasPrefix(n, "YARN_") && n != "YARN_HTTP_PROXY" && n != "YARN_HTTPS_PROXY" {
			t.Errorf("the step's environment sets %s, a Yarn setting that Yarn 4 may refuse", kv)
		}
	}
	if e := egressEnv("127.0.0.1:3128", false); slices.ContainsFunc(e, func(kv string) bool { return strings.HasPrefix(kv, "NODE_EXTRA_CA_CERTS=") }) {
		t.Errorf("no CA, yet the environment names one: %v", e)
	}
}
