package nodenpm_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	nodenpm "github.com/codegenie/codegenie/plugins/distroless-migration--node--npm"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/recipe"
)

// A health check rewrite must check what the curl or wget check checked.
// The tests here run both: the original command line under /bin/sh with
// the host's curl, GNU Wget or BusyBox wget, and the generated Node check
// with the host's node, against the same test server, over a set of
// answers. For each answer the server must see the same requests (method,
// target, headers, body) and both must pass or both fail. A command line
// the rewrite cannot carry must be refused, naming the option.

// answer is how the test server answers /health.
type answer struct {
	name      string
	status    int
	location  string // the Location of /health's answer
	final     int    // /final's answer
	challenge bool   // 401 with a Basic challenge until credentials come
	delay     time.Duration
	body      string // the body of /health's and /final's answers; "body\n" when empty
}

var answers = []answer{
	{name: "200", status: 200},
	{name: "204", status: 204},
	{name: "205", status: 205},
	{name: "304", status: 304},
	{name: "302 to a 200", status: 302, location: "/final", final: 200},
	{name: "302 to a 404", status: 302, location: "/final", final: 404},
	{name: "303 to a 200", status: 303, location: "/final", final: 200},
	{name: "307 to a 200", status: 307, location: "/final", final: 200},
	{name: "302 without a Location", status: 302},
	{name: "redirect loop", status: 302, location: "/health"},
	{name: "401 challenge", status: 200, challenge: true},
	{name: "404", status: 404},
	{name: "500", status: 500},
	// For the lines that pipe the body into grep.
	{name: "200 saying OK", status: 200, body: "uptime: 3\nstatus: OK\n"},
	{name: "500 saying OK", status: 500, body: "status: OK\n"},
	{name: "200 saying ok in JSON", status: 200, body: `{"status":"ok"}`},
	{name: "302 to a 200 saying OK", status: 302, location: "/final", final: 200, body: "status: OK\n"},
}

// slow is an answer that comes late, for the cases with a timeout.
var slow = answer{name: "1.5 s late", status: 200, delay: 1500 * time.Millisecond}

// seen is one request as the server saw it.
type seen struct {
	Method, Target, Body string
	Header               []string
}

// checkServer answers as its current answer says and records requests.
type checkServer struct {
	mu   sync.Mutex
	ans  answer
	reqs []seen
}

func (s *checkServer) set(a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ans, s.reqs = a, nil
}

func (s *checkServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func (s *checkServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	var hs []string
	for k, vs := range r.Header {
		switch k {
		case "Connection", "Keep-Alive":
			continue
		case "User-Agent":
			for i, v := range vs {
				vs[i], _, _ = strings.Cut(v, "/") // curl/7.88.1 is curl
			}
		}
		hs = append(hs, k+": "+strings.Join(vs, ", "))
	}
	hs = append(hs, "Host: "+r.Host)
	slices.Sort(hs)
	s.mu.Lock()
	a := s.ans
	s.reqs = append(s.reqs, seen{Method: r.Method, Target: r.RequestURI, Body: string(body), Header: hs})
	s.mu.Unlock()
	time.Sleep(a.delay)
	switch r.URL.Path {
	case "/health":
		if a.challenge && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="health"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if a.location != "" {
			w.Header().Set("Location", a.location)
		}
		w.WriteHeader(a.status)
	case "/final":
		w.WriteHeader(a.final)
	default:
		w.WriteHeader(http.StatusOK)
	}
	if r.Method != http.MethodHead {
		body := a.body
		if body == "" || r.URL.Path != "/health" && r.URL.Path != "/final" {
			body = "body\n"
		}
		fmt.Fprint(w, body)
	}
}

// checkCase is a health check line, with {URL} (the test server),
// {HOSTPORT}, {TLSURL}, {CA} and {SOCK} in it.
type checkCase struct {
	line string
	// busybox runs the line in an Alpine image, whose wget is BusyBox's.
	busybox bool
	// refused, when set, is the option a refusal must name.
	refused string
	// slow adds an answer that comes late.
	slow bool
}

var checkCases = []checkCase{
	// curl: without -f any answer passes, 5xx included.
	{line: "curl {URL}/health"},
	{line: "curl -f {URL}/health"},
	{line: "curl -fsS {URL}/health || exit 1"},
	{line: "curl -fsSL {URL}/health"},
	{line: "curl -sS -o /dev/null -w '%{http_code}' {URL}/health"},
	{line: "curl -f {URL}/health || exit 0"},
	{line: "curl --fail --silent --max-time 5 {URL}/health || false"},
	{line: "curl -f -X POST {URL}/health"},
	{line: "curl -f -d 'a=1&b=2' {URL}/health"},
	{line: "curl -fL -d x {URL}/health"},
	{line: "curl -fL -X PUT -d x {URL}/health"},
	{line: "curl -f -H 'X-Check: 1' -H 'Accept: application/json' {URL}/health"},
	{line: "curl -f -H 'User-Agent:' -A probe {URL}/health"},
	{line: "curl -f -u user:pa:ss {URL}/health"},
	{line: "curl -f --json '{\"a\":1}' {URL}/health"},
	{line: "curl -fI {URL}/health"},
	{line: "curl -f -G -d q=1 --data-urlencode 'm=a/b &c*' {URL}/health"},
	{line: "curl -f {URL}/health {URL}/other"},
	{line: "curl -f --fail-early {URL}/health {URL}/other"},
	{line: "curl -fL --max-redirs 1 {URL}/health"},
	{line: "curl -f -m 1 {URL}/health", slow: true},
	{line: "curl -f --connect-timeout 1 {URL}/health", slow: true},
	{line: "curl -f --retry 2 --retry-delay 1 {URL}/health"},
	{line: "curl -fk {TLSURL}/health"},
	{line: "curl -f {TLSURL}/health"},
	{line: "curl -f --cacert {CA} {TLSURL}/health"},
	{line: "curl -f --unix-socket {SOCK} http://localhost/health"},
	{line: "curl -f --resolve svc.test:{PORT}:127.0.0.1 http://svc.test:{PORT}/health"},
	{line: "curl -f -x http://proxy:3128 {URL}/health", refused: "-x"},
	{line: "curl -f -b session=1 {URL}/health", refused: "-b"},
	{line: "curl -f -o /tmp/health.out {URL}/health", refused: "-o"},
	// A pipe into grep: grep's status is the line's.
	{line: "curl -f {URL}/health | grep -q ok"},
	{line: "curl -fsS {URL}/health | grep -q OK"},
	{line: "curl -s {URL}/health | grep -qi 'status: ok' || exit 1"},
	{line: "curl -sL {URL}/health | grep -q '^status'"},
	{line: "curl -s --fail-with-body {URL}/health | grep -q OK"},
	{line: "curl -s {URL}/health | grep -q '\"status\":\"ok\"'"},
	{line: "curl -s {URL}/health | grep -q 'status.*OK$'"},
	{line: "curl -s -o /dev/null -w '%{http_code}' {URL}/health | grep -qx 200"},
	{line: "curl -sL -o /dev/null -w '%{http_code}\\n' {URL}/health | grep -q '^2'"},
	{line: `curl --silent {URL}/health | grep -E "pass|ok|OK" > /dev/null || exit 1`},
	{line: "curl -s {URL}/health | grep -qE '^OK$|ready'"},
	{line: "curl -fs {URL}/health | grep -qv OK", refused: "-v"},
	{line: "curl -si {URL}/health | grep -q OK", refused: "headers"},
	{line: "curl -s {URL}/health | grep -q 'O[K]'", refused: "["},
	{line: "curl -s {URL}/health | jq -e .ok", refused: "jq"},
	{line: "curl -s --retry 2 {URL}/health | grep -q OK", refused: "--retry"},
	{line: "curl -s {URL}/health {URL}/other | grep -q OK", refused: "several"},
	// The URL built from the environment, which the check runs with
	// (CHECK_PORT is the test server's port; UNSET_PORT is unset).
	{line: `wget -qO- "http://127.0.0.1:${CHECK_PORT:-1}/health" | grep -q OK || exit 1`},
	{line: "curl -fsS http://127.0.0.1:$CHECK_PORT/health"},
	{line: `curl -fsS "127.0.0.1:${CHECK_PORT}/health"`},
	{line: `curl -fsS "http://127.0.0.1:${UNSET_PORT:-{PORT}}/health"`},
	{line: `curl -fsS -H "X-Port: $CHECK_PORT" {URL}/health`, refused: "other than the URL"},
	{line: `curl -fsS "http://127.0.0.1:$(cat /port)/health"`, refused: "command substitution"},
	{line: "curl -f {URL}/health && curl -f {URL}/other", refused: "curl"},
	// GNU Wget: a 2xx passes; it follows redirects; --spider asks with
	// HEAD; credentials wait for a challenge.
	{line: "wget -q --spider {URL}/health"},
	{line: "wget -qO- {URL}/health"},
	{line: "wget -q -O /dev/null --tries=1 {URL}/health || exit 1"},
	{line: "wget -nv -O - --header 'X-A: 1' -U probe {URL}/health"},
	{line: "wget -qO- --post-data 'a=1' {URL}/health"},
	{line: "wget -qO- --method=PUT --body-data=x {URL}/health"},
	{line: "wget -qO- --user=u --password=p {URL}/health"},
	{line: "wget -qO- --http-user=u --http-password=p --auth-no-challenge {URL}/health"},
	{line: "wget -qO- --no-cache {URL}/health"},
	{line: "wget -qO- --max-redirect=1 {URL}/health"},
	{line: "wget -qO- -T 1 --tries=1 {URL}/health", slow: true},
	{line: "wget -qO- --no-check-certificate {TLSURL}/health"},
	{line: "wget -qO- {TLSURL}/health"},
	{line: "wget -q {URL}/health", refused: "-O"},
	{line: "wget -qO- -e robots=off {URL}/health", refused: "-e"},
	{line: "wget -qO- {URL}/health | grep -q OK || exit 1"},
	{line: "wget -qO- {URL}/health 2>/dev/null | grep -cF 'status: OK'"},
	{line: "wget -q --spider {URL}/health | grep -q OK", refused: "nothing"},
	// BusyBox wget: 200 to 204 pass; --spider asks with GET.
	{line: "wget -q --spider {URL}/health", busybox: true},
	{line: "wget -qO- {URL}/health", busybox: true},
	{line: "wget -qO /dev/null {URL}/health || exit 1", busybox: true},
	{line: "wget -qO- --post-data a=1 {URL}/health", busybox: true},
	{line: "wget -qO- --header 'X-A: 1' -U probe {URL}/health", busybox: true},
	{line: "wget -qO- http://u:p@{HOSTPORT}/health", busybox: true},
	{line: "wget -qO- {URL}/health | grep -q OK", busybox: true},
	{line: "wget -qO- --method=PUT {URL}/health", busybox: true, refused: "--method"},
}

// TestHealthCheckRewriteChecksTheSame is the comparison, for every case.
func TestHealthCheckRewriteChecksTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("runs curl, wget, busybox and node many times")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on this host to run the generated check")
	}
	tools := t.TempDir()
	for _, c := range checkCases {
		t.Run(c.line, func(t *testing.T) {
			t.Parallel()
			tool := "curl"
			if strings.HasPrefix(c.line, "wget") {
				tool = "wget"
			}
			path := os.Getenv("PATH")
			if c.busybox {
				bb, err := exec.LookPath("busybox")
				if err != nil {
					t.Skip("no busybox on this host")
				}
				dir := filepath.Join(tools, "busybox")
				_ = os.MkdirAll(dir, 0o755)
				_ = os.Symlink(bb, filepath.Join(dir, "wget"))
				path = dir + string(os.PathListSeparator) + path
			} else if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("no %s on this host", tool)
			}
			srv := &checkServer{}
			plain := httptest.NewServer(srv)
			defer plain.Close()
			secure := httptest.NewTLSServer(srv)
			defer secure.Close()
			work := t.TempDir()
			sock := filepath.Join(work, "s.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			onSocket := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = onSocket.Serve(ln) }()
			defer onSocket.Close()
			ca := filepath.Join(work, "ca.pem")
			if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o644); err != nil {
				t.Fatal(err)
			}
			hostport := strings.TrimPrefix(plain.URL, "http://")
			_, port, _ := net.SplitHostPort(hostport)
			line := strings.NewReplacer("{URL}", plain.URL, "{TLSURL}", secure.URL, "{HOSTPORT}", hostport, "{PORT}", port,
				"{CA}", ca, "{SOCK}", sock).Replace(c.line)

			script, refusal := rewriteCheck(t, line, c.busybox)
			if c.refused != "" {
				if script != nil {
					t.Fatalf("the rewrite carries %q into a Node check; want a refusal naming %s", line, c.refused)
				}
				if !strings.Contains(refusal, c.refused) {
					t.Fatalf("the refusal %q does not name %s", refusal, c.refused)
				}
				return
			}
			if script == nil {
				t.Fatalf("the rewrite refuses %q: %s", line, refusal)
			}
			js := filepath.Join(work, recipe.HealthName)
			if err := os.WriteFile(js, script, 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + path, "HOME=" + work, "CHECK_PORT=" + port}
			as := answers
			if c.slow {
				as = append(slices.Clone(answers), slow)
			}
			for _, a := range as {
				srv.set(a)
				wantOK := run(t, env, "/bin/sh", "-c", line)
				want := srv.requests()
				srv.set(a)
				gotOK := run(t, env, node, js)
				got := srv.requests()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("answer %s: requests (-%s +node):\n%s", a.name, tool, diff)
				}
				if gotOK != wantOK {
					t.Errorf("answer %s: %s passes %v, the generated check %v", a.name, tool, wantOK, gotOK)
				}
			}
		})
	}
}

// run runs argv and reports whether it exits 0.
func run(t *testing.T, env []string, argv ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%q did not finish: %s", argv, stderr.String())
	}
	return err == nil
}

// rewriteCheck migrates a service whose image checks its health with
// line, and returns the generated check, or the refusal's reason.
func rewriteCheck(t *testing.T, line string, alpine bool) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	base := "gcr.io/distroless/nodejs22-debian13"
	if alpine {
		base = "node:22-alpine"
	}
	files := map[string]string{
		"Dockerfile":   "FROM node:22 AS builder\nWORKDIR /app\nCOPY . .\n\nFROM " + base + "\nWORKDIR /app\nCOPY --from=builder /app /app\nHEALTHCHECK --interval=30s CMD " + line + "\nCMD [\"server.js\"]\n",
		"package.json": `{"name": "svc"}`,
		"server.js":    "require('node:http').createServer((q, s) => s.end('ok')).listen(8080);\n",
	}
	if alpine {
		files["Dockerfile"] = strings.Replace(files["Dockerfile"], `CMD ["server.js"]`, `CMD ["node", "server.js"]`, 1)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := gatherStatic(t, dir)
	for _, b := range out.Assessments["distroless_readiness"].Blockers {
		if strings.Contains(b.Title, "HEALTHCHECK") && !b.Removable {
			return nil, b.WhyNot
		}
	}
	res, err := nodenpm.Rewrite(t.Context(), dir, out.Probes, nodenpm.RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Refused() {
		var why []string
		for _, r := range res.Refusals {
			why = append(why, r.Title+": "+r.Why)
		}
		return nil, strings.Join(why, "; ")
	}
	for _, f := range res.Files {
		if filepath.Base(f.Path) == recipe.HealthName {
			return f.New, ""
		}
	}
	t.Fatalf("the rewrite of %q generates no %s", line, recipe.HealthName)
	return nil, ""
}
