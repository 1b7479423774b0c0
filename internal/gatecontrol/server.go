package gatecontrol

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Timeouts of the HTTP layer. A spawn itself has no HTTP timeout: it is
// bounded by its own timeout and ends early when the client goes away.
const (
	readHeaderTimeout = 10 * time.Second
	readBodyTimeout   = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 16 << 10
	// timeoutGrace is how long past a spawn's timeout the server waits
	// for the backend to kill it and report, before it cancels the
	// backend's context itself.
	timeoutGrace = 10 * time.Second
	// killWait is how long Shutdown waits for cancelled spawns to end
	// after the drain deadline.
	killWait = 10 * time.Second
	// keyCheckInterval is how often, at most, the server looks at the
	// key file for a rotation.
	keyCheckInterval = time.Second
)

// Server is gate-control: the one privileged process that holds the HMAC
// key, runs sandboxes through its backend, and writes the audit log. It is
// an http.Handler; Start (or Run) also opens its listeners. It is safe for
// concurrent use.
type Server struct {
	cfg      Config
	log      *slog.Logger
	audit    *audit.Log
	verifier *auth.Verifier
	keys     keyFileWatch
	limiter  *limiter
	inflight *inflight
	closing  chan struct{} // closed when Shutdown begins
	http     *http.Server

	rejections *rejections
	peers      *peerLimiter
	flushStop  chan struct{} // closed by Shutdown to stop flushLoop
	flushDone  chan struct{} // closed by flushLoop; nil until Start runs it

	mu        sync.Mutex
	started   bool
	listeners []net.Listener
	socket    os.FileInfo // the unix socket file we made, to remove it at the end
	serveErr  chan error

	shutdownOnce sync.Once
	shutdownErr  error
}

// New checks cfg, loads (or creates) the key file and opens the audit log.
// It creates the parent directories of the key file and audit log (0700)
// when they are missing. Records it finds after the audit log's last
// checkpoint are signed as adopted (see audit.WithCheckpoints), and it logs
// a warning that names them. It starts nothing: call Start or Run, and
// Shutdown to release the audit log.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	for _, p := range []string{cfg.KeyFile, cfg.AuditLog, cfg.AuditKeyFile} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("creating gate-control state directory: %w", err)
		}
	}
	ring, err := auth.LoadOrCreateKeyFile(cfg.KeyFile, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("loading gate-control key: %w", err)
	}
	// Nonces live in memory only: refuse requests signed before this
	// start, so none signed before a restart can be replayed after it.
	v, err := auth.NewVerifier(ring, auth.VerifierConfig{Now: cfg.Now, NotBefore: cfg.Now()})
	if err != nil {
		return nil, fmt.Errorf("loading gate-control key: %w", err)
	}
	signer, err := audit.LoadOrCreateKey(cfg.AuditKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the audit signing key: %w", err)
	}
	log, err := audit.Open(cfg.AuditLog, audit.WithClock(cfg.Now), audit.WithCheckpoints(signer, cfg.CheckpointEvery))
	if err != nil {
		return nil, err
	}
	if a := log.Adopted(); a.Len() > 0 {
		cfg.Logger.Warn("signed the audit log's unsigned records as adopted, not vouched for: a crashed gate-control leaves such records, and so does anyone who wrote the log while gate-control was stopped; check them",
			"audit_log", cfg.AuditLog, "adopted_from", a.From, "adopted_to", a.To, "adopted", a.Len())
	}
	closing := make(chan struct{})
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		audit:    log,
		verifier: v,
		keys:     keyFileWatch{path: cfg.KeyFile},
		limiter:  newLimiter(cfg.MaxConcurrent, cfg.MaxQueue, cfg.QueueTimeout, closing),
		inflight: newInflight(),
		closing:  closing,
		serveErr: make(chan error, 2),

		rejections: newRejections(),
		peers:      newPeerLimiter(cfg.UnauthRate, cfg.UnauthBurst),
		flushStop:  make(chan struct{}),
	}
	s.keys.stamp, _ = stampOf(cfg.KeyFile)
	s.keys.checked = cfg.Now()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnContext:       withPeer,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Start reaps what an earlier gate-control left behind, if the backend is
// a SpawnReaper or a Reaper, auditing each item as orphan.reaped (with the
// spawn_id of the spawn that left it, when the backend knows it), then
// opens the listeners and serves in the background until Shutdown. A
// failed reap fails Start: a server that cannot clean up after a crash
// does not take new work. ctx bounds the reap only. After a failed Start, call Shutdown to release the
// audit log.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("starting gate-control: already started")
	}
	select {
	case <-s.closing:
		return fmt.Errorf("starting gate-control: %w", errShuttingDown)
	default:
	}
	s.started = true
	if err := s.reap(ctx); err != nil {
		return err
	}
	var cleanup []func()
	defer func() {
		if err != nil {
			for _, c := range cleanup {
				c()
			}
		}
	}()
	if s.cfg.Socket != "" {
		l, fi, err := listenUnix(s.cfg.Socket)
		if err != nil {
			return err
		}
		cleanup = append(cleanup, func() { _ = l.Close(); removeIfSame(s.cfg.Socket, fi) })
		s.listeners = append(s.listeners, l)
		s.socket = fi
	}
	if s.cfg.TCPAddr != "" {
		tc, err := s.tlsConfig()
		if err != nil {
			return err
		}
		l, err := net.Listen("tcp", s.cfg.TCPAddr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", s.cfg.TCPAddr, err)
		}
		cleanup = append(cleanup, func() { _ = l.Close() })
		s.listeners = append(s.listeners, tls.NewListener(l, tc))
	}
	if s.cfg.InsecureNoClientCert && s.cfg.TCPAddr != "" {
		s.log.Warn("the TLS listener does not require client certificates: anyone who reaches it can send requests, refused only by their HMAC", "tcp", s.tcpAddrLocked())
	}
	s.flushDone = make(chan struct{})
	go s.flushLoop(s.flushStop, s.flushDone)
	for _, l := range s.listeners {
		go func() {
			if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.serveErr <- fmt.Errorf("serving on %s: %w", l.Addr(), err)
			}
		}()
	}
	s.log.Info("gate-control listening", "socket", s.cfg.Socket, "tcp", s.tcpAddrLocked(), "backend", s.cfg.BackendName,
		"caps", capsString(s.cfg.MaxLimits, s.cfg.MaxTimeout))
	return nil
}

// Run is Start, then serving until ctx is done or a listener fails, then
// Shutdown with Config.DrainTimeout to drain in-flight spawns.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		// Nothing is running yet: this only releases the audit log.
		_ = s.Shutdown(context.WithoutCancel(ctx))
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-s.serveErr:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DrainTimeout)
	defer cancel()
	return errors.Join(serveErr, s.Shutdown(sctx))
}

// TCPAddr returns the address of the TLS listener, or nil when there is
// none or Start has not opened it.
func (s *Server) TCPAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcpAddrLocked()
}

func (s *Server) tcpAddrLocked() net.Addr {
	for _, l := range s.listeners {
		if a, ok := l.Addr().(*net.TCPAddr); ok {
			return a
		}
	}
	return nil
}

// Shutdown stops accepting requests and refuses queued ones (503), lets
// running spawns finish until ctx is done, then cancels them (the backend
// kills their sandboxes), waits a little for them to end, and closes the
// audit log. It returns an error matching context.DeadlineExceeded when it
// had to cancel spawns. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	close(s.closing)
	idle := s.inflight.close()
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.http.Shutdown(ctx) }()
	var errs []error
	select {
	case <-idle:
	case <-ctx.Done():
		n := s.inflight.cancelAll(errDrainDeadline)
		s.log.Warn("drain deadline passed: cancelling spawns", "spawns", n)
		errs = append(errs, fmt.Errorf("shutting down gate-control: cancelled %d running spawns: %w", n, ctx.Err()))
		t := time.NewTimer(killWait)
		select {
		case <-idle:
		case <-t.C:
			errs = append(errs, errors.New("shutting down gate-control: cancelled spawns did not end"))
		}
		t.Stop()
	}
	if err := <-httpDone; err != nil {
		// The deadline passed with connections open: cut them.
		_ = s.http.Close()
	}
	s.mu.Lock()
	if s.socket != nil {
		removeIfSame(s.cfg.Socket, s.socket)
	}
	flushDone := s.flushDone
	s.mu.Unlock()
	// The last tallies of unauthenticated rejections.
	close(s.flushStop)
	if flushDone != nil {
		<-flushDone
	} else {
		s.flushRejections()
	}
	if err := s.audit.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// reap runs the backend's SpawnReaper, or its Reaper, and audits what it
// removed: one orphan.reaped record per item, with the spawn_id of the
// spawn that left it when the backend knows it.
func (s *Server) reap(ctx context.Context) error {
	var items []sandbox.Reaped
	var err error
	switch r := s.cfg.Backend.(type) {
	case SpawnReaper:
		items, err = r.ReapSpawns(ctx)
	case Reaper:
		var ids []string
		ids, err = r.Reap(ctx)
		for _, id := range ids {
			items = append(items, sandbox.Reaped{ID: id})
		}
	default:
		return nil
	}
	for _, it := range items {
		rec := audit.Record{Backend: s.cfg.BackendName, Reason: truncate("removed a sandbox left by an earlier gate-control: "+it.ID, maxAuditReason)}
		if sandbox.ValidAuditID(it.AuditID) {
			rec.SpawnID = it.AuditID
		}
		if _, aerr := s.audit.Append(withEvent(rec, audit.EventOrphanReaped)); aerr != nil {
			return fmt.Errorf("auditing reaped sandboxes: %w", aerr)
		}
		s.log.Warn("reaped orphaned sandbox", "backend", s.cfg.BackendName, "item", it.ID, "spawn_id", rec.SpawnID)
	}
	if err != nil {
		return fmt.Errorf("reaping sandboxes left by an earlier gate-control: %w", err)
	}
	return nil
}

func withEvent(r audit.Record, e audit.EventType) audit.Record {
	r.Event = e
	return r
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading TLS certificate: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	if !s.cfg.InsecureNoClientCert {
		pem, err := os.ReadFile(s.cfg.TLSClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("loading TLS client CAs: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("loading TLS client CAs: no PEM certificate in %s", s.cfg.TLSClientCAFile)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// listenUnix listens on a unix socket at path with mode 0660. The socket is
// made under a temporary name, given its mode, and renamed into place, so
// it is never reachable with a wider mode. A stale socket left by a crash
// is replaced; one that still answers is an error.
func listenUnix(path string) (net.Listener, os.FileInfo, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, nil, fmt.Errorf("listening on %s: exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			_ = c.Close()
			return nil, nil, fmt.Errorf("listening on %s: another server answers on it", path)
		}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, ".gc-"+hex.EncodeToString(rnd[:]))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	fail := func(err error) (net.Listener, os.FileInfo, error) {
		_ = l.Close()
		os.Remove(tmp)
		return nil, nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o660); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return l, fi, nil
}

// removeIfSame removes path if it is still the file fi describes.
func removeIfSame(path string, fi os.FileInfo) {
	if cur, err := os.Lstat(path); err == nil && os.SameFile(cur, fi) {
		os.Remove(path)
	}
}

// keyFileWatch notices a changed key file, such as after auth.Rotate.
type keyFileWatch struct {
	path    string
	mu      sync.Mutex
	checked time.Time
	stamp   fileStamp
}

type fileStamp struct {
	ino, size int64
	mtime     time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st, nil
}

// reloadKeys gives the verifier the key file's keys when the file changed
// since the last look, and reports whether it did. Unless forced, it looks
// at most once per keyCheckInterval. A key file that vanished or no longer
// loads leaves the keys as they are.
func (s *Server) reloadKeys(force bool) bool {
	w := &s.keys
	w.mu.Lock()
	defer w.mu.Unlock()
	now := s.cfg.Now()
	if !force && now.Sub(w.checked) < keyCheckInterval && !now.Before(w.checked) {
		return false
	}
	w.checked = now
	st, err := stampOf(w.path)
	if err != nil || st == w.stamp {
		return false
	}
	ring, err := auth.LoadOrCreateKeyFile(w.path, s.cfg.Now)
	if err != nil {
		s.log.Error("reloading the key file", "err", err)
		return false
	}
	w.stamp = st
	s.verifier.SetKeyRing(ring)
	s.log.Info("reloaded the key file", "current_key", ring.Current().ID)
	return true
}
