//go:build !linux

package gatecontrol

import "net"

// unixPeer names a unix socket peer; without SO_PEERCRED all are one.
func unixPeer(*net.UnixConn) string { return "unix" }
