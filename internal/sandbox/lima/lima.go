// Package lima names the Lima backend of the sandbox port (Linux VMs on
// macOS, for developers' laptops) and says why it cannot run: it has no
// implementation yet, and New and Spawn answer with a
// *sandbox.UnsupportedError naming what is missing (macOS, limactl). It
// runs nothing, and it is not a fake.
package lima

import (
	"context"
	"os/exec"
	"runtime"
	"strings"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// Name is the backend name in errors and Results.
const Name = "lima"

// Backend is the Lima backend. Every Spawn returns an UnsupportedError; its
// zero value is ready to use.
type Backend struct{}

var _ sandbox.Client = (*Backend)(nil)

// New reports why Lima cannot run here, as a *sandbox.UnsupportedError. It
// never returns a Backend in this build.
func New() (*Backend, error) {
	return nil, Unsupported()
}

// Spawn validates req, so that a request without a role is refused as it is
// by every client, and then returns the UnsupportedError of New.
func (*Backend) Spawn(_ context.Context, req sandbox.SpawnRequest) (sandbox.Result, error) {
	res := sandbox.Result{Backend: Name, ExitCode: -1}
	if err := req.Validate(); err != nil {
		return res, err
	}
	return res, Unsupported()
}

// Unsupported returns the UnsupportedError that names what Lima lacks here.
func Unsupported() *sandbox.UnsupportedError {
	missing := []string{"the Lima backend is not implemented in this build"}
	if runtime.GOOS != "darwin" {
		missing = append(missing, "Lima runs Linux VMs on macOS and this host runs "+runtime.GOOS+" (use the gVisor backend)")
	}
	if _, err := exec.LookPath("limactl"); err != nil {
		missing = append(missing, "no limactl in PATH")
	}
	return &sandbox.UnsupportedError{Backend: Name, Reason: strings.Join(missing, "; ")}
}
