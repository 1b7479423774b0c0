package gatecontrol

import (
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// unixPeer names a unix socket peer by the uid the kernel reports for it.
func unixPeer(c *net.UnixConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return "unix"
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return "unix"
	}
	return "unix:uid=" + strconv.FormatUint(uint64(cred.Uid), 10)
}
