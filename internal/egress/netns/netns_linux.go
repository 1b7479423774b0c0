// Package netns makes the network namespace a build with egress runs in:
// its only interface is lo, and its only listener the egress proxy (see
// internal/egress and docs/adr/0012-build-egress.md). It is a package of its
// own so that what reads the allow-list rules (the plugin) does not import
// golang.org/x/sys/unix.
package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// Namespace is a network namespace made for one build: it holds only an
// interface "lo", which is up, and lives while a file is bind-mounted onto
// it, while a socket made in it is open, or while a process is in it.
type Namespace struct {
	// Path is the file the namespace is bind-mounted on, for
	// `buildah bud --network=ns:PATH` or `nsenter --net=PATH`.
	Path string

	once sync.Once
	err  error
}

// New makes a network namespace with lo up, bind-mounts it at
// dir/"netns" (a file that must not exist), and returns it with a TCP
// listener on 127.0.0.1:0 inside it. Connections to the listener come only
// from processes in the namespace; sockets that the caller makes later are
// in the caller's own namespace, so a Proxy serving the listener accepts in
// the namespace and dials out from the host's.
//
// It needs CAP_SYS_ADMIN (to unshare and mount). The calling goroutine is
// not moved: the work happens on a separate, locked OS thread, which goes
// back to the original namespace, or is ended by the runtime if it cannot.
// The caller owns both results: close the listener, and Close the Namespace to
// unmount and remove the file.
func New(dir string) (*Namespace, net.Listener, error) {
	path := filepath.Join(dir, "netns")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the network namespace's mount point: %w", err)
	}
	f.Close()
	n := &Namespace{Path: path}

	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := enterAndListen(path)
		done <- result{l, err}
	}()
	res := <-done
	if res.err != nil {
		if cerr := n.Close(); cerr != nil {
			res.err = errors.Join(res.err, cerr)
		}
		return nil, nil, res.err
	}
	return n, res.l, nil
}

// enterAndListen runs on its own goroutine. It locks the OS thread, moves it
// into a new network namespace, sets lo up, listens, bind-mounts the
// namespace at path, and moves the thread back. If moving back fails the
// thread stays locked, so the runtime ends it with the goroutine.
func enterAndListen(path string) (_ net.Listener, err error) {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("opening the current network namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("making a network namespace (needs CAP_SYS_ADMIN): %w", err)
	}
	// From here on the thread is in the new namespace: it goes back at the
	// end, or dies locked.
	back := func() {
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			err = errors.Join(err, fmt.Errorf("returning the thread to its network namespace: %w", serr))
			return // stay locked: the runtime ends the thread
		}
		runtime.UnlockOSThread()
	}
	defer back()

	if err := loUp(); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening in the build's network namespace: %w", err)
	}
	src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("bind-mounting the network namespace at %s: %w", path, err)
	}
	return l, nil
}

// loUp sets the loopback interface of the current thread's namespace up.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening a socket to set lo up: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}
	return nil
}

// Close unmounts the namespace and removes its file. The namespace itself
// ends when nothing else holds it (the listener, a process in it). Close is
// idempotent and returns the first call's error.
func (n *Namespace) Close() error {
	n.once.Do(func() {
		var errs []error
		if err := unix.Unmount(n.Path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting the network namespace at %s: %w", n.Path, err))
		}
		if err := os.Remove(n.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", n.Path, err))
		}
		n.err = errors.Join(errs...)
	})
	return n.err
}
