// Package probe is codegenie's domain model for evidence gathering, in the
// vocabulary of ADR-0002: a probe is a descriptor (Desc) plus Run. Run reads a
// repository and returns a typed Output with a Confidence, a Reason when the
// confidence is not high, facts, registered warnings and evidence.
//
// The package also holds the two registries every probe depends on: Registry
// (the probes) and Warnings (every warning ID, registered once). Both are
// values, not package globals; builtin.Register fills them.
//
// It does not schedule probes (package pipeline), cache them (package cache)
// or run anything outside the process: privileged work goes through the
// sandbox.Client carried in Context.
package probe
