package auth_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 500_000_000, time.UTC)

func testKey(id string, fill byte) auth.Key {
	return auth.Key{ID: id, Secret: bytes.Repeat([]byte{fill}, auth.SecretBytes)}
}

// clock is a settable clock for a Verifier.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newVerifier(t *testing.T, ring *auth.KeyRing, cfg auth.VerifierConfig) (*auth.Verifier, *clock) {
	t.Helper()
	c := &clock{t: t0}
	cfg.Now = c.Now
	v, err := auth.NewVerifier(ring, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v, c
}

func mustRing(t *testing.T, current auth.Key, prev ...auth.PreviousKey) *auth.KeyRing {
	t.Helper()
	r, err := auth.NewKeyRing(current, prev...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// signed returns a signed request the way a gate-control client would
// build it, and its body.
func signed(t *testing.T, method, target string, body []byte, key auth.Key, at time.Time) (*http.Request, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://gate-control"+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.Sign(req, body, key, at); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return req, body
}

// serverSide turns a client request into what the server's handler sees.
func serverSide(req *http.Request, body []byte) *http.Request {
	s := httptest.NewRequest(req.Method, req.URL.RequestURI(), bytes.NewReader(body))
	s.Header = req.Header.Clone()
	return s
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	tests := []struct {
		name   string
		method string
		target string
		body   string
	}{
		{"get", http.MethodGet, "/v1/health", ""},
		{"empty method is get", "", "/v1/health", ""},
		{"post with body", http.MethodPost, "/v1/spawn", `{"role":"gate","command":["true"]}`},
		{"query", http.MethodGet, "/v1/spawns?state=running&limit=10", ""},
		{"escaped path", http.MethodDelete, "/v1/spawns/a%2Fb%20c", ""},
		{"empty query", http.MethodGet, "/v1/x?", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, _ := newVerifier(t, mustRing(t, key), auth.VerifierConfig{})
			req, body := signed(t, tt.method, tt.target, []byte(tt.body), key, t0)
			got, err := v.Verify(serverSide(req, body), body)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got != key.ID {
				t.Errorf("Verify = %q, want %q", got, key.ID)
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	body := []byte(`{"role":"gate"}`)
	type request struct {
		method, target string
		body           []byte
		header         []string // Authorization values; nil means as signed
	}
	tests := []struct {
		name string
		// sign returns the request as sent, which build may then change.
		signKey auth.Key
		signAt  time.Time
		build   func(signed request) request
		want    error
	}{
		{name: "wrong secret", signKey: testKey("k1", 2), signAt: t0, want: auth.ErrBadSignature},
		{name: "unknown key id", signKey: testKey("k9", 1), signAt: t0, want: auth.ErrUnknownKey},
		{name: "expired timestamp", signKey: key, signAt: t0.Add(-31 * time.Second), want: auth.ErrSkew},
		{name: "future timestamp", signKey: key, signAt: t0.Add(31 * time.Second), want: auth.ErrSkew},
		{name: "far future timestamp", signKey: key, signAt: time.Unix(1<<62, 0), want: auth.ErrSkew},
		{name: "timestamp at epoch", signKey: key, signAt: time.Unix(0, 0), want: auth.ErrSkew},
		{
			name: "tampered body", signKey: key, signAt: t0,
			build: func(r request) request { r.body = []byte(`{"role":"probe"}`); return r },
			want:  auth.ErrBadSignature,
		},
		{
			name: "body dropped", signKey: key, signAt: t0,
			build: func(r request) request { r.body = nil; return r },
			want:  auth.ErrBadSignature,
		},
		{
			name: "tampered path", signKey: key, signAt: t0,
			build: func(r request) request { r.target = "/v1/spawm"; return r },
			want:  auth.ErrBadSignature,
		},
		{
			name: "tampered query", signKey: key, signAt: t0,
			build: func(r request) request { r.target = "/v1/spawn?x=1"; return r },
			want:  auth.ErrBadSignature,
		},
		{
			name: "tampered method", signKey: key, signAt: t0,
			build: func(r request) request { r.method = http.MethodPut; return r },
			want:  auth.ErrBadSignature,
		},
		{
			name: "tampered signature", signKey: key, signAt: t0,
			build: func(r request) request {
				h, err := auth.ParseHeader(r.header[0])
				if err != nil {
					panic(err)
				}
				h.Signature[0] ^= 1
				r.header = []string{h.String()}
				return r
			},
			want: auth.ErrBadSignature,
		},
		{
			name: "tampered timestamp", signKey: key, signAt: t0,
			build: func(r request) request {
				h, err := auth.ParseHeader(r.header[0])
				if err != nil {
					panic(err)
				}
				h.Timestamp++
				r.header = []string{h.String()}
				return r
			},
			want: auth.ErrBadSignature,
		},
		{
			name: "missing header", signKey: key, signAt: t0,
			build: func(r request) request { r.header = []string{}; return r },
			want:  auth.ErrMalformed,
		},
		{
			name: "two headers", signKey: key, signAt: t0,
			build: func(r request) request { r.header = append(r.header, r.header[0]); return r },
			want:  auth.ErrMalformed,
		},
		{
			name: "other scheme", signKey: key, signAt: t0,
			build: func(r request) request { r.header = []string{"Bearer abc"}; return r },
			want:  auth.ErrMalformed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, _ := newVerifier(t, mustRing(t, key), auth.VerifierConfig{})
			creq, _ := signed(t, http.MethodPost, "/v1/spawn", body, tt.signKey, tt.signAt)
			r := request{method: http.MethodPost, target: "/v1/spawn", body: body, header: creq.Header.Values("Authorization")}
			if tt.build != nil {
				r = tt.build(r)
			}
			sreq := httptest.NewRequest(r.method, r.target, bytes.NewReader(r.body))
			for _, h := range r.header {
				sreq.Header.Add("Authorization", h)
			}
			id, err := v.Verify(sreq, r.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %q, %v; want %v", id, err, tt.want)
			}
			if id != "" {
				t.Errorf("Verify returned key id %q with an error", id)
			}
			var verr *auth.VerifyError
			if !errors.As(err, &verr) {
				t.Fatalf("Verify error %T is not a *VerifyError", err)
			}
		})
	}
}

func TestVerifyErrorNamesClaimedKey(t *testing.T) {
	t.Parallel()
	v, _ := newVerifier(t, mustRing(t, testKey("k1", 1)), auth.VerifierConfig{})
	req, body := signed(t, http.MethodPost, "/v1/spawn", nil, testKey("intruder", 1), t0)
	_, err := v.Verify(serverSide(req, body), body)
	var verr *auth.VerifyError
	if !errors.As(err, &verr) {
		t.Fatalf("Verify: got %v, want a *VerifyError", err)
	}
	if diff := cmp.Diff("intruder", verr.KeyID); diff != "" {
		t.Errorf("KeyID (-want +got):\n%s", diff)
	}
}

func TestVerifySkewBoundary(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	tests := []struct {
		name   string
		skew   time.Duration
		signAt time.Time
		want   error
	}{
		{"30s old", 0, t0.Add(-30 * time.Second), nil},
		{"31s old", 0, t0.Add(-31 * time.Second), auth.ErrSkew},
		{"29s ahead", 0, t0.Add(29 * time.Second), nil},
		{"31s ahead", 0, t0.Add(31 * time.Second), auth.ErrSkew},
		{"configured 5s, 4s old", 5 * time.Second, t0.Add(-4 * time.Second), nil},
		{"configured 5s, 7s old", 5 * time.Second, t0.Add(-7 * time.Second), auth.ErrSkew},
		{"configured 5s, 6s ahead", 5 * time.Second, t0.Add(6 * time.Second), auth.ErrSkew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, _ := newVerifier(t, mustRing(t, key), auth.VerifierConfig{MaxSkew: tt.skew})
			req, body := signed(t, http.MethodGet, "/", nil, key, tt.signAt)
			if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, tt.want) {
				t.Errorf("Verify: got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyReplay(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	v, clk := newVerifier(t, mustRing(t, key), auth.VerifierConfig{})
	req, body := signed(t, http.MethodPost, "/v1/spawn", []byte("x"), key, t0)
	if _, err := v.Verify(serverSide(req, body), body); err != nil {
		t.Fatalf("first Verify: %v", err)
	}
	clk.Set(t0.Add(10 * time.Second))
	if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, auth.ErrReplay) {
		t.Errorf("replay: got %v, want ErrReplay", err)
	}
	// The same request signed again has a fresh nonce.
	req2, _ := signed(t, http.MethodPost, "/v1/spawn", []byte("x"), key, t0)
	if _, err := v.Verify(serverSide(req2, body), body); err != nil {
		t.Errorf("fresh nonce: %v", err)
	}
	// Once the nonce is forgotten, the skew check refuses the replay.
	clk.Set(t0.Add(time.Hour))
	if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, auth.ErrSkew) {
		t.Errorf("late replay: got %v, want ErrSkew", err)
	}
	// A badly signed request does not use up its nonce.
	clk.Set(t0)
	req3, _ := signed(t, http.MethodPost, "/v1/spawn", []byte("y"), key, t0)
	if _, err := v.Verify(serverSide(req3, []byte("z")), []byte("z")); !errors.Is(err, auth.ErrBadSignature) {
		t.Fatalf("tampered: got %v, want ErrBadSignature", err)
	}
	if _, err := v.Verify(serverSide(req3, []byte("y")), []byte("y")); err != nil {
		t.Errorf("genuine request after a tampered copy: %v", err)
	}
}

func TestVerifyReplayCacheFull(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	v, clk := newVerifier(t, mustRing(t, key), auth.VerifierConfig{ReplayCacheSize: 2, MaxSkew: 10 * time.Second})
	for i := range 2 {
		req, body := signed(t, http.MethodGet, "/", nil, key, t0)
		if _, err := v.Verify(serverSide(req, body), body); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	req, body := signed(t, http.MethodGet, "/", nil, key, t0)
	if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, auth.ErrReplayCacheFull) {
		t.Fatalf("third request: got %v, want ErrReplayCacheFull", err)
	}
	clk.Set(t0.Add(11 * time.Second)) // the first two nonces expire
	req, body = signed(t, http.MethodGet, "/", nil, key, t0.Add(11*time.Second))
	if _, err := v.Verify(serverSide(req, body), body); err != nil {
		t.Errorf("after expiry: %v", err)
	}
}

func TestVerifyNotBefore(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	v, _ := newVerifier(t, mustRing(t, key), auth.VerifierConfig{NotBefore: t0})
	// Signed before a restart at t0: in the skew window, but refused.
	req, body := signed(t, http.MethodGet, "/", nil, key, t0.Add(-2*time.Second))
	if _, err := v.Verify(serverSide(req, body), body); !errors.Is(err, auth.ErrSkew) {
		t.Errorf("request from before NotBefore: got %v, want ErrSkew", err)
	}
	// Signed in the same second as the restart.
	req, body = signed(t, http.MethodGet, "/", nil, key, t0.Add(-400*time.Millisecond))
	if _, err := v.Verify(serverSide(req, body), body); err != nil {
		t.Errorf("request from NotBefore's second: %v", err)
	}
}

func TestVerifyConcurrent(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 1)
	v, _ := newVerifier(t, mustRing(t, key), auth.VerifierConfig{})
	req, body := signed(t, http.MethodPost, "/v1/spawn", []byte("x"), key, t0)
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		ok int
	)
	for range 16 {
		wg.Go(func() {
			if _, err := v.Verify(serverSide(req, body), body); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, auth.ErrReplay) {
				t.Errorf("Verify: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != 1 {
		t.Errorf("%d concurrent copies of one request accepted, want 1", ok)
	}
}

// TestSignatureMatchesDocumentedFormat recomputes the signature from the
// package documentation.
func TestSignatureMatchesDocumentedFormat(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 7)
	body := []byte(`{"a":1}`)
	req, _ := signed(t, http.MethodPost, "/v1/spawn%2Fx?b=2&a=1", body, key, t0)
	h, err := auth.ParseHeader(req.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	bodySum := sha256.Sum256(body)
	msg := fmt.Sprintf("CODEGENIE-HMAC-SHA256\nk1\nPOST\n/v1/spawn%%2Fx?b=2&a=1\n%d\n%x\n%s", t0.Unix(), h.Nonce, hex.EncodeToString(bodySum[:]))
	mac := hmac.New(sha256.New, key.Secret)
	mac.Write([]byte(msg))
	if diff := cmp.Diff(hex.EncodeToString(mac.Sum(nil)), hex.EncodeToString(h.Signature[:])); diff != "" {
		t.Errorf("signature (-want +got):\n%s", diff)
	}
	if h.Timestamp != t0.Unix() || h.KeyID != "k1" {
		t.Errorf("header = %+v, want key k1 at %d", h, t0.Unix())
	}
}

func TestSignRejectsBadKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		key  auth.Key
		at   time.Time
	}{
		{"empty id", testKey("", 1), t0},
		{"id with comma", testKey("a,b", 1), t0},
		{"id too long", testKey(strings.Repeat("a", 65), 1), t0},
		{"short secret", auth.Key{ID: "k1", Secret: []byte("short")}, t0},
		{"before 1970", testKey("k1", 1), time.Unix(-1, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			if err := auth.Sign(req, nil, tt.key, tt.at); err == nil {
				t.Errorf("Sign succeeded, header %q", req.Header.Get("Authorization"))
			}
		})
	}
}

func TestKeyRedacted(t *testing.T) {
	t.Parallel()
	key := testKey("k1", 0xAB)
	prev := auth.PreviousKey{Key: key, Expires: t0}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{key, prev} {
			out := fmt.Sprintf(format, v)
			if strings.Contains(out, "171") || strings.Contains(strings.ToLower(out), "abab") || strings.Contains(out, "q6ur") {
				t.Errorf("Sprintf(%q, %T) = %q shows the secret", format, v, out)
			}
		}
	}
}

func TestNewKeyRing(t *testing.T) {
	t.Parallel()
	k1, k2 := testKey("k1", 1), testKey("k2", 2)
	tests := []struct {
		name    string
		current auth.Key
		prev    []auth.PreviousKey
		ok      bool
	}{
		{"current only", k1, nil, true},
		{"with previous", k1, []auth.PreviousKey{{Key: k2, Expires: t0}}, true},
		{"duplicate id", k1, []auth.PreviousKey{{Key: testKey("k1", 2), Expires: t0}}, false},
		{"previous without expiry", k1, []auth.PreviousKey{{Key: k2}}, false},
		{"short secret", auth.Key{ID: "k1", Secret: make([]byte, 31)}, nil, false},
		{"bad previous id", k1, []auth.PreviousKey{{Key: testKey("k 2", 2), Expires: t0}}, false},
		{"empty id", testKey("", 1), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := auth.NewKeyRing(tt.current, tt.prev...)
			if (err == nil) != tt.ok {
				t.Errorf("NewKeyRing: got %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestKeyRingCopiesSecrets(t *testing.T) {
	t.Parallel()
	k := testKey("k1", 1)
	ring := mustRing(t, k)
	k.Secret[0] = 99
	got := ring.Current()
	got.Secret[1] = 99
	if diff := cmp.Diff(testKey("k1", 1), ring.Current()); diff != "" {
		t.Errorf("Current after outside changes (-want +got):\n%s", diff)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	ring := mustRing(t, testKey("cur", 1), auth.PreviousKey{Key: testKey("old", 2), Expires: t0})
	tests := []struct {
		id   string
		at   time.Time
		want error
	}{
		{"cur", t0.Add(100 * 365 * 24 * time.Hour), nil},
		{"old", t0.Add(-time.Nanosecond), nil},
		{"old", t0, auth.ErrKeyExpired},
		{"gone", t0, auth.ErrUnknownKey},
		{"", t0, auth.ErrUnknownKey},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s@%v", tt.id, tt.at), func(t *testing.T) {
			t.Parallel()
			k, err := ring.Lookup(tt.id, tt.at)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Lookup: got %v, want %v", err, tt.want)
			}
			if err == nil && k.ID != tt.id {
				t.Errorf("Lookup returned key %s", k.ID)
			}
		})
	}
}

func TestNewVerifierConfig(t *testing.T) {
	t.Parallel()
	ring := mustRing(t, testKey("k1", 1))
	for _, cfg := range []auth.VerifierConfig{{MaxSkew: -1}, {ReplayCacheSize: -1}} {
		if _, err := auth.NewVerifier(ring, cfg); err == nil {
			t.Errorf("NewVerifier(%+v) succeeded", cfg)
		}
	}
	if _, err := auth.NewVerifier(nil, auth.VerifierConfig{}); err == nil {
		t.Error("NewVerifier(nil) succeeded")
	}
}
