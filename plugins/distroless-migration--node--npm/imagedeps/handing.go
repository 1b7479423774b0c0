package imagedeps

import (
	"encoding/json"

	"github.com/codegenie/codegenie/internal/probe"
	"github.com/codegenie/codegenie/internal/sandbox"
)

// Handing is the handoff of a trace that read set: what the scans see on a
// traced run, for a caller that read an image's node_modules itself (the
// gates, from the rewritten image they built) and scans it outside a
// pipeline run.
func Handing(set *sandbox.FileSet) (probe.Handoff, *Ref, error) {
	blob, ref, err := Encode(set)
	if err != nil {
		return nil, nil, err
	}
	facts, err := json.Marshal(struct {
		NodeModules *Ref `json:"node_modules"`
	}{ref})
	if err != nil {
		return nil, nil, err
	}
	return &handing{facts: facts, blob: blob, digest: ref.Digest}, ref, nil
}

type handing struct {
	facts  json.RawMessage
	blob   []byte
	digest string
}

func (h *handing) Earlier(name string) (*probe.Result, bool) {
	if name != Source {
		return nil, false
	}
	return &probe.Result{Probe: Source, Facts: h.facts}, true
}

func (h *handing) Blob(digest string) ([]byte, error) {
	if digest != h.digest {
		return nil, probe.ErrNoBlob
	}
	return h.blob, nil
}
