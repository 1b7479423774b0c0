package gatecontrol

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func digestOf(t *testing.T, dir string, maxBytes int64, maxFiles int) string {
	t.Helper()
	d, err := workspaceDigest(t.Context(), dir, maxBytes, maxFiles)
	if err != nil {
		t.Fatalf("workspaceDigest: %v", err)
	}
	return d
}

func TestWorkspaceDigest(t *testing.T) {
	t.Parallel()
	files := map[string]string{"a": "alpha", "sub/b": "beta", "sub/deeper/c": ""}
	base := digestOf(t, writeTree(t, files), 1<<20, 100)
	if !strings.HasPrefix(base, digestFull) {
		t.Fatalf("digest %q lacks %q", base, digestFull)
	}
	if again := digestOf(t, writeTree(t, files), 1<<20, 100); again != base {
		t.Errorf("same tree in another directory: %s, want %s", again, base)
	}
	changes := map[string]func(t *testing.T, dir string){
		"content": func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "a"), []byte("alphA"), 0o644) },
		"mode":    func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "a"), 0o755) },
		"rename":  func(t *testing.T, dir string) { os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "a2")) },
		"new dir": func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "empty"), 0o755) },
		"symlink": func(t *testing.T, dir string) { os.Symlink("/etc/passwd", filepath.Join(dir, "link")) },
		// Moving bytes between a name and a content must not collide.
		"boundary": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a"))
			os.WriteFile(filepath.Join(dir, "aalpha"), nil, 0o644)
		},
	}
	for name, change := range changes {
		dir := writeTree(t, files)
		change(t, dir)
		if got := digestOf(t, dir, 1<<20, 100); got == base {
			t.Errorf("%s: digest unchanged", name)
		}
	}
}

func TestWorkspaceDigestBounds(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"a": "0123456789", "b": "0123456789", "c": "x"})
	if d := digestOf(t, dir, 15, 100); !strings.HasPrefix(d, digestMeta) {
		t.Errorf("over the content budget: %s, want %s...", d, digestMeta)
	}
	meta := digestOf(t, dir, 15, 100)
	// Past the budget, a same-size edit with the same mtime is not seen:
	// that is what the prefix warns of.
	fi, _ := os.Stat(filepath.Join(dir, "b"))
	os.WriteFile(filepath.Join(dir, "b"), []byte("9876543210"), 0o644)
	os.Chtimes(filepath.Join(dir, "b"), fi.ModTime(), fi.ModTime())
	if got := digestOf(t, dir, 15, 100); got != meta {
		t.Errorf("metadata-only file changed the digest: %s vs %s", got, meta)
	}
	os.Chtimes(filepath.Join(dir, "b"), fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second))
	if got := digestOf(t, dir, 15, 100); got == meta {
		t.Error("an mtime change of a metadata-only file left the digest unchanged")
	}
	if d := digestOf(t, dir, 1<<20, 2); !strings.HasPrefix(d, digestPartial) {
		t.Errorf("over the entry bound: %s, want %s...", d, digestPartial)
	}
}

func TestWorkspaceDigestDoesNotOpenSpecialFiles(t *testing.T) {
	t.Parallel()
	dir := writeTree(t, map[string]string{"a": "x"})
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- digestOf(t, dir, 1<<20, 100) }()
	select {
	case d := <-done:
		if !strings.HasPrefix(d, digestFull) {
			t.Errorf("digest %s", d)
		}
	case <-time.After(waitLimit):
		t.Fatalf("the digest did not return within %v: it blocked on the fifo", waitLimit)
	}
	if _, err := workspaceDigest(t.Context(), filepath.Join(dir, "a"), 1<<20, 100); err == nil {
		t.Error("a file as the workspace: no error")
	}
}

func TestReadSentDescribesBuilds(t *testing.T) {
	t.Parallel()
	s := readSent([]byte(`{"role":"probe","workspace":{"dir":"/w"},"build":{"dockerfile":"Dockerfile","targets":["builder",""],"boot":true}}`))
	want := []string{"(build)", "Dockerfile", "--target=builder", "--target=(final)", "(boot)"}
	if s.Role != "probe" || strings.Join(s.Argv, " ") != strings.Join(want, " ") {
		t.Fatalf("readSent = %+v, want role probe and argv %q", s, want)
	}
}
