package client

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTarget(t *testing.T) {
	dir := shortDir(t)
	t.Chdir(dir)
	l, err := net.Listen("unix", "bare.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.WriteFile("plain-file", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in              string
		socket, address string
	}{
		{"/run/codegenie/gate-control.sock", "/run/codegenie/gate-control.sock", ""},
		{"gc/gc.sock", "gc/gc.sock", ""},
		{"./gc.sock", "./gc.sock", ""},
		{"unix:gc.sock", "gc.sock", ""},
		{"bare.sock", "bare.sock", ""},
		{"plain-file", "", "plain-file"},
		{"gc.example:7443", "", "gc.example:7443"},
		{"[::1]:7443", "", "[::1]:7443"},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			socket, address := ParseTarget(tt.in)
			if diff := cmp.Diff([2]string{tt.socket, tt.address}, [2]string{socket, address}); diff != "" {
				t.Errorf("ParseTarget(%q) [socket, address] (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// TestRelativeSocketAddress is the attack of issue 10, item 9: a relative
// socket path given where a TLS address could also go (gather passes
// --gate-control gc/gc.sock as Address) reaches the socket, not TLS.
func TestRelativeSocketAddress(t *testing.T) {
	s := startServer(t, nil, "", false)
	dir, sock := filepath.Split(s.cfg.Socket)
	t.Chdir(filepath.Dir(filepath.Clean(dir)))
	rel := filepath.Join(filepath.Base(dir), sock)
	for _, addr := range []string{rel, "./" + rel} {
		c, err := New(Config{Address: addr, KeyFile: s.cfg.KeyFile})
		if err != nil {
			t.Fatalf("New with Address %q: %v", addr, err)
		}
		defer c.Close()
		// The socket path is fixed at New, whatever the working directory
		// is later.
		t.Chdir(t.TempDir())
		if err := c.Ping(t.Context()); err != nil {
			t.Errorf("Ping through %q: %v", addr, err)
		}
		t.Chdir(filepath.Dir(filepath.Clean(dir)))
	}
	t.Chdir(dir)
	c, err := New(Config{Address: sock, KeyFile: s.cfg.KeyFile})
	if err != nil {
		t.Fatalf("New with Address %q naming an existing socket: %v", sock, err)
	}
	defer c.Close()
	if err := c.Ping(t.Context()); err != nil {
		t.Errorf("Ping through %q: %v", sock, err)
	}
}
