package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Scheme is the Authorization scheme name, and the first line of the
// string that is signed.
const Scheme = "CODEGENIE-HMAC-SHA256"

// NonceBytes is the size of a request nonce.
const NonceBytes = 16

// maxHeaderLen bounds the Authorization value ParseHeader looks at. A
// valid header is at most about 230 bytes.
const maxHeaderLen = 512

// Header is a parsed Authorization header value.
type Header struct {
	// KeyID names the key that signed the request.
	KeyID string
	// Timestamp is the signing time in Unix seconds.
	Timestamp int64
	// Nonce is random per request.
	Nonce [NonceBytes]byte
	// Signature is the HMAC-SHA256 described in the package documentation.
	Signature [sha256.Size]byte
}

// String returns h in the one spelling ParseHeader accepts. For a Header
// with an invalid KeyID or a negative Timestamp, the result does not parse.
func (h Header) String() string {
	var b strings.Builder
	b.Grow(len(Scheme) + len(h.KeyID) + 2*NonceBytes + 2*sha256.Size + 48)
	b.WriteString(Scheme)
	b.WriteString(" keyid=")
	b.WriteString(h.KeyID)
	b.WriteString(",ts=")
	b.WriteString(strconv.FormatInt(h.Timestamp, 10))
	b.WriteString(",nonce=")
	b.WriteString(hex.EncodeToString(h.Nonce[:]))
	b.WriteString(",sig=")
	b.WriteString(hex.EncodeToString(h.Signature[:]))
	return b.String()
}

// ParseHeader parses an Authorization header value in the format of the
// package documentation, and nothing else: no other scheme, parameter,
// order, spacing, case of hex or leading zero. Errors match ErrMalformed.
func ParseHeader(s string) (Header, error) {
	var h Header
	bad := func(format string, args ...any) (Header, error) {
		return Header{}, fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
	if len(s) > maxHeaderLen {
		return bad("header longer than %d bytes", maxHeaderLen)
	}
	rest, ok := strings.CutPrefix(s, Scheme+" ")
	if !ok {
		return bad("want scheme %s", Scheme)
	}
	names := [...]string{"keyid", "ts", "nonce", "sig"}
	for i, name := range names {
		var param string
		if i < len(names)-1 {
			param, rest, ok = strings.Cut(rest, ",")
			if !ok {
				return bad("want parameters %s", strings.Join(names[:], ","))
			}
		} else {
			param = rest
		}
		value, ok := strings.CutPrefix(param, name+"=")
		if !ok {
			return bad("parameter %d is not %s", i+1, name)
		}
		switch name {
		case "keyid":
			if !validKeyID(value) {
				return bad("invalid keyid")
			}
			h.KeyID = value
		case "ts":
			ts, ok := parseUnix(value)
			if !ok {
				return bad("invalid ts")
			}
			h.Timestamp = ts
		case "nonce":
			if !decodeLowerHex(h.Nonce[:], value) {
				return bad("nonce is not %d bytes of lowercase hex", NonceBytes)
			}
		case "sig":
			if !decodeLowerHex(h.Signature[:], value) {
				return bad("sig is not %d bytes of lowercase hex", sha256.Size)
			}
		}
	}
	return h, nil
}

// parseUnix parses a non-negative decimal int64 without sign or leading
// zeros.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// decodeLowerHex fills dst from s, which must be exactly 2*len(dst)
// lowercase hex digits.
func decodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isLowerHex(s[i]) {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }
