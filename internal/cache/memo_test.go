package cache

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func idOf(t *testing.T, p string) FileID {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
}

func TestStatMemo(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	repo := t.TempDir()
	p := filepath.Join(repo, "a.js")
	if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := idOf(t, p)

	// A file changed just now is racy: not recorded.
	c.now = func() time.Time { return time.Unix(0, id.CtimeNs).Add(RacyWindow / 2) }
	m := c.Memo(repo)
	m.Record("a.js", id, "sha256:one")
	if _, ok := m.Lookup("a.js", id); ok {
		t.Fatal("a file changed within the racy window was memoised")
	}

	// Later it is recorded, saved, and found by a new memo.
	c.now = func() time.Time { return time.Unix(0, id.CtimeNs).Add(2 * RacyWindow) }
	m = c.Memo(repo)
	m.Record("a.js", id, "sha256:one")
	if err := m.Save(map[string]bool{"a.js": true}); err != nil {
		t.Fatal(err)
	}
	m2 := c.Memo(repo)
	if dg, ok := m2.Lookup("a.js", id); !ok || dg != "sha256:one" {
		t.Fatalf("Lookup after reload = %q, %v", dg, ok)
	}

	// Same size, mtime restored: the change time still moves. The edit is
	// made again until it has moved: the file system's clock may tick
	// coarsely, and a fast machine edits within one tick.
	old := time.Unix(0, id.MtimeNs)
	var id2 FileID
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Millisecond) {
		if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		if id2 = idOf(t, p); id2.CtimeNs != id.CtimeNs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("waited 3m for an edit to move the file's change time")
		}
	}
	if id2.Size != id.Size || id2.MtimeNs != id.MtimeNs {
		t.Fatalf("test setup: size or mtime differ: %+v vs %+v", id2, id)
	}
	if _, ok := m2.Lookup("a.js", id2); ok {
		t.Fatal("an in-place edit with the mtime restored still hit the memo")
	}

	// Another repository has its own memo; a corrupt memo is empty.
	if _, ok := c.Memo(t.TempDir()).Lookup("a.js", id); ok {
		t.Fatal("another repository's memo hit")
	}
	if err := os.WriteFile(m2.path, []byte("codegenie-stat-memo/v1\ngarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Memo(repo).Lookup("a.js", id); ok {
		t.Fatal("a corrupt memo hit")
	}
	st, err := c.Stats()
	if err != nil || st.Corrupt != 0 {
		t.Fatalf("the memo counts as a cache entry: %+v, %v", st, err)
	}
}
