package gatecontrol

import (
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Paths of the HTTP API. Every request to them is signed (see package auth).
const (
	// SpawnPath takes a POST of a JSON sandbox.SpawnRequest and answers
	// 200 with a JSON sandbox.Result, or an ErrorResponse.
	SpawnPath = "/v1/spawn"
	// PingPath answers a GET with 204 and no body once the server is up.
	// It runs nothing and writes no audit record, except that a failed
	// authentication is tallied like a spawn's.
	PingPath = "/v1/ping"
	// SpawnStreamPath takes what SpawnPath takes and, once the spawn is
	// admitted, answers 200 with a stream of JSON lines (application/
	// x-ndjson), each a StreamFrame: the spawn's progress while it runs,
	// then its Result or its ErrorResponse. An answer before admission (a
	// refusal) is as SpawnPath's.
	SpawnStreamPath = "/v1/spawn/stream"
)

// StreamFrame is one line of a SpawnStreamPath answer. Exactly one of its
// fields is set; Result or Error comes last, once.
type StreamFrame struct {
	Progress *sandbox.Progress `json:"progress,omitempty"`
	Result   *sandbox.Result   `json:"result,omitempty"`
	// Error and Status are the ErrorResponse and the HTTP status that
	// SpawnPath would have answered with.
	Error  *ErrorResponse `json:"error,omitempty"`
	Status int            `json:"status,omitempty"`
}

// Code is the machine-readable kind of an ErrorResponse. The client maps
// codes back to the sandbox package's errors.
type Code string

// Codes of ErrorResponse, with the HTTP status each is sent with.
const (
	// CodeInvalidRequest (400): the body is not a valid SpawnRequest:
	// malformed JSON, an unknown field, an empty command, a workspace that
	// is not an absolute path to a directory. Maps to
	// sandbox.ErrInvalidRequest.
	CodeInvalidRequest Code = "invalid_request"
	// CodeLimitExceedsCap (400): the request asks for more memory, CPUs,
	// pids, output, disk or time than the server's cap. It may ask for
	// less. Maps to sandbox.ErrInvalidRequest.
	CodeLimitExceedsCap Code = "limit_exceeds_cap"
	// CodeInvalidRole (400): the request names no role or an unknown one.
	// Maps to sandbox.ErrInvalidRole.
	CodeInvalidRole Code = "invalid_role"
	// CodeUnauthorized (401): the request's signature did not verify.
	CodeUnauthorized Code = "unauthorized"
	// CodeNotFound (404) and CodeMethodNotAllowed (405): no such endpoint.
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeTooLarge (413): the body is longer than the server's limit.
	// Maps to sandbox.ErrInvalidRequest.
	CodeTooLarge Code = "too_large"
	// CodeOverloaded (429): as many spawns wait as the queue holds. Try
	// again later.
	CodeOverloaded Code = "overloaded"
	// CodeRateLimited (429): the peer sent too many requests that failed
	// authentication; Retry-After says when it may send again. Maps to
	// client.ErrOverloaded.
	CodeRateLimited Code = "rate_limited"
	// CodeBackend (500): the sandbox backend failed to do its job.
	CodeBackend Code = "backend"
	// CodeAudit (500): the audit log could not be written, so nothing
	// runs (or, after a spawn, its result is withheld).
	CodeAudit Code = "audit"
	// CodeNotSupported (501): the backend cannot run on this host.
	// ErrorResponse.Unsupported says why. Maps to a
	// *sandbox.UnsupportedError.
	CodeNotSupported Code = "not_supported"
	// CodeUnavailable (503): the server is shutting down, or the request
	// waited in the queue longer than the server allows.
	CodeUnavailable Code = "unavailable"
	// CodeTimeout (504): the spawn ran past its timeout and was killed.
	// ErrorResponse.Result holds what the backend reported, if anything.
	// Maps to sandbox.ErrTimeout.
	CodeTimeout Code = "timeout"
)

// ErrorResponse is the JSON body of every response whose status is not 200
// or 204.
type ErrorResponse struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// AuditID is the spawn ID of the audit records of a request that got
	// as far as being authenticated.
	AuditID string `json:"audit_id,omitempty"`
	// Unsupported is set with CodeNotSupported.
	Unsupported *Unsupported `json:"unsupported,omitempty"`
	// Result is what the backend reported together with its error, such
	// as the partial output of a spawn that timed out.
	Result *sandbox.Result `json:"result,omitempty"`
}

// Unsupported carries a sandbox.UnsupportedError across the wire.
type Unsupported struct {
	Backend string `json:"backend"`
	Reason  string `json:"reason"`
}
