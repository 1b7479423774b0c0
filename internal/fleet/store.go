package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ResultStore is the content-addressed store that every worker and the
// client share: results too large for a workflow's history, and the
// bindings that make activities idempotent. A shared filesystem path
// (FSStore) is the first implementation; an object store can follow,
// since each method is one object read or write.
type ResultStore interface {
	// Put stores data and returns its digest ("sha256:<hex>"). Storing the
	// same bytes twice is one object.
	Put(ctx context.Context, data []byte) (string, error)
	// Get returns the bytes of a digest, checked against it. A digest the
	// store does not hold is an error matching ErrNotFound.
	Get(ctx context.Context, digest string) ([]byte, error)
	// Bind records that key's finished result is digest, unless key is
	// already bound: the first binding wins, and Bind returns the digest
	// key is bound to.
	Bind(ctx context.Context, key, digest string) (string, error)
	// Lookup returns the digest key is bound to, if any; a binding to an
	// object the store no longer holds is none.
	Lookup(ctx context.Context, key string) (string, bool, error)
}

// ErrNotFound matches a digest the store does not hold.
var ErrNotFound = errors.New("not in the result store")

// FSStore is a ResultStore in a directory: objects/<hex[:2]>/<hex> and
// keys/<key[:2]>/<key>. Each file is written once, through a temporary
// file and a rename (objects) or a hard link that fails when the name
// exists (keys), so concurrent writers on one filesystem, and a writer
// killed mid-write, leave no torn file.
type FSStore struct{ dir string }

// OpenFSStore opens (or creates) the store at dir.
func OpenFSStore(dir string) (*FSStore, error) {
	for _, sub := range []string{"objects", "keys", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("opening the result store: %w", err)
		}
	}
	return &FSStore{dir: dir}, nil
}

// Dir is the store's directory.
func (s *FSStore) Dir() string { return s.dir }

const digestPrefix = "sha256:"

func hexOf(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, digestPrefix)
	if !ok || len(h) != sha256.Size*2 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return h, nil
}

func (s *FSStore) objectPath(h string) string { return filepath.Join(s.dir, "objects", h[:2], h) }

// keyPath maps a key (any string) to a file name: its sha256, so that keys
// need no escaping.
func (s *FSStore) keyPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	return filepath.Join(s.dir, "keys", h[:2], h)
}

// Put implements ResultStore.
func (s *FSStore) Put(_ context.Context, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	p := s.objectPath(h)
	// Already held: marked used. One that Prune removes meanwhile is
	// written again.
	if touch(p) == nil {
		return digestPrefix + h, nil
	}
	tmp, err := s.temp(data)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("writing to the result store: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("writing to the result store: %w", err)
	}
	return digestPrefix + h, nil
}

// temp writes data, synced, to a new file under tmp/.
func (s *FSStore) temp(data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "put-")
	if err != nil {
		return "", fmt.Errorf("writing to the result store: %w", err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("writing to the result store: %w", werr)
	}
	return f.Name(), nil
}

// Get implements ResultStore.
func (s *FSStore) Get(_ context.Context, digest string) ([]byte, error) {
	h, err := hexOf(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.objectPath(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (%s)", digest, ErrNotFound, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the result store: %w", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != h {
		return nil, fmt.Errorf("the result store's object %s is damaged (its content does not match its digest): delete %s", digest, s.objectPath(h))
	}
	_ = touch(s.objectPath(h))
	return data, nil
}

// Bind implements ResultStore. A key bound to an object the store no
// longer holds (a crash between the writes, or Prune) is bound again under
// a name derived from the lost digest, with the same create-if-absent
// link, so that concurrent binders still agree on one winner.
func (s *FSStore) Bind(ctx context.Context, key, digest string) (string, error) {
	if _, err := hexOf(digest); err != nil {
		return "", err
	}
	tmp, err := s.temp([]byte(digest))
	if err != nil {
		return "", err
	}
	defer func() { _ = os.Remove(tmp) }()
	for {
		p := s.keyPath(key)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("binding in the result store: %w", err)
		}
		err := os.Link(tmp, p)
		if err == nil {
			return digest, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("binding in the result store: %w", err)
		}
		got, held, err := s.readKey(key)
		if err != nil {
			return "", err
		}
		if held {
			return got, nil
		}
		key = lostKey(key, got)
	}
}

// lostKey is where a key bound to the lost object d is bound again.
func lostKey(key, d string) string { return key + "\x00lost=" + d }

// readKey reads key's binding and whether the store holds its object. A
// missing key is an error.
func (s *FSStore) readKey(key string) (string, bool, error) {
	data, err := os.ReadFile(s.keyPath(key))
	if err != nil {
		return "", false, fmt.Errorf("reading the result store: %w", err)
	}
	d := string(bytes.TrimSpace(data))
	h, err := hexOf(d)
	if err != nil {
		return "", false, fmt.Errorf("the result store's key file %s is damaged: %w", s.keyPath(key), err)
	}
	_, err = os.Stat(s.objectPath(h))
	return d, err == nil, nil
}

// Lookup implements ResultStore: it follows the bindings of lost objects
// to the one that holds.
func (s *FSStore) Lookup(_ context.Context, key string) (string, bool, error) {
	for {
		if _, err := os.Stat(s.keyPath(key)); errors.Is(err, os.ErrNotExist) {
			return "", false, nil
		}
		d, held, err := s.readKey(key)
		if err != nil {
			return "", false, err
		}
		if !held {
			key = lostKey(key, d)
			continue
		}
		h, _ := hexOf(d)
		_ = touch(s.keyPath(key))
		_ = touch(s.objectPath(h))
		return d, true, nil
	}
}

// Keys counts the bound keys: how many results the store holds.
func (s *FSStore) Keys() (int, error) {
	n := 0
	err := filepath.WalkDir(filepath.Join(s.dir, "keys"), func(_ string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			n++
		}
		return nil
	})
	return n, err
}

// touch marks a file used now, for Prune.
func touch(p string) error {
	now := time.Now()
	return os.Chtimes(p, now, now)
}

// PruneStats says what Prune removed and kept.
type PruneStats struct {
	Removed, Kept int
	Bytes         int64
}

// Prune removes the objects and bindings written or used longer ago than
// olderThan (every one for 0), and temporary files an interrupted write
// left. A binding whose object is gone counts as none, so a pruned result
// is judged again when it is next asked for.
func (s *FSStore) Prune(olderThan time.Duration) (PruneStats, error) {
	var st PruneStats
	cutoff := time.Now().Add(-olderThan)
	for _, sub := range []string{"objects", "keys", "tmp"} {
		err := filepath.WalkDir(filepath.Join(s.dir, sub), func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			// A temporary file is an interrupted write once it is an hour
			// old; a fresh one may be a write in progress, even with 0.
			old := fi.ModTime().Before(cutoff) || olderThan == 0
			if sub == "tmp" {
				old = time.Since(fi.ModTime()) > time.Hour
			}
			if !old {
				if sub != "tmp" {
					st.Kept++
				}
				return nil
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			if sub != "tmp" {
				st.Removed++
			}
			st.Bytes += fi.Size()
			return nil
		})
		if err != nil {
			return st, fmt.Errorf("pruning the result store: %w", err)
		}
	}
	return st, nil
}
