package seccheck

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codegenie/codegenie/internal/trace"
)

// socketPath returns a fresh socket path short enough for sockaddr_un,
// in a private directory.
func socketPath(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "trace.sock")
}

func listen(t *testing.T, opts Options) *Listener {
	t.Helper()
	l, err := Listen(socketPath(t), opts)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

type result struct {
	coll *Collection
	err  error
}

// collect runs Collect in the background.
func collect(ctx context.Context, l *Listener) <-chan result {
	ch := make(chan result, 1)
	go func() {
		c, err := l.Collect(ctx)
		ch <- result{c, err}
	}()
	return ch
}

// waitLimit bounds every wait for an event in these tests. It is minutes:
// it only ends a test that would otherwise hang, and never decides one
// that a slow machine would pass.
const waitLimit = 3 * time.Minute

func wait(t *testing.T, ch <-chan result) *Collection {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Collect: %v", r.err)
		}
		return r.coll
	case <-time.After(waitLimit):
		t.Fatalf("waited %v for Collect to return", waitLimit)
		return nil
	}
}

// fakeRunsc is the client side of the remote sink, as runsc drives it.
type fakeRunsc struct {
	t    *testing.T
	conn *net.UnixConn
}

func dial(t *testing.T, path string) *fakeRunsc {
	t.Helper()
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatalf("dialing %s: %v", path, err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fakeRunsc{t: t, conn: conn}
}

// handshake sends runsc's handshake and checks the reply.
func (r *fakeRunsc) handshake() {
	r.t.Helper()
	r.send(handshakeMsg(1))
	if got, want := r.reply(), []byte{0x08, 0x01}; !cmp.Equal(want, got) {
		r.t.Fatalf("handshake reply = % x, want % x", got, want)
	}
}

func (r *fakeRunsc) send(b []byte) {
	r.t.Helper()
	if _, err := r.conn.Write(b); err != nil {
		r.t.Fatalf("sending packet: %v", err)
	}
}

// reply reads one record; nil when the listener closed the connection
// (an end of file, or a reset when it closed with our data unread).
func (r *fakeRunsc) reply() []byte {
	r.t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(waitLimit))
	buf := make([]byte, 64)
	n, err := r.conn.Read(buf)
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	if err != nil {
		r.t.Fatalf("reading the listener's reply: %v", err)
	}
	return buf[:n]
}

func (r *fakeRunsc) close() { _ = r.conn.Close() }

// sandbox is a short, complete sandbox life: init starts, runs a shell that
// tries /bin/sh, execs it, and everything exits.
func sandbox(id string) [][]byte {
	init := ctx{timeNs: t0, tid: 1, pid: 1, container: id, creds: creds(0, 0)}
	child := ctx{timeNs: t0, tid: 2, pid: 2, ppid: 1, container: id, creds: creds(0, 0)}
	return [][]byte{
		packet(MessageContainerStart, 0, startMsg(init, id, "/", "node", "build.js")),
		packet(MessageSentryClone, 0, cloneMsg(init, 2, 2)),
		packet(MessageSyscallExecve, 0, execveMsg(child, 59, "/bin/sh", "sh", "-c", "true")),
		packet(MessageSentryExec, 0, execMsg(child, "/usr/bin/dash", "/bin/sh", "sh", "-c", "true")),
		packet(MessageSentryTaskExit, 0, exitMsg(child, 0)),
		packet(MessageSentryTaskExit, 0, exitMsg(init, 0)),
	}
}

func sandboxEvents(id string) []trace.Event {
	var evs []trace.Event
	for _, p := range sandbox(id) {
		d, err := Decode(p, Limits{})
		if err != nil {
			panic(err)
		}
		evs = append(evs, d.Event)
	}
	return evs
}

func TestCollectHappyPath(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	ch := collect(t.Context(), l)

	r := dial(t, l.Path())
	r.handshake()
	for _, p := range sandbox("build-1") {
		r.send(p)
	}
	r.close()
	l.Finish()

	got := wait(t, ch)
	want := &Collection{
		Events:   sandboxEvents("build-1"),
		Complete: true,
		Conns:    []ConnStats{{Version: 1, Packets: 6, Events: 6, EOF: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Collect mismatch (-want +got):\n%s", diff)
	}
}

func TestCollectManyConnections(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	ch := collect(t.Context(), l)

	// One RUN step after another, then two sandboxes at once.
	first := dial(t, l.Path())
	first.handshake()
	for _, p := range sandbox("step-1") {
		first.send(p)
	}
	first.close()
	a, b := dial(t, l.Path()), dial(t, l.Path())
	a.handshake()
	b.handshake()
	for i, p := range sandbox("step-2") {
		a.send(p)
		b.send(sandbox("step-3")[i])
	}
	a.close()
	b.close()
	l.Finish()

	got := wait(t, ch)
	if !got.Complete || len(got.Reasons) > 0 {
		t.Errorf("Collect incomplete: %v", got.Reasons)
	}
	wantConns := []ConnStats{
		{Version: 1, Packets: 6, Events: 6, EOF: true},
		{Version: 1, Packets: 6, Events: 6, EOF: true},
		{Version: 1, Packets: 6, Events: 6, EOF: true},
	}
	if diff := cmp.Diff(wantConns, got.Conns); diff != "" {
		t.Errorf("Conns mismatch (-want +got):\n%s", diff)
	}
	var want []trace.Event
	for _, id := range []string{"step-1", "step-2", "step-3"} {
		want = append(want, sandboxEvents(id)...)
	}
	// Concurrent connections interleave; within one, order holds.
	byContainer := cmpopts.SortSlices(func(x, y trace.Event) bool {
		if x.Container != y.Container {
			return x.Container < y.Container
		}
		return false
	})
	if diff := cmp.Diff(want, got.Events, byContainer); diff != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", diff)
	}
	for _, id := range []string{"step-1", "step-2", "step-3"} {
		var kinds []trace.Kind
		for _, ev := range got.Events {
			if ev.Container == id {
				kinds = append(kinds, ev.Kind)
			}
		}
		wantKinds := []trace.Kind{trace.KindStart, trace.KindClone, trace.KindExecAttempt, trace.KindExec, trace.KindExit, trace.KindExit}
		if diff := cmp.Diff(wantKinds, kinds); diff != "" {
			t.Errorf("order of %s events (-want +got):\n%s", id, diff)
		}
	}
}

// codes lists the reasons by code and connection, for comparison.
type code struct {
	Code ReasonCode
	Conn int
}

func codes(rs []Reason) []code {
	var out []code
	for _, r := range rs {
		out = append(out, code{r.Code, r.Conn})
	}
	return out
}

func TestCollectIncomplete(t *testing.T) {
	t.Parallel()
	exec := packet(MessageSentryExec, 0, execMsg(shell, "/bin/sh", "/bin/sh", "sh", "-c", "x"))
	tests := []struct {
		name       string
		opts       Options
		run        func(t *testing.T, path string)
		want       []code
		wantEvents int
		wantConns  []ConnStats
	}{
		{
			name: "missing handshake",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.send(exec) // an event where the handshake belongs
				if got := r.reply(); got != nil {
					t.Errorf("listener replied % x to a bad handshake", got)
				}
			},
			want:      []code{{ReasonHandshake, 0}},
			wantConns: []ConnStats{{}},
		},
		{
			name: "closed before the handshake",
			run: func(t *testing.T, path string) {
				dial(t, path).close()
			},
			want:      []code{{ReasonHandshake, 0}},
			wantConns: []ConnStats{{}},
		},
		{
			name: "handshake version 0",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.send(handshakeMsg(0))
				if got := r.reply(); got != nil {
					t.Errorf("listener replied % x to version 0", got)
				}
			},
			want:      []code{{ReasonHandshake, 0}},
			wantConns: []ConnStats{{}},
		},
		{
			name: "handshake timeout",
			// Short, and safe: this peer never sends a handshake.
			opts: Options{HandshakeTimeout: 50 * time.Millisecond},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				if got := r.reply(); got != nil {
					t.Errorf("listener sent % x unasked", got)
				}
			},
			want:      []code{{ReasonHandshake, 0}},
			wantConns: []ConnStats{{}},
		},
		{
			name: "dropped count",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				pkts := sandbox("c")
				pkts[3] = packet(MessageSentryExec, 2, execMsg(shell, "/bin/sh", "/bin/sh", "sh"))
				pkts[4] = packet(MessageSentryTaskExit, 2, exitMsg(ctx{tid: 2, pid: 2}, 0))
				pkts[5] = packet(MessageSentryTaskExit, 5, exitMsg(ctx{tid: 1, pid: 1}, 0))
				for _, p := range pkts {
					r.send(p)
				}
				r.close()
			},
			want:       []code{{ReasonDropped, 0}},
			wantEvents: 6,
			wantConns:  []ConnStats{{Version: 1, Packets: 6, Events: 6, Dropped: 5, EOF: true}},
		},
		{
			name: "dropped count on a skipped message type",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				r.send(packet(4, 1, nil))
				r.close()
			},
			want:      []code{{ReasonDropped, 0}},
			wantConns: []ConnStats{{Version: 1, Packets: 1, Dropped: 1, EOF: true}},
		},
		{
			name: "early end of file: init exit never seen",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				for _, p := range sandbox("c")[:4] {
					r.send(p)
				}
				r.close()
			},
			want:       []code{{ReasonNoInitExit, 0}},
			wantEvents: 4,
			wantConns:  []ConnStats{{Version: 1, Packets: 4, Events: 4, EOF: true}},
		},
		{
			name: "oversized packet",
			opts: Options{Limits: Limits{MaxPacketBytes: 512}},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				r.send(packet(MessageSentryExec, 0, execMsg(shell, "/bin/sh", "/bin/sh", strings.Repeat("a", 1000))))
				r.send(packet(MessageSentryTaskExit, 0, exitMsg(shell, 0)))
				r.close()
			},
			want:       []code{{ReasonOversized, 0}},
			wantEvents: 1,
			wantConns:  []ConnStats{{Version: 1, Packets: 2, Events: 1, EOF: true}},
		},
		{
			name: "malformed packet",
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				r.send(exec[:len(exec)-2])
				r.send(exec)
				r.close()
			},
			want:       []code{{ReasonMalformed, 0}},
			wantEvents: 1,
			wantConns:  []ConnStats{{Version: 1, Packets: 2, Events: 1, EOF: true}},
		},
		{
			name: "truncated argv",
			opts: Options{Limits: Limits{MaxArgs: 1}},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				r.send(exec)
				r.send(exec)
				r.close()
			},
			want:       []code{{ReasonTruncated, 0}},
			wantEvents: 2,
			wantConns:  []ConnStats{{Version: 1, Packets: 2, Events: 2, EOF: true}},
		},
		{
			name: "flood past the event bound",
			opts: Options{MaxEvents: 10},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				for range 1000 {
					r.send(exec)
				}
				r.close()
			},
			want:       []code{{ReasonEventLimit, -1}},
			wantEvents: 10,
			wantConns:  []ConnStats{{Version: 1, Packets: 1000, Events: 1000, EOF: true}},
		},
		{
			name: "flood past the byte bound",
			opts: Options{MaxEventBytes: 2000},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				for range 100 {
					r.send(exec)
				}
				r.close()
			},
			want:       []code{{ReasonEventLimit, -1}},
			wantEvents: 5,
			wantConns:  []ConnStats{{Version: 1, Packets: 100, Events: 100, EOF: true}},
		},
		{
			name: "connections past the bound are refused",
			opts: Options{MaxConns: 1},
			run: func(t *testing.T, path string) {
				r := dial(t, path)
				r.handshake()
				r.close()
				late := dial(t, path)
				_, _ = late.conn.Write(handshakeMsg(1)) // may already be refused
				if got := late.reply(); got != nil {
					t.Errorf("refused connection got % x", got)
				}
			},
			want:      []code{{ReasonConnLimit, -1}},
			wantConns: []ConnStats{{Version: 1, EOF: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := listen(t, tt.opts)
			ch := collect(t.Context(), l)
			tt.run(t, l.Path())
			l.Finish()
			got := wait(t, ch)
			if got.Complete {
				t.Errorf("Complete = true, want false")
			}
			if diff := cmp.Diff(tt.want, codes(got.Reasons)); diff != "" {
				t.Errorf("Reasons mismatch (-want +got):\n%s\nreasons: %v", diff, got.Reasons)
			}
			if len(got.Events) != tt.wantEvents {
				t.Errorf("stored %d events, want %d", len(got.Events), tt.wantEvents)
			}
			if diff := cmp.Diff(tt.wantConns, got.Conns); diff != "" {
				t.Errorf("Conns mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCollectNoConnection(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	l.Finish()
	got := wait(t, collect(t.Context(), l))
	if diff := cmp.Diff([]code{{ReasonNoConnection, -1}}, codes(got.Reasons)); diff != "" {
		t.Errorf("Reasons mismatch (-want +got):\n%s", diff)
	}
	if got.Complete {
		t.Error("Complete = true with no connection")
	}
}

// A connection that runsc made before the sandbox exited may still sit in
// the backlog when Finish is called: it must be read, not lost.
func TestCollectBacklogAfterFinish(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	r := dial(t, l.Path())
	r.send(handshakeMsg(1))
	for _, p := range sandbox("late") {
		r.send(p)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if got, want := r.reply(), []byte{0x08, 0x01}; !cmp.Equal(want, got) {
			t.Errorf("handshake reply = % x, want % x", got, want)
		}
		r.close()
	}()
	l.Finish()
	got := wait(t, collect(t.Context(), l))
	<-closed
	if !got.Complete {
		t.Errorf("Complete = false: %v", got.Reasons)
	}
	if diff := cmp.Diff(sandboxEvents("late"), got.Events); diff != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", diff)
	}
	// Collect stopped listening: a runsc started now fails closed.
	if _, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: l.Path(), Net: "unixpacket"}); err == nil {
		t.Error("dial after Collect returned succeeded, want refused")
	}
}

func TestCollectStopsOnContext(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	ch := collect(ctx, l)
	r := dial(t, l.Path())
	r.handshake()
	cancel()
	got := wait(t, ch)
	want := []code{{ReasonNotFinished, -1}, {ReasonOpenAtStop, 0}}
	if diff := cmp.Diff(want, codes(got.Reasons)); diff != "" {
		t.Errorf("Reasons mismatch (-want +got):\n%s", diff)
	}
}

func TestCollectDrainTimeout(t *testing.T) {
	t.Parallel()
	// Short, and safe: the peer never closes its end.
	l := listen(t, Options{DrainTimeout: 50 * time.Millisecond})
	ch := collect(t.Context(), l)
	r := dial(t, l.Path())
	r.handshake()
	l.Finish() // but the "sandbox" never closes its end
	got := wait(t, ch)
	if diff := cmp.Diff([]code{{ReasonOpenAtStop, 0}}, codes(got.Reasons)); diff != "" {
		t.Errorf("Reasons mismatch (-want +got):\n%s", diff)
	}
}

func TestListenerClose(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	ch := collect(t.Context(), l)
	r := dial(t, l.Path())
	r.handshake()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	got := wait(t, ch) // Close waited for it: this does not block
	want := []code{{ReasonNotFinished, -1}, {ReasonOpenAtStop, 0}}
	if diff := cmp.Diff(want, codes(got.Reasons)); diff != "" {
		t.Errorf("Reasons mismatch (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat(l.Path()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket file after Close: %v, want not exist", err)
	}
	if _, err := l.Collect(t.Context()); !errors.Is(err, ErrClosed) {
		t.Errorf("Collect after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCollectTwice(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	l.Finish()
	wait(t, collect(t.Context(), l))
	if _, err := l.Collect(t.Context()); !errors.Is(err, ErrCollected) {
		t.Errorf("second Collect = %v, want ErrCollected", err)
	}
}

func TestListenSocketFile(t *testing.T) {
	t.Parallel()
	l := listen(t, Options{})
	fi, err := os.Lstat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		t.Errorf("socket file type = %v, want socket", fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("socket file mode = %v, want 0600", perm)
	}
	if _, err := Listen(l.Path(), Options{}); err == nil {
		t.Error("Listen on an existing path succeeded")
	}
}

func TestListenRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		path string
		opts Options
	}{
		{name: "empty path", path: ""},
		{name: "too long", path: "/tmp/" + strings.Repeat("x", 103)},
		{name: "abstract", path: "@trace"},
		{name: "NUL", path: "/tmp/a\x00b"},
		{name: "negative bound", path: "/tmp/unused.sock", opts: Options{MaxEvents: -1}},
		{name: "negative limit", path: "/tmp/unused.sock", opts: Options{Limits: Limits{MaxArgs: -1}}},
		{name: "missing directory", path: "/nonexistent-dir/trace.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, err := Listen(tt.path, tt.opts)
			if err == nil {
				l.Close()
				t.Fatalf("Listen(%q) succeeded", tt.path)
			}
		})
	}
}
