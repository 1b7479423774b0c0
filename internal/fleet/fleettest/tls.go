package fleettest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// PKI is a CA made for one test, with a server certificate for 127.0.0.1
// and localhost, and a client certificate, all in PEM files.
type PKI struct {
	CAFile, ServerCertFile, ServerKeyFile, ClientCertFile, ClientKeyFile string
	// Pool holds the CA; Server is the server's certificate and key.
	Pool   *x509.CertPool
	Server tls.Certificate
}

// NewPKI makes a CA and its certificates in dir.
func NewPKI(tb testing.TB, dir string) *PKI {
	tb.Helper()
	caKey := newKey(tb)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "codegenie test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &PKI{CAFile: filepath.Join(dir, "ca.pem"), Pool: x509.NewCertPool()}
	p.Pool.AddCert(ca)
	writePEM(tb, p.CAFile, "CERTIFICATE", caDER)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, server bool) (string, string) {
		key := newKey(tb)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.IPAddresses, tmpl.DNSNames = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			tb.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			tb.Fatal(err)
		}
		cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(tb, cf, "CERTIFICATE", der)
		writePEM(tb, kf, "EC PRIVATE KEY", kder)
		return cf, kf
	}
	p.ServerCertFile, p.ServerKeyFile = issue("server", 2, x509.ExtKeyUsageServerAuth, true)
	p.ClientCertFile, p.ClientKeyFile = issue("client", 3, x509.ExtKeyUsageClientAuth, false)
	if p.Server, err = tls.LoadX509KeyPair(p.ServerCertFile, p.ServerKeyFile); err != nil {
		tb.Fatal(err)
	}
	return p
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// TLSProxy terminates TLS in front of a plain TCP server, as a managed
// Temporal service's front end does: it takes only clients with a
// certificate that the PKI's CA signed (mutual TLS), speaks HTTP/2 (gRPC)
// by ALPN, and relays each connection's bytes to the backend.
type TLSProxy struct {
	// Addr is its address, 127.0.0.1:PORT.
	Addr string
	// Relayed counts the connections whose handshake succeeded; Refused
	// those whose handshake failed.
	Relayed, Refused atomic.Int64
	l                net.Listener
	wg               sync.WaitGroup
}

// StartTLSProxy starts a TLS terminator for backend with p's server
// certificate. It is stopped when the test ends.
func StartTLSProxy(tb testing.TB, p *PKI, backend string) *TLSProxy {
	tb.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{p.Server}, ClientCAs: p.Pool, ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		tb.Fatal(err)
	}
	x := &TLSProxy{Addr: l.Addr().String(), l: l}
	x.wg.Go(func() { x.serve(backend) })
	tb.Cleanup(func() {
		_ = l.Close()
		x.wg.Wait()
	})
	return x
}

func (x *TLSProxy) serve(backend string) {
	var conns sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	defer func() {
		mu.Lock()
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		conns.Wait()
	}()
	for {
		c, err := x.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		conns.Go(func() {
			defer func() { _ = c.Close() }()
			// A client that never finishes its handshake is dropped.
			_ = c.SetDeadline(time.Now().Add(StartLimit))
			if err := c.(*tls.Conn).Handshake(); err != nil {
				x.Refused.Add(1)
				return
			}
			_ = c.SetDeadline(time.Time{})
			b, err := net.Dial("tcp", backend)
			if err != nil {
				return
			}
			defer func() { _ = b.Close() }()
			x.Relayed.Add(1)
			mu.Lock()
			open[c], open[b] = true, true
			mu.Unlock()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
			<-done
			_ = c.Close()
			_ = b.Close()
			<-done
			mu.Lock()
			delete(open, c)
			delete(open, b)
			mu.Unlock()
		})
	}
}
