package seccheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/trace"
)

// Defaults for Options.
const (
	DefaultMaxEvents        = 100_000
	DefaultMaxEventBytes    = 128 << 20
	DefaultMaxConns         = 256
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultDrainTimeout     = 10 * time.Second
)

// maxSocketPath is the longest path a sockaddr_un holds, without its NUL.
const maxSocketPath = 107

// maxInitsPerConn bounds the container inits tracked per connection.
const maxInitsPerConn = 4096

// eventOverhead approximates the bytes an Event costs beyond its strings.
const eventOverhead = 256

// Listener errors.
var (
	// ErrClosed reports a Collect on a closed Listener.
	ErrClosed = errors.New("seccheck listener closed")
	// ErrCollected reports a second Collect on one Listener.
	ErrCollected = errors.New("seccheck listener already collected")
	// ErrInvalidOptions reports Options that Validate rejects.
	ErrInvalidOptions = errors.New("invalid seccheck listener options")
)

// Options configures a Listener. A zero field takes its default.
type Options struct {
	// Limits bounds each packet; see Decode.
	Limits Limits
	// MaxEvents is the number of events stored over all connections.
	MaxEvents int
	// MaxEventBytes bounds the approximate memory of the stored events.
	MaxEventBytes int
	// MaxConns is the number of connections accepted over the Listener's
	// life; later ones are refused, which makes their runsc fail.
	MaxConns int
	// HandshakeTimeout bounds the wait for a connection's handshake.
	HandshakeTimeout time.Duration
	// DrainTimeout bounds the wait, after Finish, for open connections to
	// reach their end of file.
	DrainTimeout time.Duration
	// Observe, when set, sees each stored event as it arrives, for a live
	// display. It is called from the connections' readers, concurrently,
	// and must return quickly; it must not keep the event's slices.
	Observe func(trace.Event)
}

// Validate reports whether o is usable: no field may be negative.
func (o Options) Validate() error {
	if err := o.Limits.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.MaxEvents < 0 || o.MaxEventBytes < 0 || o.MaxConns < 0 || o.HandshakeTimeout < 0 || o.DrainTimeout < 0 {
		return fmt.Errorf("negative bound in %+v: %w", o, ErrInvalidOptions)
	}
	return nil
}

func (o Options) withDefaults() Options {
	o.Limits = o.Limits.withDefaults()
	if o.MaxEvents == 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MaxEventBytes == 0 {
		o.MaxEventBytes = DefaultMaxEventBytes
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	return o
}

// Listener is the host side of runsc's remote sink: a SOCK_SEQPACKET socket
// file that runsc connects to. Create it with Listen before starting runsc,
// run Collect while the sandboxes run, call Finish once they have all
// exited, and Close it at the end. Its methods are safe for concurrent use.
type Listener struct {
	path string
	opts Options
	ln   *net.UnixListener

	finishOnce sync.Once
	finished   chan struct{}
	closeOnce  sync.Once
	closing    chan struct{}
	closeErr   error

	mu          sync.Mutex
	collectDone chan struct{} // closed when Collect returns; nil before Collect
}

// Listen creates the socket file at path, mode 0600, and listens on it. The
// file must not exist yet. Put it in a directory that only the caller can
// write to: the mode is set right after bind(2), before listen(2), so no one
// can connect while it is wider, but a writable directory lets others swap
// the file. Close removes it.
func Listen(path string, opts Options) (*Listener, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating seqpacket socket: %w", err)
	}
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	cleanup = append(cleanup, func() { _ = unix.Close(fd) })
	// On Linux the mode of a socket's inode becomes the mode of the file
	// that bind creates (less the umask); the chmod below is the guarantee.
	_ = unix.Fchmod(fd, 0o600)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("binding socket %q: %w", path, err)
	}
	cleanup = append(cleanup, func() { _ = os.Remove(path) })
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("restricting socket mode: %w", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return nil, fmt.Errorf("listening on socket %q: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	cleanup[0] = func() { _ = f.Close() }
	fl, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("wrapping socket %q: %w", path, err)
	}
	ln, ok := fl.(*net.UnixListener)
	if !ok {
		_ = fl.Close()
		return nil, fmt.Errorf("wrapping socket %q: got %T, want a unix listener", path, fl)
	}
	_ = f.Close() // FileListener holds its own copy of the descriptor
	cleanup = nil
	return &Listener{
		path:     path,
		opts:     opts,
		ln:       ln,
		finished: make(chan struct{}),
		closing:  make(chan struct{}),
	}, nil
}

func checkSocketPath(path string) error {
	switch {
	case path == "":
		return errors.New("checking socket path: empty")
	case len(path) > maxSocketPath:
		return fmt.Errorf("checking socket path %q: %d bytes, limit %d", path, len(path), maxSocketPath)
	case strings.IndexByte(path, 0) >= 0:
		return fmt.Errorf("checking socket path %q: contains NUL", path)
	case path[0] == '@':
		return fmt.Errorf("checking socket path %q: abstract sockets have no file mode", path)
	}
	return nil
}

// Path returns the socket file's path.
func (l *Listener) Path() string { return l.path }

// Finish tells the Listener that every sandbox that uses it has exited, so
// that Collect can return once the open connections end. Calling it more
// than once, or before Collect starts, is fine.
func (l *Listener) Finish() {
	l.finishOnce.Do(func() { close(l.finished) })
}

// Close stops a running Collect and waits for it to return, stops
// listening, and removes the socket file. Later calls return the first
// call's result.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closing)
		l.mu.Lock()
		done := l.collectDone
		l.mu.Unlock()
		if done != nil {
			<-done
		}
		var errs []error
		if err := l.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing socket: %w", err))
		}
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing socket file: %w", err))
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Collect accepts runsc's connections, one per sandbox, in sequence or at
// once, performs each handshake and decodes each packet. It returns when
// Finish has been called and every connection has ended (or DrainTimeout
// has passed), or earlier when ctx is done or Close is called; the
// Collection then says what was missed. It stops listening before it
// returns. It returns an error only when it cannot collect at all: on a
// closed Listener, or when called a second time.
func (l *Listener) Collect(ctx context.Context) (*Collection, error) {
	l.mu.Lock()
	select {
	case <-l.closing:
		l.mu.Unlock()
		return nil, ErrClosed
	default:
	}
	if l.collectDone != nil {
		l.mu.Unlock()
		return nil, ErrCollected
	}
	done := make(chan struct{})
	l.collectDone = done
	l.mu.Unlock()
	defer close(done)

	c := &collector{
		opts:       l.opts,
		active:     make(map[*net.UnixConn]struct{}),
		acceptErrs: reasons{conn: -1},
	}

	stopAccept := make(chan struct{})
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		c.acceptLoop(l.ln, stopAccept)
	}()

	finished := false
	select {
	case <-l.finished:
		finished = true
	case <-ctx.Done():
	case <-l.closing:
	}
	select {
	case <-l.finished:
		finished = true // also when ctx ended at the same moment
	default:
	}
	close(stopAccept)
	_ = l.ln.SetDeadline(time.Unix(1, 0)) // wakes the blocked accept
	<-acceptDone
	if finished {
		// Connections that runsc queued before its sandbox exited are still
		// in the backlog: take them too.
		_ = l.ln.SetDeadline(time.Time{})
		c.drainBacklog(l.ln)
	}
	_ = l.ln.Close() // from here on, a runsc that connects is refused

	if finished {
		readersDone := make(chan struct{})
		go func() {
			c.wg.Wait()
			close(readersDone)
		}()
		timer := time.NewTimer(l.opts.DrainTimeout)
		select {
		case <-readersDone:
		case <-timer.C:
		case <-ctx.Done():
		case <-l.closing:
		}
		timer.Stop()
	}
	c.stop()
	c.wg.Wait()
	return c.collection(finished), nil
}

// collector is the state of one Collect.
type collector struct {
	opts Options
	wg   sync.WaitGroup

	mu         sync.Mutex
	stopped    bool
	active     map[*net.UnixConn]struct{}
	conns      []*connState
	events     []trace.Event
	eventBytes int
	unstored   int
	refused    int
	acceptErrs reasons
}

// connState is owned by its reader goroutine until the WaitGroup is done.
type connState struct {
	stats       ConnStats
	reasons     reasons
	lastDropped uint32
	inits       map[int32]struct{} // container init PIDs whose exit is pending
	initsLost   bool
}

func (c *collector) acceptLoop(ln *net.UnixListener, stop <-chan struct{}) {
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			select {
			case <-stop:
				return
			default:
			}
			c.acceptError("accepting: %v", err)
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		c.serve(conn)
	}
}

// drainBacklog accepts the connections already queued, without waiting.
func (c *collector) drainBacklog(ln *net.UnixListener) {
	rc, err := ln.SyscallConn()
	if err != nil {
		c.acceptError("draining backlog: %v", err)
		return
	}
	for {
		var nfd int
		var aerr error
		if err := rc.Control(func(fd uintptr) {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
		}); err != nil {
			aerr = err
		}
		switch {
		case aerr == nil:
		case errors.Is(aerr, unix.EAGAIN):
			return
		case errors.Is(aerr, unix.EINTR), errors.Is(aerr, unix.ECONNABORTED):
			continue
		default:
			c.acceptError("draining backlog: %v", aerr)
			return
		}
		f := os.NewFile(uintptr(nfd), "seccheck-conn")
		fc, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			c.acceptError("wrapping queued connection: %v", err)
			continue
		}
		conn, ok := fc.(*net.UnixConn)
		if !ok {
			_ = fc.Close()
			continue
		}
		c.serve(conn)
	}
}

func (c *collector) acceptError(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acceptErrs.add(ReasonAcceptError, 1, format, args...)
}

// serve registers conn and starts its reader, or refuses it.
func (c *collector) serve(conn *net.UnixConn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || len(c.conns) >= c.opts.MaxConns {
		if !c.stopped {
			c.refused++
		}
		_ = conn.Close()
		return
	}
	cs := &connState{reasons: reasons{conn: len(c.conns)}}
	c.conns = append(c.conns, cs)
	c.active[conn] = struct{}{}
	c.wg.Add(1)
	go c.read(cs, conn)
}

// stop closes every open connection; their readers then end.
func (c *collector) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for conn := range c.active {
		_ = conn.Close()
	}
}

func (c *collector) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// read runs one connection: the handshake, then packets until it ends.
func (c *collector) read(cs *connState, conn *net.UnixConn) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		delete(c.active, conn)
		c.mu.Unlock()
		_ = conn.Close()
	}()
	buf := make([]byte, c.opts.Limits.MaxPacketBytes)
	if !c.handshake(cs, conn, buf) {
		return
	}
	for {
		n, flags, err := readPacket(conn, buf)
		if err != nil {
			c.ended(cs, err)
			break
		}
		cs.stats.Packets++
		if flags&unix.MSG_TRUNC != 0 {
			cs.reasons.add(ReasonOversized, 1, "packet larger than %d bytes discarded", len(buf))
			continue
		}
		p, err := Decode(buf[:n], c.opts.Limits)
		if p.Header.Size != 0 {
			observeDropped(cs, p.Header.Dropped)
		}
		if err != nil {
			cs.reasons.add(ReasonMalformed, 1, "packet %d: %v", cs.stats.Packets, err)
			continue
		}
		if !p.HasEvent {
			continue
		}
		cs.stats.Events++
		if p.Truncated {
			cs.reasons.add(ReasonTruncated, 1, "%s event of pid %d cut to the limits", p.Event.Kind, p.Event.PID)
		}
		trackInit(cs, &p.Event)
		if c.store(p.Event) && c.opts.Observe != nil {
			c.opts.Observe(p.Event)
		}
	}
	if cs.stats.Dropped > 0 {
		cs.reasons.add(ReasonDropped, int(min(cs.stats.Dropped, 1<<31-1)), "sender reported %d dropped points", cs.stats.Dropped)
	}
	for pid := range cs.inits {
		cs.reasons.add(ReasonNoInitExit, 1, "no exit seen for container init pid %d", pid)
	}
	if cs.initsLost {
		cs.reasons.add(ReasonNoInitExit, 1, "more than %d container starts to track", maxInitsPerConn)
	}
}

// handshake reads and answers the handshake. It reports whether the
// connection may go on.
func (c *collector) handshake(cs *connState, conn *net.UnixConn, buf []byte) bool {
	_ = conn.SetReadDeadline(time.Now().Add(c.opts.HandshakeTimeout))
	n, flags, err := readPacket(conn, buf)
	switch {
	case errors.Is(err, io.EOF):
		cs.reasons.add(ReasonHandshake, 1, "connection closed before the handshake")
		return false
	case err != nil && c.isStopped():
		cs.reasons.add(ReasonOpenAtStop, 1, "stopped before the handshake")
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		cs.reasons.add(ReasonHandshake, 1, "no handshake within %v", c.opts.HandshakeTimeout)
		return false
	case err != nil:
		cs.reasons.add(ReasonHandshake, 1, "reading handshake: %v", err)
		return false
	case flags&unix.MSG_TRUNC != 0:
		cs.reasons.add(ReasonHandshake, 1, "handshake larger than %d bytes", len(buf))
		return false
	}
	version, err := parseHandshake(buf[:n])
	if err != nil {
		cs.reasons.add(ReasonHandshake, 1, "%v", err)
		return false
	}
	if version < ProtocolVersion {
		cs.reasons.add(ReasonHandshake, 1, "handshake version %d, want at least %d", version, ProtocolVersion)
		return false
	}
	if _, err := conn.Write(appendHandshake(nil, ProtocolVersion)); err != nil {
		cs.reasons.add(ReasonHandshake, 1, "replying to handshake: %v", err)
		return false
	}
	_ = conn.SetReadDeadline(time.Time{})
	cs.stats.Version = version
	return true
}

// readPacket reads one record. A zero-length record reads as io.EOF, as it
// does for any SOCK_SEQPACKET reader in Go; runsc never sends one.
func readPacket(conn *net.UnixConn, buf []byte) (n, flags int, err error) {
	n, _, flags, _, err = conn.ReadMsgUnix(buf, nil)
	return n, flags, err
}

// ended records how a connection ended after its handshake.
func (c *collector) ended(cs *connState, err error) {
	switch {
	case errors.Is(err, io.EOF):
		cs.stats.EOF = true
	case c.isStopped():
		cs.reasons.add(ReasonOpenAtStop, 1, "connection open when collection stopped")
	default:
		cs.reasons.add(ReasonReadError, 1, "reading packet: %v", err)
	}
}

// observeDropped follows the cumulative dropped count. It wraps at 2^32, so
// the difference is taken modulo 2^32: a wrap still counts forward.
func observeDropped(cs *connState, d uint32) {
	cs.stats.Dropped += uint64(d - cs.lastDropped)
	cs.lastDropped = d
}

// trackInit follows the container inits announced on a connection.
func trackInit(cs *connState, ev *trace.Event) {
	switch {
	case ev.Kind == trace.KindStart && ev.PID > 0:
		if cs.inits == nil {
			cs.inits = make(map[int32]struct{})
		}
		if len(cs.inits) >= maxInitsPerConn {
			cs.initsLost = true
			return
		}
		cs.inits[ev.PID] = struct{}{}
	case ev.Kind == trace.KindExit && (ev.TID == ev.PID || ev.TID == 0):
		delete(cs.inits, ev.PID)
	}
}

// store keeps ev unless a bound is reached, and reports whether it did.
func (c *collector) store(ev trace.Event) bool {
	size := eventSize(&ev)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) >= c.opts.MaxEvents || c.eventBytes+size > c.opts.MaxEventBytes {
		c.unstored++
		return false
	}
	c.events = append(c.events, ev)
	c.eventBytes += size
	return true
}

func eventSize(ev *trace.Event) int {
	n := eventOverhead + len(ev.Binary) + len(ev.Execfn) + len(ev.Cwd) + len(ev.Comm) + len(ev.Container) + len(ev.Phase)
	for _, s := range ev.Argv {
		n += 16 + len(s)
	}
	for _, s := range ev.Env {
		n += 16 + len(s)
	}
	return n
}

// collection assembles the result. All readers have ended.
func (c *collector) collection(finished bool) *Collection {
	c.mu.Lock()
	defer c.mu.Unlock()
	coll := &Collection{Events: c.events, Conns: make([]ConnStats, len(c.conns))}
	whole := reasons{conn: -1}
	if !finished {
		whole.add(ReasonNotFinished, 1, "collection stopped before Finish")
	} else if len(c.conns) == 0 {
		whole.add(ReasonNoConnection, 1, "no sandbox connected")
	}
	if c.unstored > 0 {
		whole.add(ReasonEventLimit, c.unstored, "events past the bounds (%d events, %d bytes) not stored", c.opts.MaxEvents, c.opts.MaxEventBytes)
	}
	if c.refused > 0 {
		whole.add(ReasonConnLimit, c.refused, "connections past %d refused", c.opts.MaxConns)
	}
	whole.list = append(whole.list, c.acceptErrs.list...)
	coll.Reasons = append(coll.Reasons, whole.list...)
	for i, cs := range c.conns {
		coll.Conns[i] = cs.stats
		coll.Reasons = append(coll.Reasons, cs.reasons.list...)
	}
	coll.Complete = len(coll.Reasons) == 0
	return coll
}
