package fleet

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd when the worker dies, so that a
// worker killed mid-fetch leaves no git writing into its checkout cache.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
