package sandbox

import (
	"context"
	"strings"
	"time"
)

// ProgressKind is the kind of a Progress report. The zero value is invalid.
type ProgressKind uint8

const (
	progressInvalid ProgressKind = iota
	// ProgressPhase: a phase began (a pull, a build target, the boot).
	ProgressPhase
	// ProgressStep: buildah began build step Step of Steps of a stage.
	ProgressStep
	// ProgressBoot: the boot is running; BootLeft is what is left of its
	// window.
	ProgressBoot
	// ProgressShells: the trace has seen Shells shells so far.
	ProgressShells
	// ProgressDone: the spawn returned. Clients report it, not backends.
	ProgressDone
	progressEnd // keep last
)

var progressNames = [...]string{"", "phase", "step", "boot", "shells", "done"}

// String returns the wire name of k, or "invalid".
func (k ProgressKind) String() string {
	if k > progressInvalid && k < progressEnd {
		return progressNames[k]
	}
	return "invalid"
}

// MarshalText encodes k by name.
func (k ProgressKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a kind by name; an unknown name is invalid, which
// receivers ignore, so that a newer server's kinds do not break an older
// client.
func (k *ProgressKind) UnmarshalText(b []byte) error {
	*k = progressInvalid
	for i := progressInvalid + 1; i < progressEnd; i++ {
		if progressNames[i] == string(b) {
			*k = i
		}
	}
	return nil
}

// Valid reports whether k is a declared kind.
func (k ProgressKind) Valid() bool { return k > progressInvalid && k < progressEnd }

// Progress is one small report of a running spawn, for a person watching:
// the phase, build step N of M with its instruction, the boot's
// countdown, and the shells the trace has seen so far. Reports are
// best-effort: a slow receiver may miss some, never the Result.
type Progress struct {
	Kind ProgressKind `json:"kind"`
	// Source names who spawned, for a display of several spawns (a probe
	// and its image); callers set it, backends leave it empty.
	Source string `json:"source,omitempty"`
	// Phase is the current phase's name (see PhaseResult.Name).
	Phase string `json:"phase,omitempty"`
	// Step and Steps are the build step and the steps of its stage
	// (buildah's STEP k/m), Instruction its instruction, cut to 120 bytes.
	Step        int    `json:"step,omitempty"`
	Steps       int    `json:"steps,omitempty"`
	Instruction string `json:"instruction,omitempty"`
	// BootLeft is what is left of the boot window.
	BootLeft time.Duration `json:"boot_left,omitempty"`
	// Shells counts the shells (run or attempted) traced so far.
	Shells int `json:"shells"`
}

// ProgressFunc receives Progress reports. It must be safe for concurrent
// use and return quickly: backends call it from their own goroutines.
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress returns a context whose spawns report their progress to
// fn. A Client that can report progress (a backend, gate-control's client)
// looks for it in the context of Spawn.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ProgressFrom returns the ProgressFunc of ctx, or nil.
func ProgressFrom(ctx context.Context) ProgressFunc {
	fn, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return fn
}

// ReportProgress sends p to the ProgressFunc of ctx, if there is one.
func ReportProgress(ctx context.Context, p Progress) {
	if fn := ProgressFrom(ctx); fn != nil {
		fn(p)
	}
}

// MaxInstruction bounds Progress.Instruction.
const MaxInstruction = 120

// CutInstruction cuts s to MaxInstruction bytes.
func CutInstruction(s string) string {
	if len(s) > MaxInstruction {
		return strings.ToValidUTF8(s[:MaxInstruction-3], "") + "..."
	}
	return s
}
