//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import "os"

// lock does nothing where flock is unavailable: one writer per file is then
// the caller's duty.
func lock(*os.File) error { return nil }
