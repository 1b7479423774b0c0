package client

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
	"github.com/codegenie/codegenie/internal/testbin"
)

// TestPrivateGateControlShortTimeout: the private gate-control that root
// gather and migrate start is given their timeout as its cap (serve
// --timeout, from --heavy-timeout or migrate --timeout). A cap under the
// default spawn timeout (10m) once made the child refuse its own
// configuration, so no trace ran. The child starts, and its default
// follows the cap: a spawn that asks for no timeout gets the cap, and one
// that asks for more is refused.
func TestPrivateGateControlShortTimeout(t *testing.T) {
	newRunsc(t, "") // skips where runsc cannot run
	bin := testbin.Path(t)
	rootfs := sandboxtest.BusyboxRootfs(t)
	const limit = 10 * time.Second
	logs, err := os.Create(filepath.Join(t.TempDir(), "gate-control.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("the private gate-control's log:\n%s", b)
		}
	})
	// As gather's sandboxFor configures it.
	l := NewLazy(PrivateConfig{Executable: bin, ServeArgs: []string{"--rootfs", rootfs, "--timeout", limit.String()}, Stderr: logs})
	defer func() {
		if err := l.Close(); err != nil {
			t.Errorf("stopping the private gate-control: %v", err)
		}
	}()
	ws := sandbox.Workspace{Dir: t.TempDir()}
	res, err := l.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: ws, Command: []string{"echo", "traced"}})
	if err != nil || string(res.Stdout) != "traced\n" {
		t.Fatalf("spawn through a private gate-control with --timeout %v: %v (stdout %q)", limit, err, res.Stdout)
	}
	start := time.Now()
	_, err = l.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: ws, Command: []string{"sleep", "600"}})
	if !errors.Is(err, sandbox.ErrTimeout) {
		t.Errorf("a spawn that asks for no timeout and never ends: %v, want it timed out at the %v cap", err, limit)
	}
	t.Logf("it ended after %v", time.Since(start).Round(time.Millisecond))
	_, err = l.Spawn(t.Context(), sandbox.SpawnRequest{Role: sandbox.RoleProbe, Workspace: ws, Command: []string{"true"}, Timeout: limit + time.Second})
	if !errors.Is(err, sandbox.ErrInvalidRequest) {
		t.Errorf("a spawn that asks for more than the %v cap: %v, want it refused", limit, err)
	}
}
