package lima

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/sandbox/sandboxtest"
)

func TestNewIsUnsupported(t *testing.T) {
	t.Parallel()
	b, err := New()
	ue, ok := errors.AsType[*sandbox.UnsupportedError](err)
	if b != nil || !ok || !errors.Is(err, sandbox.ErrNotSupported) {
		t.Fatalf("New() = %v, %v; want nil and an UnsupportedError", b, err)
	}
	if ue.Backend != Name {
		t.Errorf("UnsupportedError names backend %q", ue.Backend)
	}
	if runtime.GOOS != "darwin" && !strings.Contains(ue.Reason, "macOS") {
		t.Errorf("reason %q does not say Lima needs macOS", ue.Reason)
	}
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(*testing.T) sandbox.Client { return &Backend{} }, sandboxtest.Env{Rootfs: t.TempDir()})
}
