// Package trace defines the exec events that a sandbox backend captures
// host-side, outside the workload's reach. It holds the data model only; the
// sources that produce events (gVisor runtime monitoring, eBPF) live in
// sub-packages, and classification of shells lives beside the model.
package trace

import (
	"fmt"
	"time"

	"github.com/codegenie/codegenie/internal/strictjson"
)

// Kind is the kind of a trace event. The zero value is invalid.
type Kind uint8

const (
	kindInvalid Kind = iota
	// KindStart is the container's first process (gVisor container/start).
	KindStart
	// KindClone is a new task (fork, clone).
	KindClone
	// KindExec is a successful exec, with the resolved binary path.
	KindExec
	// KindExecAttempt is an execve/execveat syscall entry: an attempt that
	// may have failed (for example ENOENT for /bin/sh on a distroless base).
	KindExecAttempt
	// KindExit is the exit of a thread group.
	KindExit
	kindEnd // keep last
)

var kindNames = [...]string{
	kindInvalid:     "",
	KindStart:       "start",
	KindClone:       "clone",
	KindExec:        "exec",
	KindExecAttempt: "exec_attempt",
	KindExit:        "exit",
}

// String returns the wire name of k, or "invalid(N)".
func (k Kind) String() string {
	if k > kindInvalid && k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("invalid(%d)", uint8(k))
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k > kindInvalid && k < kindEnd }

// MarshalText encodes k by name; it fails on an invalid kind.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("trace: marshaling invalid event kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText decodes a kind by name and rejects unknown names.
func (k *Kind) UnmarshalText(b []byte) error {
	for i := kindInvalid + 1; i < kindEnd; i++ {
		if kindNames[i] == string(b) {
			*k = i
			return nil
		}
	}
	return fmt.Errorf("trace: unknown event kind %q", b)
}

// Event is one host-side observation of the sandboxed workload. Events are
// hostile input: a backend bounds and validates them before it hands them on.
// Env is empty unless the spawn asked to keep it, since it may hold secrets.
type Event struct {
	Kind   Kind      `json:"kind"`
	Time   time.Time `json:"time"`
	PID    int32     `json:"pid"`
	PPID   int32     `json:"ppid,omitempty"`
	TID    int32     `json:"tid,omitempty"`
	Binary string    `json:"binary,omitempty"` // resolved path of the executable
	Execfn string    `json:"execfn,omitempty"` // path as the caller named it
	Argv   []string  `json:"argv,omitempty"`
	Env    []string  `json:"env,omitempty"`
	Cwd    string    `json:"cwd,omitempty"`
	UID    int32     `json:"uid"`
	Comm   string    `json:"comm,omitempty"`
	// ChildPID is set on clone events.
	ChildPID int32 `json:"child_pid,omitempty"`
	// Container is the sandbox-side container ID, when the source knows it.
	Container string `json:"container,omitempty"`
	// Phase attributes the event to a step of the spawned work, such as
	// "build:builder:step 2" or "boot". Sources leave it empty; the caller
	// that knows the phases fills it in.
	Phase string `json:"phase,omitempty"`
	// Interp is the interpreter named by the shebang of the exec'd file,
	// read host-side from the sandbox's root filesystem (gVisor reports a
	// script's path, not its interpreter). Empty for an ELF binary or when
	// not looked up; InterpUnknown when the file could not be read.
	Interp string `json:"interp,omitempty"`
	// Errno is how an exec attempt failed ("ENOENT", "EACCES"), when the
	// backend could tell: gVisor reports no result for attempts (blind
	// spot 4), so the backend infers it host-side from the sandbox's
	// filesystem for an attempt that no exec of the same process followed.
	// Empty when unknown, and on every other kind of event.
	Errno string `json:"errno,omitempty"`
	// Digest is the SHA-256 of the file an exec ran, "sha256:<hex>", as
	// the sandbox's kernel read it (gVisor's binary_sha256): it is known
	// for a file the host cannot read, such as a memfd or a copy in the
	// sandbox's memory. Empty when the source did not send it.
	Digest string `json:"digest,omitempty"`
	// SameAs is the path, in one of the spawn's images, of the shell or
	// multi-call binary (busybox) that the file an exec ran is, by content:
	// its Digest, or the SHA-256 or ELF build ID of the file read host-side
	// (Shells.Identify). Empty when it is none of them, or not looked up.
	SameAs string `json:"same_as,omitempty"`
}

// DigestPrefix starts every Event.Digest and Identity.Digest.
const DigestPrefix = "sha256:"

// InterpUnknown marks an exec whose interpreter could not be read.
const InterpUnknown = "?"

// eventAlias breaks the recursion of UnmarshalJSON.
type eventAlias Event

// UnmarshalJSON decodes an event strictly: unknown fields are rejected.
func (e *Event) UnmarshalJSON(b []byte) error {
	var a eventAlias
	if err := strictjson.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("decoding trace event: %w", err)
	}
	*e = Event(a)
	return nil
}
