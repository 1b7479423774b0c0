package gatecontrol

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/trace"
)

// ServeHTTP serves the API of the package documentation.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case SpawnPath:
		if r.Method != http.MethodPost {
			writeError(w, fmt.Errorf("%w: %s %s", errMethod, r.Method, r.URL.Path), "", nil)
			return
		}
		s.serveSpawn(w, r, false)
	case SpawnStreamPath:
		if r.Method != http.MethodPost {
			writeError(w, fmt.Errorf("%w: %s %s", errMethod, r.Method, r.URL.Path), "", nil)
			return
		}
		s.serveSpawn(w, r, true)
	case PingPath:
		if r.Method != http.MethodGet {
			writeError(w, fmt.Errorf("%w: %s %s", errMethod, r.Method, r.URL.Path), "", nil)
			return
		}
		s.servePing(w, r)
	default:
		writeError(w, fmt.Errorf("%w: %s", errNotFound, r.URL.Path), "", nil)
	}
}

func (s *Server) servePing(w http.ResponseWriter, r *http.Request) {
	if !s.admitPeer(w, r) {
		return
	}
	body, err := s.readBody(w, r)
	if err == nil {
		_, err = s.authenticate(r, body)
	}
	if err != nil {
		s.rejectUnauthenticated(r, body, err)
		writeError(w, err, "", nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveSpawn authenticates, decodes, admits and runs one spawn, writing
// its audit records along the way: spawn.rejected for a request refused
// before it ran; otherwise spawn.requested, spawn.started and
// spawn.finished. A request refused before authentication is tallied
// instead (see rejectUnauthenticated), and its peer rate-limited. With
// stream, an admitted spawn answers a stream of progress frames and then
// its outcome (SpawnStreamPath).
func (s *Server) serveSpawn(w http.ResponseWriter, r *http.Request, stream bool) {
	if !s.admitPeer(w, r) {
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.rejectUnauthenticated(r, nil, err)
		writeError(w, err, "", nil)
		return
	}
	keyID, err := s.authenticate(r, body)
	if err != nil {
		s.rejectUnauthenticated(r, body, err)
		writeError(w, err, "", nil)
		return
	}
	id := newSpawnID()
	req, sent, err := decodeSpawnRequest(body)
	rec := audit.Record{SpawnID: id, Role: sent.Role, Backend: s.cfg.BackendName, KeyID: keyID, Argv: sent.Argv}
	if err == nil {
		req, err = s.capLimits(req)
	}
	if err == nil {
		rec.WorkspaceDigest, err = workspaceDigest(r.Context(), req.Workspace.Dir, s.cfg.DigestMaxBytes, s.cfg.DigestMaxFiles)
		if err != nil {
			err = fmt.Errorf("%w: %w", sandbox.ErrInvalidRequest, err)
		}
	}
	if aerr := s.record(rec, audit.EventSpawnRequested); aerr != nil {
		writeError(w, aerr, id, nil)
		return
	}
	if err != nil {
		s.reject(rec, err)
		writeError(w, err, id, nil)
		return
	}
	// From here to the response, Shutdown waits for this request, and
	// cancels ctx when it stops waiting.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	if err := s.inflight.add(id, cancel); err != nil {
		s.reject(rec, err)
		writeError(w, err, id, nil)
		return
	}
	defer s.inflight.done(id)
	if err := s.limiter.acquire(ctx); err != nil {
		s.reject(rec, err)
		writeError(w, err, id, nil)
		return
	}
	defer s.limiter.release()
	if stream {
		sw := startStream(w)
		res, err := s.run(sandbox.WithProgress(ctx, sw.progress), r.Context(), req, rec)
		sw.finish(res, err, id)
		return
	}
	res, err := s.run(ctx, r.Context(), req, rec)
	if err != nil {
		var partial *sandbox.Result
		if !emptyResult(res) {
			partial = &res
		}
		writeError(w, err, id, partial)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// run runs an admitted spawn and writes its started and finished records.
// The spawn's context ends when the client goes away (client, the
// request's context), when Shutdown gives up draining (ctx), or when its
// timeout plus a grace period passes (a backstop: the backend enforces the
// timeout itself).
func (s *Server) run(ctx, client context.Context, req sandbox.SpawnRequest, rec audit.Record) (sandbox.Result, error) {
	id := rec.SpawnID
	ctx, cancelT := context.WithTimeoutCause(ctx, req.Timeout+timeoutGrace, fmt.Errorf("%w: the backend did not end the spawn", sandbox.ErrTimeout))
	defer cancelT()
	if err := s.record(rec, audit.EventSpawnStarted); err != nil {
		return sandbox.Result{}, err
	}
	log := s.log.With("spawn_id", id, "role", req.Role.String(), "backend", s.cfg.BackendName)
	log.Debug("spawn started", "argv", rec.Argv)
	t0 := time.Now()
	// The backend keeps the spawn ID with what the spawn leaves on disk,
	// so that a Reap after a crash names the spawn (orphan.reaped).
	res, err := s.cfg.Backend.Spawn(sandbox.WithAuditID(ctx, id), req)
	elapsed := time.Since(t0)
	if err != nil && ctx.Err() != nil {
		cause := context.Cause(ctx)
		if client.Err() != nil {
			cause = errClientGone
		}
		if !errors.Is(err, cause) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
	}
	fin := rec
	fin.DurationMS = elapsed.Milliseconds()
	if req.CaptureTrace {
		fin.Trace = summarize(res)
	}
	fin.Egress = summarizeEgress(res.Egress)
	switch {
	case err != nil:
		fin.Reason = truncate(err.Error(), maxAuditReason)
	case res.TimedOut && req.Build != nil:
		// A build that timed out as a whole returned an error: this is
		// one step past the step timeout.
		fin.Reason = "a build step ran past the step timeout"
	case res.TimedOut:
		fin.Reason = "timed out after " + req.Timeout.String()
	}
	if err == nil {
		exit := res.ExitCode
		fin.Exit = &exit
	}
	if aerr := s.record(fin, audit.EventSpawnFinished); aerr != nil {
		return sandbox.Result{}, aerr
	}
	log.Debug("spawn finished", "exit", res.ExitCode, "duration", elapsed, "err", err)
	res.AuditID = id
	return res, err
}

// readBody reads the whole body, refusing more than MaxBodyBytes before
// anything looks at it. The body must arrive within readBodyTimeout; the
// read deadline is cleared after, because net/http cancels the request's
// context when a background read fails, and a long spawn must not be
// cancelled by an old deadline.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", errBodyTooLarge, r.ContentLength, limit)
	}
	rc := http.NewResponseController(w)
	// Not every connection supports deadlines; then the body just has none.
	_ = rc.SetReadDeadline(time.Now().Add(readBodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, fmt.Errorf("%w: the limit is %d bytes", errBodyTooLarge, limit)
	case err != nil:
		return nil, fmt.Errorf("%w: reading body: %w", sandbox.ErrInvalidRequest, err)
	}
	return body, nil
}

// authenticate verifies the request's signature over its method, URI and
// body, and returns the key ID.
//
// A key ID the server does not know makes it look at the key file at once
// (a stat, and a read only if the file changed), so that a client that
// picked up a rotation first is not refused until the next periodic look.
func (s *Server) authenticate(r *http.Request, body []byte) (string, error) {
	s.reloadKeys(false)
	id, err := s.verifier.Verify(r, body)
	if errors.Is(err, auth.ErrUnknownKey) && s.reloadKeys(true) {
		id, err = s.verifier.Verify(r, body)
	}
	return id, err
}

// record appends rec as event e. Its error matches errAuditFailed.
func (s *Server) record(rec audit.Record, e audit.EventType) error {
	rec.Event = e
	if _, err := s.audit.Append(rec); err != nil {
		s.log.Error("writing the audit log", "event", e.String(), "spawn_id", rec.SpawnID, "err", err)
		return fmt.Errorf("%w: %w", errAuditFailed, err)
	}
	return nil
}

// reject audits an authenticated request refused before it ran. The
// request is refused whether or not the record is written; a failure is
// logged by record.
func (s *Server) reject(rec audit.Record, why error) {
	rec.Reason = truncate(why.Error(), maxAuditReason)
	_ = s.record(rec, audit.EventSpawnRejected) // logged by record; the request is refused either way
}

func newSpawnID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func emptyResult(r sandbox.Result) bool {
	return r.Backend == "" && r.Started.IsZero() && r.ExitCode == 0 && len(r.Stdout) == 0 &&
		len(r.Stderr) == 0 && len(r.Trace) == 0 && !r.TimedOut
}

// summarize counts a result's trace events and the shells among them.
func summarize(res sandbox.Result) *audit.TraceSummary {
	sum := &audit.TraceSummary{Events: len(res.Trace), Complete: res.TraceComplete}
	for i := range res.Trace {
		if ranShell(&res.Trace[i]) {
			sum.Shells++
		}
	}
	return sum
}

// ranShell reports whether ev started a shell: an exec, or the container's
// first process, that trace.ClassifyShell calls a shell (by the basename of
// its binary, execfn or argv[0], busybox run as a shell, or a shell
// shebang the backend resolved). Failed exec attempts do not count.
func ranShell(ev *trace.Event) bool {
	switch ev.Kind {
	case trace.KindExec, trace.KindStart:
		_, shell, _ := trace.ClassifyShell(ev, nil)
		return shell
	case trace.KindClone, trace.KindExecAttempt, trace.KindExit:
		return false
	}
	return false
}

// Bounds of an audit record's egress summary.
const (
	maxAuditEgressRules   = 64
	maxAuditEgressRefused = 32
)

// summarizeEgress is what the audit log keeps of a build's egress: nil
// when the build was offline.
func summarizeEgress(rep *sandbox.EgressReport) *audit.EgressSummary {
	if rep == nil {
		return nil
	}
	sum := &audit.EgressSummary{Conns: len(rep.Conns) + rep.Dropped}
	for i, a := range rep.Allow {
		if i == maxAuditEgressRules {
			break
		}
		sum.Allow = append(sum.Allow, truncate(a, maxAuditArgBytes))
	}
	for _, c := range rep.Conns {
		sum.Up += c.Up
		sum.Down += c.Down
		if !c.Allowed && len(sum.Refused) < maxAuditEgressRefused {
			sum.Refused = append(sum.Refused, truncate(fmt.Sprintf("%s:%d in %s", c.Host, c.Port, c.Phase), maxAuditArgBytes))
		}
	}
	return sum
}
