package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"github.com/google/go-cmp/cmp"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/gatecontrol/internal/fakebackend"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// shortDir returns a temporary directory with a path short enough for a
// unix socket and a runsc state directory, removed at the end of the test.
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gcc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// pki is a throwaway CA with a server and a client certificate, as PEM
// files.
type pki struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
}

func newPKI(t testing.TB) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "codegenie test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "PRIVATE KEY", kder)
	}
	var p pki
	p.caFile = write("ca.pem", "CERTIFICATE", caDER)
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// server is a gate-control on a unix socket and, when tls is set, on
// 127.0.0.1 with TLS 1.3 requiring client certificates.
type server struct {
	srv     *gatecontrol.Server
	cfg     gatecontrol.Config
	fake    *fakebackend.Backend
	pki     pki
	tlsAddr string
}

func startServer(t testing.TB, backend sandbox.Client, backendName string, withTLS bool) *server {
	t.Helper()
	dir := shortDir(t)
	s := &server{}
	if backend == nil {
		s.fake = fakebackend.New()
		backend, backendName = s.fake, fakebackend.Name
	}
	s.cfg = gatecontrol.Config{
		KeyFile:     filepath.Join(dir, "key"),
		AuditLog:    filepath.Join(dir, "audit.log"),
		Socket:      filepath.Join(dir, "gc.sock"),
		Backend:     backend,
		BackendName: backendName,
	}
	if withTLS {
		s.pki = newPKI(t)
		s.cfg.TCPAddr = "127.0.0.1:0"
		s.cfg.TLSCertFile, s.cfg.TLSKeyFile, s.cfg.TLSClientCAFile = s.pki.serverCert, s.pki.serverKey, s.pki.caFile
	}
	srv, err := gatecontrol.New(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		srv.Shutdown(context.Background())
		t.Fatal(err)
	}
	s.srv = srv
	if withTLS {
		s.tlsAddr = srv.TCPAddr().String()
	}
	t.Cleanup(func() {
		if s.fake != nil {
			s.fake.Release()
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		f, err := os.Open(s.cfg.AuditLog)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := audit.Verify(f); err != nil {
			t.Errorf("audit log does not verify: %v", err)
		}
	})
	return s
}

func (s *server) unixClient(t testing.TB) *Client {
	t.Helper()
	c, err := New(Config{Socket: s.cfg.Socket, KeyFile: s.cfg.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *server) tlsClient(t testing.TB) *Client {
	t.Helper()
	c, err := New(Config{Address: s.tlsAddr, CAFile: s.pki.caFile, ClientCertFile: s.pki.clientCert, ClientKeyFile: s.pki.clientKey, KeyFile: s.cfg.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func request(ws string, argv ...string) sandbox.SpawnRequest {
	return sandbox.SpawnRequest{Role: sandbox.RoleGate, Workspace: sandbox.Workspace{Dir: ws}, Command: argv}
}

// TestClientOverBothTransports checks that answers keep their meaning
// through the client: results, and each error mapped back to the sandbox
// package's.
func TestClientOverBothTransports(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", true)
	for name, c := range map[string]*Client{"unix": s.unixClient(t), "tls": s.tlsClient(t)} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			res, err := c.Spawn(t.Context(), request(ws, "echo", "hi"))
			if err != nil || res.ExitCode != 0 || string(res.Stdout) != "hi\n" || res.AuditID == "" || res.Backend != fakebackend.Name {
				t.Fatalf("echo: %+v, %v", res, err)
			}
			if res, err := c.Spawn(t.Context(), request(ws, "exit", "7")); err != nil || res.ExitCode != 7 {
				t.Errorf("exit 7: %+v, %v", res, err)
			}
			if err := c.Ping(t.Context()); err != nil {
				t.Errorf("Ping: %v", err)
			}

			noRole := request(ws, "true")
			noRole.Role = 0
			if _, err := c.Spawn(t.Context(), noRole); !errors.Is(err, sandbox.ErrInvalidRole) {
				t.Errorf("no role: %v, want ErrInvalidRole", err)
			}
			if _, err := c.Spawn(t.Context(), request(filepath.Join(ws, "absent"), "true")); !errors.Is(err, sandbox.ErrInvalidRequest) {
				t.Errorf("missing workspace: %v, want ErrInvalidRequest", err)
			}
			var se *ServerError
			if _, err := c.Spawn(t.Context(), request(filepath.Join(ws, "absent"), "true")); !errors.As(err, &se) || se.StatusCode != 400 || se.AuditID == "" {
				t.Errorf("missing workspace: %v, want a *ServerError 400 with an audit ID", err)
			}

			slow := request(ws, "sleep", "1h")
			slow.Timeout = 50 * time.Millisecond // safe: the fake's hour-long sleep ends only by the timeout
			res, err = c.Spawn(t.Context(), slow)
			if !errors.Is(err, sandbox.ErrTimeout) || !res.TimedOut || string(res.Stdout) != "partial\n" {
				t.Errorf("timeout: %+v, %v; want ErrTimeout with the partial result", res, err)
			}

			_, err = c.Spawn(t.Context(), request(ws, "unsupported"))
			var ue *sandbox.UnsupportedError
			if !errors.Is(err, sandbox.ErrNotSupported) || !errors.As(err, &ue) || ue.Backend != fakebackend.Name {
				t.Errorf("unsupported: %v (%+v)", err, ue)
			}
			if _, err := c.Spawn(t.Context(), request(ws, "fail")); err == nil || errors.Is(err, sandbox.ErrInvalidRequest) || !strings.Contains(err.Error(), "fake backend failure") {
				t.Errorf("backend failure: %v", err)
			}
		})
	}
}

func TestRelativeWorkspaceIsMadeAbsolute(t *testing.T) {
	s := startServer(t, nil, "", false)
	c := s.unixClient(t)
	t.Chdir(t.TempDir())
	if err := os.Mkdir("repo", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Spawn(t.Context(), request("repo", "true")); err != nil {
		t.Fatal(err)
	}
	if got := s.fake.Spawns()[0].Workspace.Dir; !filepath.IsAbs(got) || filepath.Base(got) != "repo" {
		t.Errorf("backend saw workspace %q", got)
	}
}

func TestCancelAbortsTheSpawn(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", false)
	c := s.unixClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Spawn(ctx, request(t.TempDir(), "block"))
		errc <- err
	}()
	<-s.fake.Started()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Spawn = %v, want context.Canceled", err)
	}
	waitFor(t, "the backend's spawn to be cancelled", func() bool { return s.fake.Cancelled() == 1 })
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

// waitFor waits until cond holds, and fails the test, naming what it
// waited for, if it does not within waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTLSRefusesWhatItShould(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", true)
	ws := t.TempDir()

	// No client certificate: the handshake fails.
	c, err := New(Config{Address: s.tlsAddr, CAFile: s.pki.caFile, KeyFile: s.cfg.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Spawn(t.Context(), request(ws, "true")); err == nil {
		t.Error("a client without a certificate got through")
	}

	// A client that offers at most TLS 1.2 gets nothing.
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(s.pki.caFile)
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(s.pki.clientCert, s.pki.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", s.tlsAddr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12, ServerName: "127.0.0.1"})
	if err == nil {
		conn.Close()
		t.Error("a TLS 1.2 handshake succeeded")
	}
	conn, err = tls.Dial("tcp", s.tlsAddr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS 1.3 handshake: %v", err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(v))
	}
	conn.Close()

	// The right certificate but the wrong HMAC key: 401, mapped.
	other := filepath.Join(t.TempDir(), "key")
	if _, err := auth.LoadOrCreateKeyFile(other, nil); err != nil {
		t.Fatal(err)
	}
	c2, err := New(Config{Address: s.tlsAddr, CAFile: s.pki.caFile, ClientCertFile: s.pki.clientCert, ClientKeyFile: s.pki.clientKey, KeyFile: other})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Spawn(t.Context(), request(ws, "true")); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong key: %v, want ErrUnauthorized", err)
	}
	if n := len(s.fake.Spawns()); n != 0 {
		t.Errorf("backend saw %d spawns", n)
	}
}

func TestClientPicksUpRotatedKey(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", false)
	c := s.unixClient(t)
	ws := t.TempDir()
	if _, err := c.Spawn(t.Context(), request(ws, "true")); err != nil {
		t.Fatal(err)
	}
	ring, err := auth.Rotate(s.cfg.KeyFile, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.signingKey()
	if err != nil || key.ID != ring.Current().ID {
		t.Errorf("client signs with %s (%v), want the new key %s", key.ID, err, ring.Current().ID)
	}
	if _, err := c.Spawn(t.Context(), request(ws, "true")); err != nil {
		t.Errorf("spawn after rotation: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"nothing":         {KeyFile: "k"},
		"both":            {Socket: "s", Address: "a:1", CAFile: "ca", KeyFile: "k"},
		"tls without ca":  {Address: "a:1", KeyFile: "k"},
		"no key":          {Socket: "s"},
		"half a cert":     {Address: "a:1", CAFile: "ca", ClientCertFile: "c", KeyFile: "k"},
		"tls on a socket": {Socket: "s", CAFile: "ca", KeyFile: "k"},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil", name)
		}
	}
	if _, err := New(Config{Socket: "/nonexistent.sock", KeyFile: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("New with a missing key file succeeded")
	}
}

// TestImageFactsCrossTheAPI: a build spawn's image facts reach the client
// whole through gate-control's strictly decoded answers, plain and
// streamed, over both transports.
func TestImageFactsCrossTheAPI(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", true)
	for name, c := range map[string]*Client{"unix": s.unixClient(t), "tls": s.tlsClient(t)} {
		for _, stream := range []bool{false, true} {
			ctx := t.Context()
			if stream {
				ctx = sandbox.WithProgress(ctx, func(sandbox.Progress) {})
			}
			res, err := c.Spawn(ctx, request(t.TempDir(), "facts"))
			if err != nil {
				t.Fatalf("%s (stream %v): %v", name, stream, err)
			}
			if diff := cmp.Diff(fakebackend.ImageFacts(), res.ImageFacts); diff != "" {
				t.Errorf("%s (stream %v): image facts (-want +got):\n%s", name, stream, diff)
			}
		}
	}
}

// TestProgressStream: a spawn whose context asks for progress gets the
// backend's reports through gate-control, over both transports, in order,
// on the same authenticated request, then its outcome; errors keep their
// meaning on the stream, and the partial Result of a timeout arrives.
func TestProgressStream(t *testing.T) {
	t.Parallel()
	s := startServer(t, nil, "", true)
	for name, c := range map[string]*Client{"unix": s.unixClient(t), "tls": s.tlsClient(t)} {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			var got []sandbox.Progress
			ctx := sandbox.WithProgress(t.Context(), func(p sandbox.Progress) { got = append(got, p) })
			res, err := c.Spawn(ctx, request(ws, "progress", "3"))
			if err != nil || res.ExitCode != 0 || res.AuditID == "" {
				t.Fatalf("progress: %+v, %v", res, err)
			}
			want := []sandbox.Progress{
				{Kind: sandbox.ProgressPhase, Phase: "build:0"},
				{Kind: sandbox.ProgressStep, Phase: "build:0:step 1", Step: 1, Steps: 3, Instruction: "RUN step 1"},
				{Kind: sandbox.ProgressStep, Phase: "build:0:step 2", Step: 2, Steps: 3, Instruction: "RUN step 2"},
				{Kind: sandbox.ProgressStep, Phase: "build:0:step 3", Step: 3, Steps: 3, Instruction: "RUN step 3"},
				{Kind: sandbox.ProgressShells, Phase: "boot", Shells: 1},
				{Kind: sandbox.ProgressBoot, Phase: "boot", BootLeft: time.Second, Shells: 1},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if _, err := c.Spawn(ctx, request(ws, "unsupported")); !errors.Is(err, sandbox.ErrNotSupported) {
				t.Errorf("unsupported on the stream: %v, want ErrNotSupported", err)
			}
			req := request(ws, "sleep", "1h")
			req.Timeout = 50 * time.Millisecond // safe: the fake's hour-long sleep ends only by the timeout
			res, err = c.Spawn(ctx, req)
			if !errors.Is(err, sandbox.ErrTimeout) || !res.TimedOut || string(res.Stdout) != "partial\n" {
				t.Errorf("timeout on the stream: %+v, %v; want ErrTimeout with the partial result", res, err)
			}
		})
	}
	for _, sp := range s.fake.Spawns() {
		if sp.Command[0] == "progress" && sp.Role != sandbox.RoleGate {
			t.Errorf("spawn %+v", sp)
		}
	}
}
