package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// StatMemo remembers the content digest of files by their identity: device,
// inode, size, modification and change times. It saves re-reading every
// declared input of an unchanged repository on a warm run; keys are still
// content digests. The kernel updates a file's change time on every write,
// and no user can set it, so a file whose identity is unchanged has unchanged
// content, with one exception that the memo guards against as git's index
// does: timestamps have the kernel's coarse granularity, so a file written
// twice within one tick keeps its times. Entries for files changed less than
// RacyWindow before they were recorded are therefore never stored, and such
// files are hashed every run.
//
// A StatMemo is safe for concurrent use.
type StatMemo struct {
	path    string
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]memoEntry
	dirty   bool
}

// RacyWindow is how recently changed a file may be and still be memoised.
const RacyWindow = 2 * time.Second

// FileID is a file's identity as stat reports it.
type FileID struct {
	Dev, Ino uint64
	Size     int64
	MtimeNs  int64
	CtimeNs  int64
}

type memoEntry struct {
	id     FileID
	digest string
}

// Memo opens the stat memo of the repository at root. A missing or
// corrupt memo file is an empty memo.
func (c *Cache) Memo(root string) *StatMemo {
	sum := sha256.Sum256([]byte(root))
	m := &StatMemo{
		path:    filepath.Join(c.dir, memoDir, hex.EncodeToString(sum[:16])),
		now:     c.now,
		entries: map[string]memoEntry{},
	}
	m.load()
	return m
}

const (
	memoMagic = "codegenie-stat-memo/v1"
	memoDir   = "memo-v1"
)

func (m *StatMemo) load() {
	b, err := os.ReadFile(m.path)
	if err != nil {
		return
	}
	body, ok := bytes.CutPrefix(b, []byte(memoMagic+"\n"))
	if !ok {
		return
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := bytes.Split(sc.Bytes(), []byte{0})
		if len(f) != 7 {
			m.entries = map[string]memoEntry{} // corrupt: start over
			return
		}
		var id FileID
		var nums [5]int64
		for i := range nums {
			n, err := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err != nil {
				m.entries = map[string]memoEntry{}
				return
			}
			nums[i] = n
		}
		id.Dev, id.Ino, id.Size, id.MtimeNs, id.CtimeNs = uint64(nums[0]), uint64(nums[1]), nums[2], nums[3], nums[4]
		m.entries[string(f[0])] = memoEntry{id: id, digest: string(f[6])}
	}
}

// Lookup returns the digest recorded for path if its identity is id.
func (m *StatMemo) Lookup(path string, id FileID) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[path]
	if !ok || e.id != id {
		return "", false
	}
	return e.digest, true
}

// Record remembers digest for path with identity id, unless the file
// changed within RacyWindow.
func (m *StatMemo) Record(path string, id FileID, digest string) {
	now := m.now().UnixNano()
	if now-max(id.MtimeNs, id.CtimeNs) < int64(RacyWindow) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.entries[path]; ok && e.id == id && e.digest == digest {
		return
	}
	m.entries[path] = memoEntry{id: id, digest: digest}
	m.dirty = true
}

// Save writes the memo atomically if it changed. Only the paths in keep
// are written, so entries of deleted files do not pile up.
func (m *StatMemo) Save(keep map[string]bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirty {
		return nil
	}
	var buf bytes.Buffer
	buf.WriteString(memoMagic + "\n")
	for p, e := range m.entries {
		if keep != nil && !keep[p] {
			continue
		}
		if bytes.ContainsAny([]byte(p), "\x00\n") {
			continue
		}
		fmt.Fprintf(&buf, "%s\x00%d\x00%d\x00%d\x00%d\x00%d\x00%s\n", p, e.id.Dev, e.id.Ino, e.id.Size, e.id.MtimeNs, e.id.CtimeNs, e.digest)
	}
	if err := os.MkdirAll(filepath.Dir(m.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(m.path), tmpPref+"*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), m.path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	m.dirty = false
	return nil
}
