package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codegenie/codegenie/internal/strictjson"
)

// Genesis is the Prev of the first record: the hex of 32 zero bytes.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxRecordBytes bounds one encoded record, without its newline. Append
// refuses larger records and readers reject longer lines.
const MaxRecordBytes = 1 << 20

// Record is one line of the audit log. Log.Append fills Seq and Prev, and
// Time when it is zero; the other fields are the caller's.
type Record struct {
	// Seq numbers records from 1, without gaps.
	Seq uint64 `json:"seq"`
	// Time is when the state change happened, in UTC.
	Time time.Time `json:"time"`
	// Event is the state change.
	Event EventType `json:"event"`
	// SpawnID ties together the records of one spawn.
	SpawnID string `json:"spawn_id,omitempty"`
	// Role is the role as the requester sent it ("gate", "probe"), kept raw
	// so that a missing or unknown role is recorded as it arrived. As in
	// every string field, invalid UTF-8 is written as U+FFFD.
	Role string `json:"role,omitempty"`
	// Backend names the sandbox backend, such as "runsc".
	Backend string `json:"backend,omitempty"`
	// KeyID is the HMAC key ID the requester authenticated with, or claimed
	// in a rejected request.
	KeyID string `json:"key_id,omitempty"`
	// WorkspaceDigest identifies the workspace content the spawn saw.
	WorkspaceDigest string `json:"workspace_digest,omitempty"`
	// Argv is the command.
	Argv []string `json:"argv,omitempty"`
	// Exit is the exit code of a finished spawn; nil when none.
	Exit *int `json:"exit,omitempty"`
	// Reason says why a request was rejected or a spawn failed.
	Reason string `json:"reason,omitempty"`
	// Trace summarises the captured trace of a finished spawn.
	Trace *TraceSummary `json:"trace,omitempty"`
	// DurationMS is how long the spawn ran, in milliseconds.
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Egress is what a finished build spawn's egress proxy let through
	// and refused.
	Egress *EgressSummary `json:"egress,omitempty"`
	// Peer names the connection that a request refused before
	// authentication came from, as the kernel reports it, such as
	// "unix:uid=0" or "tcp:192.0.2.1".
	Peer string `json:"peer,omitempty"`
	// Count is how many refused requests the record stands for, from
	// Since to Time: gate-control folds the unauthenticated rejections of
	// one peer, for one reason, in one interval, into one record. Zero
	// means one.
	Count uint64 `json:"count,omitempty"`
	// Since is the time of the first of Count rejections.
	Since time.Time `json:"since,omitzero"`
	// BodyBytes is the total size of the request bodies read, and
	// BodyDigest ("sha256:<hex>") identifies the first of them. Nothing
	// else of an unauthenticated body is recorded.
	BodyBytes  int64  `json:"body_bytes,omitempty"`
	BodyDigest string `json:"body_digest,omitempty"`
	// Checkpoint is set on EventCheckpoint records only: the signature
	// over the records before it.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Prev is the hex SHA-256 of the previous record's line, or Genesis.
	Prev string `json:"prev"`
}

// EgressSummary is a build spawn's network use through its egress proxy.
type EgressSummary struct {
	// Allow is the allow-list the proxy enforced.
	Allow []string `json:"allow,omitempty"`
	// Conns counts the connections asked for, Up and Down their bytes.
	Conns int   `json:"conns"`
	Up    int64 `json:"up,omitempty"`
	Down  int64 `json:"down,omitempty"`
	// Refused are the refused destinations, "HOST:PORT in PHASE".
	Refused []string `json:"refused,omitempty"`
}

// TraceSummary counts what a spawn's trace held.
type TraceSummary struct {
	// Events is the number of trace events received.
	Events int `json:"events"`
	// Shells is the number of those events that ran a shell.
	Shells int `json:"shells"`
	// Complete is true when no event was dropped and the stream ended
	// cleanly.
	Complete bool `json:"complete"`
	// Dropped is the number of events the trace source reported dropping.
	Dropped uint64 `json:"dropped,omitempty"`
}

// encode returns r's line without the newline.
func encode(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding audit record: %w", err)
	}
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("encoding audit record: %w", ErrRecordTooLarge)
	}
	return b, nil
}

// ErrRecordTooLarge reports a record whose line would exceed MaxRecordBytes.
var ErrRecordTooLarge = errors.New("audit record too large")

// decode parses one line (without its newline) and checks the fields every
// record must have.
func decode(line []byte) (Record, error) {
	var r Record
	if err := strictjson.Unmarshal(line, &r); err != nil {
		return Record{}, err
	}
	switch {
	case r.Seq == 0:
		return r, errors.New("missing seq")
	case !r.Event.Valid():
		return r, errors.New("missing event")
	case r.Time.IsZero():
		return r, errors.New("missing time")
	case (r.Event == EventCheckpoint) != (r.Checkpoint != nil):
		return r, errors.New("a checkpoint field on a record that is not a checkpoint, or a checkpoint without one")
	}
	return r, nil
}

// lineHash returns the hex SHA-256 of a line without its newline.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}
