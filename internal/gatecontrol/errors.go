package gatecontrol

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Errors of the HTTP layer, mapped to statuses in errorResponse.
var (
	errNotFound      = errors.New("no such endpoint")
	errMethod        = errors.New("method not allowed")
	errBodyTooLarge  = errors.New("request body too large")
	errAuditFailed   = errors.New("writing the audit log")
	errClientGone    = errors.New("client disconnected")
	errDrainDeadline = errors.New("shutdown deadline passed")
)

// errorResponse maps an error to its HTTP status and body. It is the only
// place that chooses a status for an error; see Code for the table.
func errorResponse(err error) (int, ErrorResponse) {
	resp := ErrorResponse{Message: err.Error()}
	var verr *auth.VerifyError
	var unsup *sandbox.UnsupportedError
	switch {
	case errors.As(err, &verr):
		return http.StatusUnauthorized, with(resp, CodeUnauthorized)
	case errors.Is(err, errBodyTooLarge):
		return http.StatusRequestEntityTooLarge, with(resp, CodeTooLarge)
	case errors.Is(err, errNotFound):
		return http.StatusNotFound, with(resp, CodeNotFound)
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, with(resp, CodeMethodNotAllowed)
	case errors.Is(err, errLimitExceedsCap):
		return http.StatusBadRequest, with(resp, CodeLimitExceedsCap)
	case errors.Is(err, sandbox.ErrInvalidRole):
		return http.StatusBadRequest, with(resp, CodeInvalidRole)
	case errors.Is(err, sandbox.ErrInvalidRequest):
		return http.StatusBadRequest, with(resp, CodeInvalidRequest)
	case errors.Is(err, errRateLimited):
		return http.StatusTooManyRequests, with(resp, CodeRateLimited)
	case errors.Is(err, errQueueFull):
		return http.StatusTooManyRequests, with(resp, CodeOverloaded)
	case errors.Is(err, errQueueTimeout), errors.Is(err, errShuttingDown), errors.Is(err, errDrainDeadline):
		return http.StatusServiceUnavailable, with(resp, CodeUnavailable)
	case errors.Is(err, errAuditFailed):
		return http.StatusInternalServerError, with(resp, CodeAudit)
	case errors.Is(err, sandbox.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, with(resp, CodeTimeout)
	case errors.As(err, &unsup):
		resp.Unsupported = &Unsupported{Backend: unsup.Backend, Reason: unsup.Reason}
		return http.StatusNotImplemented, with(resp, CodeNotSupported)
	case errors.Is(err, sandbox.ErrNotSupported):
		resp.Unsupported = &Unsupported{Reason: err.Error()}
		return http.StatusNotImplemented, with(resp, CodeNotSupported)
	case errors.Is(err, context.Canceled):
		// Cancelled by the client (who no longer listens) or by the
		// server's shutdown.
		return http.StatusServiceUnavailable, with(resp, CodeUnavailable)
	default:
		return http.StatusInternalServerError, with(resp, CodeBackend)
	}
}

func with(r ErrorResponse, c Code) ErrorResponse {
	r.Code = c
	return r
}

// writeError sends err as an ErrorResponse; auditID and res, when set, go
// with it.
func writeError(w http.ResponseWriter, err error, auditID string, res *sandbox.Result) {
	status, resp := errorResponse(err)
	resp.AuditID = auditID
	resp.Result = res
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if w.Header().Get("Retry-After") == "" {
			w.Header().Set("Retry-After", strconv.Itoa(1))
		}
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", auth.Scheme)
	}
	writeJSON(w, status, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorResponse{Code: CodeBackend, Message: "encoding response: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	// A failed write means the client is gone; there is no one to tell.
	_, _ = w.Write(append(b, '\n'))
	// Send it now, not when the handler returns: Shutdown may close the
	// connection as soon as the spawn is off its books.
	_ = http.NewResponseController(w).Flush()
}
