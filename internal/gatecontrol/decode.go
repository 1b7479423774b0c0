package gatecontrol

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"unicode/utf8"

	"github.com/codegenie/codegenie/internal/sandbox"
	"github.com/codegenie/codegenie/internal/strictjson"
)

// Bounds on what a request puts into an audit record, so that one record
// stays far below audit.MaxRecordBytes whatever the body holds.
const (
	maxAuditArgs     = 64
	maxAuditArgBytes = 512
	maxAuditRole     = 64
	maxAuditReason   = 1024
)

// sent is what the audit log records of a request as it arrived, whether or
// not it decodes: the role as sent and the command.
type sent struct {
	Role string
	Argv []string
}

// decodeSpawnRequest decodes a request body strictly (unknown fields and
// trailing data are errors) and validates it. The error matches
// sandbox.ErrInvalidRole or sandbox.ErrInvalidRequest. Whatever happens, it
// also returns what it could read of the role and command, for the audit
// log: the role as sent (a JSON string's value, or else the raw JSON of the
// field), both cut to the audit bounds.
func decodeSpawnRequest(body []byte) (sandbox.SpawnRequest, sent, error) {
	s := readSent(body)
	var req sandbox.SpawnRequest
	if err := strictjson.Unmarshal(body, &req); err != nil {
		if errors.Is(err, sandbox.ErrInvalidRole) {
			return sandbox.SpawnRequest{}, s, err
		}
		return sandbox.SpawnRequest{}, s, fmt.Errorf("%w: decoding spawn request: %w", sandbox.ErrInvalidRequest, err)
	}
	if err := req.Validate(); err != nil {
		return sandbox.SpawnRequest{}, s, err
	}
	if !filepath.IsAbs(req.Workspace.Dir) {
		return sandbox.SpawnRequest{}, s, fmt.Errorf("%w: workspace %q is not an absolute path", sandbox.ErrInvalidRequest, req.Workspace.Dir)
	}
	return req, s, nil
}

// readSent leniently reads the role and command of a body that may not be
// a valid request.
func readSent(body []byte) sent {
	var v struct {
		Role    json.RawMessage `json:"role"`
		Command json.RawMessage `json:"command"`
		Build   *struct {
			Dockerfile string   `json:"dockerfile"`
			Targets    []string `json:"targets"`
			Boot       bool     `json:"boot"`
		} `json:"build"`
	}
	if json.Unmarshal(body, &v) != nil {
		return sent{}
	}
	var s sent
	if len(v.Role) > 0 {
		var str string
		if json.Unmarshal(v.Role, &str) == nil {
			s.Role = str
		} else {
			s.Role = string(v.Role)
		}
		s.Role = truncate(s.Role, maxAuditRole)
	}
	var argv []string
	if json.Unmarshal(v.Command, &argv) == nil {
		s.Argv = boundArgv(argv)
	}
	if b := v.Build; b != nil && len(s.Argv) == 0 {
		// A build-and-boot spawn has no command: audit what it builds.
		desc := []string{"(build)", b.Dockerfile}
		for _, t := range b.Targets {
			if t == "" {
				t = "(final)"
			}
			desc = append(desc, "--target="+t)
		}
		if b.Boot {
			desc = append(desc, "(boot)")
		}
		s.Argv = boundArgv(desc)
	}
	return s
}

// boundArgv returns argv cut to the audit bounds; a cut is marked.
func boundArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, 0, min(len(argv), maxAuditArgs+1))
	for i, a := range argv {
		if i == maxAuditArgs {
			out = append(out, fmt.Sprintf("...(%d more)", len(argv)-i))
			break
		}
		out = append(out, truncate(a, maxAuditArgBytes))
	}
	return out
}

// truncate cuts s to at most n bytes, on a rune boundary, marking a cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
