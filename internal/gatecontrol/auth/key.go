package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// SecretBytes is the size of the secrets this package generates, and the
// smallest it accepts.
const SecretBytes = 32

// maxKeyIDLen bounds a key ID.
const maxKeyIDLen = 64

// Errors that key lookup and verification return, matched with errors.Is.
var (
	// ErrMalformed: the Authorization header is missing, repeated or not
	// in the documented format.
	ErrMalformed = errors.New("malformed authorization")
	// ErrUnknownKey: no key in the ring has the request's key ID.
	ErrUnknownKey = errors.New("unknown key id")
	// ErrKeyExpired: the request's key was rotated out and its overlap
	// window has passed.
	ErrKeyExpired = errors.New("key expired")
	// ErrSkew: the request's timestamp is too far from the verifier's
	// clock, in either direction.
	ErrSkew = errors.New("timestamp outside the allowed skew")
	// ErrBadSignature: the signature does not match the request.
	ErrBadSignature = errors.New("bad signature")
	// ErrReplay: the request's nonce was already used.
	ErrReplay = errors.New("nonce already used")
	// ErrReplayCacheFull: the verifier remembers as many live nonces as
	// it may, so it refuses new requests until some expire.
	ErrReplayCacheFull = errors.New("replay cache full")
)

// Key is a named HMAC secret. Its String method and slog value hide the
// secret.
type Key struct {
	ID     string
	Secret []byte
}

// String returns the key's ID, never its secret.
func (k Key) String() string { return "auth.Key{ID: " + k.ID + ", Secret: redacted}" }

// GoString is String, so that %#v hides the secret too.
func (k Key) GoString() string { return k.String() }

// LogValue logs only the key's ID.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.ID) }

// validate checks k's ID and secret length.
func (k Key) validate() error {
	if !validKeyID(k.ID) {
		return fmt.Errorf("invalid key id %q: want 1 to %d characters from [A-Za-z0-9._-]", k.ID, maxKeyIDLen)
	}
	if len(k.Secret) < SecretBytes {
		return fmt.Errorf("key %s: secret is %d bytes, want at least %d", k.ID, len(k.Secret), SecretBytes)
	}
	return nil
}

// PreviousKey is a rotated-out key that verifies until Expires.
type PreviousKey struct {
	Key
	Expires time.Time
}

// KeyRing holds the current key and the previous keys that are still in
// their overlap window. It is immutable and safe for concurrent use.
type KeyRing struct {
	current  Key
	previous []PreviousKey
}

// NewKeyRing returns a ring of copies of the given keys. Every key needs a
// valid ID, unique in the ring, and a secret of at least SecretBytes, and
// every previous key an expiry.
func NewKeyRing(current Key, previous ...PreviousKey) (*KeyRing, error) {
	kr := &KeyRing{current: cloneKey(current)}
	seen := map[string]bool{}
	for _, k := range append([]PreviousKey{{Key: current}}, previous...) {
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("building key ring: %w", err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("building key ring: duplicate key id %q", k.ID)
		}
		seen[k.ID] = true
	}
	for _, p := range previous {
		if p.Expires.IsZero() {
			return nil, fmt.Errorf("building key ring: previous key %s has no expiry", p.ID)
		}
		kr.previous = append(kr.previous, PreviousKey{Key: cloneKey(p.Key), Expires: p.Expires})
	}
	return kr, nil
}

// Current returns a copy of the key that signs new requests.
func (kr *KeyRing) Current() Key { return cloneKey(kr.current) }

// Previous returns copies of the rotated-out keys, expired or not.
func (kr *KeyRing) Previous() []PreviousKey {
	out := make([]PreviousKey, len(kr.previous))
	for i, p := range kr.previous {
		out[i] = PreviousKey{Key: cloneKey(p.Key), Expires: p.Expires}
	}
	return out
}

// Lookup returns the key named id if it verifies at now: the current key
// always does, a previous key until its expiry. It returns ErrUnknownKey or
// ErrKeyExpired otherwise. The returned secret is shared: do not modify it.
func (kr *KeyRing) Lookup(id string, now time.Time) (Key, error) {
	if id == kr.current.ID {
		return kr.current, nil
	}
	for _, p := range kr.previous {
		if p.ID != id {
			continue
		}
		if !now.Before(p.Expires) {
			return Key{}, fmt.Errorf("%w: %s expired at %s", ErrKeyExpired, id, p.Expires.UTC().Format(time.RFC3339))
		}
		return p.Key, nil
	}
	return Key{}, fmt.Errorf("%w %q", ErrUnknownKey, id)
}

// newKey returns a key with a random secret and a random ID unlike any in
// taken.
func newKey(taken ...string) (Key, error) {
	for {
		id := make([]byte, 8)
		if _, err := rand.Read(id); err != nil {
			return Key{}, fmt.Errorf("generating key id: %w", err)
		}
		secret := make([]byte, SecretBytes)
		if _, err := rand.Read(secret); err != nil {
			return Key{}, fmt.Errorf("generating key secret: %w", err)
		}
		k := Key{ID: hex.EncodeToString(id), Secret: secret}
		if !slices.Contains(taken, k.ID) {
			return k, nil
		}
	}
}

func cloneKey(k Key) Key { return Key{ID: k.ID, Secret: slices.Clone(k.Secret)} }

func validKeyID(id string) bool {
	if len(id) == 0 || len(id) > maxKeyIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isKeyIDByte(id[i]) {
			return false
		}
	}
	return true
}

func isKeyIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}
