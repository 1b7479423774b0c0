package portfolio

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// StoreFile is the state store's name in the portfolio folder.
const StoreFile = "state.db"

// storeSchema is the version of the records the store holds.
const storeSchema = 1

var (
	bucketMeta     = []byte("meta")
	bucketServices = []byte("services")
	bucketSARIF    = []byte("sarif")
	keySchema      = []byte("schema")
)

// ErrCorrupt matches a state store that cannot be read.
var ErrCorrupt = errors.New("the state store is corrupt")

// CorruptError is a state store that cannot be read: a damaged file, a
// record that does not decode, or a schema this version does not know.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("reading the state store %s: %v; rerun with --rebuild-state to start it afresh (finished services are answered from the cache)", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// Store is the durable per-service state of one portfolio folder: a bbolt
// file (ADR-0005). One process opens it at a time. It is safe for
// concurrent use by the goroutines of that process.
type Store struct {
	db   *bolt.DB
	path string
}

// OpenStore opens (or creates) the store at path. A store another process
// holds is an error after a second; a damaged one is a *CorruptError.
func OpenStore(path string) (s *Store, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &CorruptError{Path: path, Err: fmt.Errorf("%v", r)}
		}
	}()
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("opening the state store %s: another portfolio run holds it; wait for it to finish, or pass another --out", path)
	case errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("opening the state store %s: %w", path, err)
	case err != nil:
		return nil, &CorruptError{Path: path, Err: err}
	}
	s = &Store{db: db, path: path}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySchema); v != nil {
			if string(v) != strconv.Itoa(storeSchema) {
				return &CorruptError{Path: path, Err: fmt.Errorf("schema %s, want %d", v, storeSchema)}
			}
		} else if err := meta.Put(keySchema, []byte(strconv.Itoa(storeSchema))); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketServices, bucketSARIF} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		var ce *CorruptError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	return s, nil
}

// RemoveStore deletes the store at path, for --rebuild-state.
func RemoveStore(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the state store: %w", err)
	}
	return nil
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// All returns every record, keyed by service ID.
func (s *Store) All() (recs map[string]Record, err error) {
	defer s.recoverCorrupt(&err)
	recs = map[string]Record{}
	err = s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketServices).ForEach(func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return &CorruptError{Path: s.path, Err: fmt.Errorf("service %s: %w", k, err)}
			}
			recs[string(k)] = r
			return nil
		})
	})
	return recs, err
}

// Put writes records in one transaction.
func (s *Store) Put(recs ...Record) error {
	batch := make([]pending, len(recs))
	for i, r := range recs {
		batch[i] = pending{rec: r}
	}
	return s.commit(batch)
}

// Writer commits records in the background: each transaction takes every
// record sent since the last one (group commit), so a worker never waits
// for an fsync, and a kill loses at most the records of the transaction in
// flight, whose services the next run does again. Put is safe for
// concurrent use; Close flushes and returns the first error.
type Writer struct {
	st   *Store
	ch   chan pending
	done chan struct{}
	mu   sync.Mutex
	err  error
}

type pending struct {
	rec   Record
	sarif []byte
}

// NewWriter starts a writer on s.
func (s *Store) NewWriter() *Writer {
	w := &Writer{st: s, ch: make(chan pending, 256), done: make(chan struct{})}
	go w.loop()
	return w
}

// Put queues a record (and, when not nil, the service's SARIF log). It
// returns the error of an earlier commit, if any.
func (w *Writer) Put(rec Record, sarif []byte) error {
	if err := w.Err(); err != nil {
		return err
	}
	w.ch <- pending{rec, sarif}
	return nil
}

// Err returns the first commit error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close commits what is queued and stops the writer.
func (w *Writer) Close() error {
	close(w.ch)
	<-w.done
	return w.Err()
}

func (w *Writer) loop() {
	defer close(w.done)
	for first := range w.ch {
		batch := []pending{first}
	drain:
		for len(batch) < 1024 {
			select {
			case p, ok := <-w.ch:
				if !ok {
					break drain
				}
				batch = append(batch, p)
			default:
				break drain
			}
		}
		if w.Err() != nil {
			continue
		}
		if err := w.st.commit(batch); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
		}
	}
}

func (s *Store) commit(batch []pending) (err error) {
	defer s.recoverCorrupt(&err)
	vals := make([][]byte, len(batch))
	for i, p := range batch {
		if vals[i], err = json.Marshal(p.rec); err != nil {
			return fmt.Errorf("encoding the record of %s: %w", p.rec.Service.ID, err)
		}
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, sb := tx.Bucket(bucketServices), tx.Bucket(bucketSARIF)
		for i, p := range batch {
			if err := b.Put([]byte(p.rec.Service.ID), vals[i]); err != nil {
				return err
			}
			if p.sarif != nil {
				if err := sb.Put([]byte(p.rec.Service.ID), p.sarif); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the state store: %w", err)
	}
	return nil
}

// SARIF returns the SARIF log stored for a service, or nil.
func (s *Store) SARIF(id string) (out []byte, err error) {
	defer s.recoverCorrupt(&err)
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSARIF).Get([]byte(id)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// recoverCorrupt turns a panic of bbolt's page reader (a damaged file it
// opened) into a *CorruptError.
func (s *Store) recoverCorrupt(err *error) {
	if r := recover(); r != nil {
		*err = &CorruptError{Path: s.path, Err: fmt.Errorf("%v", r)}
	}
}
