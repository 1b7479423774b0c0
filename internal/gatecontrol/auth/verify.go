package auth

import (
	"container/heap"
	"crypto/hmac"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for VerifierConfig's zero fields.
const (
	// DefaultMaxSkew is the clock skew allowed either way.
	DefaultMaxSkew = 30 * time.Second
	// DefaultReplayCacheSize is how many live nonces a Verifier keeps.
	DefaultReplayCacheSize = 1 << 16
)

// VerifierConfig configures a Verifier. Zero fields take the defaults.
type VerifierConfig struct {
	// MaxSkew is how far a request's timestamp may be from the verifier's
	// clock, either way, in whole seconds (the timestamp's resolution),
	// and so how long a nonce is remembered past its timestamp. Default
	// DefaultMaxSkew.
	MaxSkew time.Duration
	// ReplayCacheSize is how many unexpired nonces the verifier remembers
	// at most; past that it refuses requests with ErrReplayCacheFull
	// rather than forget a nonce that could be replayed. Default
	// DefaultReplayCacheSize.
	ReplayCacheSize int
	// NotBefore, when set, refuses with ErrSkew requests timestamped
	// before its second. Nonces live only in memory, so a request signed
	// shortly before a restart could otherwise be replayed after it; set
	// NotBefore to the server's start time to close that window, at the
	// cost of refusing clients whose clocks lag, until they catch up.
	NotBefore time.Time
	// Now is the verifier's clock. Default time.Now.
	Now func() time.Time
}

// Validate reports a negative skew or cache size.
func (c VerifierConfig) Validate() error {
	if c.MaxSkew < 0 {
		return fmt.Errorf("negative max skew %v", c.MaxSkew)
	}
	if c.ReplayCacheSize < 0 {
		return fmt.Errorf("negative replay cache size %d", c.ReplayCacheSize)
	}
	return nil
}

// VerifyError is a refused request. It wraps one of ErrMalformed,
// ErrUnknownKey, ErrKeyExpired, ErrSkew, ErrBadSignature, ErrReplay and
// ErrReplayCacheFull, for errors.Is and for the audit log.
type VerifyError struct {
	// KeyID is the key ID the request claimed, if its header parsed. It
	// is not authenticated: record it, do not trust it.
	KeyID string
	// Err says why, and matches one of the sentinel errors.
	Err error
}

func (e *VerifyError) Error() string {
	if e.KeyID == "" {
		return "authenticating request: " + e.Err.Error()
	}
	return fmt.Sprintf("authenticating request with key %s: %v", e.KeyID, e.Err)
}

// Unwrap returns the reason.
func (e *VerifyError) Unwrap() error { return e.Err }

// Verifier checks signed requests against a KeyRing. It is safe for
// concurrent use.
type Verifier struct {
	ring      atomic.Pointer[KeyRing]
	skew      time.Duration
	notBefore int64 // Unix seconds; 0 for none
	now       func() time.Time

	mu     sync.Mutex
	replay replayCache
}

// NewVerifier returns a Verifier of requests signed by keys in ring.
func NewVerifier(ring *KeyRing, cfg VerifierConfig) (*Verifier, error) {
	if ring == nil {
		return nil, errors.New("creating verifier: nil key ring")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("creating verifier: %w", err)
	}
	v := &Verifier{skew: cfg.MaxSkew, now: cfg.Now}
	if !cfg.NotBefore.IsZero() {
		v.notBefore = cfg.NotBefore.Unix()
	}
	if v.skew == 0 {
		v.skew = DefaultMaxSkew
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.replay.max = cfg.ReplayCacheSize
	if v.replay.max == 0 {
		v.replay.max = DefaultReplayCacheSize
	}
	v.replay.seen = make(map[[NonceBytes]byte]struct{})
	v.ring.Store(ring)
	return v, nil
}

// SetKeyRing makes v verify against ring from now on, as after Rotate.
// Remembered nonces are kept. A nil ring is ignored.
func (v *Verifier) SetKeyRing(ring *KeyRing) {
	if ring != nil {
		v.ring.Store(ring)
	}
}

// Verify checks req's Authorization header against req's method and URI
// and body, which must be the whole body the server read. It returns the
// authenticated key ID, or a *VerifyError. It checks, in order: the header
// format, the key, the clock skew, the signature, and last the nonce, so
// that only correctly signed requests use up a nonce.
func (v *Verifier) Verify(req *http.Request, body []byte) (keyID string, err error) {
	vals := req.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", &VerifyError{Err: fmt.Errorf("%w: want one Authorization header, got %d", ErrMalformed, len(vals))}
	}
	h, err := ParseHeader(vals[0])
	if err != nil {
		return "", &VerifyError{Err: err}
	}
	reject := func(err error) (string, error) { return "", &VerifyError{KeyID: h.KeyID, Err: err} }
	now := v.now()
	key, err := v.ring.Load().Lookup(h.KeyID, now)
	if err != nil {
		return reject(err)
	}
	// Timestamps are whole seconds, so the skew is checked in whole
	// seconds too. No sum here overflows: the clock is near the Unix
	// epoch compared to the int64 range.
	nowSec, skewSec := now.Unix(), int64(v.skew/time.Second)
	if h.Timestamp < nowSec-skewSec || h.Timestamp > nowSec+skewSec {
		return reject(fmt.Errorf("%w: timestamp %d, clock %d, allowed skew %v", ErrSkew, h.Timestamp, nowSec, v.skew))
	}
	if h.Timestamp < v.notBefore {
		return reject(fmt.Errorf("%w: timestamp %d is before the verifier's start at %d", ErrSkew, h.Timestamp, v.notBefore))
	}
	if !hmac.Equal(signature(key.Secret, h, req, body), h.Signature[:]) {
		return reject(ErrBadSignature)
	}
	v.mu.Lock()
	// The skew check refuses this request from second ts+skewSec+1 on.
	err = v.replay.add(h.Nonce, time.Unix(h.Timestamp+skewSec+1, 0), now)
	v.mu.Unlock()
	if err != nil {
		return reject(err)
	}
	return h.KeyID, nil
}

// replayCache remembers nonces until they expire. A request's nonce
// expires when its timestamp leaves the skew window, after which the skew
// check refuses the request anyway.
type replayCache struct {
	max     int
	seen    map[[NonceBytes]byte]struct{}
	expires expiryHeap
}

// add records nonce until expires, after forgetting the nonces expired at
// now. It fails if nonce is remembered or the cache is full.
func (c *replayCache) add(nonce [NonceBytes]byte, expires, now time.Time) error {
	for len(c.expires) > 0 && c.expires[0].expires.Before(now) {
		e := heap.Pop(&c.expires).(expiry)
		delete(c.seen, e.nonce)
	}
	if _, ok := c.seen[nonce]; ok {
		return ErrReplay
	}
	if len(c.seen) >= c.max {
		return fmt.Errorf("%w: %d nonces in the skew window", ErrReplayCacheFull, len(c.seen))
	}
	c.seen[nonce] = struct{}{}
	heap.Push(&c.expires, expiry{nonce: nonce, expires: expires})
	return nil
}

type expiry struct {
	nonce   [NonceBytes]byte
	expires time.Time
}

// expiryHeap is a min-heap of nonces by expiry, for container/heap.
type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Known reports whether id names a key of the verifier's ring, current,
// previous or expired: a key ID the server chose, not one a requester made
// up.
func (v *Verifier) Known(id string) bool {
	_, err := v.ring.Load().Lookup(id, v.now())
	return err == nil || errors.Is(err, ErrKeyExpired)
}
