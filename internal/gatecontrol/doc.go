// Package gatecontrol provides gate-control, the one privileged process of
// codegenie (ADR-0003): a Server that holds the HMAC key and the sandbox
// backend, authenticates every request, supervises the spawns (a global
// concurrency limit with a queue, timeouts, cancellation when the client
// goes away, reaping after a crash, a graceful shutdown), and writes one
// audit record per state change. Clients speak to it through package
// gatecontrol/client, which implements sandbox.Client.
//
// It does not implement a sandbox (the backend does), parse the audit log
// (package audit does), or define the signature scheme (package
// gatecontrol/auth does). Role is an audit tag here: RoleGate and RoleProbe
// spawns run the same way, through the same backend.
//
// # API
//
// gate-control serves HTTP/1.1 on a unix socket (mode 0660) and/or on TCP
// with TLS 1.3, requiring a client certificate unless
// Config.InsecureNoClientCert says otherwise. Every request
// is signed with auth.Sign over its method, URI, timestamp, nonce and body
// digest. The body is capped at Config.MaxBodyBytes with
// http.MaxBytesReader before the signature is checked.
//
//	POST /v1/spawn         JSON sandbox.SpawnRequest -> 200 JSON sandbox.Result
//	POST /v1/spawn/stream  the same -> 200 NDJSON StreamFrames: progress, then the outcome
//	GET  /v1/ping          -> 204, once the server serves
//
// The stream answers a request exactly as /v1/spawn does until the spawn is
// admitted (a refusal is the same error answer). Then it sends 200 and,
// while the backend works, one line per progress report
// (sandbox.Progress: the phase, build step N of M with its instruction,
// the boot's countdown, the shells traced so far), written by one goroutine
// from a queue of 256 that drops reports rather than slow the backend, and
// last one line with the Result, or with the ErrorResponse and the status
// /v1/spawn would have answered. It is the same signed request on the same
// connection: progress needs no second channel and no second credential.
// The client uses it when the context of Spawn carries a
// sandbox.ProgressFunc.
//
// The request is decoded strictly (package strictjson): unknown fields,
// trailing data, a key given twice and a key that differs from a field's
// name only in case ("DIR", "Command") are errors, at any depth. A sandbox whose command exits non-zero is a 200 with the exit
// code in the Result. Every other answer is an ErrorResponse with a Code,
// chosen in one place (errorResponse):
//
//	400 invalid_role     no role, or an unknown one (sandbox.ErrInvalidRole)
//	400 invalid_request  bad JSON, unknown field, empty command, relative or
//	                     missing workspace (sandbox.ErrInvalidRequest)
//	400 limit_exceeds_cap  a limit or the timeout over the server's cap
//	                     (sandbox.ErrInvalidRequest)
//	401 unauthorized     the signature did not verify: malformed header,
//	                     unknown or expired key, skew over 30 s, bad
//	                     signature, replayed nonce
//	404, 405             no such endpoint or method
//	413 too_large        body over Config.MaxBodyBytes
//	429 overloaded       the wait queue is full (Retry-After)
//	429 rate_limited     the peer failed authentication too often (Retry-After)
//	500 backend          the backend failed
//	500 audit            the audit log could not be written; nothing runs
//	                     without its records
//	501 not_supported    the backend cannot run here (sandbox.UnsupportedError)
//	503 unavailable      shutting down, waited in the queue longer than
//	                     Config.QueueTimeout, or cancelled by the shutdown
//	504 timeout          the spawn ran past its timeout (sandbox.ErrTimeout);
//	                     the ErrorResponse carries the partial Result
//
// # Audit records
//
// Each state change is one audit.Record, appended and fsynced before the
// response is written:
//
//   - spawn.rejected: a request refused before anything ran. After
//     authentication it follows spawn.requested, with the same spawn ID.
//     Before authentication (401, 413, 429) nothing the request sent is
//     recorded, since none of it is signed: the refusals of one peer (its
//     uid on the unix socket, its IP over TLS) for one reason are tallied
//     for Config.RejectInterval and written as one record with their
//     count, the time of the first, the total body size and the digest of
//     the first body, and the key ID only when it names a key the server
//     has. One interval writes at most Config.RejectRecords such records,
//     however many peers fail: the tallies with the fewest requests are
//     folded into one record for "(other peers)" that counts their
//     requests and says how many tallies and peers it folded. A peer whose failures use up its allowance (Config.UnauthBurst,
//     then Config.UnauthRate per second) is refused with 429 rate_limited
//     before its request is read, until the allowance comes back.
//   - spawn.requested: an authenticated spawn request, with the role as
//     sent (so a missing or unknown role is recorded as it arrived).
//   - spawn.started: the spawn was admitted and handed to the backend.
//   - spawn.finished: the backend returned: exit code, trace summary (when
//     a trace was asked for: events, shells among them, complete),
//     duration, and the reason when it failed or timed out.
//   - orphan.reaped: Start removed a sandbox an earlier gate-control left
//     behind (the backend's Reaper). The reason names the backend's item
//     (a container ID); the spawn ID is that of the spawn that left it,
//     when the backend kept it (SpawnReaper), so that the record links to
//     the spawn's spawn.started record.
//
// The records of a spawn share its spawn ID, which is the Result's
// AuditID. Each carries the role, the backend name, the requester's key ID,
// the workspace digest, and the argv. Strings from requests are cut to
// bounds (64 args of 512 bytes, a role of 64 bytes) so that no request can
// make a record too large to write.
//
// A shell, in the trace summary, is an exec (or the container's first
// process) that trace.ClassifyShell calls one: the basename of its binary,
// execfn or argv[0] is sh, bash, dash, ash, zsh, ksh, mksh or yash, busybox
// ran as a shell, or the backend resolved a shell shebang. Failed exec
// attempts do not count.
//
// # Workspace digest
//
// The workspace digest is a SHA-256 over the workspace directory's tree,
// walked in lexical order without following symlinks: for each entry, its
// kind, its slash-separated path relative to the workspace, its permission
// bits, and then for a regular file its size and the SHA-256 of its
// content, for a symlink its target, and for a device, fifo or socket its
// mode (such files are never opened). Lengths are prefixed, so no two trees
// hash the same stream. It is bounded:
//
//   - content: at most Config.DigestMaxBytes (default 64 MiB) of file
//     content is read per spawn. A file that does not fit in what is left
//     counts by its size and mtime instead, and the digest is then spelled
//     "sha256-meta:<hex>" rather than "sha256:<hex>";
//   - entries: at most Config.DigestMaxFiles (default 200000). Past that
//     the walk stops, and the digest is "sha256-partial:<hex>" over the
//     entries before the cut.
//
// The digest is taken before the spawn starts; a workspace changed
// afterwards is not seen. It identifies what the requester pointed at, for
// the audit log; it is not a lock.
//
// # Supervision
//
// At most Config.MaxConcurrent spawns run at once; up to Config.MaxQueue
// more wait, in arrival order, for up to Config.QueueTimeout. A spawn's
// timeout is its request's, or Config.DefaultTimeout when it has none.
// Config.MaxTimeout and Config.MaxLimits (memory, CPUs, pids, output, disk)
// are caps: a request may ask for less, gets the cap when it asks for
// none, and is refused with 400 limit_exceeds_cap (audited as
// spawn.rejected) when it asks for more. A request can never raise its own
// limits. The backend enforces it; the server cancels
// the backend's context itself a grace period after it. The spawn's context
// also ends when the client disconnects, and the backend then kills the
// sandbox. Start calls the backend's Reap, when it has one, before it
// accepts anything. Shutdown stops accepting, refuses what is queued,
// drains running spawns until its context is done, and then cancels them.
package gatecontrol
