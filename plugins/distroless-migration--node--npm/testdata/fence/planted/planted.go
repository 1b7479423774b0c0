// Package planted breaks the ADR-0002 fence on purpose, so that the fence
// test can prove it fails. It lives under testdata: never built.
package planted

import (
	"os"
	"os/exec"
	sys "syscall"
)

// Run starts processes in every way the fence forbids.
func Run() error {
	if err := exec.Command("sh", "-c", "true").Run(); err != nil {
		return err
	}
	start := os.StartProcess
	_, _ = start("/bin/true", nil, &os.ProcAttr{})
	_, _, _ = sys.RawSyscall(sys.SYS_EXECVE, 0, 0, 0)
	return sys.Exec("/bin/sh", []string{"sh"}, nil)
}
