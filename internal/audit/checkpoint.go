package audit

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// Checkpoint is the signed part of an EventCheckpoint record: the writer's
// ed25519 signature over the count of records before it and the hash of
// the last of them, so that a chain that anyone who can write the file
// could recompute is pinned by a key they do not have.
type Checkpoint struct {
	// Count is the number of records the checkpoint covers: records 1 to
	// Count. The checkpoint record itself is record Count+1.
	Count uint64 `json:"count"`
	// Head is the hash of record Count (Genesis when Count is 0).
	Head string `json:"head"`
	// Prev is the Count of the checkpoint before this one, 0 for the
	// first.
	Prev uint64 `json:"prev"`
	// Adopted is how many of the records after Prev the signer did not
	// write itself: it found them after the last checkpoint when it opened
	// the log, as a crash leaves them, or tampering while it was stopped.
	Adopted uint64 `json:"adopted,omitempty"`
	// KeyID names the public key: the first 8 bytes of its SHA-256, in
	// hex.
	KeyID string `json:"key_id"`
	// Sig is the ed25519 signature of SignedMessage.
	Sig []byte `json:"sig"`
}

// signedPrefix starts every signed checkpoint message, so that no other
// message signed with the key can pass for one.
const signedPrefix = "codegenie audit checkpoint v1\n"

// SignedMessage returns the bytes Sig signs: the fields but KeyID and Sig,
// one a line, after a fixed prefix.
func (c *Checkpoint) SignedMessage() []byte {
	b := []byte(signedPrefix)
	for _, n := range []uint64{c.Count, c.Prev, c.Adopted} {
		b = strconv.AppendUint(b, n, 10)
		b = append(b, '\n')
	}
	b = append(b, c.Head...)
	return append(b, '\n')
}

// KeyID returns the key ID of a public key: the first 8 bytes of its
// SHA-256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// signCheckpoint returns the checkpoint of the records up to a.
func signCheckpoint(key ed25519.PrivateKey, a Anchor, prev, adopted uint64) *Checkpoint {
	c := &Checkpoint{Count: a.Seq, Head: a.Hash, Prev: prev, Adopted: adopted, KeyID: KeyID(key.Public().(ed25519.PublicKey))}
	c.Sig = ed25519.Sign(key, c.SignedMessage())
	return c
}

// Errors of a checkpoint that does not hold, reported inside a
// *VerifyError and matched with errors.Is.
var (
	// ErrBadCheckpoint: a checkpoint's signature does not verify with the
	// public key, or it names another key.
	ErrBadCheckpoint = errors.New("checkpoint signature does not verify")
	// ErrCheckpointMismatch: a checkpoint's count or head is not that of
	// the records before it.
	ErrCheckpointMismatch = errors.New("checkpoint does not match the records before it")
)

// check verifies c as the checkpoint read right after the record at a,
// with prev the count of the checkpoint before it.
func (c *Checkpoint) check(pub ed25519.PublicKey, a Anchor, prev uint64) error {
	switch {
	case c.KeyID != KeyID(pub):
		return fmt.Errorf("%w: signed by key %s, the public key is %s", ErrBadCheckpoint, c.KeyID, KeyID(pub))
	case len(c.Sig) != ed25519.SignatureSize || !ed25519.Verify(pub, c.SignedMessage(), c.Sig):
		return ErrBadCheckpoint
	case c.Count != a.Seq || c.Head != a.Hash:
		return fmt.Errorf("%w: it covers %d records with head %s, the log has %d with head %s", ErrCheckpointMismatch, c.Count, c.Head, a.Seq, a.Hash)
	case c.Prev != prev:
		return fmt.Errorf("%w: its previous checkpoint covered %d records, the log's %d", ErrCheckpointMismatch, c.Prev, prev)
	}
	return nil
}
