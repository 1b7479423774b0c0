package gatecontrol

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/codegenie/codegenie/internal/audit"
	"github.com/codegenie/codegenie/internal/gatecontrol/auth"
)

// Bounds of the bookkeeping of unauthenticated requests, so that no flood
// of peers grows it without limit.
const (
	// maxRejectKeys is how many (peer, reason, key) tallies one interval
	// keeps; past that, new peers share one tally named otherPeers.
	maxRejectKeys = 256
	// maxPeerBuckets is how many peers the rate limiter tracks; past that,
	// new peers share one bucket named otherPeers.
	maxPeerBuckets = 4096
	otherPeers     = "(other peers)"
)

// errRateLimited refuses a request from a peer whose unauthenticated
// requests have used up its allowance.
var errRateLimited = errors.New("too many unauthenticated requests from this peer")

// rejectKey is what one aggregated spawn.rejected record stands for. Every
// part of it is bounded: the peer comes from the kernel, the reason from a
// fixed list, and the key ID only when the server knows the key.
type rejectKey struct {
	peer, path, reason, keyID string
}

type rejectTally struct {
	since, last time.Time
	count       uint64
	bytes       int64
	digest      string
}

// rejections folds the requests refused before authentication into one
// tally per rejectKey until the next flush. It is safe for concurrent use.
type rejections struct {
	mu    sync.Mutex
	tally map[rejectKey]*rejectTally
	order []rejectKey // first-seen order, for a stable flush
}

func newRejections() *rejections {
	return &rejections{tally: map[rejectKey]*rejectTally{}}
}

// add counts one refused request with its body (nil when none was read).
// It hashes only the first body of a tally.
func (rj *rejections) add(k rejectKey, body []byte, now time.Time) {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	t, ok := rj.tally[k]
	if !ok && len(rj.tally) >= maxRejectKeys {
		k.peer, k.keyID = otherPeers, ""
		t, ok = rj.tally[k]
	}
	if !ok {
		t = &rejectTally{since: now}
		if body != nil {
			sum := sha256.Sum256(body)
			t.digest = "sha256:" + hex.EncodeToString(sum[:])
		}
		rj.tally[k] = t
		rj.order = append(rj.order, k)
	}
	t.count++
	t.last = now
	t.bytes += int64(len(body))
}

// take returns the records of the tallies so far and starts afresh. It
// returns at most budget records (at least 1): when there are more
// tallies, the ones with the most requests keep their own record, in
// first-seen order, and the rest (the tally of otherPeers always among
// them) are folded into one last record for otherPeers that says how much
// it folded. Whatever the number of peers, one interval's records stay
// within budget.
func (rj *rejections) take(backend string, budget int) []audit.Record {
	rj.mu.Lock()
	defer rj.mu.Unlock()
	defer func() {
		clear(rj.tally)
		rj.order = rj.order[:0]
	}()
	record := func(k rejectKey, t *rejectTally) audit.Record {
		return audit.Record{
			Event:      audit.EventSpawnRejected,
			Time:       t.last,
			Since:      t.since,
			Count:      t.count,
			Peer:       k.peer,
			KeyID:      k.keyID,
			Backend:    backend,
			Reason:     fmt.Sprintf("unauthenticated %s: %s", k.path, k.reason),
			BodyBytes:  t.bytes,
			BodyDigest: t.digest,
		}
	}
	budget = max(budget, 1)
	if len(rj.order) <= budget {
		out := make([]audit.Record, 0, len(rj.order))
		for _, k := range rj.order {
			out = append(out, record(k, rj.tally[k]))
		}
		return out
	}
	// Who keeps a record of its own: the most requests first, the
	// shared tally last.
	rank := slices.Clone(rj.order)
	slices.SortStableFunc(rank, func(a, b rejectKey) int {
		if ao, bo := a.peer == otherPeers, b.peer == otherPeers; ao != bo {
			if ao {
				return 1
			}
			return -1
		}
		return cmp.Compare(rj.tally[b].count, rj.tally[a].count)
	})
	own := make(map[rejectKey]bool, budget-1)
	for _, k := range rank[:budget-1] {
		own[k] = true
	}
	out := make([]audit.Record, 0, budget)
	var folded rejectTally
	tallies, peers := 0, map[string]bool{}
	for _, k := range rj.order {
		t := rj.tally[k]
		if own[k] {
			out = append(out, record(k, t))
			continue
		}
		tallies++
		peers[k.peer] = true
		if folded.since.IsZero() || t.since.Before(folded.since) {
			folded.since = t.since
		}
		if t.last.After(folded.last) {
			folded.last = t.last
		}
		folded.count += t.count
		folded.bytes += t.bytes
	}
	rec := record(rejectKey{peer: otherPeers}, &folded)
	more := ""
	if peers[otherPeers] {
		delete(peers, otherPeers)
		more = " and more"
	}
	rec.Reason = fmt.Sprintf("unauthenticated requests over the audit budget of %d records per interval: %d tallies of %d peers%s folded, not itemized",
		budget, tallies, len(peers), more)
	return append(out, rec)
}

// rejectReason names why a request was refused before authentication, from
// a fixed list: never with text the request chose.
func rejectReason(err error) string {
	reasons := []struct {
		err  error
		name string
	}{
		{errRateLimited, "rate limited"},
		{errBodyTooLarge, "body too large"},
		{auth.ErrMalformed, "malformed authorization"},
		{auth.ErrUnknownKey, "unknown key id"},
		{auth.ErrKeyExpired, "key expired"},
		{auth.ErrSkew, "timestamp outside the allowed skew"},
		{auth.ErrBadSignature, "bad signature"},
		{auth.ErrReplay, "nonce already used"},
		{auth.ErrReplayCacheFull, "replay cache full"},
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.name
		}
	}
	return "unreadable request"
}

// peerLimiter is a token bucket per peer for requests that fail
// authentication: each failure takes a token, tokens come back at rate per
// second up to burst, and a peer with no token left is refused before its
// request is read. Authenticated requests take nothing. It is safe for
// concurrent use.
type peerLimiter struct {
	rate  float64
	burst float64
	mu    sync.Mutex
	peers map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newPeerLimiter(rate float64, burst int) *peerLimiter {
	return &peerLimiter{rate: rate, burst: float64(burst), peers: map[string]*bucket{}}
}

// bucketLocked returns peer's bucket, refilled to now.
func (pl *peerLimiter) bucketLocked(peer string, now time.Time) *bucket {
	b, ok := pl.peers[peer]
	if !ok {
		if len(pl.peers) >= maxPeerBuckets {
			pl.sweepLocked(now)
		}
		if len(pl.peers) >= maxPeerBuckets {
			peer = otherPeers
			b, ok = pl.peers[peer]
		}
		if !ok {
			b = &bucket{tokens: pl.burst, at: now}
			pl.peers[peer] = b
		}
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = math.Min(pl.burst, b.tokens+dt*pl.rate)
	}
	b.at = now
	return b
}

// sweepLocked forgets the peers whose buckets have refilled: they are as
// good as new.
func (pl *peerLimiter) sweepLocked(now time.Time) {
	for p, b := range pl.peers {
		if b.tokens+now.Sub(b.at).Seconds()*pl.rate >= pl.burst {
			delete(pl.peers, p)
		}
	}
}

// allow reports whether peer may send a request now, and if not, how long
// until it may.
func (pl *peerLimiter) allow(peer string, now time.Time) (bool, time.Duration) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	b := pl.bucketLocked(peer, now)
	if b.tokens >= 1 {
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / pl.rate * float64(time.Second))
	return false, wait
}

// fail takes a token from peer's bucket.
func (pl *peerLimiter) fail(peer string, now time.Time) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	b := pl.bucketLocked(peer, now)
	b.tokens = math.Max(0, b.tokens-1)
}

// admitPeer refuses a request from a peer that is out of allowance for
// failed authentication, before anything of the request is read. The
// refusal is tallied like the other unauthenticated rejections.
func (s *Server) admitPeer(w http.ResponseWriter, r *http.Request) bool {
	now := s.cfg.Now()
	ok, wait := s.peers.allow(peerOf(r), now)
	if ok {
		return true
	}
	s.rejections.add(rejectKey{peer: peerOf(r), path: r.URL.Path, reason: rejectReason(errRateLimited)}, nil, now)
	w.Header().Set("Retry-After", fmt.Sprint(max(1, int(math.Ceil(wait.Seconds())))))
	writeError(w, errRateLimited, "", nil)
	return false
}

// rejectUnauthenticated tallies a request refused before it was
// authenticated and takes a token of its peer's allowance. Nothing the
// request sent is recorded but the size and digest of its body, and the key
// ID it claimed when that is a key the server knows.
func (s *Server) rejectUnauthenticated(r *http.Request, body []byte, why error) {
	now := s.cfg.Now()
	peer := peerOf(r)
	s.peers.fail(peer, now)
	k := rejectKey{peer: peer, path: r.URL.Path, reason: rejectReason(why)}
	var verr *auth.VerifyError
	claimed := ""
	if errors.As(why, &verr) {
		claimed = verr.KeyID
	} else if h, err := auth.ParseHeader(r.Header.Get("Authorization")); err == nil {
		claimed = h.KeyID
	}
	if claimed != "" && s.verifier.Known(claimed) {
		k.keyID = claimed
	}
	s.rejections.add(k, body, now)
}

// flushRejections appends one spawn.rejected record per tally since the
// last flush, at most Config.RejectRecords in all. A failure is logged by record; the tallies are gone either
// way, so that a broken log does not grow memory.
func (s *Server) flushRejections() {
	for _, rec := range s.rejections.take(s.cfg.BackendName, s.cfg.RejectRecords) {
		_ = s.record(rec, audit.EventSpawnRejected) // logged by record
	}
}

// flushLoop flushes the tallies every RejectInterval until stop is closed,
// then once more, and closes done.
func (s *Server) flushLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.RejectInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.flushRejections()
		case <-stop:
			s.flushRejections()
			return
		}
	}
}
