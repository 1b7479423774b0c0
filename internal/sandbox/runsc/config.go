package runsc

import (
	"github.com/codegenie/codegenie/internal/egress"

	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// DefaultRunscPath is where scripts/setup.sh installs the pinned runsc.
const DefaultRunscPath = "/usr/local/lib/codegenie/bin/runsc"

// EnvRunsc names the environment variable that overrides DefaultRunscPath.
const EnvRunsc = "CODEGENIE_RUNSC"

// EnvBaseStore names the environment variable that overrides
// DefaultBaseStore.
const EnvBaseStore = "CODEGENIE_BASE_STORE"

// DefaultMount is where the workspace appears inside the sandbox when the
// request does not say.
const DefaultMount = "/workspace"

// Defaults for Config.Limits.
const (
	DefaultMemoryBytes = 1 << 30
	DefaultCPUs        = 1.0
	DefaultPIDs        = 256
	DefaultOutputBytes = 1 << 20
	// DefaultDiskBytes bounds the filesystem of a build spawn: its image
	// store, temporary files and the steps' writes.
	DefaultDiskBytes = 10 << 30
)

// Platforms runsc can use here. KVM needs /dev/kvm, which this kind of
// machine (itself a Firecracker guest) does not have.
const (
	PlatformSystrap = "systrap"
	PlatformPtrace  = "ptrace"
)

// maxStateDir bounds Config.StateDir so that the trace socket inside a spawn
// directory fits a sockaddr_un (107 bytes).
const maxStateDir = 64

// Config configures a Backend. The zero value of every field but StateDir
// takes a default; Validate reports what is wrong. Build it from flags, then
// call New.
type Config struct {
	// Runsc is the runsc binary. Default: $CODEGENIE_RUNSC, else
	// DefaultRunscPath.
	Runsc string
	// Buildah is the buildah binary that Build spawns run on the host.
	// Default: buildah on the PATH of the runsc processes (Debian's, which
	// scripts/setup.sh installs). Only Build spawns need it; without it
	// they return a *sandbox.UnsupportedError.
	Buildah string
	// StateDir holds one directory per spawn: its runsc --root, its OCI
	// bundle and its trace socket. It must be an absolute path of at most
	// 64 bytes, used by one gate-control at a time; Reap cleans what a
	// crashed process left in it. It is created 0700 if missing.
	StateDir string
	// Platform is the runsc platform: PlatformSystrap (default) or
	// PlatformPtrace.
	Platform string
	// Rootfs is the host directory used as the root filesystem when a
	// request names none. It is never written to, except that runsc creates
	// a missing mount point for the workspace in it.
	Rootfs string
	// Limits are the limits of a request that sets none. Zero fields take
	// DefaultMemoryBytes, DefaultCPUs, DefaultPIDs, DefaultOutputBytes and
	// DefaultDiskBytes.
	Limits sandbox.Limits
	// NoCgroups runs runsc with --ignore-cgroups: memory, CPU and pids
	// limits are then not enforced (see Backend.Enforcement). New sets it
	// itself when the host has no usable cgroup controllers.
	NoCgroups bool
	// Hostname is the sandbox's hostname. Default "sandbox".
	Hostname string
	// KillGrace bounds the wait for runsc to exit after the sandbox was
	// killed, before its process group is killed too. Default 5s.
	KillGrace time.Duration
	// BaseStore is the shared, read-only base-image store of builds (see
	// basestore.go), on this host's disk; several backends may share it.
	// Default: $CODEGENIE_BASE_STORE, else DefaultBaseStore.
	BaseStore string
	// BaseStoreBytes caps it: the least recently used images go past it.
	// Default DefaultBaseStoreBytes.
	BaseStoreBytes int64
	// NoBaseStore makes every build pull its bases into its own store, as
	// an empty one.
	NoBaseStore bool
	// StepHook is the command (an absolute program path and its leading
	// arguments) that runsc runs after each traced build step, with
	// --store and --into appended and the container state on stdin: a
	// program that passes those arguments to RunStepHook. It snapshots the
	// step's rootfs for the trace (see snapshot.go), so that a build
	// commits no layer per step. Empty: traced builds that read another
	// stage's files commit a layer per step (--layers) instead.
	StepHook []string
	// Shim is the absolute path of a program whose main runs
	// RunRuntimeShim when it is run under the name ShimName: builds with
	// egress or a CA bundle run their steps through it (gate-control's
	// own executable). Empty: such builds are refused.
	Shim string
	// EgressCap is gate-control's cap on egress (gatecontrol.Config's):
	// the base images' mirrors that a build's BaseMirrors adds pass it
	// too. The zero value lets no mirror in.
	EgressCap egress.Cap
}

// Validate reports whether c, with its defaults applied, is usable. It does
// not run runsc; New does.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if !filepath.IsAbs(c.Runsc) {
		errs = append(errs, fmt.Errorf("runsc path %q is not absolute", c.Runsc))
	}
	switch {
	case c.StateDir == "":
		errs = append(errs, errors.New("no state directory"))
	case !filepath.IsAbs(c.StateDir) || filepath.Clean(c.StateDir) != c.StateDir:
		errs = append(errs, fmt.Errorf("state directory %q is not a clean absolute path", c.StateDir))
	case len(c.StateDir) > maxStateDir:
		errs = append(errs, fmt.Errorf("state directory %q is longer than %d bytes (the trace socket path must fit a sockaddr_un)", c.StateDir, maxStateDir))
	}
	switch c.Platform {
	case PlatformSystrap, PlatformPtrace:
	default:
		errs = append(errs, fmt.Errorf("platform %q: want %s or %s", c.Platform, PlatformSystrap, PlatformPtrace))
	}
	if len(c.StepHook) > 0 && !filepath.IsAbs(c.StepHook[0]) {
		errs = append(errs, fmt.Errorf("step hook program %q is not absolute", c.StepHook[0]))
	}
	if c.Shim != "" && !filepath.IsAbs(c.Shim) {
		errs = append(errs, fmt.Errorf("runtime shim program %q is not absolute", c.Shim))
	}
	if c.Buildah != "" && !filepath.IsAbs(c.Buildah) {
		errs = append(errs, fmt.Errorf("buildah path %q is not absolute", c.Buildah))
	}
	if c.Rootfs != "" && !filepath.IsAbs(c.Rootfs) {
		errs = append(errs, fmt.Errorf("default rootfs %q is not absolute", c.Rootfs))
	}
	l := c.Limits
	if l.MemoryBytes < 0 || l.CPUs < 0 || l.PIDs < 0 || l.OutputBytes < 0 || l.DiskBytes < 0 {
		errs = append(errs, fmt.Errorf("negative default limit in %+v", l))
	}
	if c.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("negative kill grace %v", c.KillGrace))
	}
	if !filepath.IsAbs(c.BaseStore) || filepath.Clean(c.BaseStore) != c.BaseStore {
		errs = append(errs, fmt.Errorf("base-image store %q is not a clean absolute path", c.BaseStore))
	}
	if c.BaseStoreBytes < 0 {
		errs = append(errs, fmt.Errorf("negative base-image store cap %d", c.BaseStoreBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validating runsc backend config: %w", err)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Runsc == "" {
		c.Runsc = os.Getenv(EnvRunsc)
	}
	if c.Runsc == "" {
		c.Runsc = DefaultRunscPath
	}
	if c.Platform == "" {
		c.Platform = PlatformSystrap
	}
	if c.Hostname == "" {
		c.Hostname = "sandbox"
	}
	if c.KillGrace == 0 {
		c.KillGrace = 5 * time.Second
	}
	if c.BaseStore == "" {
		c.BaseStore = os.Getenv(EnvBaseStore)
	}
	if c.BaseStore == "" {
		c.BaseStore = DefaultBaseStore
	}
	if c.BaseStoreBytes == 0 {
		c.BaseStoreBytes = DefaultBaseStoreBytes
	}
	c.Limits = withDefaultLimits(c.Limits, sandbox.Limits{
		MemoryBytes: DefaultMemoryBytes,
		CPUs:        DefaultCPUs,
		PIDs:        DefaultPIDs,
		OutputBytes: DefaultOutputBytes,
		DiskBytes:   DefaultDiskBytes,
	})
	return c
}

// withDefaultLimits fills the zero fields of l from def.
func withDefaultLimits(l, def sandbox.Limits) sandbox.Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = def.MemoryBytes
	}
	if l.CPUs == 0 {
		l.CPUs = def.CPUs
	}
	if l.PIDs == 0 {
		l.PIDs = def.PIDs
	}
	if l.OutputBytes == 0 {
		l.OutputBytes = def.OutputBytes
	}
	if l.DiskBytes == 0 {
		l.DiskBytes = def.DiskBytes
	}
	return l
}

// stateTag is a short digest of the state directory. Container IDs and
// cgroup names start with it, so that Reap touches only what a backend with
// the same state directory made.
func stateTag(stateDir string) string {
	sum := sha256.Sum256([]byte(stateDir))
	return hex.EncodeToString(sum[:4])
}
