package portfolio

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
)

// treeDigests computes, once per directory, a digest of the files under it:
// each path, size, mode and modification time, .git excluded. It is a cheap
// "did anything change" check; what a changed file means is the content
// cache's business, so a touched but unchanged file reruns a service that
// the cache then answers. Safe for concurrent use.
type treeDigests struct {
	mu sync.Mutex
	m  map[string]*treeDigest
}

type treeDigest struct {
	once sync.Once
	sum  string
	err  error
}

func (t *treeDigests) of(dir string) (string, error) {
	t.mu.Lock()
	if t.m == nil {
		t.m = map[string]*treeDigest{}
	}
	d, ok := t.m[dir]
	if !ok {
		d = &treeDigest{}
		t.m[dir] = d
	}
	t.mu.Unlock()
	d.once.Do(func() { d.sum, d.err = walkDigest(dir) })
	return d.sum, d.err
}

func walkDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".git" && p != dir {
			return filepath.SkipDir
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00%o\x00%d\n", filepath.ToSlash(rel), fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// inputsDigest is a service's inputs digest: its selection, the settings
// that change its answer, and its build context's files.
func inputsDigest(s Service, settings, tree string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%q", s.ID, s.Dir, s.Context, s.Dockerfile, s.Target, settings, tree, s.ProbePaths)
	return hex.EncodeToString(h.Sum(nil))
}
