package gatecontrol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/gatecontrol/internal/fakebackend"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// harness is a Server on a unix socket in front of a fake backend, with an
// HTTP client that speaks to it.
type harness struct {
	t      *testing.T
	srv    *Server
	cfg    Config
	fake   *fakebackend.Backend
	key    auth.Key
	hc     *http.Client
	ws     string
	offset atomic.Int64 // added to the server's clock, in nanoseconds
	once   sync.Once
}

// shortDir returns a temporary directory with a path short enough for a
// unix socket, removed at the end of the test.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gct")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	dir := shortDir(t)
	h := &harness{t: t, fake: fakebackend.New(), ws: t.TempDir()}
	if err := os.WriteFile(filepath.Join(h.ws, "file"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.cfg = Config{
		KeyFile:     filepath.Join(dir, "key"),
		AuditLog:    filepath.Join(dir, "audit.log"),
		Socket:      filepath.Join(dir, "gc.sock"),
		Backend:     h.fake,
		BackendName: fakebackend.Name,
		Now:         func() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) },
	}
	if mod != nil {
		mod(&h.cfg)
	}
	srv, err := New(h.cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.srv = srv
	if err := srv.Start(t.Context()); err != nil {
		srv.Shutdown(context.Background())
		t.Fatalf("Start: %v", err)
	}
	ring, err := auth.LoadOrCreateKeyFile(h.cfg.KeyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.key = ring.Current()
	socket := h.cfg.Socket
	h.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	t.Cleanup(func() {
		h.shutdown(context.Background())
		h.verifyAudit()
	})
	return h
}

func (h *harness) shutdown(ctx context.Context) error {
	var err error
	h.once.Do(func() {
		h.fake.Release()
		err = h.srv.Shutdown(ctx)
	})
	return err
}

// verifyAudit checks the whole audit log's chain and checkpoints, after
// Shutdown: every record is signed.
func (h *harness) verifyAudit() {
	f, err := os.Open(h.cfg.AuditLog)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	pub, err := audit.ReadPublicKey(audit.PublicKeyPath(filepath.Join(filepath.Dir(h.cfg.KeyFile), AuditKeyName)))
	if err != nil {
		h.t.Fatal(err)
	}
	rep, err := audit.VerifySigned(f, pub)
	if err != nil {
		h.t.Errorf("audit log does not verify: %v", err)
	}
	if rep.Tail.Len() != 0 {
		h.t.Errorf("audit log ends in an unsigned tail %+v after Shutdown", rep.Tail)
	}
}

// records reads the audit log.
func (h *harness) records() []audit.Record {
	h.t.Helper()
	f, err := os.Open(h.cfg.AuditLog)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	rd := audit.NewReader(f)
	var out []audit.Record
	for {
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			h.t.Fatalf("reading the audit log: %v", err)
		}
		out = append(out, r)
	}
}

// waitRecord waits for the audit log to hold a record that pred accepts,
// and returns it; what names the record for the failure message.
func (h *harness) waitRecord(what string, pred func(audit.Record) bool) audit.Record {
	h.t.Helper()
	var found audit.Record
	waitFor(h.t, "a "+what+" record in the audit log", func() bool {
		for _, r := range h.records() {
			if pred(r) {
				found = r
				return true
			}
		}
		return false
	})
	return found
}

func (h *harness) request(role string, argv ...string) []byte {
	body := map[string]any{"workspace": map[string]any{"dir": h.ws}, "command": argv}
	if role != "" {
		body["role"] = role
	}
	b, err := json.Marshal(body)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

type response struct {
	status int
	body   []byte
	err    ErrorResponse
	res    sandbox.Result
}

// send signs body with key at signedAt and posts sent (normally the same
// body) to path.
func (h *harness) send(ctx context.Context, method, path string, body, sent []byte, key auth.Key, signedAt time.Time) (response, *http.Request) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://gc"+path, bytes.NewReader(sent))
	if err != nil {
		h.t.Fatal(err)
	}
	if err := auth.Sign(req, body, key, signedAt); err != nil {
		h.t.Fatal(err)
	}
	return h.roundTrip(req), req
}

// roundTrip sends req. It never fails the test, so that goroutines can
// use it: a transport or decoding failure is a response with status 0 and
// the error as its body.
func (h *harness) roundTrip(req *http.Request) response {
	resp, err := h.hc.Do(req)
	if err != nil {
		return response{body: []byte(fmt.Sprintf("%s %s: %v", req.Method, req.URL.Path, err))}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{body: []byte("reading response: " + err.Error())}
	}
	r := response{status: resp.StatusCode, body: b}
	switch {
	case resp.StatusCode == http.StatusOK:
		err = strictjson.Unmarshal(b, &r.res)
	case resp.StatusCode != http.StatusNoContent:
		err = strictjson.Unmarshal(b, &r.err)
	}
	if err != nil {
		return response{body: []byte(fmt.Sprintf("decoding %q: %v", b, err))}
	}
	return r
}

// spawn posts a correctly signed spawn request.
func (h *harness) spawn(ctx context.Context, body []byte) response {
	h.t.Helper()
	r, _ := h.send(ctx, http.MethodPost, SpawnPath, body, body, h.key, time.Now())
	return r
}

func events(recs []audit.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Event.String())
	}
	return out
}

func TestSpawnWritesOneRecordPerStateChange(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := h.spawn(t.Context(), h.request("gate", "exit", "3"))
	if r.status != http.StatusOK || r.res.ExitCode != 3 || r.res.AuditID == "" {
		t.Fatalf("exit 3: status %d, result %+v, body %s", r.status, r.res, r.body)
	}
	recs := h.records()
	if diff := cmp.Diff([]string{"spawn.requested", "spawn.started", "spawn.finished"}, events(recs)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	for _, rec := range recs {
		if rec.SpawnID != r.res.AuditID || rec.Role != "gate" || rec.Backend != fakebackend.Name || rec.KeyID != h.key.ID ||
			!strings.HasPrefix(rec.WorkspaceDigest, "sha256:") || !cmp.Equal(rec.Argv, []string{"exit", "3"}) {
			t.Errorf("%s record lacks the spawn's fields: %+v", rec.Event, rec)
		}
	}
	fin := recs[2]
	if fin.Exit == nil || *fin.Exit != 3 || fin.Trace != nil {
		t.Errorf("finished record: exit %v, trace %+v; want exit 3, no trace", fin.Exit, fin.Trace)
	}
}

func TestTraceSummaryCountsShells(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	body := []byte(fmt.Sprintf(`{"role":"probe","workspace":{"dir":%q},"command":["shell"],"capture_trace":true}`, h.ws))
	if r := h.spawn(t.Context(), body); r.status != http.StatusOK || len(r.res.Trace) != 2 {
		t.Fatalf("status %d, %d trace events, body %s", r.status, len(r.res.Trace), r.body)
	}
	fin := h.records()[2]
	want := &audit.TraceSummary{Events: 2, Shells: 1, Complete: true}
	if diff := cmp.Diff(want, fin.Trace); diff != "" {
		t.Errorf("trace summary (-want +got):\n%s", diff)
	}
}

// TestRefusedRequestsAreAuditedAndRunNothing covers ADR-0003's auth cases:
// each is refused with its status, audited as spawn.rejected with what it
// claimed, and the backend never sees a spawn.
func TestRefusedRequestsAreAuditedAndRunNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	other := auth.Key{ID: "intruder", Secret: bytes.Repeat([]byte{7}, auth.SecretBytes)}
	sameIDWrongSecret := auth.Key{ID: h.key.ID, Secret: bytes.Repeat([]byte{9}, auth.SecretBytes)}
	good := h.request("gate", "true")

	// A replay needs an original: send it (it runs), then the copy.
	orig, origReq := h.send(t.Context(), http.MethodPost, SpawnPath, good, good, h.key, time.Now())
	if orig.status != http.StatusOK {
		t.Fatalf("original request: %d %s", orig.status, orig.body)
	}
	ranBefore := len(h.fake.Spawns())

	tests := []struct {
		name       string
		do         func() response
		status     int
		code       Code
		keyID      string
		role       string
		reasonHave string
	}{
		{
			name: "unknown key",
			do: func() response {
				r, _ := h.send(t.Context(), "POST", SpawnPath, good, good, other, time.Now())
				return r
			},
			status: 401, code: CodeUnauthorized, keyID: "", reasonHave: "unknown key id",
		},
		{
			name: "wrong key",
			do: func() response {
				r, _ := h.send(t.Context(), "POST", SpawnPath, good, good, sameIDWrongSecret, time.Now())
				return r
			},
			status: 401, code: CodeUnauthorized, keyID: h.key.ID, reasonHave: "bad signature",
		},
		{
			name: "expired timestamp",
			do: func() response {
				r, _ := h.send(t.Context(), "POST", SpawnPath, good, good, h.key, time.Now().Add(-2*time.Minute))
				return r
			},
			status: 401, code: CodeUnauthorized, keyID: h.key.ID, reasonHave: "skew",
		},
		{
			name: "replayed nonce",
			do: func() response {
				req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://gc"+SpawnPath, bytes.NewReader(good))
				req.Header.Set("Authorization", origReq.Header.Get("Authorization"))
				return h.roundTrip(req)
			},
			status: 401, code: CodeUnauthorized, keyID: h.key.ID, reasonHave: "nonce already used",
		},
		{
			name: "tampered body",
			do: func() response {
				evil := h.request("gate", "rm", "-rf", "/")
				r, _ := h.send(t.Context(), "POST", SpawnPath, good, evil, h.key, time.Now())
				return r
			},
			status: 401, code: CodeUnauthorized, keyID: h.key.ID, reasonHave: "bad signature",
		},
		{
			name: "no authorization",
			do: func() response {
				req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://gc"+SpawnPath, bytes.NewReader(good))
				return h.roundTrip(req)
			},
			status: 401, code: CodeUnauthorized, keyID: "", reasonHave: "malformed authorization",
		},
		{
			name:   "unknown role",
			do:     func() response { return h.spawn(t.Context(), h.request("admin", "true")) },
			status: 400, code: CodeInvalidRole, keyID: h.key.ID, role: "admin", reasonHave: `unknown role "admin"`,
		},
		{
			name:   "no role",
			do:     func() response { return h.spawn(t.Context(), h.request("", "true")) },
			status: 400, code: CodeInvalidRole, keyID: h.key.ID, role: "", reasonHave: "no role given",
		},
		{
			name: "role of the wrong type",
			do: func() response {
				return h.spawn(t.Context(), []byte(fmt.Sprintf(`{"role":1,"workspace":{"dir":%q},"command":["true"]}`, h.ws)))
			},
			status: 400, code: CodeInvalidRequest, keyID: h.key.ID, role: "1", reasonHave: "decoding spawn request",
		},
		{
			name: "unknown field",
			do: func() response {
				return h.spawn(t.Context(), []byte(fmt.Sprintf(`{"role":"gate","workspace":{"dir":%q},"command":["true"],"privileged":true}`, h.ws)))
			},
			status: 400, code: CodeInvalidRequest, keyID: h.key.ID, role: "gate", reasonHave: "unknown field",
		},
		{
			name: "relative workspace",
			do: func() response {
				return h.spawn(t.Context(), []byte(`{"role":"gate","workspace":{"dir":"repo"},"command":["true"]}`))
			},
			status: 400, code: CodeInvalidRequest, keyID: h.key.ID, role: "gate", reasonHave: "not an absolute path",
		},
		{
			name: "missing workspace",
			do: func() response {
				return h.spawn(t.Context(), []byte(fmt.Sprintf(`{"role":"gate","workspace":{"dir":%q},"command":["true"]}`, h.ws+"/absent")))
			},
			status: 400, code: CodeInvalidRequest, keyID: h.key.ID, role: "gate", reasonHave: "no such file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.records())
			r := tc.do()
			if r.status != tc.status || r.err.Code != tc.code {
				t.Fatalf("status %d %s (%s), want %d %s", r.status, r.err.Code, r.err.Message, tc.status, tc.code)
			}
			h.srv.flushRejections()
			recs := h.records()[before:]
			rej := recs[len(recs)-1]
			if rej.Event != audit.EventSpawnRejected {
				t.Fatalf("records after the request: %v, want spawn.rejected last", events(recs))
			}
			if rej.KeyID != tc.keyID || rej.Role != tc.role || !strings.Contains(rej.Reason, tc.reasonHave) {
				t.Errorf("rejected record: key %q role %q reason %q; want key %q role %q reason with %q",
					rej.KeyID, rej.Role, rej.Reason, tc.keyID, tc.role, tc.reasonHave)
			}
			if tc.status == http.StatusUnauthorized {
				if len(recs) != 1 {
					t.Errorf("an unauthenticated request wrote %v, want only spawn.rejected", events(recs))
				}
				if rej.Count != 1 || !strings.HasPrefix(rej.Peer, "unix:uid=") || rej.Argv != nil || !strings.HasPrefix(rej.BodyDigest, "sha256:") {
					t.Errorf("rejected record %+v: want count 1, a unix peer, no argv, a body digest", rej)
				}
			}
			if tc.status == http.StatusBadRequest && (len(recs) != 2 || recs[0].Event != audit.EventSpawnRequested || recs[0].SpawnID != rej.SpawnID) {
				t.Errorf("an authenticated bad request wrote %v, want spawn.requested then spawn.rejected of one spawn", events(recs))
			}
		})
	}
	if got := len(h.fake.Spawns()); got != ranBefore {
		t.Errorf("the backend saw %d more spawns from refused requests", got-ranBefore)
	}
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 512 })
	big := h.request("gate", "echo", strings.Repeat("x", 4096))
	r := h.spawn(t.Context(), big)
	if r.status != http.StatusRequestEntityTooLarge || r.err.Code != CodeTooLarge {
		t.Fatalf("status %d %s, want 413", r.status, r.err.Code)
	}
	// Without a Content-Length, the cap applies while reading.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://gc"+SpawnPath, io.MultiReader(bytes.NewReader(big)))
	req.ContentLength = -1
	if err := auth.Sign(req, big, h.key, time.Now()); err != nil {
		t.Fatal(err)
	}
	if r := h.roundTrip(req); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: status %d, want 413", r.status)
	}
	h.srv.flushRejections()
	recs := h.records()
	if diff := cmp.Diff([]string{"spawn.rejected"}, events(recs)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	if recs[0].KeyID != h.key.ID || recs[0].Count != 2 || !strings.Contains(recs[0].Reason, "too large") {
		t.Errorf("rejected record: %+v, want the two refusals in one", recs[0])
	}
	if n := len(h.fake.Spawns()); n != 0 {
		t.Errorf("backend saw %d spawns", n)
	}
}

func TestRolesDifferOnlyInTheAuditTag(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ids := map[string]string{}
	for _, role := range sandbox.Roles() {
		name, _ := role.MarshalText()
		r := h.spawn(t.Context(), h.request(string(name), "true"))
		if r.status != http.StatusOK {
			t.Fatalf("%v: %d %s", role, r.status, r.body)
		}
		ids[r.res.AuditID] = string(name)
	}
	byRole := map[string][]audit.Record{}
	for _, rec := range h.records() {
		if rec.Role != ids[rec.SpawnID] {
			t.Errorf("record %d of spawn %s has role %q, want %q", rec.Seq, rec.SpawnID, rec.Role, ids[rec.SpawnID])
		}
		byRole[rec.Role] = append(byRole[rec.Role], rec)
	}
	gate, probe := byRole["gate"], byRole["probe"]
	if len(gate) != 3 || len(probe) != 3 {
		t.Fatalf("records per role: gate %d, probe %d; want 3 each", len(gate), len(probe))
	}
	// Apart from the tag and the bookkeeping, the records are the same.
	ignore := func(r audit.Record) audit.Record {
		r.Seq, r.Time, r.Prev, r.SpawnID, r.Role, r.DurationMS = 0, time.Time{}, "", "", "", 0
		return r
	}
	for i := range gate {
		if diff := cmp.Diff(ignore(gate[i]), ignore(probe[i])); diff != "" {
			t.Errorf("gate and probe record %d differ beyond the role (-gate +probe):\n%s", i, diff)
		}
	}
	reqs := h.fake.Spawns()
	if reqs[0].Role != sandbox.RoleGate || reqs[1].Role != sandbox.RoleProbe {
		t.Errorf("backend saw roles %v, %v", reqs[0].Role, reqs[1].Role)
	}
}

func TestConcurrencyLimitQueuesThenRefuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxConcurrent = 1; c.MaxQueue = 1 })
	results := make(chan response, 2)
	go func() { results <- h.spawn(t.Context(), h.request("gate", "block")) }()
	<-h.fake.Started()
	go func() { results <- h.spawn(t.Context(), h.request("gate", "block")) }()
	waitFor(t, "a queued spawn", func() bool { return len(h.srv.limiter.waiting) == 1 })

	r := h.spawn(t.Context(), h.request("probe", "true"))
	if r.status != http.StatusTooManyRequests || r.err.Code != CodeOverloaded {
		t.Fatalf("third spawn: status %d %s, want 429", r.status, r.err.Code)
	}
	h.fake.Release()
	for range 2 {
		if r := <-results; r.status != http.StatusOK {
			t.Errorf("queued spawn: %d %s", r.status, r.body)
		}
	}
	if got := h.fake.MaxActive(); got != 1 {
		t.Errorf("backend ran %d spawns at once, want 1", got)
	}
	if n := len(h.fake.Spawns()); n != 2 {
		t.Errorf("backend saw %d spawns, want 2", n)
	}
	rej := h.waitRecord("spawn.rejected", func(r audit.Record) bool { return r.Event == audit.EventSpawnRejected })
	if rej.Role != "probe" || !strings.Contains(rej.Reason, "too many spawns waiting") {
		t.Errorf("rejected record: %+v", rej)
	}
}

func TestQueueTimeout(t *testing.T) {
	t.Parallel()
	// A short queue timeout is safe: the one slot is held by a block spawn
	// until Release, so the queued spawn can only time out.
	h := newHarness(t, func(c *Config) { c.MaxConcurrent = 1; c.QueueTimeout = 50 * time.Millisecond })
	done := make(chan response, 1)
	go func() { done <- h.spawn(t.Context(), h.request("gate", "block")) }()
	<-h.fake.Started()
	r := h.spawn(t.Context(), h.request("gate", "true"))
	if r.status != http.StatusServiceUnavailable || r.err.Code != CodeUnavailable {
		t.Errorf("status %d %s, want 503", r.status, r.err.Code)
	}
	h.fake.Release()
	<-done
}

func TestTimeoutsAreDefaultedAndReported(t *testing.T) {
	t.Parallel()
	// Short timeouts are safe: the fake's sleep 1h ends only by the timeout.
	h := newHarness(t, func(c *Config) { c.MaxTimeout = 100 * time.Millisecond; c.DefaultTimeout = 80 * time.Millisecond })
	body := []byte(fmt.Sprintf(`{"role":"gate","workspace":{"dir":%q},"command":["sleep","1h"],"timeout":100000000}`, h.ws))
	r := h.spawn(t.Context(), body)
	if r.status != http.StatusGatewayTimeout || r.err.Code != CodeTimeout || r.err.Result == nil || !r.err.Result.TimedOut {
		t.Fatalf("status %d %s, result %+v; want 504 with the partial result", r.status, r.err.Code, r.err.Result)
	}
	if string(r.err.Result.Stdout) != "partial\n" || r.err.AuditID == "" || r.err.Result.AuditID != r.err.AuditID {
		t.Errorf("partial result %+v, audit id %q", r.err.Result, r.err.AuditID)
	}
	h.spawn(t.Context(), h.request("gate", "true"))
	reqs := h.fake.Spawns()
	if reqs[0].Timeout != 100*time.Millisecond || reqs[1].Timeout != 80*time.Millisecond {
		t.Errorf("backend timeouts %v, %v; want the asked 100ms and the default 80ms", reqs[0].Timeout, reqs[1].Timeout)
	}
	fin := h.records()[2]
	if fin.Event != audit.EventSpawnFinished || fin.Exit != nil || !strings.Contains(fin.Reason, "timeout") {
		t.Errorf("finished record of the timeout: %+v", fin)
	}
}

func TestBackendErrorsMapToStatuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, tc := range []struct {
		cmd    string
		status int
		code   Code
	}{
		{"unsupported", http.StatusNotImplemented, CodeNotSupported},
		{"fail", http.StatusInternalServerError, CodeBackend},
	} {
		r := h.spawn(t.Context(), h.request("gate", tc.cmd))
		if r.status != tc.status || r.err.Code != tc.code {
			t.Errorf("%s: status %d %s, want %d %s", tc.cmd, r.status, r.err.Code, tc.status, tc.code)
		}
		if tc.code == CodeNotSupported && (r.err.Unsupported == nil || r.err.Unsupported.Backend != fakebackend.Name) {
			t.Errorf("unsupported: %+v", r.err.Unsupported)
		}
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{{"GET", SpawnPath, 405}, {"POST", "/v1/other", 404}, {"POST", PingPath, 405}} {
		r, _ := h.send(t.Context(), tc.method, tc.path, nil, nil, h.key, time.Now())
		if r.status != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, r.status, tc.status)
		}
	}
	if r, _ := h.send(t.Context(), "GET", PingPath, nil, nil, h.key, time.Now()); r.status != http.StatusNoContent {
		t.Errorf("ping: %d %s", r.status, r.body)
	}
}

func TestClientDisconnectCancelsTheSpawn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		body := h.request("gate", "block")
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://gc"+SpawnPath, bytes.NewReader(body))
		if err := auth.Sign(req, body, h.key, time.Now()); err != nil {
			errc <- err
			return
		}
		resp, err := h.hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-h.fake.Started()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	waitFor(t, "the backend to see the cancellation", func() bool { return h.fake.Cancelled() == 1 })
	fin := h.waitRecord("spawn.finished", func(r audit.Record) bool { return r.Event == audit.EventSpawnFinished })
	if !strings.Contains(fin.Reason, "client disconnected") || fin.Exit != nil {
		t.Errorf("finished record: %+v", fin)
	}
}

func TestShutdownDrainsRunningSpawns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	done := make(chan response, 1)
	go func() { done <- h.spawn(context.Background(), h.request("gate", "block")) }()
	<-h.fake.Started()
	// The spawn runs until Shutdown has begun: Shutdown drains it, whatever
	// the machine's speed. The deadline only ends a hung drain.
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- h.srv.Shutdown(ctx) }()
	<-h.srv.closing
	h.fake.Release()
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if r := <-done; r.status != http.StatusOK || r.res.ExitCode != 0 {
		t.Errorf("drained spawn: %d %s", r.status, r.body)
	}
	if h.fake.Cancelled() != 0 {
		t.Error("a drained spawn was cancelled")
	}
	if _, err := os.Lstat(h.cfg.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	if _, err := h.hc.Get("http://gc" + PingPath); err == nil {
		t.Error("the server still accepts after Shutdown")
	}
	recs := h.records()
	if diff := cmp.Diff([]string{"spawn.requested", "spawn.started", "spawn.finished", "audit.checkpoint"}, events(recs)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

func TestShutdownCancelsSpawnsAfterTheDeadline(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) { c.MaxConcurrent = 1 })
	running := make(chan response, 1)
	go func() { running <- h.spawn(context.Background(), h.request("gate", "sleep", "1h")) }()
	<-h.fake.Started()
	queued := make(chan response, 1)
	go func() { queued <- h.spawn(context.Background(), h.request("probe", "true")) }()
	waitFor(t, "a queued spawn", func() bool { return len(h.srv.limiter.waiting) == 1 })

	// The deadline is the subject, and short: the running spawn sleeps an
	// hour and the queued one never gets a slot, so nothing drains first.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
	if r := <-queued; r.status != http.StatusServiceUnavailable {
		t.Errorf("queued spawn: %d %s, want 503", r.status, r.body)
	}
	if r := <-running; r.status != http.StatusServiceUnavailable || r.err.Code != CodeUnavailable {
		t.Errorf("running spawn: %d %s, want 503", r.status, r.body)
	}
	if h.fake.Cancelled() != 1 {
		t.Errorf("backend saw %d cancellations, want 1", h.fake.Cancelled())
	}
	fin := h.waitRecord("spawn.finished", func(r audit.Record) bool { return r.Event == audit.EventSpawnFinished })
	if !strings.Contains(fin.Reason, "shutdown deadline") {
		t.Errorf("finished record: %+v", fin)
	}
}

func TestStartReapsAndAudits(t *testing.T) {
	t.Parallel()
	fake := fakebackend.New()
	fake.ReapItems = []string{"cg-1234-aa", "cg-1234-bb"}
	h := newHarness(t, func(c *Config) { c.Backend = fake })
	recs := h.records()
	if diff := cmp.Diff([]string{"orphan.reaped", "orphan.reaped"}, events(recs)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	// A backend item is not a spawn ID: without the spawn's audit ID the
	// record names the item in its reason only.
	if !strings.Contains(recs[1].Reason, "cg-1234-bb") || recs[1].SpawnID != "" || recs[1].Backend != fakebackend.Name {
		t.Errorf("reaped record: %+v", recs[1])
	}

	// A failed reap keeps the server from serving.
	dir := shortDir(t)
	bad := fakebackend.New()
	bad.ReapErr = errors.New("cannot delete sandbox")
	srv, err := New(Config{KeyFile: dir + "/key", AuditLog: dir + "/audit.log", Socket: dir + "/s", Backend: bad, BackendName: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "cannot delete sandbox") {
		t.Errorf("Start with a failing reap = %v", err)
	}
	if _, err := os.Lstat(dir + "/s"); err == nil {
		t.Error("a server that failed to reap listens")
	}
}

// TestReapedOrphansCarryTheSpawnID is issue 22, item 8: the backend gets
// each spawn's audit ID with its context, and an orphan.reaped record
// after a restart carries the spawn_id of the spawn that left the orphan,
// so it links to that spawn's spawn.started record.
func TestReapedOrphansCarryTheSpawnID(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if r := h.spawn(t.Context(), h.request("probe", "true")); r.status != 200 {
		t.Fatalf("spawn: %d %s", r.status, r.body)
	}
	started := h.waitRecord("spawn.started", func(r audit.Record) bool { return r.Event == audit.EventSpawnStarted })
	if diff := cmp.Diff([]string{started.SpawnID}, h.fake.AuditIDs()); diff != "" {
		t.Errorf("audit IDs the backend saw (-want +got):\n%s", diff)
	}
	if err := h.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The restart finds what the spawn left, labelled with its ID.
	fake := fakebackend.New()
	fake.ReapSpawned = []sandbox.Reaped{{ID: "cg-1234-aa", AuditID: started.SpawnID}, {ID: "cg-1234-bb"}, {ID: "cg-1234-cc", AuditID: "bad id\n"}}
	cfg := h.cfg
	cfg.Backend = fake
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		srv.Shutdown(context.Background())
		t.Fatal(err)
	}
	if err := srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	type reaped struct{ SpawnID, Item string }
	var got []reaped
	for _, r := range h.records() {
		if r.Event == audit.EventOrphanReaped {
			got = append(got, reaped{r.SpawnID, r.Reason[strings.LastIndex(r.Reason, " ")+1:]})
		}
	}
	want := []reaped{{started.SpawnID, "cg-1234-aa"}, {"", "cg-1234-bb"}, {"", "cg-1234-cc"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("orphan.reaped records (-want +got):\n%s", diff)
	}
}

func TestRotatedKeyIsPickedUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	old := h.key
	ring, err := auth.Rotate(h.cfg.KeyFile, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.offset.Store(int64(2 * keyCheckInterval)) // let the server look at the file again
	for _, k := range []auth.Key{ring.Current(), old} {
		r, _ := h.send(t.Context(), "GET", PingPath, nil, nil, k, time.Now())
		if r.status != http.StatusNoContent {
			t.Errorf("ping with key %s: %d %s", k.ID, r.status, r.body)
		}
	}
	if _, err := auth.Rotate(h.cfg.KeyFile, 0, nil); err != nil {
		t.Fatal(err)
	}
	h.offset.Store(int64(4 * keyCheckInterval))
	if r, _ := h.send(t.Context(), "GET", PingPath, nil, nil, ring.Current(), time.Now()); r.status != http.StatusUnauthorized {
		t.Errorf("ping with a key rotated out without overlap: %d", r.status)
	}
	if r, _ := h.send(t.Context(), "GET", PingPath, nil, nil, old, time.Now()); r.status != http.StatusNoContent {
		t.Errorf("ping with a key still in its overlap: %d", r.status)
	}
}

func TestSecondServerOnTheSameStateFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	cfg := h.cfg
	if _, err := New(cfg); !errors.Is(err, audit.ErrLocked) {
		t.Errorf("second New on the same audit log = %v, want ErrLocked", err)
	}
	cfg.AuditLog = filepath.Join(t.TempDir(), "other.log")
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "another server answers") {
		t.Errorf("second Start on a live socket = %v", err)
	}
	st, err := os.Lstat(h.cfg.Socket)
	if err != nil || st.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, %v; want 0660", st.Mode(), err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := Config{KeyFile: "k", AuditLog: "a", Socket: "s", Backend: fakebackend.New(), BackendName: "fake"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no key":              func(c *Config) { c.KeyFile = "" },
		"no audit":            func(c *Config) { c.AuditLog = "" },
		"no listener":         func(c *Config) { c.Socket = "" },
		"tcp without tls":     func(c *Config) { c.TCPAddr = ":0" },
		"tls without tcp":     func(c *Config) { c.TLSCertFile = "c" },
		"negative body":       func(c *Config) { c.MaxBodyBytes = -1 },
		"default above max":   func(c *Config) { c.DefaultTimeout = time.Hour; c.MaxTimeout = time.Minute },
		"no backend":          func(c *Config) { c.Backend = nil },
		"no backend name":     func(c *Config) { c.BackendName = "" },
		"negative queue":      func(c *Config) { c.MaxQueue = -1 },
		"negative drain time": func(c *Config) { c.DrainTimeout = -time.Second },
	} {
		c := good
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", name)
		}
	}
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

// waitFor waits until cond holds, and fails the test, naming what it
// waited for, if it does not within waitLimit.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
