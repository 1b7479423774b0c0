package cache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func newCache(t *testing.T) *Cache {
	t.Helper()
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGetPutHitMiss(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	k := NewKey("p", "1", "v", []Input{{Path: "package.json", Digest: "sha256:aa"}})
	if _, ok, err := c.Get(k); ok || err != nil {
		t.Fatalf("Get on empty cache = ok %v, err %v; want a miss", ok, err)
	}
	payload := []byte(`{"probe":"p"}`)
	if err := c.Put(k, payload); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(k)
	if err != nil || !ok {
		t.Fatalf("Get after Put = ok %v, err %v", ok, err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatalf("Get = %q, want the exact bytes %q", got, payload)
	}
	other := NewKey("p", "2", "v", []Input{{Path: "package.json", Digest: "sha256:aa"}})
	if _, ok, _ := c.Get(other); ok {
		t.Fatal("a different key hit")
	}
}

func TestKeyCanonical(t *testing.T) {
	t.Parallel()
	a := []Input{{"a", "sha256:1"}, {"b", "sha256:2"}}
	b := []Input{{"b", "sha256:2"}, {"a", "sha256:1"}}
	if NewKey("p", "1", "v", a) != NewKey("p", "1", "v", b) {
		t.Error("input order changes the key")
	}
	base := NewKey("p", "1", "v", a)
	variants := map[string]Key{
		"probe name":    NewKey("q", "1", "v", a),
		"probe version": NewKey("p", "2", "v", a),
		"tool version":  NewKey("p", "1", "w", a),
		"digest":        NewKey("p", "1", "v", []Input{{"a", "sha256:9"}, {"b", "sha256:2"}}),
		"path":          NewKey("p", "1", "v", []Input{{"c", "sha256:1"}, {"b", "sha256:2"}}),
		"extra input":   NewKey("p", "1", "v", append(append([]Input{}, a...), Input{"c", "absent"})),
		"field shift":   NewKey("p1", "", "v", a),
	}
	for name, k := range variants {
		if k == base {
			t.Errorf("changing the %s does not change the key", name)
		}
	}
}

func TestCorruptEntryIsMissAndRewritten(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"probe":"p","facts":{}}`)
	corruptions := map[string]func([]byte) []byte{
		"flipped payload byte": func(b []byte) []byte { b[len(b)-2] ^= 0x20; return b },
		"flipped hash byte":    func(b []byte) []byte { b[len(magic)+3] ^= 0x01; return b },
		"truncated":            func(b []byte) []byte { return b[:len(b)-5] },
		"truncated header":     func(b []byte) []byte { return b[:10] },
		"empty":                func([]byte) []byte { return nil },
		"garbage":              func([]byte) []byte { return []byte("not a cache entry at all") },
		"appended":             func(b []byte) []byte { return append(b, 'x') },
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCache(t)
			k := NewKey("p", "1", "v", nil)
			if err := c.Put(k, payload); err != nil {
				t.Fatal(err)
			}
			p := c.path(k)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, corrupt(b), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, ok, err := c.Get(k); ok || err != nil {
				t.Fatalf("Get of corrupt entry = %q, ok %v, err %v; want a miss", got, ok, err)
			}
			st, err := c.Stats()
			if err != nil || st.Corrupt != 1 {
				t.Fatalf("Stats = %+v, %v; want one corrupt entry", st, err)
			}
			if err := c.Put(k, payload); err != nil {
				t.Fatal(err)
			}
			got, ok, err := c.Get(k)
			if !ok || err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("Get after rewrite = %q, ok %v, err %v", got, ok, err)
			}
		})
	}
}

func TestConcurrentPutGet(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	k := NewKey("p", "1", "v", nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := c.Put(k, bytes.Repeat([]byte{byte('a' + i)}, 4096)); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			got, ok, err := c.Get(k)
			if err != nil {
				t.Error(err)
				return
			}
			// A reader sees a whole entry or nothing, never a mix.
			if ok && !bytes.Equal(got, bytes.Repeat(got[:1], 4096)) {
				t.Errorf("torn read of %d bytes", len(got))
			}
		}()
	}
	wg.Wait()
	st, err := c.Stats()
	if err != nil || st.Entries != 1 || st.Temp != 0 || st.Corrupt != 0 {
		t.Fatalf("Stats after concurrent writes = %+v, %v", st, err)
	}
}

func TestPruneAndStats(t *testing.T) {
	t.Parallel()
	c := newCache(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	old, fresh := NewKey("old", "1", "v", nil), NewKey("fresh", "1", "v", nil)
	for _, k := range []Key{old, fresh} {
		if err := c.Put(k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	mtime := func(k Key, d time.Duration) {
		if err := os.Chtimes(c.path(k), now.Add(-d), now.Add(-d)); err != nil {
			t.Fatal(err)
		}
	}
	mtime(old, 48*time.Hour)
	mtime(fresh, time.Minute)
	stale := filepath.Join(filepath.Dir(c.path(old)), tmpPref+"stale")
	if err := os.WriteFile(stale, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, now.Add(-2*staleTemp), now.Add(-2*staleTemp)); err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats()
	if err != nil || st.Entries != 2 || st.Temp != 1 {
		t.Fatalf("Stats = %+v, %v; want 2 entries, 1 temp file", st, err)
	}
	res, err := c.Prune(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 2 || res.Kept != 1 {
		t.Fatalf("Prune = %+v; want the old entry and the stale temp file removed", res)
	}
	if _, ok, _ := c.Get(fresh); !ok {
		t.Error("Prune removed the fresh entry")
	}
	if _, ok, _ := c.Get(old); ok {
		t.Error("Prune kept the old entry")
	}
	if res, err := c.Prune(0); err != nil || res.Removed != 1 {
		t.Fatalf("Prune(0) = %+v, %v; want everything removed", res, err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("CODEGENIE_CACHE_DIR", "/some/where")
	if d, err := DefaultDir(); err != nil || d != "/some/where" {
		t.Fatalf("DefaultDir() = %q, %v", d, err)
	}
	t.Setenv("CODEGENIE_CACHE_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d, err := DefaultDir(); err != nil || d != "/xdg/codegenie" {
		t.Fatalf("DefaultDir() = %q, %v; want /xdg/codegenie", d, err)
	}
}

func ExampleNewKey() {
	k := NewKey("node_project", "1", "0.1.0", []Input{{Path: "package.json", Digest: "sha256:00"}})
	fmt.Println(len(k.String()))
	// Output: 64
}

// A relative directory is fixed against the working directory when the
// cache opens: the dependency folders it hands out are mounted into the
// module graph by path, and a relative one was refused there
// (`--cache-dir cache` failed every `gather --deps lockfile`).
func TestOpenRelativeDirIsAbsolute(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	c, err := Open("cache")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(wd, "cache")
	if got := c.Dir(); got != want {
		t.Fatalf("Dir() = %q, want %q", got, want)
	}
	t.Chdir(t.TempDir())
	if got := c.Dir(); got != want {
		t.Fatalf("after a change of directory, Dir() = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(want, layout)); err != nil {
		t.Fatalf("the cache was not made where asked: %v", err)
	}
}
