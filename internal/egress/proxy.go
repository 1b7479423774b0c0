package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Conn is one connection attempt through a Proxy, allowed or not: a CONNECT
// tunnel, or one plain HTTP request.
type Conn struct {
	// Start is when the attempt's request had been read, or, for a
	// request that could not be read, when the proxy began to wait for it.
	Start time.Time
	// Host and Port are the destination the client asked for, Host
	// normalised (lower case, no trailing dot). Both are empty when the
	// request could not be read.
	Host string
	Port int
	// Addr is the IP:port the proxy dialled (the last one tried, when every
	// dial failed), or "" when it dialled nothing.
	Addr string
	// Method is the request's method: CONNECT, GET, ...
	Method string
	// Up counts the bytes sent to the destination, Down the bytes received
	// from it. For plain HTTP they include the request's and the response's
	// headers.
	Up, Down int64
	// Allowed reports whether the policy allowed the destination (its name
	// and every address it resolved to).
	Allowed bool
	// Reason says why the attempt was refused or failed; "" when it
	// succeeded.
	Reason string
	// TLSAbandoned is set for a tunnel whose client began a TLS handshake,
	// heard from the server, and closed without finishing it: most often
	// a client that does not trust the certificate it was shown (a
	// network that inspects TLS).
	TLSAbandoned bool
}

// Resolver looks up the addresses of a host name. *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens a connection to an IP:port. *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Option configures a Proxy.
type Option func(*Proxy)

// WithResolver sets how the proxy resolves names (default net.DefaultResolver).
func WithResolver(r Resolver) Option { return func(p *Proxy) { p.resolver = r } }

// WithDialer sets how the proxy dials the addresses it checked (default a
// net.Dialer). It is only ever given an IP:port.
func WithDialer(d Dialer) Option { return func(p *Proxy) { p.dialer = d } }

// WithNow sets the clock for Conn.Start and deadlines (default time.Now).
func WithNow(now func() time.Time) Option { return func(p *Proxy) { p.now = now } }

// WithHandshakeTimeout sets how long a client may take to send a request's
// line and headers (default one minute), and how long an idle keep-alive
// connection stays open.
func WithHandshakeTimeout(d time.Duration) Option { return func(p *Proxy) { p.handshake = d } }

// WithMaxConns sets how many Conns the proxy keeps (default 10,000); later
// attempts are only counted, see Dropped.
func WithMaxConns(n int) Option { return func(p *Proxy) { p.maxConns = n } }

// WithMaxOpen sets how many client connections may be open at once
// (default 512); a connection beyond it gets 503.
func WithMaxOpen(n int) Option { return func(p *Proxy) { p.maxOpen = n } }

// Defaults of a Proxy.
const (
	DefaultMaxOpen          = 512
	DefaultHandshakeTimeout = time.Minute
	DefaultDialTimeout      = 30 * time.Second
	DefaultMaxConns         = 10_000
	// MaxHeaderBytes bounds a request's line and headers.
	MaxHeaderBytes = 64 << 10

	maxResponseHeaderBytes = 1 << 20
	maxInterim             = 8
)

// Proxy is an HTTP forward proxy that lets a build reach only what its Policy
// allows. It serves CONNECT tunnels (HTTPS, without interception) and plain
// HTTP requests in absolute form, resolves names itself, refuses refused
// addresses, dials exactly the addresses it checked, and records every
// attempt as a Conn. Its methods are safe for concurrent use.
type Proxy struct {
	policy    Policy
	resolver  Resolver
	dialer    Dialer
	now       func() time.Time
	handshake time.Duration
	dialWait  time.Duration
	maxConns  int
	maxOpen   int
	clients   atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	open      map[net.Conn]struct{}
	records   []*record
	dropped   int64
}

// record is a Conn being filled in. Its counters are atomic; the rest is
// guarded by Proxy.mu.
type record struct {
	c        Conn
	up, down atomic.Int64
}

// New returns a Proxy that enforces policy. Rules' hosts are normalised as
// ParseRule does; a rule whose host is not valid matches nothing.
func New(policy Policy, opts ...Option) *Proxy {
	allow := make([]Rule, 0, len(policy.Allow))
	for _, r := range policy.Allow {
		if h, err := normalizeHost(r.Host, true); err == nil {
			r.Host = h // as ParseRule writes it
		}
		allow = append(allow, r)
	}
	p := &Proxy{
		policy:    Policy{Allow: allow, AllowPrivate: policy.AllowPrivate},
		resolver:  net.DefaultResolver,
		dialer:    &net.Dialer{},
		now:       time.Now,
		handshake: DefaultHandshakeTimeout,
		dialWait:  DefaultDialTimeout,
		maxConns:  DefaultMaxConns,
		maxOpen:   DefaultMaxOpen,
		listeners: map[net.Listener]struct{}{},
		open:      map[net.Conn]struct{}{},
	}
	for _, o := range opts {
		o(p)
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// ErrClosed is returned by Serve on a Proxy that was closed.
var ErrClosed = errors.New("egress proxy closed")

// Serve accepts connections on l and serves them until l is closed, by the
// caller or by Close; it then returns nil. It returns ErrClosed at once if
// the proxy is closed, and another error if Accept fails for good. Serve
// may be called for several listeners at once.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.listeners, l)
		p.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !retryAccept(err) {
				return fmt.Errorf("accepting proxy connections: %w", err)
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
			case <-p.ctx.Done():
				return nil
			}
			continue
		}
		delay = 0
		if !p.track(c, true) {
			_ = c.Close()
			return nil
		}
		// Counted here, in accept order, so that the connections over the
		// limit are the latest.
		over := p.clients.Add(1) > int64(p.maxOpen)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			defer p.clients.Add(-1)
			if over {
				r := p.newRecord(p.now(), "")
				reason := fmt.Sprintf("more than %d connections open at once", p.maxOpen)
				p.set(r, func(cn *Conn) { cn.Reason = reason })
				reply(c, http.StatusServiceUnavailable, "egress proxy: "+reason)
				return
			}
			p.serveConn(c)
		}()
	}
}

// retryAccept reports whether an Accept error is worth waiting out.
func retryAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Close stops every Serve, closes every client connection and tunnel, and
// waits for the proxy's goroutines to end. The Conns stay readable. Close
// is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel()
	var first error
	for l := range p.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) && first == nil {
			first = fmt.Errorf("closing proxy listener: %w", err)
		}
	}
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return first
}

// Conns returns the attempts so far, in the order they started. Counters of
// a tunnel still open are as of the call.
func (p *Proxy) Conns() []Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Conn, len(p.records))
	for i, r := range p.records {
		out[i] = r.c
		out[i].Up = r.up.Load()
		out[i].Down = r.down.Load()
	}
	return out
}

// Dropped returns how many attempts were not kept as Conns because the
// proxy already held its maximum.
func (p *Proxy) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// track registers an open connection so that Close closes it. With
// goroutine it also adds a goroutine to wait for. It reports false when the
// proxy is closed.
func (p *Proxy) track(c net.Conn, goroutine bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = struct{}{}
	if goroutine {
		p.wg.Add(1)
	}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

// newRecord starts a Conn.
func (p *Proxy) newRecord(start time.Time, method string) *record {
	r := &record{c: Conn{Start: start, Method: method}}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.records) >= p.maxConns {
		p.dropped++
		return r
	}
	p.records = append(p.records, r)
	return r
}

// set changes a record's fields under the lock.
func (p *Proxy) set(r *record, f func(c *Conn)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(&r.c)
}

// headerReader reads a client connection, failing once more than the
// remaining budget is read while the budget is on.
type headerReader struct {
	r      io.Reader
	budget int // <0: off
	read   int // bytes read since the budget was set
}

var errHeaderTooLarge = errors.New("request line and headers exceed the proxy's limit")

func (h *headerReader) Read(b []byte) (int, error) {
	if h.budget >= 0 {
		if h.budget == 0 {
			return 0, errHeaderTooLarge
		}
		if len(b) > h.budget {
			b = b[:h.budget]
		}
	}
	n, err := h.r.Read(b)
	h.read += n
	if h.budget >= 0 {
		h.budget -= n
	}
	return n, err
}

// serveConn serves one client connection: one CONNECT, or plain HTTP
// requests while the client keeps the connection alive.
func (p *Proxy) serveConn(c net.Conn) {
	hr := &headerReader{r: c}
	br := bufio.NewReaderSize(hr, 4096)
	for {
		hr.budget, hr.read = MaxHeaderBytes-br.Buffered(), br.Buffered()
		waiting := p.now()
		_ = c.SetReadDeadline(waiting.Add(p.handshake))
		req, err := http.ReadRequest(br)
		if err != nil {
			if hr.read == 0 {
				return // the client closed or idled without a request
			}
			r := p.newRecord(waiting, "")
			status, reason := http.StatusBadRequest, "reading the request: "+err.Error()
			var ne net.Error
			switch {
			case errors.Is(err, errHeaderTooLarge):
				status, reason = http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("request line and headers longer than %d bytes", MaxHeaderBytes)
			case errors.As(err, &ne) && ne.Timeout():
				status, reason = 0, fmt.Sprintf("request not complete within %v", p.handshake)
			}
			p.set(r, func(cn *Conn) { cn.Reason = reason })
			if status != 0 {
				reply(c, status, "egress proxy: "+reason)
			}
			lingerClose(c)
			return
		}
		hr.budget = -1
		_ = c.SetReadDeadline(time.Time{})
		start := p.now()
		if req.Method == http.MethodConnect {
			p.connect(c, br, req, start)
			lingerClose(c)
			return
		}
		if !p.forward(c, req, start) {
			lingerClose(c)
			return
		}
	}
}

// lingerClose ends the proxy's side of a TCP connection and reads what the
// client still sends, for a moment, so that closing with unread data does
// not reset the connection before the client has read the proxy's answer.
func lingerClose(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if tc.CloseWrite() != nil {
		return
	}
	_ = tc.SetReadDeadline(time.Now().Add(time.Second))
	_, _ = io.Copy(io.Discard, io.LimitReader(tc, 1<<20))
}

// reply writes a short text response that closes the connection.
func reply(w io.Writer, status int, body string) {
	body += "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// denial is why an attempt did not reach its destination.
type denial struct {
	status  int
	allowed bool // the policy allowed it; it failed
	reason  string
}

// splitTarget splits and normalises a CONNECT authority (host:port).
func splitTarget(authority string) (string, int, error) {
	h, p, err := net.SplitHostPort(authority)
	if err != nil {
		return "", 0, fmt.Errorf("CONNECT target %q is not HOST:PORT", authority)
	}
	port, err := parsePort(p)
	if err != nil {
		return "", 0, fmt.Errorf("CONNECT target %q: %w", authority, err)
	}
	host, err := normalizeHost(h, false)
	if err != nil {
		return "", 0, fmt.Errorf("CONNECT target %q: %w", authority, err)
	}
	return host, port, nil
}

// dial checks host:port against the policy, resolves it once, checks every
// address, and dials the checked addresses in order. On success the
// returned connection counts its bytes into r.
func (p *Proxy) dial(r *record, host string, port int) (*countConn, *denial) {
	if !p.policy.Allows(host, port) {
		return nil, &denial{http.StatusForbidden, false, fmt.Sprintf("%s is not in the build's egress allow-list", net.JoinHostPort(host, strconv.Itoa(port)))}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(p.ctx, p.dialWait)
		addrs, err = p.resolver.LookupNetIP(ctx, "ip", host)
		cancel()
		if err != nil {
			return nil, &denial{http.StatusBadGateway, true, fmt.Sprintf("resolving %s: %v", host, err)}
		}
		if len(addrs) == 0 {
			return nil, &denial{http.StatusBadGateway, true, fmt.Sprintf("resolving %s: no addresses", host)}
		}
	}
	if !p.policy.AllowPrivate {
		for _, a := range addrs {
			if class := refusedClass(a); class != "" {
				return nil, &denial{http.StatusForbidden, false, fmt.Sprintf("%s resolves to %s, a %s address, which builds may not reach", host, a, class)}
			}
		}
	}
	var last error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a.Unmap(), uint16(port)).String()
		p.set(r, func(c *Conn) { c.Addr = addr })
		ctx, cancel := context.WithTimeout(p.ctx, p.dialWait)
		up, err := p.dialer.DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			if !p.track(up, false) {
				_ = up.Close()
				return nil, &denial{http.StatusBadGateway, true, "proxy closed"}
			}
			return &countConn{Conn: up, r: r}, nil
		}
		last = err
	}
	return nil, &denial{http.StatusBadGateway, true, fmt.Sprintf("dialing %s: %v", host, last)}
}

// countConn counts the bytes of an upstream connection into a record,
// and follows the TLS records the client sends.
type countConn struct {
	net.Conn
	r   *record
	tls tlsScan
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.r.down.Add(int64(n))
	return n, err
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.r.up.Add(int64(n))
	c.tls.feed(b[:n])
	return n, err
}

// tlsScan follows the records a client sends through a tunnel by their
// headers alone (RFC 8446, section 5.1: a type, a version, a length): it
// reads nothing that TLS protects. A client that finishes its handshake
// sends, after its hello, a protected record longer than an alert (TLS
// 1.3's Finished: type 23) or a handshake record after its
// ChangeCipherSpec (TLS 1.2's Finished). One that rejects what the server
// showed sends only an alert (plain, type 21, or protected: type 23 of at
// most 19 bytes) or nothing before it closes; a TLS 1.3 client may send
// its ChangeCipherSpec (type 20) before it has read the certificate.
type tlsScan struct {
	hdr   [5]byte
	held  int // header bytes held
	skip  int // body bytes of the current record still to pass
	ccs   bool
	state tlsState
}

// maxProtectedAlert is the longest protected alert record: two bytes of
// alert, one of content type, and a 16-byte AEAD tag.
const maxProtectedAlert = 2 + 1 + 16

type tlsState uint8

const (
	tlsUnread    tlsState = iota // nothing sent yet
	tlsNot                       // not TLS
	tlsHandshake                 // handshake (or alert) records only, so far
	tlsFinished                  // the client went past its handshake
)

func (s *tlsScan) feed(b []byte) {
	for len(b) > 0 && (s.state == tlsUnread || s.state == tlsHandshake) {
		if s.skip > 0 {
			k := min(s.skip, len(b))
			s.skip, b = s.skip-k, b[k:]
			continue
		}
		k := copy(s.hdr[s.held:], b)
		s.held, b = s.held+k, b[k:]
		if s.held < len(s.hdr) {
			return
		}
		s.held = 0
		typ, n := s.hdr[0], int(s.hdr[3])<<8|int(s.hdr[4])
		switch {
		case s.state == tlsUnread && (typ != 22 || s.hdr[1] != 3):
			s.state = tlsNot
		case typ == 23 && n > maxProtectedAlert, typ == 22 && s.ccs:
			s.state = tlsFinished
		default:
			s.ccs = s.ccs || typ == 20
			s.state, s.skip = tlsHandshake, n
		}
	}
}

func (c *countConn) closeWrite() {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// connect serves a CONNECT request: checks, dials, and tunnels bytes both
// ways until both sides are done.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request, start time.Time) {
	r := p.newRecord(start, http.MethodConnect)
	if strings.HasPrefix(req.RequestURI, "/") || req.URL.Host == "" {
		reason := fmt.Sprintf("CONNECT target %q is not HOST:PORT", req.RequestURI)
		p.set(r, func(cn *Conn) { cn.Reason = reason })
		reply(c, http.StatusBadRequest, "egress proxy: "+reason)
		return
	}
	host, port, err := splitTarget(req.URL.Host)
	if err != nil {
		p.set(r, func(cn *Conn) { cn.Reason = err.Error() })
		reply(c, http.StatusBadRequest, "egress proxy: "+err.Error())
		return
	}
	p.set(r, func(cn *Conn) { cn.Host, cn.Port = host, port })
	up, d := p.dial(r, host, port)
	if d != nil {
		p.set(r, func(cn *Conn) { cn.Allowed, cn.Reason = d.allowed, d.reason })
		reply(c, d.status, "egress proxy: "+d.reason)
		return
	}
	p.set(r, func(cn *Conn) { cn.Allowed = true })
	defer p.untrack(up.Conn)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		p.set(r, func(cn *Conn) { cn.Reason = "writing to the client: " + err.Error() })
		return
	}
	// Bytes the client sent after its headers (a TLS ClientHello sent
	// early) are in br: send them first.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			p.set(r, func(cn *Conn) { cn.Reason = "writing to the destination: " + err.Error() })
			return
		}
	}
	errc := make(chan error, 2)
	go func() {
		_, err := io.Copy(up, c)
		up.closeWrite()
		errc <- err
	}()
	go func() {
		_, err := io.Copy(c, up)
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = c.Close()
		}
		errc <- err
	}()
	defer func() {
		// Both copies are done: a client that heard the server and sent
		// nothing past its hello gave the handshake up.
		if up.tls.state == tlsHandshake && r.down.Load() > 0 {
			p.set(r, func(cn *Conn) {
				cn.TLSAbandoned = true
				if cn.Reason == "" {
					cn.Reason = "the TLS handshake did not finish: the client sent its hello, heard the server, and closed (a certificate it does not trust?)"
				}
			})
		}
	}()
	for range 2 {
		if err := <-errc; err != nil {
			// One side broke: end the other at once.
			_ = c.Close()
			_ = up.Close()
			if !p.isClosed() {
				p.set(r, func(cn *Conn) {
					if cn.Reason == "" {
						cn.Reason = "tunnel: " + err.Error()
					}
				})
			}
		}
	}
}

// hopHeaders are the headers of one connection, never forwarded (RFC 9110
// section 7.6.1), with the proxy's own.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// dropHopHeaders removes hop-by-hop headers, and those Connection names.
func dropHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward serves a plain HTTP request in absolute form. It reports whether
// the client connection may serve another request.
func (p *Proxy) forward(c net.Conn, req *http.Request, start time.Time) bool {
	r := p.newRecord(start, req.Method)
	if !req.URL.IsAbs() || req.URL.Host == "" {
		reason := fmt.Sprintf("request target %q is not an absolute http:// URL; a proxy takes GET http://HOST/PATH or CONNECT HOST:PORT", req.RequestURI)
		p.set(r, func(cn *Conn) { cn.Reason = reason })
		reply(c, http.StatusBadRequest, "egress proxy: "+reason)
		return false
	}
	if req.URL.Scheme != "http" {
		reason := fmt.Sprintf("request target %q: the proxy forwards only http:// URLs; use CONNECT for https", req.RequestURI)
		p.set(r, func(cn *Conn) { cn.Reason = reason })
		reply(c, http.StatusBadRequest, "egress proxy: "+reason)
		return false
	}
	port := 80
	if ps := req.URL.Port(); ps != "" {
		n, err := parsePort(ps)
		if err != nil {
			reason := fmt.Sprintf("request target %q: %v", req.RequestURI, err)
			p.set(r, func(cn *Conn) { cn.Reason = reason })
			reply(c, http.StatusBadRequest, "egress proxy: "+reason)
			return false
		}
		port = n
	}
	host, err := normalizeHost(req.URL.Hostname(), false)
	if err != nil {
		reason := fmt.Sprintf("request target %q: %v", req.RequestURI, err)
		p.set(r, func(cn *Conn) { cn.Reason = reason })
		reply(c, http.StatusBadRequest, "egress proxy: "+reason)
		return false
	}
	p.set(r, func(cn *Conn) { cn.Host, cn.Port = host, port })
	up, d := p.dial(r, host, port)
	if d != nil {
		p.set(r, func(cn *Conn) { cn.Allowed, cn.Reason = d.allowed, d.reason })
		reply(c, d.status, "egress proxy: "+d.reason)
		return false
	}
	p.set(r, func(cn *Conn) { cn.Allowed = true })
	defer p.untrack(up.Conn)
	fail := func(reason string) bool {
		p.set(r, func(cn *Conn) { cn.Reason = reason })
		return false
	}

	keepAlive := !req.Close
	dropHopHeaders(req.Header)
	req.URL.User = nil
	req.RequestURI = ""
	req.Close = true // one upstream connection per request
	if req.Host == "" {
		req.Host = req.URL.Host
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write adds none
	}
	bw := bufio.NewWriter(up)
	if err := req.Write(bw); err != nil {
		reply(c, http.StatusBadGateway, "egress proxy: sending the request: "+err.Error())
		return fail("sending the request: " + err.Error())
	}
	if err := bw.Flush(); err != nil {
		reply(c, http.StatusBadGateway, "egress proxy: sending the request: "+err.Error())
		return fail("sending the request: " + err.Error())
	}
	// The destination's headers are bounded too; its body is not.
	uhr := &headerReader{r: up, budget: maxResponseHeaderBytes}
	ubr := bufio.NewReader(uhr)
	var resp *http.Response
	for interim := 0; ; interim++ {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			reply(c, http.StatusBadGateway, "egress proxy: reading the response: "+err.Error())
			return fail("reading the response: " + err.Error())
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if interim == maxInterim {
			reply(c, http.StatusBadGateway, "egress proxy: too many interim responses")
			return fail("too many interim responses")
		}
		// An interim response (100 Continue, 103 Early Hints) goes to the
		// client as it is, and the final one follows.
		fmt.Fprintf(c, "HTTP/1.1 %s\r\n", resp.Status)
		dropHopHeaders(resp.Header)
		_ = resp.Header.Write(c)
		io.WriteString(c, "\r\n")
	}
	uhr.budget = -1
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		reply(c, http.StatusBadGateway, "egress proxy: the destination switched protocols, which the proxy does not forward")
		return fail("the destination switched protocols, which the proxy does not forward")
	}
	dropHopHeaders(resp.Header)
	framed := resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || req.Method == http.MethodHead ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	keepAlive = keepAlive && framed
	resp.Close = !keepAlive
	if err := resp.Write(c); err != nil {
		return fail("streaming the response: " + err.Error())
	}
	return keepAlive
}
