package firecracker

import (
	"errors"
	"path/filepath"
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
	if ue.Backend != Name || ue.Reason == "" {
		t.Errorf("UnsupportedError %+v lacks the backend or the reason", ue)
	}
	t.Logf("here: %v", err)
}

func TestCheckKVMMissingDevice(t *testing.T) {
	t.Parallel()
	got := checkKVM(filepath.Join(t.TempDir(), "kvm"))
	if !strings.HasPrefix(got, "no ") {
		t.Errorf("checkKVM(missing) = %q", got)
	}
	if got := checkKVM("/dev/null"); !strings.Contains(got, "KVM_GET_API_VERSION") {
		t.Errorf("checkKVM(/dev/null) = %q, want a failed ioctl", got)
	}
}

// TestConformance runs the suite: every subtest that spawns skips with the
// reason, and the refusal of an invalid role still holds.
func TestConformance(t *testing.T) {
	sandboxtest.Run(t, func(*testing.T) sandbox.Client { return &Backend{} }, sandboxtest.Env{Rootfs: t.TempDir()})
}
