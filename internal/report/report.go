// Package report defines the repository context that `codegenie gather`
// writes: every probe's typed result under one schema version. It encodes
// the context deterministically, so a warm run prints the same bytes as a
// cold one, and decodes it strictly: unknown fields anywhere, including in
// a probe's facts, are an error.
//
// It does not run probes (package pipeline).
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// SchemaVersion is the version of the context document. It changes when a
// field changes meaning or disappears.
const SchemaVersion = 1

// Context is a repository context: what codegenie knows about one repo.
type Context struct {
	SchemaVersion int    `json:"schema_version"`
	Codegenie     string `json:"codegenie_version"`
	Repo          string `json:"repo"`
	Task          string `json:"task,omitempty"`
	// Image is the image the assessments judge; nil when the repository
	// has no Dockerfile.
	Image *probe.ImageRef `json:"image,omitempty"`
	// Assessments are keyed by assessor name (distroless_readiness).
	Assessments map[string]probe.Assessment `json:"assessments,omitempty"`
	// Images holds one entry per image of the repository, when every
	// image was judged (gather --all-images).
	Images []ImageAssessments `json:"images,omitempty"`
	Probes []probe.Result     `json:"probes"`
}

// ImageAssessments are the assessments of one image.
type ImageAssessments struct {
	Image       probe.ImageRef              `json:"image"`
	Assessments map[string]probe.Assessment `json:"assessments"`
}

// encoded mirrors Context with raw probe results, so that Encode writes
// each result's bytes exactly as the cache holds them.
type encoded struct {
	SchemaVersion int                         `json:"schema_version"`
	Codegenie     string                      `json:"codegenie_version"`
	Repo          string                      `json:"repo"`
	Task          string                      `json:"task,omitempty"`
	Image         *probe.ImageRef             `json:"image,omitempty"`
	Assessments   map[string]probe.Assessment `json:"assessments,omitempty"`
	Images        []ImageAssessments          `json:"images,omitempty"`
	Probes        []json.RawMessage           `json:"probes"`
}

// Encode writes the context as indented JSON with a trailing newline. raws
// are the canonical encodings of c.Probes, in the same order.
func Encode(w io.Writer, c *Context, raws [][]byte) error {
	if len(raws) != len(c.Probes) {
		return fmt.Errorf("encoding context: %d raw results for %d probes", len(raws), len(c.Probes))
	}
	e := encoded{SchemaVersion: c.SchemaVersion, Codegenie: c.Codegenie, Repo: c.Repo, Task: c.Task, Image: c.Image,
		Assessments: c.Assessments, Images: c.Images, Probes: make([]json.RawMessage, len(raws))}
	for i, r := range raws {
		e.Probes[i] = r
	}
	b, err := probe.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding context: %w", err)
	}
	return writeIndented(w, b)
}

// writeIndented writes compact JSON b indented, with a trailing newline.
func writeIndented(w io.Writer, b []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("indenting JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// Decode reads a context strictly. Each probe's facts are decoded into the
// type its registered descriptor declares, rejecting unknown fields; a
// probe the registry does not know is an error.
func Decode(r io.Reader, reg *probe.Registry) (*Context, error) {
	var c Context
	if err := strictjson.Decode(r, &c); err != nil {
		return nil, fmt.Errorf("decoding context: %w", err)
	}
	if c.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("decoding context: schema version %d, this codegenie reads %d", c.SchemaVersion, SchemaVersion)
	}
	for _, res := range c.Probes {
		p, ok := reg.Lookup(res.Probe)
		if !ok {
			return nil, fmt.Errorf("decoding context: unknown probe %q", res.Probe)
		}
		d := p.Desc()
		if err := strictjson.Unmarshal(res.Facts, d.NewFacts()); err != nil {
			return nil, fmt.Errorf("decoding context: facts of %s: %w", res.Probe, err)
		}
		o := probe.Output{Confidence: res.Confidence, Reason: res.Reason}
		if err := o.Validate(); err != nil {
			return nil, fmt.Errorf("decoding context: result of %s: %w", res.Probe, err)
		}
		for _, w := range res.Warnings {
			if _, ok := reg.Warnings().Lookup(w.ID); !ok {
				return nil, fmt.Errorf("decoding context: result of %s: unregistered warning %q", res.Probe, w.ID)
			}
		}
	}
	for name, a := range c.Assessments {
		if a.Verdict == "" {
			return nil, fmt.Errorf("decoding context: assessment %s has no verdict", name)
		}
		for _, b := range a.Blockers {
			if _, ok := reg.Warnings().Lookup(b.ID); !ok {
				return nil, fmt.Errorf("decoding context: assessment %s: unregistered blocker ID %q", name, b.ID)
			}
		}
	}
	return &c, nil
}

// Confirmed reports whether every assessment is backed by a trace.
func (c *Context) Confirmed() bool {
	if len(c.Assessments) == 0 {
		return false
	}
	for _, a := range c.Assessments {
		if !a.Confirmed {
			return false
		}
	}
	return true
}

// Ready reports whether every assessment's verdict is ready. A context
// with no assessment is not ready: there is no answer.
func (c *Context) Ready() bool {
	if len(c.Assessments) == 0 {
		return false
	}
	for _, a := range c.Assessments {
		if a.Verdict != probe.Ready {
			return false
		}
	}
	return true
}
