package fleettest

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// GateMode is what a Gate does with a connection.
type GateMode uint8

// The zero GateMode is invalid.
const (
	// GatePass relays connections to the backend.
	GatePass GateMode = iota + 1
	// GateHold accepts connections and relays nothing until the mode
	// changes: a server that is slow to answer.
	GateHold
	// GateRefuse accepts connections and closes them at once: a server
	// that is unreachable.
	GateRefuse
)

// Gate is a TCP relay on loopback in front of a server (a git daemon),
// whose mode a test switches to make the server answer, hang or be
// unreachable, and which counts what it did, so that a test waits for the
// event itself.
type Gate struct {
	// Addr is its address, 127.0.0.1:PORT.
	Addr    string
	backend string
	l       net.Listener
	wg      sync.WaitGroup

	mu       sync.Mutex
	mode     GateMode
	changed  chan struct{}
	accepted int
	held     int
	dropped  int
	refused  int
	open     map[net.Conn]bool
}

// StartGate starts a gate in front of backend (HOST:PORT) in mode. It is
// stopped when the test ends.
func StartGate(tb testing.TB, backend string, mode GateMode) *Gate {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	g := &Gate{Addr: l.Addr().String(), backend: backend, l: l, mode: mode, changed: make(chan struct{}), open: map[net.Conn]bool{}}
	g.wg.Go(g.serve)
	tb.Cleanup(g.close)
	return g
}

// Set switches the gate's mode; held connections follow it.
func (g *Gate) Set(m GateMode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = m
	close(g.changed)
	g.changed = make(chan struct{})
}

// GateCounts are what a gate did so far.
type GateCounts struct {
	// Accepted counts every connection; Held those waiting now; Dropped
	// those whose client left while held; Refused those closed at once.
	Accepted, Held, Dropped, Refused int
}

// Counts returns what the gate did so far.
func (g *Gate) Counts() GateCounts {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateCounts{Accepted: g.accepted, Held: g.held, Dropped: g.dropped, Refused: g.refused}
}

func (g *Gate) close() {
	_ = g.l.Close()
	g.mu.Lock()
	for c := range g.open {
		_ = c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

func (g *Gate) serve() {
	for {
		c, err := g.l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		g.mu.Lock()
		g.accepted++
		g.open[c] = true
		g.mu.Unlock()
		g.wg.Go(func() {
			g.handle(c)
			g.mu.Lock()
			delete(g.open, c)
			g.mu.Unlock()
			_ = c.Close()
		})
	}
}

// handle reads what the client sends from the start (so that a client
// that leaves while held is seen), and relays it once the gate passes.
func (g *Gate) handle(c net.Conn) {
	chunks := make(chan []byte, 256)
	gone := make(chan struct{})
	// The reader ends once the connection is closed; whatever it still
	// reads is dropped.
	defer func() {
		go func() {
			for range chunks {
			}
		}()
	}()
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := c.Read(buf)
			if n > 0 {
				chunks <- buf[:n]
			}
			if err != nil {
				close(gone)
				return
			}
		}
	}()
	counted := false
	for {
		g.mu.Lock()
		m, changed := g.mode, g.changed
		if m == GateHold && !counted {
			g.held++
			counted = true
		}
		if m != GateHold && counted {
			g.held--
			counted = false
		}
		if m == GateRefuse {
			g.refused++
		}
		g.mu.Unlock()
		if m != GateHold {
			if m == GateRefuse {
				return
			}
			break
		}
		select {
		case <-changed:
		case <-gone:
			g.mu.Lock()
			g.held--
			g.dropped++
			g.mu.Unlock()
			return
		}
	}
	b, err := net.Dial("tcp", g.backend)
	if err != nil {
		return
	}
	g.mu.Lock()
	g.open[b] = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.open, b)
		g.mu.Unlock()
		_ = b.Close()
	}()
	back := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, b)
		_ = c.Close()
		close(back)
	}()
	for p := range chunks {
		if _, err := b.Write(p); err != nil {
			break
		}
	}
	if tc, ok := b.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	<-back
}

// StoreGate is an HTTP relay on loopback in front of an S3 server, as one
// worker host's way to the store: while holding, it keeps each request
// that binds a key (a PUT under keys/) until it is released or its client
// leaves, so that a test can find a worker that has judged a service and
// not yet bound its result.
type StoreGate struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string
	srv      *http.Server
	l        net.Listener

	mu                       sync.Mutex
	holding                  bool
	changed                  chan struct{}
	held, dropped, forwarded int
}

// StartStoreGate starts a relay to the S3 server at endpoint (a URL). It
// is stopped when the test ends.
func StartStoreGate(tb testing.TB, endpoint string) *StoreGate {
	tb.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	g := &StoreGate{Endpoint: "http://" + l.Addr().String(), l: l, changed: make(chan struct{})}
	// The Host header is left as the client signed it.
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = u.Scheme, u.Host
		r.Out.Host = r.In.Host
	}}
	g.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/keys/") && !g.wait(r) {
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = g.srv.Serve(l) }()
	tb.Cleanup(func() {
		g.Hold(false)
		_ = g.srv.Close()
	})
	return g
}

// wait holds a bind while the gate holds, and reports whether to relay
// it: not when its client left.
func (g *StoreGate) wait(r *http.Request) bool {
	// The body is read first: the server sees a client that leaves only
	// once the request is read.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	counted := false
	defer func() {
		if counted {
			g.mu.Lock()
			g.held--
			g.mu.Unlock()
		}
	}()
	for {
		g.mu.Lock()
		holding, changed := g.holding, g.changed
		if holding && !counted {
			g.held++
			counted = true
		}
		if !holding {
			g.forwarded++
		}
		g.mu.Unlock()
		if !holding {
			return true
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			g.mu.Lock()
			g.dropped++
			g.mu.Unlock()
			return false
		}
	}
}

// Hold starts or stops holding binds.
func (g *StoreGate) Hold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding = on
	close(g.changed)
	g.changed = make(chan struct{})
}

// Counts returns the binds held now, those whose client left while held,
// and those relayed.
func (g *StoreGate) Counts() (held, dropped, forwarded int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.dropped, g.forwarded
}

// URL is the s3:// URL of prefix in s's bucket through the gate.
func (g *StoreGate) URL(s *S3, prefix string) string {
	return strings.Replace(s.URL(prefix), url.QueryEscape(s.Endpoint), url.QueryEscape(g.Endpoint), 1)
}

// GitURL is the git:// URL of the bare repository name.git of the git
// daemon behind the gate.
func (g *Gate) GitURL(name string) string { return "git://" + g.Addr + "/" + name + ".git" }
