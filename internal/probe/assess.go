package probe

import "fmt"

// Verdict is an assessment's answer.
type Verdict string

// The verdicts, from best to worst; Unknown means the evidence does not
// allow an answer.
const (
	Ready             Verdict = "ready"
	ReadyAfterRewrite Verdict = "ready_after_rewrite"
	Blocked           Verdict = "blocked"
	Unknown           Verdict = "unknown"
)

// UnmarshalText rejects unknown verdicts.
func (v *Verdict) UnmarshalText(b []byte) error {
	switch x := Verdict(b); x {
	case Ready, ReadyAfterRewrite, Blocked, Unknown:
		*v = x
		return nil
	}
	return fmt.Errorf("unknown verdict %q", b)
}

// BlockerKind classifies what stands in the way.
type BlockerKind string

// The blocker kinds.
const (
	ShellAtRuntime         BlockerKind = "shell_at_runtime"
	ShellInFinalStageBuild BlockerKind = "shell_in_final_stage_build"
	MissingBinary          BlockerKind = "missing_binary"
	NativeABI              BlockerKind = "native_abi"
	RuntimeVersion         BlockerKind = "runtime_version"
	UnknownKind            BlockerKind = "unknown"
)

// UnmarshalText rejects unknown kinds.
func (k *BlockerKind) UnmarshalText(b []byte) error {
	switch x := BlockerKind(b); x {
	case ShellAtRuntime, ShellInFinalStageBuild, MissingBinary, NativeABI, RuntimeVersion, UnknownKind:
		*k = x
		return nil
	}
	return fmt.Errorf("unknown blocker kind %q", b)
}

// Blocker is one thing between the repository and the task's goal.
type Blocker struct {
	// ID is the registered warning ID of the finding behind the blocker.
	ID    string      `json:"id"`
	Kind  BlockerKind `json:"kind"`
	Title string      `json:"title"`
	// Rule names the rule-table entry that decides the blocker: the rewrite
	// that removes it, or why none can.
	Rule string `json:"rule,omitempty"`
	// Removable is true when a mechanical rewrite removes the blocker.
	Removable bool   `json:"removable"`
	Fix       string `json:"fix,omitempty"`
	// Stage is the judged Dockerfile's stage the blocker's first evidence
	// is in; empty for code, scripts and package.json.
	Stage string `json:"stage,omitempty"`
	// WhyNot says why no rewrite removes a blocker that has no fix.
	WhyNot   string     `json:"why_not,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Note is evidence worth reading that blocks nothing.
type Note struct {
	ID       string     `json:"id"`
	Message  string     `json:"message"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Assessment is a task's answer derived from every probe's result.
type Assessment struct {
	Verdict Verdict `json:"verdict"`
	// Reason explains an Unknown verdict.
	Reason string `json:"reason,omitempty"`
	// Confirmed is true when a trace of the build and boot backs the
	// verdict; a verdict from static evidence alone is unconfirmed.
	Confirmed bool      `json:"confirmed"`
	Blockers  []Blocker `json:"blockers,omitempty"`
	Notes     []Note    `json:"notes,omitempty"`
	// Basis names the probes the answer rests on.
	Basis []string `json:"basis,omitempty"`
}

// Assessor derives an assessment from the results of a run. It must be a
// pure function of the results, so that a warm run assesses to the same
// bytes as a cold one.
type Assessor interface {
	// Name is the assessment's key in a context, such as
	// "distroless_readiness".
	Name() string
	// Task is the task it answers for.
	Task() string
	Assess(results []Result) (Assessment, error)
}
