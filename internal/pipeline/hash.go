package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"runtime"
	"sync"
	"syscall"

	"github.com/codegenie/codegenie/internal/cache"
	"github.com/codegenie/codegenie/internal/regfile"
)

// Hashing uses plain system calls: os.File registers every open file with
// the poller, which costs a system call per declared input, and a large
// repository declares tens of thousands.

var bufPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func fileID(st *syscall.Stat_t) cache.FileID {
	return cache.FileID{
		Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// statFile returns a file's identity, following symlinks.
func statFile(path string) (cache.FileID, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return cache.FileID{}, &pathError{"stat", err}
		}
		return fileID(&st), nil
	}
}

// hashFile returns the SHA-256 of a regular file's content and its
// identity as of the read. It opens without blocking: anything but a
// regular file (a FIFO would block the read for ever) is a
// *regfile.NotRegularError, and a directory is EISDIR.
func hashFile(path string) (string, cache.FileID, error) {
	fd, st, err := regfile.OpenFD(path, 0)
	if nr, ok := errors.AsType[*regfile.NotRegularError](err); ok {
		if nr.Type.IsDir() {
			return "", cache.FileID{}, &pathError{"read", syscall.EISDIR}
		}
		return "", cache.FileID{}, nr
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return "", cache.FileID{}, &pathError{pe.Op, pe.Err}
		}
		return "", cache.FileID{}, err
	}
	defer func() { _ = syscall.Close(fd) }()
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return "", cache.FileID{}, &pathError{"read", err}
		}
		if n == 0 {
			break
		}
		h.Write(buf[:n])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), fileID(st), nil
}

type pathError struct {
	op  string
	err error
}

func (e *pathError) Error() string { return e.op + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// hashWorkers bounds concurrent hashing: it is system-call bound, so a
// little more than the cores.
func hashWorkers() int { return runtime.GOMAXPROCS(0) * 2 }
