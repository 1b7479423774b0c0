package runsc

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/codegenie/codegenie/internal/sandbox"
)

// The types below are the part of the OCI runtime spec (config.json, spec
// 1.0.2) that this backend writes. They are declared here rather than taken
// from opencontainers/runtime-spec to keep the dependency out for a dozen
// fields.

type ociSpec struct {
	Version  string     `json:"ociVersion"`
	Process  ociProcess `json:"process"`
	Root     ociRoot    `json:"root"`
	Hostname string     `json:"hostname"`
	Mounts   []ociMount `json:"mounts"`
	Linux    ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool            `json:"terminal"`
	User            ociUser         `json:"user"`
	Args            []string        `json:"args"`
	Env             []string        `json:"env"`
	Cwd             string          `json:"cwd"`
	Capabilities    ociCapabilities `json:"capabilities"`
	Rlimits         []ociRlimit     `json:"rlimits"`
	NoNewPrivileges bool            `json:"noNewPrivileges"`
}

type ociUser struct {
	UID            uint32   `json:"uid"`
	GID            uint32   `json:"gid"`
	AdditionalGids []uint32 `json:"additionalGids,omitempty"`
}

type ociCapabilities struct {
	Bounding  []string `json:"bounding"`
	Effective []string `json:"effective"`
	Permitted []string `json:"permitted"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	CgroupsPath string        `json:"cgroupsPath,omitempty"`
	Namespaces  []ociNS       `json:"namespaces"`
	Resources   *ociResources `json:"resources,omitempty"`
}

type ociNS struct {
	Type string `json:"type"`
	// Path joins an existing namespace (a boot's egress namespace).
	Path string `json:"path,omitempty"`
}

type ociResources struct {
	Memory *ociMemory `json:"memory,omitempty"`
	CPU    *ociCPU    `json:"cpu,omitempty"`
	Pids   *ociPids   `json:"pids,omitempty"`
}

type ociMemory struct {
	Limit int64 `json:"limit"`
	Swap  int64 `json:"swap"`
}

type ociCPU struct {
	Quota  int64  `json:"quota"`
	Period uint64 `json:"period"`
}

type ociPids struct {
	Limit int64 `json:"limit"`
}

// defaultCaps is Docker's default capability set less CAP_NET_RAW: what a
// root process in an ordinary container has. They are capabilities inside
// gVisor's kernel, not on the host.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// defaultPath is the PATH of a request whose Env sets none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// RLIMIT_NOFILE of the sandboxed process. runc and runsc refuse values above
// the host's hard limit, so these stay modest.
const (
	nofileSoft = 1024
	nofileHard = 4096
)

// cpuPeriod is the CFS period the CPU quota is expressed in.
const cpuPeriod = 100_000

// pidsOverhead and the per-process costs translate Limits.PIDs (processes
// inside the sandbox) into the host pids cgroup limit of the whole sandbox.
// The host cgroup counts every host task of the sandbox: the sentry's and
// the gofer's own threads (about 30), and the host tasks that back each
// guest process: about two with systrap (a stub process and a sentry thread
// serving it), about ten with ptrace (a traced stub per guest thread plus
// tracer threads). Measured here with busybox "sleep &" loops, as the number
// of guest processes that started before fork failed, for PIDs 1, 5, 20 and
// 100: 9, 13, 28, 107 with systrap; 2, 5, 22, 104 with ptrace. The limit is
// thus approximate: the guest gets about PIDs processes, with systrap up to
// eight more.
const (
	pidsOverhead          = 40
	pidsPerProcessSystrap = 2
	pidsPerProcessPtrace  = 10
)

// specInput is what buildSpec needs, all resolved and validated.
type specInput struct {
	args       []string
	env        []string
	cwd        string
	rootfs     string
	hostname   string
	user       ociUser
	workspace  string // host directory
	mount      string // inside the sandbox; "" mounts no workspace
	writable   bool
	network    bool
	platform   string
	cgroupPath string // empty when cgroups are off
	limits     sandbox.Limits
	enforce    Enforcement
	// hosts, when set, is a host file mounted read-only at /etc/hosts, as
	// container runtimes provide one (a booted image resolves localhost).
	hosts string
	// netns, when set, is the network namespace the sandbox joins, with
	// runsc's host network mode: a boot's egress namespace, whose only
	// route is its proxy.
	netns string
	// ca, when set, is a CA bundle mounted read-only at buildCAPath.
	ca string
}

func buildSpec(in specInput) ociSpec {
	wsOpts := []string{"rbind", "ro"}
	if in.writable {
		// The root and every bind mount sit under gVisor's overlay, whose
		// upper layer is a file on the spawn's disk (--overlay2=all:dir=),
		// so a writable workspace is a private copy-on-write copy: writes
		// never reach the host directory.
		wsOpts = []string{"rbind", "rw"}
	}
	ns := []ociNS{{Type: "pid"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"}}
	switch {
	case in.netns != "":
		ns = append(ns, ociNS{Type: "network", Path: in.netns})
	case !in.network:
		ns = append(ns, ociNS{Type: "network"})
	}
	s := ociSpec{
		Version: "1.0.2",
		Process: ociProcess{
			User: in.user,
			Args: in.args,
			Env:  in.env,
			Cwd:  in.cwd,
			Capabilities: ociCapabilities{
				Bounding:  defaultCaps,
				Effective: defaultCaps,
				Permitted: defaultCaps,
			},
			Rlimits:         []ociRlimit{{Type: "RLIMIT_NOFILE", Soft: nofileSoft, Hard: nofileHard}},
			NoNewPrivileges: true,
		},
		// Not read-only: the overlay keeps the host directory unchanged, and
		// programs that write to $HOME or /etc work as in a container.
		Root:     ociRoot{Path: in.rootfs, Readonly: false},
		Hostname: in.hostname,
		Mounts: []ociMount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "noexec", "mode=1777"}},
		},
		Linux: ociLinux{Namespaces: ns},
	}
	if in.mount != "" {
		s.Mounts = append(s.Mounts, ociMount{Destination: in.mount, Type: "bind", Source: in.workspace, Options: wsOpts})
	}
	if in.hosts != "" {
		s.Mounts = append(s.Mounts, ociMount{Destination: "/etc/hosts", Type: "bind", Source: in.hosts, Options: []string{"rbind", "ro"}})
	}
	if in.ca != "" {
		s.Mounts = append(s.Mounts, ociMount{Destination: buildCAPath, Type: "bind", Source: in.ca, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
	}
	if in.cgroupPath != "" {
		s.Linux.CgroupsPath = in.cgroupPath
		r := &ociResources{}
		if in.enforce.Memory {
			r.Memory = &ociMemory{Limit: in.limits.MemoryBytes, Swap: in.limits.MemoryBytes}
		}
		if in.enforce.CPU {
			quota := int64(math.Ceil(in.limits.CPUs * cpuPeriod))
			r.CPU = &ociCPU{Quota: max(quota, 1000), Period: cpuPeriod}
		}
		if in.enforce.PIDs {
			r.Pids = &ociPids{Limit: hostPIDs(in.limits.PIDs, in.platform)}
		}
		s.Linux.Resources = r
	}
	return s
}

// hostPIDs is the host pids cgroup limit that lets the guest run about
// pids processes on platform.
func hostPIDs(pids int64, platform string) int64 {
	per := int64(pidsPerProcessSystrap)
	if platform == PlatformPtrace {
		per = pidsPerProcessPtrace
	}
	if pids > (math.MaxInt64-pidsOverhead)/per {
		return math.MaxInt64
	}
	return pids*per + pidsOverhead
}

// writeSpec writes s as bundle/config.json.
func writeSpec(bundle string, s ociSpec) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding OCI spec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), b, 0o600); err != nil {
		return fmt.Errorf("writing OCI spec: %w", err)
	}
	return nil
}
