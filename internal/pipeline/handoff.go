package pipeline

import (
	"fmt"
	"sync"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/probe"
)

// handoff is a run's probe.Handoff: the records of the phases done, and
// the blobs their probes stored, in memory for the run and, for a
// cacheable result, in the cache, as entries keyed by their digest
// (blobKey), so that a warm result's blobs outlive the run.
type handoff struct {
	cache   *cache.Cache // nil without a cache
	mu      sync.Mutex
	results map[string]*probe.Result
	blobs   map[string][]byte
}

func newHandoff(c *cache.Cache) *handoff {
	return &handoff{cache: c, results: map[string]*probe.Result{}, blobs: map[string][]byte{}}
}

// blobKey is the cache key of the blob of digest.
func blobKey(digest string) cache.Key {
	return cache.NewKey("blob", "1", "", []cache.Input{{Path: "blob", Digest: digest}})
}

// Earlier implements probe.Handoff.
func (h *handoff) Earlier(name string) (*probe.Result, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.results[name]
	return r, ok
}

// Blob implements probe.Handoff: from this run, else from the cache,
// checked against its digest.
func (h *handoff) Blob(digest string) ([]byte, error) {
	h.mu.Lock()
	b, ok := h.blobs[digest]
	h.mu.Unlock()
	if ok {
		return b, nil
	}
	if h.cache != nil {
		b, ok, err := h.cache.Get(blobKey(digest))
		if err != nil {
			return nil, err
		}
		if ok && probe.BlobDigest(b) == digest {
			h.mu.Lock()
			h.blobs[digest] = b
			h.mu.Unlock()
			return b, nil
		}
	}
	return nil, fmt.Errorf("blob %s: %w", digest, probe.ErrNoBlob)
}

// has reports whether every blob of digests can be read.
func (h *handoff) has(digests []string) bool {
	for _, d := range digests {
		if _, err := h.Blob(d); err != nil {
			return false
		}
	}
	return true
}

// put keeps blobs for the run and, when persist is set, stores them in
// the cache.
func (h *handoff) put(blobs [][]byte, persist bool) error {
	for _, b := range blobs {
		d := probe.BlobDigest(b)
		h.mu.Lock()
		h.blobs[d] = b
		h.mu.Unlock()
		if persist && h.cache != nil {
			if err := h.cache.Put(blobKey(d), b); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *handoff) record(r *probe.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.results[r.Probe] = r
}

// splitAfter moves the probes whose Desc.After names a probe of last that
// can run here out of light and last, into a phase of their own.
func splitAfter(light, last []probe.Probe, pctx *probe.Context) (l, la, after []probe.Probe) {
	runs := map[string]bool{}
	for _, pr := range last {
		d := pr.Desc()
		if !d.NeedsSandbox || pctx.Sandbox != nil {
			runs[d.Name] = true
		}
	}
	waits := func(pr probe.Probe) bool {
		for _, n := range pr.Desc().After {
			if runs[n] {
				return true
			}
		}
		return false
	}
	for _, pr := range light {
		if waits(pr) {
			after = append(after, pr)
		} else {
			l = append(l, pr)
		}
	}
	for _, pr := range last {
		if waits(pr) {
			after = append(after, pr)
		} else {
			la = append(la, pr)
		}
	}
	return l, la, after
}
