package fleet

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/codegenie/codegenie/internal/fleet/fleettest"
)

// TestClientOverMutualTLS runs a portfolio through a TLS terminator in
// front of the dev server that takes only clients with a certificate from
// the test's CA: the client and the worker connect with the CA, their
// certificate and key. Without the certificate, or without the CA, or
// without TLS, the connection is refused.
func TestClientOverMutualTLS(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t, t.TempDir())
	pki := fleettest.NewPKI(t, t.TempDir())
	proxy := fleettest.StartTLSProxy(t, pki, srv.Addr)
	cfg := Config{HostPort: proxy.Addr, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}
	st, err := OpenFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := runFleet(t, cfg, st, 5)
	checkRun(t, run, 5)
	if proxy.Relayed.Load() == 0 {
		t.Error("the terminator relayed no connection")
	}
	relayed := proxy.Relayed.Load()
	for name, bad := range map[string]Config{
		"no client certificate": {HostPort: proxy.Addr, TLSCAFile: pki.CAFile},
		"not the server's CA":   {HostPort: proxy.Addr, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile},
		"no TLS":                {HostPort: proxy.Addr},
		"another server name":   {HostPort: proxy.Addr, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile, TLSServerName: "temporal.example"},
	} {
		// A refusal comes at once; the bound only ends a dial that hangs.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		c, err := DialTemporal(ctx, bad)
		cancel()
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
		}
	}
	if got := proxy.Relayed.Load(); got != relayed {
		t.Errorf("the terminator relayed %d connections without a valid client", got-relayed)
	}
}

// recordingFrontend is a gRPC frontend over TLS that answers the SDK's
// first call and keeps the authorization header it carried.
type recordingFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu   sync.Mutex
	auth []string
}

func (f *recordingFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.auth = append(f.auth, md.Get("authorization")...)
	f.mu.Unlock()
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// TestDialSendsTheAPIKeyOverTLSAndNeverPrintsIt: the API key goes to the
// server as a bearer token over TLS (which it turns on by itself), and
// neither the Config printed nor a failed dial's error holds it.
func TestDialSendsTheAPIKeyOverTLSAndNeverPrintsIt(t *testing.T) {
	t.Parallel()
	pki := fleettest.NewPKI(t, t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := &recordingFrontend{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pki.Server}, MinVersion: tls.VersionTLS12})))
	workflowservice.RegisterWorkflowServiceServer(gs, front)
	var wg sync.WaitGroup
	wg.Go(func() { _ = gs.Serve(l) })
	defer func() { gs.Stop(); wg.Wait() }()

	const key = "cg-test-api-key-5e1f"
	cfg := Config{HostPort: l.Addr().String(), TLSCAFile: pki.CAFile, APIKey: key}
	c, err := DialTemporal(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	front.mu.Lock()
	auth := front.auth
	front.mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer "+key {
		t.Errorf("the server got authorization %q, want the bearer token", auth)
	}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), cfg.String()} {
		if strings.Contains(s, key) {
			t.Errorf("the printed config holds the API key: %s", s)
		}
	}
	// A server that is not there: the error says where, not the key.
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := dead.Addr().String()
	_ = dead.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = DialTemporal(ctx, Config{HostPort: addr, APIKey: key})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), addr) {
		t.Errorf("dialing nothing: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Config{
		"no address":          {},
		"no port":             {HostPort: "temporal.example"},
		"certificate, no key": {HostPort: "h:1", TLSCertFile: "c.pem"},
		"key, no certificate": {HostPort: "h:1", TLSKeyFile: "k.pem"},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	if _, err := DialTemporal(t.Context(), Config{HostPort: "127.0.0.1:1", TLSCAFile: "/nonexistent/ca.pem"}); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("a missing CA file: %v", err)
	}
}
