package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Confidence says how far an output can be trusted.
type Confidence string

// The confidences, from most to least trusted.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

// UnmarshalText rejects anything but the three confidences.
func (c *Confidence) UnmarshalText(b []byte) error {
	switch v := Confidence(b); v {
	case High, Medium, Low:
		*c = v
		return nil
	}
	return fmt.Errorf("unknown confidence %q (want high, medium or low)", b)
}

// Heaviness is light (cheap, file reads) or heavy (builds, sandboxes).
type Heaviness string

// The heavinesses.
const (
	Light Heaviness = "light"
	Heavy Heaviness = "heavy"
)

func (h Heaviness) validate() error {
	switch h {
	case Light, Heavy:
		return nil
	}
	return fmt.Errorf("unknown heaviness %q (want light or heavy)", string(h))
}

// CacheStrategy says whether the pipeline may cache a probe's output.
type CacheStrategy string

// The cache strategies.
const (
	CacheNone    CacheStrategy = "none"
	CacheContent CacheStrategy = "content"
)

func (s CacheStrategy) validate() error {
	switch s {
	case CacheNone, CacheContent:
		return nil
	}
	return fmt.Errorf("unknown cache strategy %q (want none or content)", string(s))
}

// Reason is a typed failure code, snake_case, such as "invalid_package_json".
type Reason string

// Reasons the pipeline itself produces. Probes define their own beside them.
const (
	ReasonProbeError          Reason = "probe_error"
	ReasonProbePanic          Reason = "probe_panic"
	ReasonTimeout             Reason = "timeout"
	ReasonCanceled            Reason = "canceled"
	ReasonSandboxUnavailable  Reason = "sandbox_unavailable"
	ReasonUnregisteredWarning Reason = "unregistered_warning"
	ReasonInvalidOutput       Reason = "invalid_output"
)

var reasonRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Output is what Run returns. Facts is a pointer to the probe's typed facts
// (the type Desc.NewFacts makes) and must marshal to a JSON object.
type Output struct {
	Confidence Confidence
	Reason     Reason
	// Detail explains Reason for a person: one line, no secrets.
	Detail   string
	Facts    any
	Warnings []Warning
	Evidence []Evidence
	// Uncacheable keeps this output out of the cache even when the probe
	// caches by content: for results that depend on the host rather than on
	// the declared inputs. The pipeline sets it for errors and timeouts.
	Uncacheable bool
	// Blobs are bytes handed to probes of later phases (Handoff.Blob),
	// each stored under its BlobDigest, which the facts name.
	Blobs [][]byte
}

// Validate checks the invariants every output holds.
func (o *Output) Validate() error {
	if err := o.Confidence.UnmarshalText([]byte(o.Confidence)); err != nil {
		return err
	}
	if o.Confidence != High && o.Reason == "" {
		return fmt.Errorf("confidence %s without a reason", o.Confidence)
	}
	if o.Reason != "" && !reasonRE.MatchString(string(o.Reason)) {
		return fmt.Errorf("reason %q does not match %s", o.Reason, reasonRE)
	}
	return nil
}

// Warning is a registered warning raised by a probe.
type Warning struct {
	ID       string     `json:"id"`
	Message  string     `json:"message"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// Evidence points at what backs a finding: a file position, or a trace
// event of a sandboxed run.
type Evidence struct {
	File   string    `json:"file,omitempty"`
	Line   int       `json:"line,omitempty"`
	Column int       `json:"column,omitempty"`
	Trace  *TraceRef `json:"trace,omitempty"`
	Note   string    `json:"note,omitempty"`
}

// TraceRef names one event of a sandboxed trace.
type TraceRef struct {
	Phase string `json:"phase"`
	PID   int32  `json:"pid"`
	Index int    `json:"index"`
}

// Result is the serialised form of one probe's output, as stored in the
// cache and in a repository context. Facts hold the probe's typed facts.
type Result struct {
	Probe      string          `json:"probe"`
	Version    string          `json:"version"`
	Confidence Confidence      `json:"confidence"`
	Reason     Reason          `json:"reason,omitempty"`
	Detail     string          `json:"detail,omitempty"`
	Facts      json.RawMessage `json:"facts"`
	Warnings   []Warning       `json:"warnings,omitempty"`
	Evidence   []Evidence      `json:"evidence,omitempty"`
}

// Marshal encodes v as compact JSON without HTML escaping, so that shell
// operators such as && and > stay readable in facts and messages.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NewResult serialises o for the probe d.
func NewResult(d *Desc, o *Output) (*Result, error) {
	facts := []byte("{}")
	if o.Facts != nil {
		b, err := Marshal(o.Facts)
		if err != nil {
			return nil, fmt.Errorf("encoding facts of %s: %w", d.Name, err)
		}
		if len(b) == 0 || b[0] != '{' {
			return nil, fmt.Errorf("facts of %s must encode as a JSON object, got %.20s", d.Name, b)
		}
		facts = b
	}
	return &Result{
		Probe:      d.Name,
		Version:    d.Version,
		Confidence: o.Confidence,
		Reason:     o.Reason,
		Detail:     o.Detail,
		Facts:      facts,
		Warnings:   o.Warnings,
		Evidence:   o.Evidence,
	}, nil
}
