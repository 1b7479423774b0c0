// Package auth provides the HMAC-SHA256 request authentication of
// gate-control's HTTP API: keys and their rotation (KeyRing and a key file),
// Sign for clients, and a Verifier for the server that checks the
// signature, the clock skew and nonce replay.
//
// It does not read or limit request bodies, map errors to HTTP status
// codes, write the audit log or provide HTTP middleware: the server does
// those and calls Verify with the body it has read. It signs only the
// method, the request URI and the body; no other header is authenticated,
// so the server must not base decisions on them. It offers no secrecy:
// pair it with a unix socket or TLS.
//
// # Header
//
// A signed request carries one header:
//
//	Authorization: CODEGENIE-HMAC-SHA256 keyid=<id>,ts=<unix>,nonce=<hex>,sig=<hex>
//
// with exactly these four parameters in this order, no spaces, and
// nothing else. id is 1 to 64 characters from [A-Za-z0-9._-]; unix is the
// signing time in decimal Unix seconds without leading zeros; nonce is 16
// random bytes and sig is the 32-byte HMAC, both in lowercase hex. Every
// valid header has exactly one spelling, which Header.String produces.
//
// # Signature
//
// sig is HMAC-SHA256, keyed with the key's secret, of these lines joined
// by "\n" (no trailing newline):
//
//	CODEGENIE-HMAC-SHA256
//	<id>
//	<method, "GET" when empty>
//	<request URI: the escaped path, and "?" and the raw query when present>
//	<unix>
//	<nonce>
//	<lowercase hex SHA-256 of the body>
//
// # Replay
//
// A Verifier remembers each accepted nonce, in memory, until its
// timestamp leaves the skew window, and refuses it again until then. The
// memory does not survive a restart (see VerifierConfig.NotBefore), and a
// wall clock set back by more than the skew window reopens it.
//
// # Keys
//
// A KeyRing has one current key, which signs and never expires, and
// previous keys that still verify until their expiry. Rotate moves the
// current key to the previous ones with an overlap window, so clients
// holding the old key keep working while they pick up the new one.
package auth
