package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"runtime"
	"sync"
	"syscall"

	"github.com/codegenie/codegenie/internal/cache"
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

// hashFile returns the SHA-256 of a file's content and its identity as
// of the read.
func hashFile(path string) (string, cache.FileID, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", cache.FileID{}, &pathError{"open", err}
	}
	defer func() { _ = syscall.Close(fd) }()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", cache.FileID{}, &pathError{"stat", err}
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return "", cache.FileID{}, &pathError{"read", syscall.EISDIR}
	}
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
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), fileID(&st), nil
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
