package gatecontrol

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/gatecontrol/internal/fakebackend"
)

// TestUnsignedFloodBarelyGrowsTheLog is the attack of issue 10, item 3:
// 10,000 unsigned or wrongly signed requests, each with 32 KiB of command,
// grow the audit log by less than 64 KiB, and no record holds any of what
// they sent.
func TestUnsignedFloodBarelyGrowsTheLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"rate limited", nil},
		// Every request reaches the signature check: the tallies alone
		// keep the log small.
		{"tallied only", func(c *Config) { c.UnauthBurst = 1 << 30 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			unsignedFlood(t, tt.mod)
		})
	}
}

func unsignedFlood(t *testing.T, mod func(*Config)) {
	h := newHarness(t, mod)
	before := fileSize(t, h.cfg.AuditLog)
	marker := "FLOOD-" + strings.Repeat("x", 32<<10)
	body := h.request("gate", "sh", "-c", marker)
	intruder := auth.Key{ID: "intruder", Secret: bytes.Repeat([]byte{7}, auth.SecretBytes)}
	wrong := auth.Key{ID: h.key.ID, Secret: bytes.Repeat([]byte{9}, auth.SecretBytes)}
	const n, workers = 10_000, 4
	statuses := make([]map[int]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		statuses[w] = map[int]int{}
		wg.Go(func() {
			for i := w; i < n; i += workers {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://gc"+SpawnPath, bytes.NewReader(body))
				switch i % 3 {
				case 1:
					_ = auth.Sign(req, body, intruder, time.Now())
				case 2:
					_ = auth.Sign(req, body, wrong, time.Now())
				}
				statuses[w][h.roundTrip(req).status]++
			}
		})
	}
	wg.Wait()
	total := map[int]int{}
	for _, m := range statuses {
		for k, v := range m {
			total[k] += v
		}
	}
	if total[http.StatusUnauthorized]+total[http.StatusTooManyRequests] != n {
		t.Fatalf("statuses %v: want only 401 and 429", total)
	}
	// A signed request from the same peer is held back too while the
	// peer is out of allowance; once the allowance is back it runs.
	h.offset.Add(int64(time.Minute))
	signed := h.request("gate", "true")
	if r, _ := h.send(t.Context(), http.MethodPost, SpawnPath, signed, signed, h.key, time.Now().Add(time.Minute)); r.status != http.StatusOK {
		t.Fatalf("signed request after the flood: %d %s", r.status, r.body)
	}
	if err := h.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	grew := fileSize(t, h.cfg.AuditLog) - before
	t.Logf("%d unsigned requests (%v) grew the audit log by %d bytes", n, total, grew)
	if grew >= 64<<10 {
		t.Errorf("the audit log grew by %d bytes, want < 64 KiB", grew)
	}
	b, err := os.ReadFile(h.cfg.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("FLOOD-")) || bytes.Contains(b, []byte("intruder")) {
		t.Error("the audit log holds content of unsigned requests")
	}
	var counted uint64
	for _, r := range h.records() {
		if r.Event == audit.EventSpawnRejected {
			counted += max(r.Count, 1)
		}
	}
	if counted != n {
		t.Errorf("rejected records count %d requests, want %d", counted, n)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestRejectionsAreTalliedPerPeerAndReason(t *testing.T) {
	t.Parallel()
	rj := newRejections()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := rejectKey{peer: "tcp:192.0.2.1", path: SpawnPath, reason: "bad signature", keyID: "k1"}
	b := rejectKey{peer: "tcp:192.0.2.2", path: SpawnPath, reason: "bad signature"}
	rj.add(a, []byte("one"), t0)
	rj.add(b, nil, t0.Add(time.Second))
	rj.add(a, []byte("three"), t0.Add(2*time.Second))
	got := rj.take("runsc", DefaultRejectRecords)
	want := []audit.Record{
		{Event: audit.EventSpawnRejected, Time: t0.Add(2 * time.Second), Since: t0, Count: 2, Peer: "tcp:192.0.2.1", KeyID: "k1", Backend: "runsc",
			Reason: "unauthenticated /v1/spawn: bad signature", BodyBytes: 8,
			BodyDigest: "sha256:7692c3ad3540bb803c020b3aee66cd8887123234ea0c6e7143c0add73ff431ed"},
		{Event: audit.EventSpawnRejected, Time: t0.Add(time.Second), Since: t0.Add(time.Second), Count: 1, Peer: "tcp:192.0.2.2", Backend: "runsc",
			Reason: "unauthenticated /v1/spawn: bad signature"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("take (-want +got):\n%s", diff)
	}
	if got := rj.take("runsc", DefaultRejectRecords); len(got) != 0 {
		t.Errorf("second take: %v, want nothing", got)
	}
	// Past maxRejectKeys peers, new ones share one tally.
	for i := range maxRejectKeys + 50 {
		rj.add(rejectKey{peer: fmt.Sprintf("tcp:10.0.%d.%d", i/256, i%256), path: SpawnPath, reason: "bad signature"}, nil, t0)
	}
	got = rj.take("runsc", maxRejectKeys+1)
	if len(got) != maxRejectKeys+1 || got[maxRejectKeys].Peer != otherPeers || got[maxRejectKeys].Count != 50 {
		t.Errorf("%d records, last %+v; want %d with the overflow as %q, count 50", len(got), got[len(got)-1], maxRejectKeys+1, otherPeers)
	}
}

func TestPeerLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pl := newPeerLimiter(2, 3)
	for i := range 3 {
		if ok, _ := pl.allow("p", t0); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
		pl.fail("p", t0)
	}
	ok, wait := pl.allow("p", t0)
	if ok || wait != 500*time.Millisecond {
		t.Errorf("after the burst: allow = %v, wait %v; want refused, 500ms", ok, wait)
	}
	if ok, _ := pl.allow("other", t0); !ok {
		t.Error("another peer is refused")
	}
	if ok, _ := pl.allow("p", t0.Add(500*time.Millisecond)); !ok {
		t.Error("refused after the refill")
	}
	// Past maxPeerBuckets, peers that are as good as new are forgotten.
	for i := range maxPeerBuckets + 10 {
		pl.fail(fmt.Sprintf("peer-%d", i), t0)
	}
	if n := len(pl.peers); n > maxPeerBuckets+1 {
		t.Errorf("%d buckets, want at most %d and the shared one", n, maxPeerBuckets)
	}
	if _, ok := pl.peers[otherPeers]; !ok {
		t.Errorf("no shared bucket for the peers past the bound")
	}
	later := t0.Add(time.Hour)
	pl.fail("late", later)
	if _, ok := pl.peers["late"]; !ok {
		t.Errorf("a new peer after the old ones refilled has no bucket of its own")
	}
}

func TestRejectReasonNamesNoRequestText(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&auth.VerifyError{KeyID: "evil\nkey", Err: fmt.Errorf("%w: header %q", auth.ErrMalformed, "FORGED")},
		fmt.Errorf("%w: %s", errBodyTooLarge, "FORGED"),
		fmt.Errorf("reading body: FORGED"),
	} {
		if got := rejectReason(err); strings.Contains(got, "FORGED") || strings.Contains(got, "evil") {
			t.Errorf("rejectReason(%v) = %q", err, got)
		}
	}
}

// TestTLSRequiresClientCertificates: a TCP listener without client CAs is
// refused unless InsecureNoClientCert says so, and then it warns.
func TestTLSRequiresClientCertificates(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	certFile, keyFile := selfSigned(t, dir)
	base := Config{
		KeyFile: filepath.Join(dir, "key"), AuditLog: filepath.Join(dir, "audit.log"),
		TCPAddr: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile,
		Backend: fakebackend.New(), BackendName: fakebackend.Name,
	}
	if err := base.Validate(); err == nil || !strings.Contains(err.Error(), "requires client certificates") {
		t.Fatalf("Validate without client CAs = %v, want a refusal", err)
	}
	var logs bytes.Buffer
	cfg := base
	cfg.InsecureNoClientCert = true
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		srv.Shutdown(context.Background())
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "client certificates") {
		t.Errorf("no warning about the missing client certificates in %q", logs.String())
	}
	// Without client CAs configured and without the opt-out, the TLS
	// config asks for a certificate: the default is never "none".
	s := &Server{cfg: Config{TLSCertFile: certFile, TLSKeyFile: keyFile, TLSClientCAFile: filepath.Join(dir, "absent.pem")}}
	if _, err := s.tlsConfig(); err == nil {
		t.Error("tlsConfig with an unreadable CA file succeeded")
	}
	s.cfg.InsecureNoClientCert, s.cfg.TLSClientCAFile = true, ""
	tc, err := s.tlsConfig()
	if err != nil || tc.ClientAuth != tls.NoClientCert {
		t.Errorf("tlsConfig insecure: %v, %v", tc.ClientAuth, err)
	}
}

// selfSigned writes a self-signed server certificate and key for
// 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "gate-control test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "cert-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestUnauthenticatedGrowthHasATotalBudget is issue 22, item 8: 600 source
// addresses, each refused once over TLS within one interval, used to
// write 257 records (106 KB per 10 s); however many peers send, one
// interval now writes at most 16 (the default budget), the last of them
// counting what it folded, and every refused request is counted.
func TestUnauthenticatedGrowthHasATotalBudget(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	certFile, keyFile := selfSigned(t, dir)
	h := newHarness(t, func(c *Config) {
		c.TCPAddr, c.TLSCertFile, c.TLSKeyFile, c.InsecureNoClientCert = "127.0.0.1:0", certFile, keyFile, true
		c.RejectInterval = time.Hour // one interval: the flush at Shutdown
	})
	addr := h.srv.TCPAddr().String()
	before := fileSize(t, h.cfg.AuditLog)
	const peers, workers = 600, 4
	var wg sync.WaitGroup
	errs := make(chan error, peers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < peers; i += workers {
				// Every 127/8 address is this host's: one peer each.
				src := net.IPv4(127, byte(1+i/250), byte(i%250+1), 1)
				tr := &http.Transport{
					DialContext:     (&net.Dialer{LocalAddr: &net.TCPAddr{IP: src}}).DialContext,
					TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test's own self-signed server
				}
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://"+addr+SpawnPath, strings.NewReader("{}"))
				resp, err := (&http.Client{Transport: tr}).Do(req)
				tr.CloseIdleConnections()
				if err != nil {
					errs <- fmt.Errorf("peer %v: %w", src, err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					errs <- fmt.Errorf("peer %v: status %d, want 401", src, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := h.shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	grew := fileSize(t, h.cfg.AuditLog) - before
	var rejected []audit.Record
	var counted uint64
	for _, r := range h.records() {
		if r.Event == audit.EventSpawnRejected {
			rejected = append(rejected, r)
			counted += max(r.Count, 1)
		}
	}
	t.Logf("%d refused peers wrote %d spawn.rejected records, %d bytes of log in all", peers, len(rejected), grew)
	if len(rejected) > 16 {
		t.Errorf("%d spawn.rejected records in one interval, want at most 16", len(rejected))
	}
	if grew > 16<<10 {
		t.Errorf("the audit log grew by %d bytes in one interval, want at most 16 KiB", grew)
	}
	if counted != peers {
		t.Errorf("the records count %d refused requests, want %d", counted, peers)
	}
	if last := rejected[len(rejected)-1]; last.Peer != otherPeers || !strings.Contains(last.Reason, "folded") {
		t.Errorf("the last record %+v does not say what it folded", last)
	}
}

// TestRejectionBudget: past the budget, the tallies with the most
// requests keep their records, in first-seen order, and one record folds
// the rest, the shared tally of the peers past maxRejectKeys among them.
func TestRejectionBudget(t *testing.T) {
	t.Parallel()
	rj := newRejections()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	key := func(i int) rejectKey {
		return rejectKey{peer: fmt.Sprintf("tcp:10.0.%d.%d", i/256, i%256), path: SpawnPath, reason: "bad signature"}
	}
	for i := range maxRejectKeys + 10 {
		rj.add(key(i), []byte("x"), t0.Add(time.Duration(i)*time.Millisecond))
	}
	// Peers 7 and 3 fail most, 7 most of all.
	for range 5 {
		rj.add(key(7), nil, t0)
	}
	rj.add(key(3), nil, t0)
	got := rj.take("runsc", 3)
	if len(got) != 3 {
		t.Fatalf("%d records, want the budget of 3", len(got))
	}
	if got[0].Peer != key(3).peer || got[0].Count != 2 || got[1].Peer != key(7).peer || got[1].Count != 6 {
		t.Errorf("itemized %+v, %+v; want peers 3 (2 requests) and 7 (6), in first-seen order", got[0], got[1])
	}
	fold := got[2]
	wantReason := fmt.Sprintf("unauthenticated requests over the audit budget of 3 records per interval: %d tallies of %d peers and more folded, not itemized", maxRejectKeys-1, maxRejectKeys-2)
	if fold.Peer != otherPeers || fold.Count != maxRejectKeys+10-2 || fold.BodyBytes != maxRejectKeys+10-2 || fold.Reason != wantReason ||
		!fold.Since.Equal(t0) || !fold.Time.Equal(t0.Add(time.Duration(maxRejectKeys+9)*time.Millisecond)) {
		t.Errorf("folded record %+v; want %d requests and bytes, since %v, reason %q", fold, maxRejectKeys+10-2, t0, wantReason)
	}
	// Within the budget, nothing is folded.
	rj.add(key(1), nil, t0)
	if got := rj.take("runsc", 1); len(got) != 1 || got[0].Peer != key(1).peer {
		t.Errorf("take within the budget: %+v", got)
	}
}
