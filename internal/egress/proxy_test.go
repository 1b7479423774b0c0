package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// waitFor is how long a test waits for an event before it fails. It is a
// bound on a hang, never a measurement.
const waitFor = 2 * time.Minute

// fakeResolver answers from a table. A host's n-th lookup gets its n-th
// answer (the last one again after that); a host not in the table is not
// found.
type fakeResolver struct {
	answers map[string][][]netip.Addr
	mu      sync.Mutex
	calls   []string
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == host {
			n++
		}
	}
	f.calls = append(f.calls, host)
	a, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a[min(n, len(a)-1)], nil
}

func (f *fakeResolver) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func resolveTo(host string, answers ...string) *fakeResolver {
	f := &fakeResolver{answers: map[string][][]netip.Addr{}}
	for _, a := range answers {
		var set []netip.Addr
		for s := range strings.SplitSeq(a, ",") {
			set = append(set, netip.MustParseAddr(s))
		}
		f.answers[host] = append(f.answers[host], set)
	}
	return f
}

// recDialer records every address it is asked to dial, and dials with
// next, or fails when next is nil.
type recDialer struct {
	next  func(ctx context.Context, network, addr string) (net.Conn, error)
	mu    sync.Mutex
	calls []string
}

func (d *recDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.calls = append(d.calls, addr)
	d.mu.Unlock()
	if d.next == nil {
		return nil, errors.New("the test's dialer dials nothing")
	}
	return d.next(ctx, network, addr)
}

func (d *recDialer) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func realDialer() *recDialer {
	return &recDialer{next: (&net.Dialer{}).DialContext}
}

// startProxy serves p on a host loopback listener until the test ends, and
// returns the listener's address.
func startProxy(t *testing.T, p *Proxy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(waitFor):
			t.Errorf("Serve did not return within %v of Close", waitFor)
		}
	})
	return l.Addr().String()
}

func mustRule(t testing.TB, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// connectVia asks the proxy at proxyAddr to CONNECT to target and returns
// the connection, a reader past the response, and the response.
func connectVia(t *testing.T, proxyAddr, target string) (net.Conn, *bufio.Reader, *http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitFor))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("reading the proxy's answer to CONNECT %s: %v", target, err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
	}
	return c, br, resp, body
}

// getVia sends a plain HTTP request for rawURL through the proxy and returns
// the status and body.
func getVia(t *testing.T, proxyAddr, rawURL string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", rawURL)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode < 200 { // interim responses
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("reading the proxy's answer to GET %s: %v", rawURL, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var ignoreStart = cmpopts.IgnoreFields(Conn{}, "Start")

func TestConnectTunnelsAndCounts(t *testing.T) {
	t.Parallel()
	// The destination reads exactly what the client sends, answers, and
	// closes.
	const upN, downN = 1000, 3000
	dst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := dst.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b := make([]byte, upN)
		_, err = io.ReadFull(c, b)
		got <- b
		if err == nil {
			c.Write(bytes.Repeat([]byte("d"), downN))
		}
	}()
	port := dst.Addr().(*net.TCPAddr).Port

	res := resolveTo("svc.test", "127.0.0.1")
	d := realDialer()
	p := New(Policy{Allow: []Rule{mustRule(t, "svc.test:"+strconv.Itoa(port))}, AllowPrivate: true}, WithResolver(res), WithDialer(d))
	paddr := startProxy(t, p)

	target := "SVC.test.:" + strconv.Itoa(port) // case and trailing dot are normalised
	c, br, resp, body := connectVia(t, paddr, target)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %s %s", target, resp.Status, body)
	}
	up := bytes.Repeat([]byte("u"), upN)
	if _, err := c.Write(up); err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).CloseWrite()
	down, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(<-got, up) {
		t.Errorf("the destination did not get the client's %d bytes", upN)
	}
	if len(down) != downN {
		t.Errorf("client got %d bytes through the tunnel, want %d", len(down), downN)
	}
	c.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	want := []Conn{{Host: "svc.test", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Method: "CONNECT", Up: upN, Down: downN, Allowed: true}}
	if diff := cmp.Diff(want, p.Conns(), ignoreStart); diff != "" {
		t.Errorf("Conns (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"svc.test"}, res.Calls()); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}

// countListener reports each accepted connection's byte counts when it is
// closed.
type countListener struct {
	net.Listener
	closed chan [2]int64 // read, written
}

func (l *countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: c, l: l}, nil
}

type serverConn struct {
	net.Conn
	l           *countListener
	read, wrote atomic.Int64
	once        sync.Once
}

func (c *serverConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *serverConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.wrote.Add(int64(n))
	return n, err
}

func (c *serverConn) Close() error {
	c.once.Do(func() { c.l.closed <- [2]int64{c.read.Load(), c.wrote.Load()} })
	return c.Conn.Close()
}

func TestForwardPlainHTTP(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, path, proxyAuth, proxyConn, ua string
	}
	seenc := make(chan seen, 2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenc <- seen{r.Host, r.URL.RequestURI(), r.Header.Get("Proxy-Authorization"), r.Header.Get("Proxy-Connection"), r.Header.Get("User-Agent")}
		io.WriteString(w, strings.Repeat("pkg ", 500))
	}))
	cl := &countListener{Listener: srv.Listener, closed: make(chan [2]int64, 2)}
	srv.Listener = cl
	srv.Start()
	defer srv.Close()
	port := cl.Addr().(*net.TCPAddr).Port

	res := resolveTo("mirror.test", "127.0.0.1")
	p := New(Policy{Allow: []Rule{mustRule(t, "mirror.test:"+strconv.Itoa(port))}, AllowPrivate: true}, WithResolver(res), WithDialer(realDialer()))
	paddr := startProxy(t, p)

	// Two requests on one client connection: keep-alive to the proxy, one
	// upstream connection per request.
	c, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	br := bufio.NewReader(c)
	u := fmt.Sprintf("http://user:pw@mirror.test:%d/debian/dists/bookworm/InRelease?x=1", port)
	for i := range 2 {
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: ignored.test\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n\r\n", u)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK || len(b) != 2000 {
			t.Fatalf("request %d: %s, %d bytes, %v", i, resp.Status, len(b), err)
		}
		if resp.Close {
			t.Fatalf("request %d: the proxy closed a keep-alive connection", i)
		}
	}
	c.Close()
	var wantUp, wantDown int64
	for range 2 {
		select {
		case n := <-cl.closed:
			wantUp += n[0]
			wantDown += n[1]
		case <-time.After(waitFor):
			t.Fatal("the destination's connections were not closed")
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s := <-seenc
		want := seen{host: fmt.Sprintf("mirror.test:%d", port), path: "/debian/dists/bookworm/InRelease?x=1"}
		if s != want {
			t.Errorf("the destination saw %+v, want %+v", s, want)
		}
	}
	conns := p.Conns()
	var gotUp, gotDown int64
	for i := range conns {
		gotUp += conns[i].Up
		gotDown += conns[i].Down
		conns[i].Up, conns[i].Down = 0, 0
	}
	one := Conn{Host: "mirror.test", Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), Method: "GET", Allowed: true}
	if diff := cmp.Diff([]Conn{one, one}, conns, ignoreStart); diff != "" {
		t.Errorf("Conns (-want +got):\n%s", diff)
	}
	if gotUp != wantUp || gotDown != wantDown {
		t.Errorf("counted up %d down %d; the destination read %d and wrote %d", gotUp, gotDown, wantUp, wantDown)
	}
	if wantUp == 0 || wantDown == 0 {
		t.Errorf("the destination read %d and wrote %d bytes", wantUp, wantDown)
	}
}

func TestRefusedAddressesAreNeverDialled(t *testing.T) {
	t.Parallel()
	// A real listener stands for loopback: it must see no connection.
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	port := lo.Addr().(*net.TCPAddr).Port

	for _, tc := range []struct {
		answer, class string
	}{
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.9.9", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "CGNAT"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fd00::1", "ULA"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"64:ff9b::a01:203", "private"},
		{"203.0.113.80,10.1.2.3", "private"}, // any refused answer refuses the name
	} {
		for _, method := range []string{"CONNECT", "GET"} {
			t.Run(method+"/"+tc.answer, func(t *testing.T) {
				t.Parallel()
				res := resolveTo("allowed.test", tc.answer)
				d := realDialer()
				p := New(Policy{Allow: []Rule{mustRule(t, "allowed.test:"+strconv.Itoa(port))}}, WithResolver(res), WithDialer(d))
				paddr := startProxy(t, p)
				target := "allowed.test:" + strconv.Itoa(port)
				var status int
				var body string
				if method == "CONNECT" {
					_, _, resp, b := connectVia(t, paddr, target)
					status, body = resp.StatusCode, b
				} else {
					status, body = getVia(t, paddr, "http://"+target+"/")
				}
				if status != http.StatusForbidden || !strings.Contains(body, tc.class) {
					t.Errorf("got %d %q, want 403 naming %q", status, body, tc.class)
				}
				p.Close()
				if calls := d.Calls(); len(calls) != 0 {
					t.Errorf("the proxy dialled %v", calls)
				}
				c := p.Conns()
				if len(c) != 1 || c[0].Allowed || c[0].Addr != "" || !strings.Contains(c[0].Reason, tc.class) {
					t.Errorf("Conns = %+v, want one refused attempt naming %q and no address", c, tc.class)
				}
			})
		}
	}
	t.Cleanup(func() {
		// Every subtest has ended, and with it its proxy: a dial would
		// be in the accept queue by now.
		lo.(*net.TCPListener).SetDeadline(time.Now())
		if c, err := lo.Accept(); err == nil {
			c.Close()
			t.Error("the loopback listener was reached")
		}
	})
}

func TestNotInAllowListIsNeitherResolvedNorDialled(t *testing.T) {
	t.Parallel()
	res := resolveTo("allowed.test", "203.0.113.80")
	d := &recDialer{}
	p := New(Policy{Allow: []Rule{mustRule(t, "allowed.test"), mustRule(t, "*.corp.test:8443")}, AllowPrivate: true}, WithResolver(res), WithDialer(d))
	paddr := startProxy(t, p)
	for _, target := range []string{
		"other.test:443",
		"allowed.test:22",      // port
		"sub.allowed.test:443", // an exact rule has no sub-domains
		"corp.test:8443",       // a wildcard has no apex
		"x.corp.test:443",      // port
		"203.0.113.80:443",     // an IP literal is not the name it stands for
		"[2001:db8::1]:443",    // nor is an IPv6 literal
		"allowed.test.evil.test:443",
	} {
		_, _, resp, body := connectVia(t, paddr, target)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "allow-list") {
			t.Errorf("CONNECT %s: %d %q, want 403 naming the allow-list", target, resp.StatusCode, body)
		}
		if status, body := getVia(t, paddr, "http://"+target+"/"); status != http.StatusForbidden {
			t.Errorf("GET http://%s/: %d %q, want 403", target, status, body)
		}
	}
	p.Close()
	if len(res.Calls()) != 0 || len(d.Calls()) != 0 {
		t.Errorf("lookups %v, dials %v; want none", res.Calls(), d.Calls())
	}
	for _, c := range p.Conns() {
		if c.Allowed || c.Addr != "" {
			t.Errorf("%+v: want refused, no address", c)
		}
	}
	if n := len(p.Conns()); n != 16 {
		t.Errorf("%d Conns, want 16", n)
	}
}

func TestUnresolvableNameFails(t *testing.T) {
	t.Parallel()
	// The real resolver: .invalid never resolves (RFC 6761).
	d := &recDialer{}
	p := New(Policy{Allow: []Rule{mustRule(t, "registry.nothing.invalid")}}, WithDialer(d))
	paddr := startProxy(t, p)
	_, _, resp, body := connectVia(t, paddr, "registry.nothing.invalid:443")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "resolving registry.nothing.invalid") {
		t.Errorf("got %d %q, want 502 naming the failed lookup", resp.StatusCode, body)
	}
	p.Close()
	c := p.Conns()
	if len(c) != 1 || !c[0].Allowed || !strings.HasPrefix(c[0].Reason, "resolving registry.nothing.invalid") || c[0].Addr != "" {
		t.Errorf("Conns = %+v, want one allowed attempt that failed to resolve", c)
	}
	if len(d.Calls()) != 0 {
		t.Errorf("dialled %v", d.Calls())
	}
}

func TestDialFailureIs502(t *testing.T) {
	t.Parallel()
	// A port on loopback that nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := New(Policy{Allow: []Rule{mustRule(t, addr)}, AllowPrivate: true})
	paddr := startProxy(t, p)
	_, _, resp, body := connectVia(t, paddr, addr)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "dialing") {
		t.Errorf("got %d %q, want 502 naming the dial", resp.StatusCode, body)
	}
	p.Close()
	if c := p.Conns(); len(c) != 1 || !c[0].Allowed || c[0].Addr != addr || c[0].Reason == "" {
		t.Errorf("Conns = %+v", c)
	}
}

func TestDNSRebindingDialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	// The first answer is public, every later one loopback. The proxy must
	// connect where the first answer said, and ask only once per attempt.
	res := resolveTo("rebind.test", "203.0.113.80", "127.0.0.1")
	d := &recDialer{next: func(context.Context, string, string) (net.Conn, error) {
		a, b := net.Pipe()
		go func() {
			io.WriteString(b, "from the checked address")
			b.Close()
		}()
		return a, nil
	}}
	p := New(Policy{Allow: []Rule{mustRule(t, "rebind.test")}}, WithResolver(res), WithDialer(d))
	paddr := startProxy(t, p)

	_, br, resp, body := connectVia(t, paddr, "rebind.test:443")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first CONNECT: %s %s", resp.Status, body)
	}
	if b, _ := io.ReadAll(br); string(b) != "from the checked address" {
		t.Errorf("tunnel gave %q", b)
	}
	if diff := cmp.Diff([]string{"203.0.113.80:443"}, d.Calls()); diff != "" {
		t.Errorf("dials (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rebind.test"}, res.Calls()); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	// The next attempt resolves again, gets loopback, and is refused.
	_, _, resp, body = connectVia(t, paddr, "rebind.test:443")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Errorf("second CONNECT: %d %q, want 403 loopback", resp.StatusCode, body)
	}
	if diff := cmp.Diff([]string{"203.0.113.80:443"}, d.Calls()); diff != "" {
		t.Errorf("dials (-want +got):\n%s", diff)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	d := &recDialer{}
	p := New(Policy{Allow: []Rule{mustRule(t, "allowed.test")}}, WithDialer(d), WithResolver(resolveTo("allowed.test", "203.0.113.80")))
	paddr := startProxy(t, p)
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"origin form", "GET /index.html HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"https URL", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"ftp URL", "GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"CONNECT without port", "CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"CONNECT path", "CONNECT /x HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400},
		{"CONNECT zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"CONNECT bad port", "CONNECT allowed.test:0 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"garbage", "HELLO\r\n\r\n", 400},
		{"huge header", "GET http://allowed.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\n", 431},
	} {
		c, err := net.Dial("tcp", paddr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(waitFor))
		go io.WriteString(c, tc.req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		c.Close()
	}
	p.Close()
	if len(d.Calls()) != 0 {
		t.Errorf("dialled %v", d.Calls())
	}
	c := p.Conns()
	if len(c) != 9 {
		t.Fatalf("%d Conns, want 9: %+v", len(c), c)
	}
	for _, c := range c {
		if c.Allowed || c.Reason == "" {
			t.Errorf("%+v: want refused with a reason", c)
		}
	}
}

func TestHandshakeTimesOut(t *testing.T) {
	t.Parallel()
	p := New(Policy{}, WithHandshakeTimeout(100*time.Millisecond))
	paddr := startProxy(t, p)
	c, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\n") // and never the blank line
	c.SetReadDeadline(time.Now().Add(waitFor))
	if b, err := io.ReadAll(c); err != nil || len(b) != 0 {
		t.Fatalf("got %q, %v; want the proxy to close the connection", b, err)
	}
	p.Close()
	conns := p.Conns()
	if len(conns) != 1 || !strings.Contains(conns[0].Reason, "not complete within 100ms") {
		t.Errorf("Conns = %+v, want one that timed out", conns)
	}
}

func TestConnsAreBounded(t *testing.T) {
	t.Parallel()
	p := New(Policy{}, WithMaxConns(3))
	paddr := startProxy(t, p)
	for i := range 5 {
		if status, _ := getVia(t, paddr, fmt.Sprintf("http://h%d.test/", i)); status != http.StatusForbidden {
			t.Fatalf("status %d", status)
		}
	}
	p.Close()
	if n, d := len(p.Conns()), p.Dropped(); n != 3 || d != 2 {
		t.Errorf("%d Conns, %d dropped; want 3 and 2", n, d)
	}
	if h := p.Conns()[2].Host; h != "h2.test" {
		t.Errorf("third Conn is for %q, want h2.test (start order)", h)
	}
}

func TestServeAfterClose(t *testing.T) {
	t.Parallel()
	p := New(Policy{})
	p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := p.Serve(l); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close = %v, want ErrClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestCloseEndsEverything is not parallel: it counts the process's
// goroutines.
func TestCloseEndsEverything(t *testing.T) {
	before := runtime.NumGoroutine()

	dst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 1)
	go func() {
		c, err := dst.Accept()
		if err == nil {
			held <- c
		}
		close(held)
	}()
	p := New(Policy{Allow: []Rule{mustRule(t, dst.Addr().String())}, AllowPrivate: true})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	paddr := l.Addr().String()

	// An open tunnel, a half-sent request, and an idle connection.
	tunnel, _, resp, body := connectVia(t, paddr, dst.Addr().String())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s %s", resp.Status, body)
	}
	half, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()
	io.WriteString(half, "CONNECT somewhere")
	idle, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	// The proxy closed its side of every connection: EOF, or a reset when
	// the kernel closed it with unread bytes (half's request) or still in
	// the listener's backlog (idle). Only a connection left open reaches
	// the read deadline.
	for name, c := range map[string]net.Conn{"tunnel": tunnel, "half": half, "idle": idle} {
		c.SetReadDeadline(time.Now().Add(waitFor))
		if _, err := io.ReadAll(c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s: %v, want EOF or a reset", name, err)
		}
		c.Close()
	}
	if c, ok := <-held; ok {
		c.SetReadDeadline(time.Now().Add(waitFor))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("destination: %v, want EOF", err)
		}
		c.Close()
	}
	dst.Close()

	deadline := time.Now().Add(waitFor)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func FuzzHandshake(f *testing.F) {
	for _, s := range []string{
		"CONNECT ok.test:443 HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"CONNECT 127.0.0.1:80 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:80 HTTP/1.1\r\n\r\n",
		"GET http://ok.test:443/x HTTP/1.1\r\nHost: ok.test\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\n\r\nGET http://ok.test:443/ HTTP/1.1\r\n\r\n",
		"POST http://ok.test:443/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"CONNECT\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// Every allowed destination resolves to a refused address: no
		// input may make the proxy dial.
		res := resolveTo("ok.test", "127.0.0.1")
		d := &recDialer{}
		p := New(Policy{Allow: []Rule{{Host: "ok.test", Port: 443}, {Host: "127.0.0.1", Port: 80}, {Host: "::1", Port: 80}}},
			WithResolver(res), WithDialer(d), WithHandshakeTimeout(time.Second))
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			go io.Copy(io.Discard, client)
			io.WriteString(client, in)
			client.Close()
		}()
		p.serveConn(server)
		server.Close()
		<-done
		if calls := d.Calls(); len(calls) != 0 {
			t.Fatalf("dialled %v", calls)
		}
		for _, h := range res.Calls() {
			if h != "ok.test" {
				t.Fatalf("looked up %q, which no rule allows", h)
			}
		}
		for _, c := range p.Conns() {
			if c.Allowed {
				t.Fatalf("allowed %+v", c)
			}
		}
	})
}

// proxyURL is used by tests that go through net/http's own proxy support.
func proxyURL(addr string) *url.URL { return &url.URL{Scheme: "http", Host: addr} }

func TestNetHTTPClientThroughProxy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls ok")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	res := resolveTo("registry.test", "127.0.0.1")
	p := New(Policy{Allow: []Rule{mustRule(t, "registry.test:"+strconv.Itoa(port))}, AllowPrivate: true}, WithResolver(res))
	paddr := startProxy(t, p)

	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxyURL(paddr))
	tr.TLSClientConfig.ServerName = "example.com" // httptest's certificate names example.com
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitFor}
	resp, err := client.Get(fmt.Sprintf("https://registry.test:%d/pkg", port))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "tls ok" {
		t.Errorf("body %q", b)
	}
}

func TestMaxOpen(t *testing.T) {
	t.Parallel()
	p := New(Policy{}, WithMaxOpen(1))
	paddr := startProxy(t, p)
	first, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	io.WriteString(first, "CONNECT a.test:443 HTTP/1.1\r\n") // open, unfinished
	c, err := net.Dial("tcp", paddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitFor))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second connection: %v %v, want 503", resp, err)
	}
	// The first one is still served.
	io.WriteString(first, "\r\n")
	first.SetDeadline(time.Now().Add(waitFor))
	resp, err = http.ReadResponse(bufio.NewReader(first), &http.Request{Method: "CONNECT"})
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("first connection: %v %v, want 403", resp, err)
	}
}

func TestForwardBoundsAndInterimResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, answer string
		status       int
		body         string
	}{
		{"interim then final", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\nKeep-Alive: x\r\n\r\nok", 200, "ok"},
		{"endless interim", strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 20), 502, "too many interim responses"},
		{"huge headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Big: "+strings.Repeat("b", 1000)+"\r\n", 1200) + "\r\n", 502, "reading the response"},
		{"unframed body", "HTTP/1.1 200 OK\r\n\r\nuntil close", 200, "until close"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := &recDialer{next: func(context.Context, string, string) (net.Conn, error) {
				a, b := net.Pipe()
				go func() {
					defer b.Close()
					if _, err := http.ReadRequest(bufio.NewReader(b)); err != nil {
						return
					}
					io.WriteString(b, tc.answer)
				}()
				return a, nil
			}}
			p := New(Policy{Allow: []Rule{{Host: "H.test.", Port: 0}}}, WithDialer(d), WithResolver(resolveTo("h.test", "203.0.113.80"))) // normalised by New
			paddr := startProxy(t, p)
			status, body := getVia(t, paddr, "http://h.test/")
			if status != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("got %d %q, want %d with %q", status, body, tc.status, tc.body)
			}
		})
	}
}

// TestConnectSeesAnAbandonedTLSHandshake: a client that does not trust the
// server's certificate sends its hello, hears the server, and closes,
// after an alert (Go's client, in TLS 1.2 and 1.3) or none (Node's); the
// proxy, reading only record headers, marks that tunnel, and not one whose
// client finished the handshake.
func TestConnectSeesAnAbandonedTLSHandshake(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes' log lines
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	target := "registry.test:" + strconv.Itoa(port)
	p := New(Policy{Allow: []Rule{mustRule(t, target)}, AllowPrivate: true}, WithResolver(resolveTo("registry.test", "127.0.0.1")), WithDialer(realDialer()))
	paddr := startProxy(t, p)

	cases := []struct {
		name            string
		version         uint16
		trusted, silent bool
	}{
		{"TLS 1.3, refused with an alert", tls.VersionTLS13, false, false},
		{"TLS 1.2, refused with an alert", tls.VersionTLS12, false, false},
		{"TLS 1.3, refused in silence", tls.VersionTLS13, false, true},
		{"TLS 1.3, finished", tls.VersionTLS13, true, false},
		{"TLS 1.2, finished", tls.VersionTLS12, true, false},
	}
	for _, tc := range cases {
		c, _, resp, body := connectVia(t, paddr, target)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT %s: %s %s", target, resp.Status, body)
		}
		cfg := &tls.Config{ServerName: "example.com", MinVersion: tc.version, MaxVersion: tc.version}
		if tc.trusted {
			cfg.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
		}
		raw := c
		if tc.silent {
			raw = &helloOnly{Conn: c}
		}
		cl := tls.Client(raw, cfg)
		err := cl.Handshake()
		switch {
		case tc.trusted && err != nil:
			t.Fatalf("%s: %v", tc.name, err)
		case tc.trusted:
			io.WriteString(cl, "GET / HTTP/1.1\r\nHost: registry.test\r\nConnection: close\r\n\r\n")
			io.ReadAll(cl)
		case err == nil:
			t.Fatalf("%s: a client with no roots finished the handshake", tc.name)
		}
		c.Close()
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	conns := p.Conns()
	if len(conns) != len(cases) {
		t.Fatalf("Conns: %+v, want %d", conns, len(cases))
	}
	for i, tc := range cases {
		c := conns[i]
		switch {
		case !tc.trusted && (!c.TLSAbandoned || !strings.Contains(c.Reason, "TLS handshake did not finish") || c.Down == 0):
			t.Errorf("%s: %+v, want TLSAbandoned with its reason", tc.name, c)
		case tc.trusted && (c.TLSAbandoned || c.Reason != ""):
			t.Errorf("%s: %+v, want no mark", tc.name, c)
		}
	}
}

// helloOnly passes a client's first write (its TLS hello) and drops the
// rest, as Node's client sends no alert when it refuses a certificate.
type helloOnly struct {
	net.Conn
	wrote bool
}

func (h *helloOnly) Write(b []byte) (int, error) {
	if h.wrote {
		return len(b), nil
	}
	h.wrote = true
	return h.Conn.Write(b)
}
