package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// DefaultTTL is how long a Memo trusts a resolved digest.
const DefaultTTL = 10 * time.Minute

// MemoFile is the name of the memo file in a cache directory.
const MemoFile = "image-digests-v1.json"

const (
	memoVersion  = 1
	memoMaxBytes = 1 << 20
	memoMaxItems = 512
)

// Memo is a Resolver that remembers the digest each tag resolved to, in a
// small JSON file, for TTL: within it, a later process resolves the same
// reference without a registry round trip. An entry is keyed by the
// normalised reference and Config (the mirrors it was resolved through),
// so changing mirrors is a miss. A reference pinned by digest goes
// straight to Resolver and is not recorded.
//
// The file is rewritten atomically (a temporary file, synced and renamed)
// after each resolution, merged with what other processes wrote since it
// was read. An unreadable, oversized or malformed file, and any entry in
// it that does not hold a sha256 digest, are misses, never errors; the
// next write replaces them. Failing to write the file does not fail the
// resolution.
//
// A Memo is safe for concurrent use; it must not be copied after first
// use. Resolver and Path are required.
type Memo struct {
	// Resolver answers misses.
	Resolver Resolver
	// Path is the memo file, typically MemoFile in the cache directory.
	Path string
	// Config names Resolver's configuration, such as Mirrors.String().
	Config string
	// TTL is how long an entry is trusted; zero means DefaultTTL.
	TTL time.Duration
	// Refresh resolves every reference anew (recording the answers), as
	// gather --refresh-images does.
	Refresh bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger reports a memo that could not be written; nil is silent.
	Logger *slog.Logger

	mu      sync.Mutex
	loaded  bool
	entries map[string]memoEntry
}

var _ Resolver = (*Memo)(nil)

type memoEntry struct {
	Ref      string    `json:"ref"`
	Config   string    `json:"config"`
	Digest   string    `json:"digest"`
	Resolved time.Time `json:"resolved_at"`
}

type memoDoc struct {
	Version int         `json:"version"`
	Entries []memoEntry `json:"entries"`
}

// Digest returns ref's digest from the memo when an entry younger than TTL
// holds it, and otherwise asks Resolver and records the answer. Errors are
// not recorded.
func (m *Memo) Digest(ctx context.Context, ref string) (string, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return m.Resolver.Digest(ctx, ref)
	}
	if _, pinned := parsed.(name.Digest); pinned {
		return m.Resolver.Digest(ctx, ref)
	}
	k := memoKey(parsed.Name(), m.Config)
	if !m.Refresh {
		m.mu.Lock()
		m.load()
		e, ok := m.entries[k]
		fresh := ok && m.fresh(e, m.now())
		m.mu.Unlock()
		if fresh {
			return e.Digest, nil
		}
	}
	d, err := m.Resolver.Digest(ctx, ref)
	if err != nil {
		return "", err
	}
	m.record(memoEntry{Ref: parsed.Name(), Config: m.Config, Digest: d, Resolved: m.now()})
	return d, nil
}

func memoKey(ref, config string) string { return ref + "\x00" + config }

func (m *Memo) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Memo) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return DefaultTTL
}

// fresh reports whether e may answer at now. An entry from the future (a
// clock set back) is not trusted.
func (m *Memo) fresh(e memoEntry, now time.Time) bool {
	age := now.Sub(e.Resolved)
	return age >= 0 && age < m.ttl()
}

// load reads the file once. m.mu is held.
func (m *Memo) load() {
	if m.loaded {
		return
	}
	m.loaded = true
	m.entries = readMemo(m.Path)
}

// readMemo returns the valid entries of the file at path, or none.
func readMemo(path string) map[string]memoEntry {
	out := map[string]memoEntry{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, memoMaxBytes+1))
	if err != nil || len(b) > memoMaxBytes {
		return out
	}
	var doc memoDoc
	if json.Unmarshal(b, &doc) != nil || doc.Version != memoVersion {
		return out
	}
	for _, e := range doc.Entries {
		if e.Ref == "" || !validDigest(e.Digest) || e.Resolved.IsZero() {
			continue
		}
		k := memoKey(e.Ref, e.Config)
		if old, ok := out[k]; !ok || e.Resolved.After(old.Resolved) {
			out[k] = e
		}
	}
	return out
}

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	hex, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, c := range hex {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// record adds e and rewrites the file, merged with the entries other
// processes wrote since it was read; expired entries are dropped, and the
// newest memoMaxItems kept.
func (m *Memo) record(e memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.load()
	now := m.now()
	merged := readMemo(m.Path)
	for k, old := range m.entries {
		if cur, ok := merged[k]; !ok || old.Resolved.After(cur.Resolved) {
			merged[k] = old
		}
	}
	merged[memoKey(e.Ref, e.Config)] = e
	doc := memoDoc{Version: memoVersion}
	for _, x := range merged {
		if m.fresh(x, now) {
			doc.Entries = append(doc.Entries, x)
		}
	}
	sort.Slice(doc.Entries, func(i, j int) bool {
		a, b := doc.Entries[i], doc.Entries[j]
		if !a.Resolved.Equal(b.Resolved) {
			return a.Resolved.After(b.Resolved)
		}
		return memoKey(a.Ref, a.Config) < memoKey(b.Ref, b.Config)
	})
	if len(doc.Entries) > memoMaxItems {
		doc.Entries = doc.Entries[:memoMaxItems]
	}
	m.entries = map[string]memoEntry{}
	for _, x := range doc.Entries {
		m.entries[memoKey(x.Ref, x.Config)] = x
	}
	if err := writeMemo(m.Path, doc); err != nil && m.Logger != nil {
		m.Logger.Warn("writing the image digest memo", "path", m.Path, "err", err)
	}
}

func writeMemo(path string, doc memoDoc) (err error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding image digest memo: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("writing image digest memo: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing image digest memo: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			if rerr := os.Remove(tmp.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("writing image digest memo: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing image digest memo: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing image digest memo: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("renaming image digest memo: %w", err)
	}
	return nil
}
