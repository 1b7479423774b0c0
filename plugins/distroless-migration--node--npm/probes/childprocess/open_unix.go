//go:build unix

package childprocess

import (
	"io"
	"io/fs"
	"syscall"
)

// file is a file read with plain system calls. os.File registers every
// file it opens with the runtime poller, which on Linux costs several
// system calls per open even for regular files; over tens of thousands of
// files that is most of the probe's reading time.
type file struct {
	fd   int
	name string
}

// openNoFollow opens name for reading unless its last element is a
// symlink, which fails with ELOOP: symlinks are resolved and checked
// separately.
func openNoFollow(name string) (file, error) {
	return openFile(name, syscall.O_NOFOLLOW)
}

// openFollow opens name for reading, following symlinks.
func openFollow(name string) (file, error) { return openFile(name, 0) }

func openFile(name string, flags int) (file, error) {
	for {
		// O_NONBLOCK: opening a FIFO planted in a repository must not
		// block; regular files ignore it.
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|flags, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return file{fd: -1}, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return file{fd: fd, name: name}, nil
	}
}

// stat returns the file's size and whether it is a regular file.
func (f file) stat() (int64, bool, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Fstat(f.fd, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, false, &fs.PathError{Op: "stat", Path: f.name, Err: err}
		}
		return st.Size, st.Mode&syscall.S_IFMT == syscall.S_IFREG, nil
	}
}

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
