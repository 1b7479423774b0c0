package audit

import (
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
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("opening audit log %s: %w", path, err)
		}
	}
	l.f = f
	l.anchor = rd.Anchor()
	return l, nil
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
	l.mu.Lock()
	defer l.mu.Unlock()
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

// Anchor returns the anchor of the last record in the log, or {0, Genesis}
// when it is empty. See VerifyAgainst.
func (l *Log) Anchor() Anchor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.anchor
}

// Close closes the file and releases its lock. Append fails after Close.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(l.err, ErrClosed) {
		return nil
	}
	l.err = fmt.Errorf("appending to audit log %s: %w", l.path, ErrClosed)
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("closing audit log: %w", err)
	}
	return nil
}
