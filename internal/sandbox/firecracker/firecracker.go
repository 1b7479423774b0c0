// Package firecracker names the Firecracker microVM backend of the sandbox
// port and says why it cannot run: it has no implementation yet, and New and
// Spawn answer with a *sandbox.UnsupportedError that lists what this host
// lacks for it (a usable hardware KVM, the firecracker binary). It runs
// nothing, and it is not a fake: a caller that needs a sandbox here uses the
// gVisor backend (package runsc).
package firecracker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// Name is the backend name in errors and Results.
const Name = "firecracker"

// KVMDevice is the device Firecracker needs.
const KVMDevice = "/dev/kvm"

// kvmGetAPIVersion is the KVM_GET_API_VERSION ioctl; the stable API is 12.
const (
	kvmGetAPIVersion = 0xAE00
	kvmAPIVersion    = 12
)

// Backend is the Firecracker backend. Every Spawn returns an
// UnsupportedError; its zero value is ready to use.
type Backend struct{}

var _ sandbox.Client = (*Backend)(nil)

// New reports why Firecracker cannot run here, as a *sandbox.UnsupportedError
// naming what is missing. It never returns a Backend in this build.
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

// Unsupported inspects this host and returns the UnsupportedError that
// names what Firecracker would lack here.
func Unsupported() *sandbox.UnsupportedError {
	missing := []string{"the Firecracker backend is not implemented in this build"}
	if reason := checkKVM(KVMDevice); reason != "" {
		missing = append(missing, reason)
	}
	if _, err := exec.LookPath("firecracker"); err != nil {
		missing = append(missing, "no firecracker binary in PATH")
	}
	return &sandbox.UnsupportedError{Backend: Name, Reason: strings.Join(missing, "; ")}
}

// checkKVM says why dev cannot host Firecracker microVMs, or "" if it
// looks able to. It opens the device and asks its API version, and it
// tells a paravirtual KVM (kvm_pvm, as on the Firecracker guests these
// machines are) from one backed by VMX or SVM: PVM runs only guests whose
// kernels are built for it, which Firecracker's guest kernels are not.
func checkKVM(dev string) string {
	fd, err := unix.Open(dev, unix.O_RDWR|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return "no " + dev + " (this host is a VM without nested virtualization)"
	case err != nil:
		return fmt.Sprintf("cannot open %s: %v", dev, err)
	}
	defer func() { _ = unix.Close(fd) }()
	v, err := unix.IoctlRetInt(fd, kvmGetAPIVersion)
	if err != nil {
		return fmt.Sprintf("%s does not answer KVM_GET_API_VERSION: %v", dev, err)
	}
	if v != kvmAPIVersion {
		return fmt.Sprintf("%s has KVM API version %d, want %d", dev, v, kvmAPIVersion)
	}
	if !hardwareVirt() {
		what := "no VMX or SVM CPU flag"
		if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
			what = "KVM here is kvm_pvm (paravirtual) with no VMX or SVM CPU flag"
		}
		return what + ": Firecracker guests need hardware virtualization (runsc --platform=kvm did not boot within 60 s here)"
	}
	return ""
}

// hardwareVirt reports whether /proc/cpuinfo lists the vmx or svm flag.
func hardwareVirt() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, flags, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "flags" {
			continue
		}
		for _, f := range strings.Fields(flags) {
			if f == "vmx" || f == "svm" {
				return true
			}
		}
	}
	return false
}
