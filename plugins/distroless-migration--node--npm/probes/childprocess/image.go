package childprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/plugins/distroless-migration--node--npm/imagedeps"
)

// Shipped is a scan of what an image ships: the repository at dir, with
// set, the image's node_modules read back from the built image, standing
// for its own node_modules, as a traced run scans it.
type Shipped struct {
	Facts *Facts
	// Confidence, Reason and Detail are the scan's own, as the probe
	// gives them: below high when part of the code could not be read.
	Confidence probe.Confidence
	Reason     probe.Reason
	Detail     string
}

// ScanImage scans the code image ships, which the repository at dir builds:
// the gates use it on the rewritten image, whose node_modules they read
// back from the build. set nil scans the repository's own files only.
func ScanImage(ctx context.Context, dir string, image probe.ImageRef, set *sandbox.FileSet) (*Shipped, error) {
	repo, err := probe.OpenRepo(dir)
	if err != nil {
		return nil, err
	}
	pctx := &probe.Context{Logger: slog.New(slog.DiscardHandler), Image: image}
	if set != nil {
		if pctx.Handoff, _, err = imagedeps.Handing(set); err != nil {
			return nil, err
		}
	}
	out, err := (&Probe{}).Run(ctx, repo, pctx)
	if err != nil {
		return nil, err
	}
	facts, ok := out.Facts.(*Facts)
	if !ok {
		b, err := json.Marshal(out.Facts)
		if err != nil {
			return nil, err
		}
		facts = new(Facts)
		if err := json.Unmarshal(b, facts); err != nil {
			return nil, fmt.Errorf("child_process facts: %w", err)
		}
	}
	return &Shipped{Facts: facts, Confidence: out.Confidence, Reason: out.Reason, Detail: out.Detail}, nil
}

// Blocking are the findings that stop an image running without a shell:
// a shell, a binary, a command or a shell option not known until run
// time, in code the image holds and the entrypoint reaches (or may
// reach). They are what the readiness verdict makes blockers of.
func (f *Facts) Blocking() []Finding {
	var out []Finding
	for _, fd := range f.Findings {
		switch fd.Kind {
		case KindShell, KindMaybeShell, KindBinary, KindDynamic:
		case KindNode:
			continue
		}
		if fd.Scope == ScopeReachable || fd.Scope == ScopeUnresolved {
			out = append(out, fd)
		}
	}
	return out
}
