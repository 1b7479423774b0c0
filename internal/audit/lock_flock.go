//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockPatience is how long lock waits for a lock someone else holds. A
// child that this process forks between its fork and its exec holds a
// copy of every open descriptor, the log's and so its flock, for an
// instant; a real second writer holds it for as long as it runs.
const lockPatience = 2 * time.Second

// lock takes an exclusive flock on f, waiting lockPatience at most for a
// holder to let go.
func lock(f *os.File) error {
	deadline := time.Now().Add(lockPatience)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			if time.Now().After(deadline) {
				return ErrLocked
			}
			time.Sleep(10 * time.Millisecond)
		default:
			return err
		}
	}
}
