package probe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// Handoff is how a probe reads what a probe of an earlier phase of the same
// run handed on (Context.Handoff): that probe's result, and the blobs it
// stored (Output.Blobs). The shell trace hands the judged image's
// node_modules to the dependency scans this way (docs/adr/0013).
//
// A probe that reads a handoff names its source in Desc.After, so that it
// runs after it, and puts the digests it reads in its cache key
// (Keyed.KeySettings): a blob is content-addressed, so the key covers what
// was read.
type Handoff interface {
	// Earlier returns the result of the named probe in this run, when it
	// ran (or was served from the cache) in an earlier phase.
	Earlier(name string) (*Result, bool)
	// Blob returns the blob stored under digest (BlobDigest), or an error
	// matching ErrNoBlob.
	Blob(digest string) ([]byte, error)
}

// ErrNoBlob: no blob is stored under the digest asked for.
var ErrNoBlob = errors.New("no such blob")

// BlobDigest is the name of a blob: "sha256:" and the hex SHA-256 of b.
func BlobDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// BlobUser is implemented by a probe whose results name blobs it stored
// (Output.Blobs) in their facts: a cached result is used only while every
// blob it names is still stored, else the probe runs again, so that a
// probe reading the handoff sees the same bytes on a warm run as on a cold
// one.
type BlobUser interface {
	// Blobs returns the digests the result's facts name.
	Blobs(facts json.RawMessage) []string
}
