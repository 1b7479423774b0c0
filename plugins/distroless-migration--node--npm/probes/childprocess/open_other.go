//go:build !unix

package childprocess

import (
	"os"
	"path/filepath"
	"syscall"
)

// file is an open file.
type file struct{ *os.File }

// openNoFollow opens name for reading unless it is a symlink, which is
// reported as ELOOP as on Unix: symlinks are resolved and checked
// separately.
func openNoFollow(name string) (file, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return file{}, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return file{}, &os.PathError{Op: "open", Path: filepath.Clean(name), Err: syscall.ELOOP}
	}
	return openFollow(name)
}

// openFollow opens name for reading, following symlinks.
func openFollow(name string) (file, error) {
	f, err := os.Open(name)
	return file{f}, err
}

// stat returns the file's size and whether it is a regular file.
func (f file) stat() (int64, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	return fi.Size(), fi.Mode().IsRegular(), nil
}
