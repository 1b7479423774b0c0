package netns

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/egress"
)

// needSysAdmin skips a test when the process lacks CAP_SYS_ADMIN, which
// making and mounting a network namespace needs.
func needSysAdmin(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if caps&(1<<unix.CAP_SYS_ADMIN) == 0 {
				t.Skip("skipping: the process lacks CAP_SYS_ADMIN, which making and mounting a network namespace needs")
			}
			return
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
}

// inNetns runs f on a locked OS thread that has joined the namespace at
// path; the thread is thrown away afterwards.
func inNetns(t *testing.T, path string, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("joining %s: %w", path, err)
			return
		}
		f()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func mounted(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

func TestNetnsIsolatesTheListener(t *testing.T) {
	needSysAdmin(t)
	t.Parallel()
	dir := t.TempDir()
	ns, l, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	defer l.Close()
	if !mounted(t, ns.Path) {
		t.Fatalf("%s is not a mount point", ns.Path)
	}
	addr := l.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		t.Fatalf("listener on %v, want loopback", addr)
	}

	// Every connection the listener accepts is told a secret: whoever
	// reads it reached the listener.
	b := make([]byte, 16)
	rand.Read(b)
	secret := hex.EncodeToString(b)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, secret)
			c.Close()
		}
	}()

	// From the host's namespace, 127.0.0.1 at that port is not the
	// listener: refused, or someone else's.
	if c, err := net.DialTimeout("tcp", addr.String(), waitFor); err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, _ := io.ReadAll(io.LimitReader(c, int64(len(secret))))
		c.Close()
		if string(got) == secret {
			t.Fatal("the namespace's listener was reached from the host's namespace")
		}
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialling %v from the host: %v, want connection refused", addr, err)
	}

	// A host listener, which the namespace must not reach.
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()

	inNetns(t, ns.Path, func() {
		c, err := net.DialTimeout("tcp", addr.String(), waitFor)
		if err != nil {
			t.Errorf("dialling the listener from inside the namespace: %v", err)
		} else {
			c.SetReadDeadline(time.Now().Add(waitFor))
			got, _ := io.ReadAll(c)
			c.Close()
			if string(got) != secret {
				t.Errorf("inside the namespace, %v answered %q", addr, got)
			}
		}
		ifs, err := net.Interfaces()
		if err != nil {
			t.Errorf("listing interfaces: %v", err)
		} else if len(ifs) != 1 || ifs[0].Name != "lo" || ifs[0].Flags&net.FlagUp == 0 {
			t.Errorf("interfaces in the namespace: %+v, want only lo, up", ifs)
		}
		if c, err := net.DialTimeout("tcp", host.Addr().String(), waitFor); err == nil {
			c.Close()
			t.Errorf("the host's listener %v was reached from the namespace", host.Addr())
		} else if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dialling the host's listener from the namespace: %v, want connection refused", err)
		}
		// No route out at all (a documentation address: nothing can leave).
		if _, err := net.DialTimeout("udp", "192.0.2.1:53", waitFor); !errors.Is(err, syscall.ENETUNREACH) {
			t.Errorf("dialling out of the namespace: %v, want network unreachable", err)
		}
	})

	// A process joins it by path too, as buildah does.
	if nsenter, err := exec.LookPath("nsenter"); err == nil {
		out, err := exec.Command(nsenter, "--net="+ns.Path, "cat", "/proc/net/dev").CombinedOutput()
		if err != nil {
			t.Errorf("nsenter: %v: %s", err, out)
		} else if n := strings.Count(string(out), ":"); n != 1 || !strings.Contains(string(out), "lo:") {
			t.Errorf("nsenter --net=%s sees interfaces:\n%s", ns.Path, out)
		}
	}

	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ns.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if mounted(t, ns.Path) {
		t.Errorf("%s is still mounted after Close", ns.Path)
	}
	if _, err := os.Lstat(ns.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Close: %v, want it removed", ns.Path, err)
	}
	// The caller's own thread never left the host's namespace.
	if c, err := net.Dial("tcp", host.Addr().String()); err != nil {
		t.Errorf("the host's listener, from the test: %v", err)
	} else {
		c.Close()
	}
}

func TestNetnsRefusesAnExistingPath(t *testing.T) {
	needSysAdmin(t)
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/netns", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := New(dir); err == nil {
		t.Fatal("New over an existing file: want an error")
	}
	if _, err := os.Stat(dir + "/netns"); err != nil {
		t.Errorf("the existing file: %v", err)
	}
}

// TestProxyInNetns is the whole mechanism: a client in the namespace can
// use the proxy to reach an allowed server in the host's namespace, and
// nothing else.
func TestProxyInNetns(t *testing.T) {
	needSysAdmin(t)
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "from the host")
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	ns, l, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	rule, err := egress.ParseRule("pkgs.test:" + strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	p := egress.New(egress.Policy{Allow: []egress.Rule{rule}, AllowPrivate: true}, egress.WithResolver(loopbackResolver{"pkgs.test"}))
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	defer func() {
		p.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	paddr := l.Addr().String()

	inNetns(t, ns.Path, func() {
		// Direct: no route to the server.
		if c, err := net.Dial("tcp", srv.Listener.Addr().String()); err == nil {
			c.Close()
			t.Error("the namespace reached the server without the proxy")
		}
		// Through the proxy, both ways.
		for _, method := range []string{"GET", "CONNECT"} {
			c, err := net.Dial("tcp", paddr)
			if err != nil {
				t.Errorf("dialling the proxy from the namespace: %v", err)
				return
			}
			c.SetDeadline(time.Now().Add(waitFor))
			target := fmt.Sprintf("pkgs.test:%d", port)
			if method == "GET" {
				fmt.Fprintf(c, "GET http://%s/x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target)
			} else {
				fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /x HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target, target)
			}
			b, _ := io.ReadAll(c)
			c.Close()
			if !bytes.HasSuffix(b, []byte("from the host")) {
				t.Errorf("%s through the proxy gave %q", method, b)
			}
		}
		// A destination outside the allow-list is refused.
		c, err := net.Dial("tcp", paddr)
		if err != nil {
			t.Errorf("dialling the proxy: %v", err)
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(waitFor))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", srv.Listener.Addr())
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT to a name not in the allow-list: %v %v, want 403", resp, err)
		}
	})
	p.Close()
	var allowed int
	for _, c := range p.Conns() {
		if c.Allowed {
			allowed++
		}
	}
	if n := len(p.Conns()); n != 3 || allowed != 2 {
		t.Errorf("Conns %+v: want 3, 2 allowed", p.Conns())
	}
}

// waitFor bounds each wait of these tests: minutes, never a window.
const waitFor = 2 * time.Minute

// loopbackResolver answers 127.0.0.1 for its one name.
type loopbackResolver struct{ name string }

func (r loopbackResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host != r.name {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}
