// Package cache is codegenie's content-addressed result store. A Key hashes
// everything a probe's output depends on; an entry holds the exact bytes of
// that output, so a warm read is byte-identical to the cold write.
//
// The store is a directory of files, one per key, rather than bbolt. The
// reasons: concurrent gathers across a portfolio need no lock (a bbolt file
// is locked by one process at a time, which would serialise parallel runs);
// an entry is written to a temporary file, fsynced and renamed, so a crash or
// Ctrl-C leaves either the old entry or the new one, never half of one; a
// warm read is one open and read, with no database to map; and each entry
// carries the SHA-256 of its payload, re-checked on every read, so a corrupt
// or truncated entry is a miss that the next Put rewrites, never a wrong
// answer. The cost is one inode per entry, which prune keeps in check.
//
// The package does not know what it stores, nor how keys are chosen beyond
// NewKey's canonical encoding.
package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Key identifies one cache entry.
type Key [sha256.Size]byte

// String returns the key in lowercase hex.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Input is one declared input and the digest of its content.
type Input struct {
	Path   string // repository-relative path, or "image-digest:<ref>"
	Digest string // "sha256:<hex>", or "absent" for a declared path with no file
}

// NewKey hashes the parts of a cache key in a canonical, unambiguous form:
// the probe name and version, the codegenie version, and the inputs sorted
// by path. Each field is length-prefixed, so no two different key tuples
// encode to the same bytes.
func NewKey(probeName, probeVersion, toolVersion string, inputs []Input) Key {
	sorted := append([]Input(nil), inputs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Path != sorted[j].Path {
			return sorted[i].Path < sorted[j].Path
		}
		return sorted[i].Digest < sorted[j].Digest
	})
	h := sha256.New()
	field := func(s string) {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		io.WriteString(h, s)
	}
	field("codegenie-cache-key/v1")
	field(probeName)
	field(probeVersion)
	field(toolVersion)
	for _, in := range sorted {
		field(in.Path)
		field(in.Digest)
	}
	var k Key
	h.Sum(k[:0])
	return k
}

const (
	layout  = "v1"
	magic   = "codegenie-cache-entry/v1\n"
	tmpPref = ".tmp-"
	// staleTemp is how old a temporary file must be before prune removes
	// it: older than any write in progress.
	staleTemp = time.Hour
)

// Cache is a directory of entries. It is safe for concurrent use by many
// goroutines and processes.
type Cache struct {
	dir string
	now func() time.Time
}

// Open returns the cache rooted at dir, creating it with mode 0700.
func Open(dir string) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("opening cache: empty directory")
	}
	// A relative directory is taken from the working directory now, once:
	// paths the cache hands out (dependency folders mounted into a graph,
	// say) must not change meaning when a later step runs elsewhere.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, layout), 0o700); err != nil {
		return nil, fmt.Errorf("opening cache: %w", err)
	}
	return &Cache{dir: dir, now: time.Now}, nil
}

// Dir returns the cache's root directory.
func (c *Cache) Dir() string { return c.dir }

func (c *Cache) path(k Key) string {
	s := k.String()
	return filepath.Join(c.dir, layout, s[:2], s)
}

// Get returns the payload stored under k. A missing, truncated or corrupt
// entry is a miss (ok false, err nil); err is only for a cache that cannot
// be read at all.
func (c *Cache) Get(k Key) (payload []byte, ok bool, err error) {
	b, err := os.ReadFile(c.path(k))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading cache entry %s: %w", k, err)
	}
	payload, ok = decodeEntry(b)
	return payload, ok, nil
}

func decodeEntry(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(magic))
	if !ok || len(rest) < sha256.Size*2+1 || rest[sha256.Size*2] != '\n' {
		return nil, false
	}
	want := rest[:sha256.Size*2]
	payload := rest[sha256.Size*2+1:]
	sum := sha256.Sum256(payload)
	var got [sha256.Size * 2]byte
	hex.Encode(got[:], sum[:])
	if !bytes.Equal(want, got[:]) {
		return nil, false
	}
	return payload, true
}

// Put stores payload under k atomically: readers see the old entry or the
// new one, never a partial write. An existing entry is replaced.
func (c *Cache) Put(k Key, payload []byte) (err error) {
	final := c.path(k)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing cache entry %s: %w", k, err)
	}
	f, err := os.CreateTemp(dir, tmpPref+"*")
	if err != nil {
		return fmt.Errorf("writing cache entry %s: %w", k, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sum := sha256.Sum256(payload)
	var buf bytes.Buffer
	buf.Grow(len(magic) + sha256.Size*2 + 1 + len(payload))
	buf.WriteString(magic)
	buf.WriteString(hex.EncodeToString(sum[:]))
	buf.WriteByte('\n')
	buf.Write(payload)
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("writing cache entry %s: %w", k, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing cache entry %s: %w", k, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing cache entry %s: %w", k, err)
	}
	if err := os.Rename(f.Name(), final); err != nil {
		return fmt.Errorf("committing cache entry %s: %w", k, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the entry is already consistent
		d.Close()
	}
	return nil
}

// Stats describes the cache's contents.
type Stats struct {
	Dir     string    `json:"dir"`
	Entries int       `json:"entries"`
	Bytes   int64     `json:"bytes"`
	Corrupt int       `json:"corrupt"`
	Temp    int       `json:"temp_files"`
	Oldest  time.Time `json:"oldest,omitzero"`
	Newest  time.Time `json:"newest,omitzero"`
}

// Stats walks the cache and checks every entry.
func (c *Cache) Stats() (Stats, error) {
	st := Stats{Dir: c.dir}
	err := c.each(func(p string, fi fs.FileInfo, temp bool) error {
		if temp {
			st.Temp++
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, ok := decodeEntry(b); !ok {
			st.Corrupt++
			return nil
		}
		st.Entries++
		st.Bytes += fi.Size()
		if mt := fi.ModTime(); st.Oldest.IsZero() || mt.Before(st.Oldest) {
			st.Oldest = mt
		}
		if mt := fi.ModTime(); mt.After(st.Newest) {
			st.Newest = mt
		}
		return nil
	})
	return st, err
}

// PruneResult says what Prune removed.
type PruneResult struct {
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"`
	Kept    int   `json:"kept"`
}

// Prune removes entries last written more than olderThan ago (every entry
// when olderThan is zero), corrupt entries, and stale temporary files.
// Stat memos unused for olderThan go too.
func (c *Cache) Prune(olderThan time.Duration) (PruneResult, error) {
	var res PruneResult
	now := c.now()
	if memos, err := os.ReadDir(filepath.Join(c.dir, memoDir)); err == nil {
		for _, m := range memos {
			fi, err := m.Info()
			if err == nil && (olderThan == 0 || now.Sub(fi.ModTime()) > olderThan) {
				_ = os.Remove(filepath.Join(c.dir, memoDir, m.Name()))
			}
		}
	}
	err := c.each(func(p string, fi fs.FileInfo, temp bool) error {
		remove := false
		switch {
		case temp:
			remove = now.Sub(fi.ModTime()) > staleTemp
		case olderThan == 0 || now.Sub(fi.ModTime()) > olderThan:
			remove = true
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			_, ok := decodeEntry(b)
			remove = !ok
		}
		if !remove {
			res.Kept++
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		res.Removed++
		res.Bytes += fi.Size()
		return nil
	})
	return res, err
}

func (c *Cache) each(fn func(path string, fi fs.FileInfo, temp bool) error) error {
	root := filepath.Join(c.dir, layout)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed by a concurrent prune or rename
		}
		if err != nil {
			return err
		}
		return fn(p, fi, strings.HasPrefix(d.Name(), tmpPref))
	})
	if err != nil {
		return fmt.Errorf("walking cache %s: %w", c.dir, err)
	}
	return nil
}

// DefaultDir returns the cache directory to use: $CODEGENIE_CACHE_DIR when
// set, else the user cache directory's codegenie folder.
func DefaultDir() (string, error) {
	if d := os.Getenv("CODEGENIE_CACHE_DIR"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the user cache directory (set CODEGENIE_CACHE_DIR or --cache-dir): %w", err)
	}
	return filepath.Join(base, "codegenie"), nil
}
