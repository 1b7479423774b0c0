package regfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// unblockAfter opens the FIFO at path for writing once d has passed
// without done being closed, which releases a reader blocked opening it,
// and reports whether it had to.
func unblockAfter(t *testing.T, path string, d time.Duration, done <-chan struct{}) <-chan bool {
	t.Helper()
	had := make(chan bool, 1)
	go func() {
		select {
		case <-done:
			had <- false
		case <-time.After(d):
			if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			had <- true
		}
	}()
	return had
}

func TestSpecialFilesAreNotRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	opens := map[string]func(name string) error{
		"Open":     func(name string) error { _, err := Open(filepath.Join(dir, name)); return err },
		"OpenIn":   func(name string) error { _, err := OpenIn(root, name); return err },
		"ReadFile": func(name string) error { _, err := ReadFile(filepath.Join(dir, name), 1<<10); return err },
		"OpenFD":   func(name string) error { _, _, err := OpenFD(filepath.Join(dir, name), 0); return err },
	}
	for _, tt := range []struct {
		name string
		want string
	}{
		{"fifo", "a named pipe (FIFO), not a regular file"},
		{"sock", "a socket, not a regular file"},
		{"dir", "a directory, not a regular file"},
	} {
		for how, open := range opens {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				done := make(chan struct{})
				had := unblockAfter(t, filepath.Join(dir, "fifo"), 10*time.Second, done)
				err := open(tt.name)
				close(done)
				if <-had {
					t.Fatalf("%s blocked on the FIFO", how)
				}
				var nr *NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) {
					t.Fatalf("error %v, want a *NotRegularError", err)
				}
				var pe *fs.PathError
				if !errors.As(err, &pe) || !strings.HasSuffix(pe.Path, tt.name) {
					t.Errorf("error %v does not name the file", err)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q, want it to say %q", err, tt.want)
				}
			})
		}
	}
}

func TestReadFileBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadFile(limit 5) = %q, %v; want the file", b, err)
	}
	_, err := ReadFile(p, 4)
	var tl *TooLargeError
	var pe *fs.PathError
	if !errors.As(err, &tl) || tl.Limit != 4 || !errors.Is(err, ErrTooLarge) || !errors.As(err, &pe) || pe.Path != p {
		t.Errorf("ReadFile(limit 4) error %v, want a *TooLargeError naming the file", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 4); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) error %v, want fs.ErrNotExist", err)
	}
	fd, st, err := OpenFD(p, syscall.O_NOFOLLOW)
	if err != nil || st.Size != 5 {
		t.Fatalf("OpenFD(regular) = %v, %v", st, err)
	}
	syscall.Close(fd)
}
