//go:build unix

package childprocess

import (
	"io"
	"io/fs"
	"syscall"

	"github.com/codegenie/codegenie/internal/regfile"
)

// file is a regular file read with plain system calls. os.File registers
// every file it opens with the runtime poller, which on Linux costs several
// system calls per open even for regular files; over tens of thousands of
// files that is most of the probe's reading time.
type file struct {
	fd   int
	name string
	size int64
}

// openNoFollow opens name for reading unless its last element is a
// symlink, which fails with ELOOP: symlinks are resolved and checked
// separately.
func openNoFollow(name string) (file, error) {
	return openFile(name, syscall.O_NOFOLLOW)
}

// openFollow opens name for reading, following symlinks.
func openFollow(name string) (file, error) { return openFile(name, 0) }

// openFile opens name through regfile.OpenFD: without blocking (a FIFO
// planted in a repository must not block), and only a regular file;
// anything else is an error matching regfile.ErrNotRegular.
func openFile(name string, flags int) (file, error) {
	fd, st, err := regfile.OpenFD(name, flags)
	if err != nil {
		return file{fd: -1}, err
	}
	return file{fd: fd, name: name, size: st.Size}, nil
}

// stat returns the file's size as of the open, and that it is a regular
// file (openFile opens no other).
func (f file) stat() (int64, bool, error) { return f.size, true, nil }

// Read reads like io.Reader: 0, io.EOF at the end.
func (f file) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(f.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f file) Close() error { return syscall.Close(f.fd) }
