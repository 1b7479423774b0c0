package audit

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrLocked reports a log that another open Log, in this process or
// another, is writing.
var ErrLocked = errors.New("audit log is open by another writer")

// ErrClosed reports an Append to a closed Log.
var ErrClosed = errors.New("audit log is closed")

// Log appends records to an audit log file. It is safe for concurrent use.
// Only one Log at a time may have a file open: Open takes an exclusive
// advisory lock (flock) that Close releases.
type Log struct {
	mu     sync.Mutex
	f      *os.File
	path   string
	now    func() time.Time
	anchor Anchor
	err    error // sticky: set by a failed write or sync, or Close

	// Checkpoints, when key is set: every records at most between two.
	key     ed25519.PrivateKey
	every   uint64
	since   uint64 // records after the last checkpoint record
	lastCP  uint64 // the Count of the last checkpoint
	adopted Range  // the records Open signed as adopted
}

// DefaultCheckpointEvery is how many records WithCheckpoints lets pass
// between two checkpoints when it is given no positive number.
const DefaultCheckpointEvery = 100

// WithCheckpoints makes the Log sign its chain with key: after every
// records (DefaultCheckpointEvery when every is not positive), and at
// Close, it appends an EventCheckpoint record that signs the count and head
// of the records before it. When Open finds records after the last
// checkpoint (left by a crash, or appended by someone else while no Log had
// the file open), it signs them at once in a checkpoint that counts them as
// Adopted. See VerifySigned.
func WithCheckpoints(key ed25519.PrivateKey, every int) Option {
	return func(l *Log) {
		l.key = key
		l.every = DefaultCheckpointEvery
		if every > 0 {
			l.every = uint64(every)
		}
	}
}

// Option configures Open.
type Option func(*Log)

// WithClock makes Append take the time of records with a zero Time from
// now instead of time.Now. A nil now means time.Now.
func WithClock(now func() time.Time) Option {
	return func(l *Log) {
		if now != nil {
			l.now = now
		}
	}
}

// Open opens the log at path for appending, creating it with mode 0600 if
// it does not exist. It reads and verifies the whole existing log to
// recover the last Seq and hash, and fails, wrapping the *VerifyError that
// names the bad record, if the log is corrupt. It does not change the mode
// of an existing file.
func Open(path string, opts ...Option) (*Log, error) {
	l := &Log{path: path, now: time.Now}
	for _, o := range opts {
		o(l)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking audit log %s: %w", path, err)
	}
	rd := NewReader(f)
	var lastCPSeq uint64
	for {
		r, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("opening audit log %s: %w", path, err)
		}
		if r.Checkpoint != nil {
			lastCPSeq, l.lastCP = r.Seq, r.Checkpoint.Count
		}
	}
	l.f = f
	l.anchor = rd.Anchor()
	l.since = l.anchor.Seq - lastCPSeq
	if l.key != nil && l.since > 0 {
		adopted := Range{From: lastCPSeq + 1, To: l.anchor.Seq}
		l.mu.Lock()
		err := l.checkpointLocked(l.since)
		l.mu.Unlock()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("opening audit log %s: %w", path, err)
		}
		l.adopted = adopted
	}
	return l, nil
}

// Adopted returns the records that Open found after the last checkpoint
// and signed as adopted (see WithCheckpoints), or the empty Range when it
// found none or the Log has no key. Such records were written by no Log
// that signed them: a crash leaves them, but so does anyone who could
// write the file while no Log had it open, so callers should say so where
// people will see it.
func (l *Log) Adopted() Range {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.adopted
}

// Append writes r as the next record and fsyncs the file before it
// returns. It sets r.Seq and r.Prev, replacing what the caller put there,
// sets r.Time from the clock when it is zero, and converts it to UTC. It
// returns the record as written. r.Event must be valid.
//
// After a failed write or fsync the file may end in a partial line, so the
// Log refuses every later Append with the same error; open the log again to
// check it.
func (l *Log) Append(r Record) (Record, error) {
	if !r.Event.Valid() {
		return Record{}, fmt.Errorf("appending audit record: invalid event type %d", uint8(r.Event))
	}
	if r.Event == EventCheckpoint || r.Checkpoint != nil {
		return Record{}, errors.New("appending audit record: only the log writes checkpoints")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, err := l.appendLocked(r)
	if err != nil {
		return Record{}, err
	}
	if l.key != nil {
		l.since++
		if l.since >= l.every {
			if err := l.checkpointLocked(0); err != nil {
				return Record{}, err
			}
		}
	}
	return r, nil
}

func (l *Log) appendLocked(r Record) (Record, error) {
	if l.err != nil {
		return Record{}, l.err
	}
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	r.Time = r.Time.UTC()
	r.Seq = l.anchor.Seq + 1
	r.Prev = l.anchor.Hash
	line, err := encode(r)
	if err != nil {
		return Record{}, err
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("writing audit record %d: %w", r.Seq, err)
		return Record{}, l.err
	}
	if err := l.f.Sync(); err != nil {
		l.err = fmt.Errorf("syncing audit record %d: %w", r.Seq, err)
		return Record{}, l.err
	}
	l.anchor = Anchor{Seq: r.Seq, Hash: lineHash(line)}
	return r, nil
}

// checkpointLocked appends a checkpoint of the records so far.
func (l *Log) checkpointLocked(adopted uint64) error {
	a := l.anchor
	cp := signCheckpoint(l.key, a, l.lastCP, adopted)
	if _, err := l.appendLocked(Record{Event: EventCheckpoint, Checkpoint: cp}); err != nil {
		return fmt.Errorf("writing audit checkpoint: %w", err)
	}
	l.lastCP, l.since = a.Seq, 0
	return nil
}

// Checkpoint appends a checkpoint now, unless the last record is one. It
// fails when the Log has no key (see WithCheckpoints).
func (l *Log) Checkpoint() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.key == nil {
		return errors.New("writing audit checkpoint: the log has no signing key")
	}
	if l.since == 0 {
		return l.err
	}
	return l.checkpointLocked(0)
}

// Anchor returns the anchor of the last record in the log, or {0, Genesis}
// when it is empty. See VerifyAgainst.
func (l *Log) Anchor() Anchor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.anchor
}

// Close writes a last checkpoint, when the Log has a key and records
// followed the last one, closes the file and releases its lock. Append
// fails after Close.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(l.err, ErrClosed) {
		return nil
	}
	var cerr error
	if l.key != nil && l.since > 0 && l.err == nil {
		cerr = l.checkpointLocked(0)
	}
	l.err = fmt.Errorf("appending to audit log %s: %w", l.path, ErrClosed)
	if err := l.f.Close(); err != nil {
		return errors.Join(cerr, fmt.Errorf("closing audit log: %w", err))
	}
	return cerr
}
