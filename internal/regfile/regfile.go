// Package regfile opens and reads files that someone else put in place (a
// repository checkout, an image's root filesystem) so that no such file
// can hang or exhaust the reader. It opens without blocking, so a FIFO, a
// socket or a device opens at once instead of waiting for a writer; it
// checks with fstat that what it opened is a regular file before it reads,
// and answers anything else with a *NotRegularError; and it bounds what it
// reads.
//
// It does not confine paths: a caller that must stay inside a directory
// opens through an *os.Root (OpenIn), or checks symlinks itself.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is matched (errors.Is) by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("file too large")

// NotRegularError reports a file that is not a regular file, such as a
// FIFO, a socket, a device or a directory. It was not read. Callers wrap
// it in an *fs.PathError that names the file.
type NotRegularError struct {
	// Type is the file's type bits (fs.FileMode.Type).
	Type fs.FileMode
}

func (e *NotRegularError) Error() string { return Describe(e.Type) + ", not a regular file" }

// Is makes every NotRegularError match ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// TooLargeError reports a file larger than a read's limit. Callers wrap it
// in an *fs.PathError that names the file.
type TooLargeError struct {
	Limit int64
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("larger than %d bytes", e.Limit) }

// Is makes every TooLargeError match ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Describe names a file type in words, such as "a named pipe (FIFO)".
func Describe(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	case t.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// openFlags open for reading without blocking (a FIFO with no writer opens
// at once) and without making a terminal the controlling one. A regular
// file ignores O_NONBLOCK.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// Open opens the regular file name for reading, following symlinks. Any
// other kind of file is closed unread and reported as an *fs.PathError
// wrapping a *NotRegularError.
func Open(name string) (*os.File, error) {
	f, err := os.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, notRegularOr(err, name, func() (fs.FileInfo, error) { return os.Stat(name) })
	}
	return check(f, name)
}

// OpenIn is Open for name inside root: os.Root's rules keep the lookup,
// symlinks included, inside it.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, notRegularOr(err, name, func() (fs.FileInfo, error) { return root.Stat(name) })
	}
	return check(f, name)
}

// OpenInRoot is OpenIn for a root directory opened for this one call, as
// os.OpenInRoot is for os.Root.Open.
func OpenInRoot(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return OpenIn(root, name)
}

// notRegularOr turns the error of opening a socket (ENXIO: sockets cannot
// be opened) into a *NotRegularError, and returns others as they are.
func notRegularOr(err error, name string, stat func() (fs.FileInfo, error)) error {
	if !errors.Is(err, syscall.ENXIO) && !errors.Is(err, syscall.EOPNOTSUPP) {
		return err
	}
	if fi, serr := stat(); serr == nil && !fi.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Type: fi.Mode().Type()}}
	}
	return err
}

// check returns f if it is a regular file; otherwise it closes f.
func check(f *os.File, name string) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Type: fi.Mode().Type()}}
	}
	return f, nil
}

// ReadAll reads r to its end, at most limit bytes; a longer stream is a
// *TooLargeError, never a silent truncation.
func ReadAll(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Limit: limit}
	}
	return b, nil
}

// ReadFile opens name with Open and reads it with ReadAll. Errors are
// *fs.PathErrors that name the file.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNamed(f, name, limit)
}

// ReadFileIn opens name with OpenIn and reads it with ReadAll.
func ReadFileIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := OpenIn(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNamed(f, name, limit)
}

func readNamed(f *os.File, name string, limit int64) ([]byte, error) {
	b, err := ReadAll(f, limit)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

// OpenFD is Open for callers that read with plain system calls (os.File
// registers every file with the runtime poller, which costs system calls a
// reader of many thousands of files notices). flags add to the open flags,
// such as syscall.O_NOFOLLOW. It returns the descriptor, which the caller
// closes, and the file's status as of the open.
func OpenFD(name string, flags int) (int, *syscall.Stat_t, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, openFlags|syscall.O_CLOEXEC|flags, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return -1, nil, notRegularOr(&fs.PathError{Op: "open", Path: name, Err: err}, name, func() (fs.FileInfo, error) { return os.Stat(name) })
	}
	st := new(syscall.Stat_t)
	for {
		err = syscall.Fstat(fd, st)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = syscall.Close(fd)
		return -1, nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		_ = syscall.Close(fd)
		return -1, nil, &fs.PathError{Op: "open", Path: name, Err: &NotRegularError{Type: typeOf(st.Mode)}}
	}
	return fd, st, nil
}

// typeOf converts a stat(2) mode's type bits to fs.FileMode's.
func typeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
